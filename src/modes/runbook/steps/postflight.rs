//! Step 10: the postflight.

use crate::modes::runbook::Run;
use crate::node::node_pki;
use crate::node::oplog::StepLog;
use crate::rules::component::Component;
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;
use crate::tools::health;
use std::time::Instant;

impl Run<'_> {
    /// StepLog 10.
    pub(in crate::modes::runbook) fn postflight(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("postflight");
        // Until the last restart is --settle old (SPEC 4 step 10, v1.2): a
        // component that crash-loops is caught by the gate after it,
        // without a fixed wait per component.
        if let Some(at) = self.last_restart {
            let until = at + self.env.g.settle;
            let wait = until.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                tracing::info!(
                    settle_ms = wait.as_millis() as u64,
                    "waiting until the last restart is --settle old"
                );
                health::sleep_until(
                    Instant::now() + self.env.cancel.bound(wait),
                    wait,
                    self.env.cancel,
                );
                self.env.check_cancel(None)?;
                self.last_gate = None;
            }
        }
        (self.table().way().still_healthy)(self)?;
        let now_ca = node_pki::ca_fingerprints(&node_pki::read_cas(self.env.root));
        if now_ca != self.op.phase.ca {
            return Err(fail(
                Phase::Postflight,
                "a CA fingerprint changed during the renewal",
            ));
        }
        let budget = self.env.g.health_timeout;
        self.serves_renewed(Component::KubeApiserver, budget)?;
        self.serves_renewed(Component::Etcd, budget)?;
        Ok(())
    }

    /// Step 10, unless a signal came.
    pub(in crate::modes::runbook) fn postflight_step(&mut self) -> Result<(), Fail> {
        self.env.check_cancel(None)?;
        self.postflight()
    }
}
