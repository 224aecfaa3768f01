//! Step 8: kubeadm renews the leaves; verified, or rolled back.

use super::Step;
use crate::modes::runbook::run::{cancelled, record, Seen, Tools};
use crate::node::node_pki;
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Cause, Fail};
use crate::rules::outcome::Phase;
use crate::rules::receipt::with_tail;
use crate::rules::resume::Progress;

/// What step 8 did: its result, and whether kubeadm's certificates stay on
/// the node (renewed, or a rollback that could not put the backup back).
pub(in crate::modes::runbook) struct Renewed {
    pub(in crate::modes::runbook) result: Result<(), Fail>,
    pub(in crate::modes::runbook) resigned: bool,
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
    let result = certs(op, t, &mut resigned).and_then(|()| {
        let next = Step::Renew
            .records()
            .expect("the renewal records the restarts");
        record(op, t, next)
    });
    Renewed { result, resigned }
}

/// Record `renewing`, back up, run kubeadm, verify; roll back on any
/// failure. `resigned`: kubeadm's certificates stay on the node.
fn certs(op: &mut Operation<'_>, t: &Tools<'_>, resigned: &mut bool) -> Result<(), Fail> {
    let _step = StepLog::new("renew-certs");
    record(op, t, Progress::Renewing)?;
    crate::crash_point!("renew-after-phase-renewing");
    let (to, n) = op
        .backup()
        .map_err(|e| fail(Phase::Backup, e.to_string()))?;
    tracing::info!(files = n, "backed up pki/ and the kubeconfigs to {to}");
    t.check_cancel(None)?;
    crate::crash_point!("renew-after-backup");
    let mut kubeadm_ok = false;
    let result = match t.rt.renew_certs() {
        Ok(out) if out.success() => {
            crate::crash_point!("renew-after-kubeadm");
            kubeadm_ok = true;
            node_pki::verify_renewed(t.root, t.now(), t.g.threshold_days, &op.phase.ca)
                .map_err(|e| e.to_string())
        }
        Ok(out) => Err(format!(
            "kubeadm certs renew all failed ({}): {}",
            crate::tools::proc::describe_exit(out.code),
            out.stderr_tail()
        )),
        Err(e) => Err(e.to_string()),
    };
    if let Err(why) = result {
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
            return Err(Fail {
                cause: Cause::Cancelled(why),
                ..cancelled(t.cancel, None)
            });
        }
        return Err(fail(Phase::RenewCerts, with_tail(&why, "; ", &tail)));
    }
    *resigned = true;
    tracing::info!("certificates renewed and verified");
    crate::crash_point!("renew-after-verify");
    Ok(())
}
