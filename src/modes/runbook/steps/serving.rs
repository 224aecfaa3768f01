//! What a component serves is the renewed certificate on disk: asked by
//! the postflight, and after each of a recovery's restarts.

use crate::modes::runbook::run::{cancelled, Tools};
use crate::rules::component::Component;
use crate::rules::failure::{fail, Cause, Fail};
use crate::rules::outcome::Phase;
use crate::tools::served::{Asker, NotServed};
use std::time::Duration;

/// How a table asks etcd whether it serves the renewed certificates,
/// within a budget (the renewal's: [`etcd_serves`]; the recovery's:
/// `recovery::etcd_serves`).
pub(in crate::modes::runbook) type EtcdServes = fn(&Tools<'_>, Duration) -> Result<(), Fail>;

/// Who asks what a component serves: this run's tools, node, signal flag
/// and clock.
fn asker<'a>(t: &'a Tools<'_>) -> Asker<'a> {
    Asker {
        rt: t.rt,
        root: t.root,
        cancel: t.cancel,
        clock: &t.g.clock,
    }
}

/// Not served, as the postflight's failure.
fn not_served(t: &Tools<'_>, e: NotServed) -> Fail {
    match e {
        NotServed::Cancelled => cancelled(t.cancel, None),
        NotServed::Said(m) => fail(Phase::Postflight, m),
        NotServed::NotRenewed { what, path } => Fail {
            phase: Phase::Postflight,
            cause: Cause::NotRenewed { what, path },
            component: None,
        },
    }
}

/// What `c` serves is the renewed certificate on disk (SPEC 4 step 10):
/// kube-apiserver its `apiserver.crt` on its secure port, etcd (as
/// `etcd_serves` asks it) its `server.crt` on its client port and
/// `peer.crt` on its peer port; nothing for the other two. One look, each
/// probe within `budget` (and the controller's deadline); a failure is the
/// postflight's.
pub(in crate::modes::runbook) fn serves_renewed(
    t: &Tools<'_>,
    c: Component,
    budget: Duration,
    etcd_serves: EtcdServes,
) -> Result<(), Fail> {
    match c {
        Component::KubeApiserver => asker(t).apiserver(budget).map_err(|e| not_served(t, e)),
        Component::Etcd => etcd_serves(t, budget),
        _ => Ok(()),
    }
}

/// The renewal's etcd serves the renewed certificates on its client and
/// its peer port.
pub(in crate::modes::runbook) fn etcd_serves(t: &Tools<'_>, budget: Duration) -> Result<(), Fail> {
    etcd_client_served(t, budget)?;
    peer_served(t, budget)
}

/// etcd's client port serves the renewed `server.crt`.
pub(in crate::modes::runbook) fn etcd_client_served(
    t: &Tools<'_>,
    budget: Duration,
) -> Result<(), Fail> {
    asker(t).etcd_client(budget).map_err(|e| not_served(t, e))
}

/// etcd's peer port serves the renewed `peer.crt` (SPEC 4 step 10, v1.2).
pub(in crate::modes::runbook) fn peer_served(t: &Tools<'_>, budget: Duration) -> Result<(), Fail> {
    asker(t).etcd_peer(budget).map_err(|e| not_served(t, e))
}
