//! What a recovery (`--recover-expired`, SPEC 11) does in place of the
//! health gate: its restarts start from the component's current container
//! and end when the new one runs and serves the renewed certificate; its
//! postflight checks the restarted containers stayed up and reports the
//! health it sees, quorum and `/readyz` included, without requiring it.

use super::gate::{resumed_restarts, tools};
use super::serving::{etcd_client_served, peer_served, serves_renewed};
use crate::judge::renew;
use crate::modes::runbook::run::{cancelled, Seen, Tools};
use crate::node::node_pki::{self, PkiReport};
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::component::Component;
use crate::rules::expiry::{expired_words, recovery_refusal, Next};
use crate::rules::failure::{fail, restart_failed, Cause, Fail};
use crate::rules::outcome::Phase;
use crate::rules::resume::Progress;
use crate::tools::health;
use std::time::{Duration, Instant};

/// How long the recovery's last look at the whole gate may take: one or
/// two attempts, reported, never waited for (etcd may lack quorum until the
/// other members are recovered too).
const LAST_LOOK: Duration = Duration::from_secs(3);

/// How long a recovery asks etcd's client port when etcd may lack quorum.
const CLIENT_LOOK: Duration = Duration::from_secs(2);

/// A recovery's step 6 (SPEC 11): for a node whose leaves expired (work it
/// takes over from a renewal too: without an expired leaf, that renewal's
/// gate is what must pass); a recovery's own work resumed is finished
/// whatever the leaves say. It renews whatever is due, so nothing ends it
/// `unchanged`. The certificates before the run touches them.
pub(in crate::modes::runbook) fn expired_leaves(
    op: &Operation<'_>,
    t: &Tools<'_>,
    start: Progress,
) -> Result<PkiReport, Fail> {
    let _step = StepLog::new("expiry");
    let pki = node_pki::read(t.root);
    let now = t.now();
    let leaves = pki.validity();
    let needs_expired = op.phase.resumed_recovery.is_none();
    let (recover, renew) = t.fresh_commands();
    let next = Next {
        recover: &recover,
        renew: &renew,
    };
    if let Some(why) = recovery_refusal(&leaves, now, needs_expired, next) {
        return Err(fail(Phase::Expiry, why));
    }
    // Before kubeadm, as a renewal (SPEC 4 step 8, v1.3): a leaf to renew
    // under a CA that ends within the threshold cannot be moved past it.
    if matches!(start, Progress::Fresh | Progress::Renewing) {
        let walls = pki.ca_walls(now, t.g.threshold_days, false);
        if !walls.is_empty() {
            return Err(super::expiry::wall_refusal(op, start, walls));
        }
    }
    let expired = expired_words(&leaves, now);
    tracing::info!(
        expired = expired.join(", "),
        "recovery: no health gate before the renewal; after each restart the new container must serve the renewed certificate"
    );
    Ok(pki)
}

/// A recovery's step 7 (SPEC 11): the tools, and no gate before the
/// renewal (it could not pass: the expired leaves are why).
pub(in crate::modes::runbook) fn tools_step(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    start: Progress,
) -> Result<(), Fail> {
    tools(t, start)?;
    tracing::info!("recovery: the health gate is not asked before the renewal");
    resumed_restarts(op, t, start)
}

/// The container a recovery's restart of `c` replaces (no gate before it):
/// the running one, else the newest, else none.
pub(in crate::modes::runbook) fn old(
    t: &Tools<'_>,
    seen: &mut Seen,
    c: Component,
) -> Result<String, Fail> {
    let budget = t.cancel.bound(t.g.health_timeout);
    let old = t
        .health(seen)
        .current(c, budget)
        .map_err(|e| t.gate_fail(e, Some(c)))?;
    tracing::info!(
        component = c.name(),
        old = health::short(&old),
        "recovery: no health gate before this restart"
    );
    Ok(old)
}

/// After a recovery's restart of `c` (SPEC 11): until `deadline`, wait for
/// `c` to serve the renewed certificate (etcd on its client and peer
/// ports, kube-apiserver on its secure port; the other two only run, which
/// the start wait saw). Polled with back-off; each look bounded by the
/// time left.
pub(in crate::modes::runbook) fn wait_serving(
    t: &Tools<'_>,
    _seen: &mut Seen,
    c: Component,
    deadline: Instant,
) -> Result<(), Fail> {
    let mut backoff = health::Backoff::default();
    loop {
        backoff.polls += 1;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        match serves_renewed(t, c, left, etcd_serves) {
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
                        t.g.health_timeout.as_secs(),
                        backoff.polls,
                        f.cause
                    ),
                ))
            }
            Err(_) => {
                health::sleep_until(deadline, backoff.pause(), t.cancel);
                t.check_cancel(Some(c))?;
            }
        }
    }
}

/// A recovery's postflight (SPEC 11): every component this run restarted
/// still runs the container its restart started.
pub(in crate::modes::runbook) fn stayed(t: &Tools<'_>, seen: &mut Seen) -> Result<(), Fail> {
    let budget = t.cancel.bound(t.g.health_timeout);
    t.health(seen)
        .stayed(budget)
        .map_err(|e| match t.gate_fail(e, None) {
            f if f.cancelled() || matches!(f.phase, Phase::Restart(_)) => f,
            f => Fail {
                phase: Phase::Postflight,
                ..f
            },
        })
}

/// The health a recovery ends with (SPEC 11: reported, not required): one
/// short look at the whole local gate, quorum and `/readyz` included,
/// bounded like every message. Only a signal or the deadline stops the
/// run here.
pub(in crate::modes::runbook) fn health_at_end(
    t: &Tools<'_>,
    seen: &mut Seen,
) -> Result<String, Fail> {
    t.check_cancel(None)?;
    let look = t.health(seen).wait_gate(LAST_LOOK);
    if let Ok(ok) = &look {
        seen.etcd = Some((ok.etcd_voters, ok.etcd_healthy_voters));
    }
    let Some(health) = renew::health_seen(&look) else {
        return Err(cancelled(t.cancel, None));
    };
    tracing::info!(health = health.as_str(), "recovery: the health at its end");
    // Bounded like every message (the receipt's copy is too): every
    // unhealthy voter's error could make it long.
    Ok(crate::rules::receipt::bounded_message(&health))
}

/// etcd in a recovery (SPEC 11): the peer port serves the renewed
/// `peer.crt` (required: etcd serves its peers from the start); the client
/// port serves the renewed `server.crt` when it answers, but a member
/// without quorum does not answer its clients at all (etcd serves them only
/// once it is ready, having joined a quorum), so no answer within
/// [`CLIENT_LOOK`] is said, not a failure. A client port that answers with
/// another certificate is.
pub(in crate::modes::runbook) fn etcd_serves(t: &Tools<'_>, budget: Duration) -> Result<(), Fail> {
    peer_served(t, budget)?;
    match etcd_client_served(t, budget.min(CLIENT_LOOK)) {
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
