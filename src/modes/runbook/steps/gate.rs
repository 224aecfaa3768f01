//! Step 7: the tools the next steps need, and the health gate: the
//! whole local control plane healthy before anything changes; the gate's
//! helpers, which the restarts and the postflight ask again.

use crate::judge::renew;
use crate::modes::runbook::Run;
use crate::node::oplog::StepLog;
use crate::rules::component::Component;
use crate::rules::failure::{fail, Fail, Progress};
use crate::rules::outcome::Phase;
use crate::rules::resume::Start;
use crate::tools::health::{GateError, GateOk, Health};
use std::time::{Duration, Instant};

/// A gate that passed this recently, with no manifest moved and no
/// certificate renewed since, is the
/// "whole health gate again" of SPEC 4 step 9 for the next component and
/// the postflight's (it is the same check, a moment later).
const GATE_FRESH: Duration = Duration::from_secs(1);

impl Run<'_> {
    pub(in crate::modes::runbook) fn health(&self) -> Health<'_> {
        Health {
            rt: self.env.rt,
            root: self.env.root,
            cancel: self.env.cancel,
            now: self.env.now(),
            sandboxes: &self.sandboxes,
            stay: &self.stay,
        }
    }

    /// The whole health gate (SPEC 4 step 7): the one that just passed when
    /// it is fresh, else a new wait for it.
    pub(in crate::modes::runbook) fn gate(
        &mut self,
        timeout: Duration,
        component: Option<Component>,
    ) -> Result<GateOk, Fail> {
        if let Some((at, ok)) = &self.last_gate {
            let ago = at.elapsed();
            if ago < GATE_FRESH {
                tracing::info!(
                    ms_ago = ago.as_millis() as u64,
                    "health gate passed a moment ago, nothing moved since: not repeated"
                );
                let ok = ok.clone();
                self.report.etcd = Some((ok.etcd_voters, ok.etcd_healthy_voters));
                return Ok(ok);
            }
        }
        let ok = self
            .health()
            .wait_gate(timeout)
            .map_err(|e| self.gate_fail(e, component))?;
        self.report.etcd = Some((ok.etcd_voters, ok.etcd_healthy_voters));
        self.last_gate = Some((Instant::now(), ok.clone()));
        Ok(ok)
    }

    pub(in crate::modes::runbook) fn gate_fail(
        &self,
        e: GateError,
        component: Option<Component>,
    ) -> Fail {
        renew::gate_failure(e, component, || self.env.cancel.why())
    }

    /// Step 7: the tools, then the gate.
    pub(in crate::modes::runbook) fn gate_step(&mut self) -> Result<(), Fail> {
        self.tools()?;
        let health_step = StepLog::new("health");
        self.gate(self.env.g.health_timeout, None)?;
        drop(health_step);
        self.resumed_restarts()
    }

    /// A tool the next steps need and cannot find fails at once, nothing
    /// changed.
    pub(in crate::modes::runbook) fn tools(&mut self) -> Result<(), Fail> {
        for (tool, why) in self.env.rt.missing_tools() {
            let phase = if tool == "kubeadm" && matches!(self.start, Start::Fresh | Start::Renewing)
            {
                Phase::RenewCerts
            } else if tool == "kubeadm" {
                continue;
            } else {
                Phase::Health
            };
            return Err(fail(phase, format!("{why}; nothing was changed")));
        }
        self.env.check_cancel(None)
    }

    /// Resumed between restarts, the phase file is recorded again (the
    /// first write of a run that took over another operation supersedes
    /// it).
    pub(in crate::modes::runbook) fn resumed_restarts(&mut self) -> Result<(), Fail> {
        self.env.check_cancel(None)?;
        if let Start::Restart(next) = self.start {
            self.record(Progress::Restart(next))?;
        }
        Ok(())
    }

    /// The renewal's restart of `c` begins with the whole gate; the
    /// container it replaces is the one the gate saw.
    pub(in crate::modes::runbook) fn gate_old(&mut self, c: Component) -> Result<String, Fail> {
        let gate = self.gate(self.env.g.health_timeout, Some(c))?;
        Ok(gate
            .containers
            .iter()
            .find(|(x, _)| *x == c)
            .map(|(_, id)| id.clone())
            .unwrap_or_default())
    }

    /// After the renewal's restart of `c`: the whole gate again, within
    /// what is left until `deadline`.
    pub(in crate::modes::runbook) fn gate_after_restart(
        &mut self,
        c: Component,
        deadline: Instant,
    ) -> Result<(), Fail> {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        self.gate(left, Some(c)).map(|_| ())
    }

    /// The renewal's postflight passes the whole gate.
    pub(in crate::modes::runbook) fn gate_at_postflight(&mut self) -> Result<(), Fail> {
        self.gate(self.env.g.health_timeout, None)
            .map(|_| ())
            .map_err(|mut f| {
                // A restarted component that crashed since: its restart
                // failed, wherever that was seen.
                if !f.cancelled() && !matches!(f.phase, Phase::Restart(_)) {
                    f.phase = Phase::Postflight;
                }
                f
            })
    }
}
