//! Step 8: kubeadm renews the leaves; verified, or rolled back.

use super::Step;
use crate::modes::runbook::run::{cancelled, record, Seen, Tools};
use crate::node::node_pki;
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Cause, Fail};
use crate::rules::files::LeafRenewal;
use crate::rules::leaf_proof::LeafFacts;
use crate::rules::outcome::Phase;
use crate::rules::receipt::with_tail;
use crate::rules::resume::Progress;

/// What step 8 did: its result, and whether kubeadm's certificates stay on
/// the node (renewed, or a rollback that could not put the backup back).
pub(in crate::modes::runbook) struct Renewed {
    pub(in crate::modes::runbook) result: Result<(), Fail>,
    pub(in crate::modes::runbook) resigned: bool,
    /// Each leaf proven renewed (empty unless the result is Ok).
    pub(in crate::modes::runbook) leaves: Vec<LeafRenewal>,
}

/// Step 8: record, back up, kubeadm, verify (a failure rolls back); then
/// record that the restarts begin with etcd. The gate that passed before
/// is forgotten: kubeadm rewrites the certificates.
pub(in crate::modes::runbook) fn renew(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    seen: &mut Seen,
) -> Renewed {
    seen.last_gate = None;
    let mut resigned = false;
    let mut leaves = Vec::new();
    let result = certs(op, t, &mut resigned).and_then(|proven| {
        leaves = proven;
        let next = Step::Renew
            .records()
            .expect("the renewal records the restarts");
        record(op, t, next)
    });
    Renewed {
        result,
        resigned,
        leaves,
    }
}

/// The leaves as this operation's backup holds them (before its first
/// kubeadm), for the proof after kubeadm (SPEC 4 step 8, "Leaf by leaf").
fn before_kubeadm(op: &Operation<'_>) -> Result<Vec<Option<LeafFacts>>, Fail> {
    let opened = op
        .backed_up()
        .map_err(|e| fail(Phase::Backup, e.to_string()))?
        .ok_or_else(|| {
            fail(
                Phase::Backup,
                "the backup just taken is not there".to_string(),
            )
        })?;
    node_pki::backed_up_leaves(&opened).map_err(|e| fail(Phase::Backup, e))
}

/// Record `renewing`, back up, run kubeadm, verify (each leaf proven
/// against the backup); roll back on any failure. `resigned`: kubeadm's
/// certificates stay on the node. Each leaf's record.
fn certs(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    resigned: &mut bool,
) -> Result<Vec<LeafRenewal>, Fail> {
    let _step = StepLog::new("renew-certs");
    record(op, t, Progress::Renewing)?;
    crate::crash_point!("renew-after-phase-renewing");
    let (to, n) = op
        .backup()
        .map_err(|e| fail(Phase::Backup, e.to_string()))?;
    tracing::info!(files = n, "backed up pki/ and the kubeconfigs to {to}");
    let before = before_kubeadm(op)?;
    t.check_cancel(None)?;
    crate::crash_point!("renew-after-backup");
    let mut kubeadm_ok = false;
    let result = match t.rt.renew_certs() {
        Ok(out) if out.success() => {
            crate::crash_point!("renew-after-kubeadm");
            kubeadm_ok = true;
            node_pki::verify_renewed(t.root, t.now(), t.g.threshold_days, &op.phase.ca, &before)
                .map_err(|e| e.to_string())
        }
        Ok(out) => Err(format!(
            "kubeadm certs renew all failed ({}): {}",
            crate::tools::proc::describe_exit(out.code),
            out.stderr_tail()
        )),
        Err(e) => Err(e.to_string()),
    };
    let renewal = match result {
        Ok(r) => r,
        Err(why) => return Err(roll_back(op, t, resigned, kubeadm_ok, why)),
    };
    *resigned = true;
    for note in &renewal.notes {
        tracing::warn!("{note}");
    }
    tracing::info!(
        leaves = renewal.leaves.len(),
        "certificates renewed and verified, leaf by leaf"
    );
    crate::crash_point!("renew-after-verify");
    Ok(renewal.leaves)
}

/// Put the backup back after kubeadm failed or its leaves were refused:
/// the failure, with what the rollback did.
fn roll_back(
    op: &Operation<'_>,
    t: &Tools<'_>,
    resigned: &mut bool,
    kubeadm_ok: bool,
    why: String,
) -> Fail {
    let tail = match op.rollback() {
        Ok(n) => format!("the backup was put back ({n} files rewritten)"),
        Err(e) => {
            // kubeadm's certificates stay where the backup could not
            // be put back.
            *resigned = kubeadm_ok;
            format!("PUTTING THE BACKUP BACK FAILED: {e}")
        }
    };
    // The backup's fate survives the 512-byte cut of kubeadm's words.
    if t.cancel.is_cancelled() {
        let why = with_tail(&t.cancel.why(), "; ", &tail);
        return Fail {
            cause: Cause::Cancelled(why),
            ..cancelled(t.cancel, None)
        };
    }
    fail(Phase::RenewCerts, with_tail(&why, "; ", &tail))
}
