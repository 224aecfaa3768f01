//! What a recovery (`--recover-expired`, SPEC 11) does in place of the
//! health gate: its restarts start from the component's current container
//! and end when the new one runs and serves the renewed certificate; its
//! postflight checks the restarted containers stayed up and reports the
//! health it sees, quorum and `/readyz` included, without requiring it.

use crate::judge::renew;
use crate::modes::runbook::{cancelled, Run};
use crate::node::node_pki;
use crate::node::oplog::StepLog;
use crate::rules::component::Component;
use crate::rules::failure::{fail, restart_failed, Cause, Fail};
use crate::rules::outcome::Phase;
use crate::tools::health;
use std::time::{Duration, Instant};

/// How long the recovery's last look at the whole gate may take: one or
/// two attempts, reported, never waited for (etcd may lack quorum until the
/// other members are recovered too).
const LAST_LOOK: Duration = Duration::from_secs(3);

/// How long a recovery asks etcd's client port when etcd may lack quorum.
const CLIENT_LOOK: Duration = Duration::from_secs(2);

impl Run<'_> {
    /// A recovery's step 6 (SPEC 11): for a node whose leaves expired (work
    /// it takes over from a renewal too: without an expired leaf, that
    /// renewal's gate is what must pass); a recovery's own work resumed is
    /// finished whatever the leaves say. It renews whatever is due, so
    /// nothing ends it `unchanged`.
    pub(in crate::modes::runbook) fn expired_leaves(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("expiry");
        let pki = node_pki::read(self.env.root);
        let now = self.env.now();
        let leaves = pki.validity();
        let needs_expired = self.op.phase.resumed_recovery.is_none();
        let (recover, renew) = self.fresh_commands();
        let next = crate::rules::expiry::Next {
            recover: &recover,
            renew: &renew,
        };
        if let Some(why) = crate::rules::expiry::recovery_refusal(&leaves, now, needs_expired, next)
        {
            return Err(fail(Phase::Expiry, why));
        }
        let expired = crate::rules::expiry::expired_words(&leaves, now);
        tracing::info!(
            expired = expired.join(", "),
            "recovery: no health gate before the renewal; after each restart the new container must serve the renewed certificate"
        );
        self.report.before = Some(pki);
        Ok(())
    }

    /// A recovery's step 7 (SPEC 11): the tools, and no gate before the
    /// renewal (it could not pass: the expired leaves are why).
    pub(in crate::modes::runbook) fn tools_step(&mut self) -> Result<(), Fail> {
        self.tools()?;
        tracing::info!("recovery: the health gate is not asked before the renewal");
        self.resumed_restarts()
    }

    /// The container a recovery's restart of `c` replaces (no gate before
    /// it): the running one, else the newest, else none.
    pub(in crate::modes::runbook) fn recovery_old(&self, c: Component) -> Result<String, Fail> {
        let budget = self.env.cancel.bound(self.env.g.health_timeout);
        let old = self
            .health()
            .current(c, budget)
            .map_err(|e| self.gate_fail(e, Some(c)))?;
        tracing::info!(
            component = c.name(),
            old = health::short(&old),
            "recovery: no health gate before this restart"
        );
        Ok(old)
    }

    /// After a recovery's restart of `c` (SPEC 11): until `deadline`, wait
    /// for `c` to serve the renewed certificate (etcd on its client and
    /// peer ports, kube-apiserver on its secure port; the other two only
    /// run, which the start wait saw). Polled with back-off; each look
    /// bounded by the time left.
    pub(in crate::modes::runbook) fn wait_serving(
        &self,
        c: Component,
        deadline: Instant,
    ) -> Result<(), Fail> {
        let mut backoff = health::Backoff::default();
        loop {
            backoff.polls += 1;
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(100));
            match self.serves_renewed(c, left) {
                Ok(()) => {
                    if matches!(c, Component::Etcd | Component::KubeApiserver) {
                        tracing::info!(
                            component = c.name(),
                            looks = backoff.polls,
                            "serves the renewed certificate"
                        );
                    }
                    return Ok(());
                }
                Err(f) if f.cancelled() => return Err(f),
                Err(f) if Instant::now() >= deadline => {
                    return Err(restart_failed(
                        c,
                        format!(
                            "{c} did not serve the renewed certificate within {}s ({} looks): {}",
                            self.env.g.health_timeout.as_secs(),
                            backoff.polls,
                            f.cause
                        ),
                    ))
                }
                Err(_) => {
                    health::sleep_until(deadline, backoff.pause(), self.env.cancel);
                    self.env.check_cancel(Some(c))?;
                }
            }
        }
    }

    /// A recovery's postflight (SPEC 11): every component this run
    /// restarted still runs the container its restart started.
    pub(in crate::modes::runbook) fn stayed(&self) -> Result<(), Fail> {
        let budget = self.env.cancel.bound(self.env.g.health_timeout);
        self.health()
            .stayed(budget)
            .map_err(|e| match self.gate_fail(e, None) {
                f if f.cancelled() || matches!(f.phase, Phase::Restart(_)) => f,
                f => Fail {
                    phase: Phase::Postflight,
                    ..f
                },
            })
    }

    /// The health a recovery ends with (SPEC 11: reported, not required):
    /// one short look at the whole local gate, quorum and `/readyz`
    /// included. Only a signal or the deadline stops the run here.
    pub(in crate::modes::runbook) fn health_at_end(&mut self) -> Result<(), Fail> {
        self.env.check_cancel(None)?;
        let seen = self.health().wait_gate(LAST_LOOK);
        if let Ok(ok) = &seen {
            self.report.etcd = Some((ok.etcd_voters, ok.etcd_healthy_voters));
        }
        let Some(seen) = renew::health_seen(&seen) else {
            return Err(cancelled(self.env.cancel, None));
        };
        tracing::info!(health = seen.as_str(), "recovery: the health at its end");
        // Bounded like every message (the receipt's copy is too): every
        // unhealthy voter's error could make it long.
        self.report.health_at_end = Some(crate::rules::receipt::bounded_message(&seen));
        Ok(())
    }

    /// etcd in a recovery (SPEC 11): the peer port serves the renewed
    /// `peer.crt` (required: etcd serves its peers from the start); the
    /// client port serves the renewed `server.crt` when it answers, but a
    /// member without quorum does not answer its clients at all (etcd
    /// serves them only once it is ready, having joined a quorum), so no
    /// answer within [`CLIENT_LOOK`] is said, not a failure. A client port
    /// that answers with another certificate is.
    pub(in crate::modes::runbook) fn recovered_etcd_serves(
        &self,
        budget: Duration,
    ) -> Result<(), Fail> {
        self.peer_served(budget)?;
        match self.etcd_client_served(budget.min(CLIENT_LOOK)) {
            Err(f) if !matches!(f.cause, Cause::Cancelled(_) | Cause::NotRenewed { .. }) => {
                tracing::info!(
                    "etcd's client port does not answer yet ({}): etcd serves its clients once it has a quorum; reported, not required in a recovery",
                    f.cause
                );
                Ok(())
            }
            other => other,
        }
    }
}
