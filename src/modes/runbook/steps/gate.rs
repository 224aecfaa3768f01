//! Step 7: the tools the next steps need, and the health gate: the whole
//! local control plane healthy before anything changes; the gate's
//! helpers, which the restarts and the postflight ask again.

use crate::modes::runbook::run::{record, Seen, Tools};
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::component::Component;
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;
use crate::rules::resume::Progress;
use crate::tools::health::GateOk;
use std::time::{Duration, Instant};

/// A gate that passed this recently, with no manifest moved and no
/// certificate renewed since, is the "whole health gate again" of SPEC 4
/// step 9 for the next component and the postflight's (it is the same
/// check, a moment later).
const GATE_FRESH: Duration = Duration::from_secs(1);

/// The whole health gate (SPEC 4 step 7): the one that just passed when it
/// is fresh, else a new wait for it; remembered in `seen`.
pub(in crate::modes::runbook) fn gate(
    t: &Tools<'_>,
    seen: &mut Seen,
    timeout: Duration,
    component: Option<Component>,
) -> Result<GateOk, Fail> {
    if let Some((at, ok)) = &seen.last_gate {
        let ago = at.elapsed();
        if ago < GATE_FRESH {
            tracing::info!(
                ms_ago = ago.as_millis() as u64,
                "health gate passed a moment ago, nothing moved since: not repeated"
            );
            let ok = ok.clone();
            seen.etcd = Some((ok.etcd_voters, ok.etcd_healthy_voters));
            return Ok(ok);
        }
    }
    let ok = t
        .health(seen)
        .wait_gate(timeout)
        .map_err(|e| t.gate_fail(e, component))?;
    seen.etcd = Some((ok.etcd_voters, ok.etcd_healthy_voters));
    seen.last_gate = Some((Instant::now(), ok.clone()));
    Ok(ok)
}

/// Step 7: the tools, then the gate; resumed work records where it
/// resumes.
pub(in crate::modes::runbook) fn gate_step(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    seen: &mut Seen,
    start: Progress,
) -> Result<(), Fail> {
    tools(t, start)?;
    let health_step = StepLog::new("health");
    gate(t, seen, t.g.health_timeout, None)?;
    drop(health_step);
    resumed_restarts(op, t, start)
}

/// A tool the next steps need and cannot find fails at once, nothing
/// changed.
pub(in crate::modes::runbook) fn tools(t: &Tools<'_>, start: Progress) -> Result<(), Fail> {
    for (tool, why) in t.rt.missing_tools() {
        let phase = if tool == "kubeadm" && matches!(start, Progress::Fresh | Progress::Renewing) {
            Phase::RenewCerts
        } else if tool == "kubeadm" {
            continue;
        } else {
            Phase::Health
        };
        return Err(fail(phase, format!("{why}; nothing was changed")));
    }
    t.check_cancel(None)
}

/// Resumed between restarts, the phase file is recorded again (the first
/// write of a run that took over another operation supersedes it).
pub(in crate::modes::runbook) fn resumed_restarts(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    start: Progress,
) -> Result<(), Fail> {
    t.check_cancel(None)?;
    if let Progress::Restart(next) = start {
        record(op, t, Progress::Restart(next))?;
    }
    Ok(())
}

/// The renewal's restart of `c` begins with the whole gate; the container
/// it replaces is the one the gate saw.
pub(in crate::modes::runbook) fn old(
    t: &Tools<'_>,
    seen: &mut Seen,
    c: Component,
) -> Result<String, Fail> {
    let gate = gate(t, seen, t.g.health_timeout, Some(c))?;
    Ok(gate
        .containers
        .iter()
        .find(|(x, _)| *x == c)
        .map(|(_, id)| id.clone())
        .unwrap_or_default())
}

/// After the renewal's restart of `c`: the whole gate again, within what
/// is left until `deadline`.
pub(in crate::modes::runbook) fn after_restart(
    t: &Tools<'_>,
    seen: &mut Seen,
    c: Component,
    deadline: Instant,
) -> Result<(), Fail> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    gate(t, seen, left, Some(c)).map(|_| ())
}

/// The renewal's postflight passes the whole gate.
pub(in crate::modes::runbook) fn at_postflight(t: &Tools<'_>, seen: &mut Seen) -> Result<(), Fail> {
    gate(t, seen, t.g.health_timeout, None)
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
