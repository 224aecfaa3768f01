//! Step 5: the CA fingerprints.

use crate::contract::cli::Request;
use crate::judge::renew;
use crate::modes::runbook::run::Tools;
use crate::node::node_pki;
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;
use crate::rules::phase::CA_KEYS;
use std::collections::BTreeMap;

/// Step 5: the CA fingerprints: readable, root-owned, valid, as the
/// request expects and as resumed work recorded them; recorded in the
/// phase for every later write.
pub(in crate::modes::runbook) fn ca_check(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    req: &Request,
) -> Result<(), Fail> {
    let _step = StepLog::new("ca-check");
    let cas = node_pki::read_cas(t.root);
    if let Some(e) = cas.iter().find_map(|c| c.error.clone()) {
        return Err(fail(Phase::CaCheck, e));
    }
    node_pki::cas_root_owned(t.root, &cas).map_err(|e| fail(Phase::CaCheck, e.to_string()))?;
    if let Some(why) = renew::ca_not_valid(&cas, t.now()) {
        return Err(fail(Phase::CaCheck, why));
    }
    let now = node_pki::ca_fingerprints(&cas);
    let none = BTreeMap::new();
    let expected = match req {
        Request::V2 { expect_ca, .. } => expect_ca,
        Request::Legacy { .. } => &none,
    };
    if let Some(why) = renew::ca_changed(&now, expected, &op.phase.ca) {
        return Err(fail(Phase::CaCheck, why));
    }
    op.phase.ca = CA_KEYS
        .iter()
        .filter_map(|k| now.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    Ok(())
}
