//! Step 4: the staging preflight.

use crate::judge::renew;
use crate::modes::runbook::run::Tools;
use crate::node::manifests;
use crate::node::oplog::StepLog;
use crate::node::staging::{Dirs, Restore, StagingGuard};
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;

/// Topology and step 4 (the staging preflight), then the signal flag.
pub(in crate::modes::runbook) fn preflight(t: &Tools<'_>) -> Result<(), Fail> {
    let step = StepLog::new("staging-preflight");
    // Where the manifests are: no file's contents read, so that a hostile
    // file cannot stop the put-back below (SPEC 10).
    let m = manifests::placement(t.root);
    let mount = || crate::node::staging::mount_mismatch(t.root);
    if let Some((phase, why)) = renew::preflight_refusal(&m, mount) {
        return Err(fail(phase, why));
    }
    for (c, v) in &m.manifests {
        if v.runbook_staged && !v.active {
            let dirs = Dirs::open(t.root, false)
                .map_err(|e| fail(Phase::StagingConflict, e.to_string()))?;
            match StagingGuard::put_back_left(&dirs, *c)
                .map_err(|e| fail(Phase::StagingConflict, e.to_string()))?
            {
                Restore::Conflict(msg) => return Err(fail(Phase::StagingConflict, msg)),
                _ => tracing::info!(
                    component = c.name(),
                    "restored a manifest an interrupted run left staged"
                ),
            }
        }
    }
    // Then what `manifests/` holds, within the bounds (SPEC 10, "Bounded
    // reads"): a file over one is refused as hostile, naming it, before
    // anything of the renewal is done.
    let mut hostile = manifests::inspect(t.root).hostile;
    hostile.extend(crate::node::kubelet::hostile_config(t.root));
    if !hostile.is_empty() {
        return Err(fail(Phase::StagingConflict, hostile.join("; ")));
    }
    drop(step);
    t.check_cancel(None)
}
