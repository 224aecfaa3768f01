//! Step 10: the postflight.

use super::serving::serves_renewed;
use super::Way;
use crate::modes::runbook::run::{Seen, Tools};
use crate::node::node_pki;
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::component::Component;
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;
use crate::tools::health;
use std::time::Instant;

/// Step 10, unless a signal came: until the last restart is `--settle`
/// old, then the health as the table asks it (`way`), the CAs unchanged,
/// and the renewed certificates served.
pub(in crate::modes::runbook) fn postflight(
    op: &Operation<'_>,
    t: &Tools<'_>,
    seen: &mut Seen,
    way: Way,
) -> Result<(), Fail> {
    t.check_cancel(None)?;
    let _step = StepLog::new("postflight");
    // Until the last restart is --settle old (SPEC 4 step 10, v1.2): a
    // component that crash-loops is caught by the gate after it, without a
    // fixed wait per component.
    if let Some(at) = seen.last_restart {
        let until = at + t.g.settle;
        let wait = until.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            tracing::info!(
                settle_ms = wait.as_millis() as u64,
                "waiting until the last restart is --settle old"
            );
            health::sleep_until(Instant::now() + t.cancel.bound(wait), wait, t.cancel);
            t.check_cancel(None)?;
            seen.last_gate = None;
        }
    }
    (way.still_healthy)(t, seen)?;
    let now_ca = node_pki::ca_fingerprints(&node_pki::read_cas(t.root));
    if now_ca != op.phase.ca {
        return Err(fail(
            Phase::Postflight,
            "a CA fingerprint changed during the renewal",
        ));
    }
    let budget = t.g.health_timeout;
    serves_renewed(t, Component::KubeApiserver, budget, way.etcd_serves)?;
    serves_renewed(t, Component::Etcd, budget, way.etcd_serves)?;
    Ok(())
}
