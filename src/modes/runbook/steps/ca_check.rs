//! Step 5: the CA fingerprints.

use crate::contract::cli::Request;
use crate::judge::renew;
use crate::modes::runbook::Run;
use crate::node::node_pki;
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;
use crate::rules::phase::CA_KEYS;
use std::collections::BTreeMap;

impl Run<'_> {
    /// StepLog 5: the CA fingerprints.
    pub(in crate::modes::runbook) fn ca_check(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("ca-check");
        let cas = node_pki::read_cas(self.env.root);
        if let Some(e) = cas.iter().find_map(|c| c.error.clone()) {
            return Err(fail(Phase::CaCheck, e));
        }
        node_pki::cas_root_owned(self.env.root, &cas)
            .map_err(|e| fail(Phase::CaCheck, e.to_string()))?;
        if let Some(why) = renew::ca_not_valid(&cas, self.env.now()) {
            return Err(fail(Phase::CaCheck, why));
        }
        let now = node_pki::ca_fingerprints(&cas);
        let none = BTreeMap::new();
        let expected = match self.env.req {
            Request::V2 { expect_ca, .. } => expect_ca,
            Request::Legacy { .. } => &none,
        };
        if let Some(why) = renew::ca_changed(&now, expected, &self.op.phase.ca) {
            return Err(fail(Phase::CaCheck, why));
        }
        self.op.phase.ca = CA_KEYS
            .iter()
            .filter_map(|k| now.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        Ok(())
    }
}
