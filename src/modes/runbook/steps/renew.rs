//! Step 8: kubeadm renews the leaves; verified, or rolled back.

use super::Step;
use crate::modes::runbook::{cancelled, Run};
use crate::node::oplog::StepLog;
use crate::node::{backup, node_pki};
use crate::rules::failure::{fail, Cause, Fail, Progress};
use crate::rules::outcome::Phase;
use crate::rules::receipt::with_tail;

impl Run<'_> {
    /// StepLog 8: record, back up, kubeadm, verify; roll back on any failure.
    pub(in crate::modes::runbook) fn renew(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("renew-certs");
        self.record(Progress::Renewing)?;
        crate::crash_point!("renew-after-phase-renewing");
        let (kind, name) = self.op.phase.backup_kind_name();
        let n = backup::create(self.env.root, &self.op.phase.state, kind, &name)
            .map_err(|e| fail(Phase::Backup, e.to_string()))?;
        tracing::info!(
            files = n,
            "backed up pki/ and the kubeconfigs to {}/{name}",
            kind
        );
        self.env.check_cancel(None)?;
        crate::crash_point!("renew-after-backup");
        let mut kubeadm_ok = false;
        let result = match self.env.rt.renew_certs() {
            Ok(out) if out.success() => {
                crate::crash_point!("renew-after-kubeadm");
                kubeadm_ok = true;
                node_pki::verify_renewed(
                    self.env.root,
                    self.env.now(),
                    self.env.g.threshold_days,
                    &self.op.phase.ca,
                )
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
            let restored = backup::restore(self.env.root, &self.op.phase.state, kind, &name);
            let tail = match restored {
                Ok(n) => format!("the backup was put back ({n} files rewritten)"),
                Err(e) => {
                    // kubeadm's certificates stay where the backup could
                    // not be put back.
                    self.report.resigned = kubeadm_ok;
                    format!("PUTTING THE BACKUP BACK FAILED: {e}")
                }
            };
            // The backup's fate survives the 512-byte cut of kubeadm's words.
            if self.env.cancel.is_cancelled() {
                let why = with_tail(&self.env.cancel.why(), "; ", &tail);
                return Err(Fail {
                    cause: Cause::Cancelled(why),
                    ..cancelled(self.env.cancel, None)
                });
            }
            return Err(fail(Phase::RenewCerts, with_tail(&why, "; ", &tail)));
        }
        self.report.resigned = true;
        tracing::info!("certificates renewed and verified");
        crate::crash_point!("renew-after-verify");
        Ok(())
    }

    /// Step 8, recorded: the restarts begin with etcd.
    pub(in crate::modes::runbook) fn renew_step(&mut self) -> Result<(), Fail> {
        // kubeadm rewrites the certificates: the gate is run again.
        self.last_gate = None;
        self.renew()?;
        let next = Step::Renew
            .records()
            .expect("the renewal records the restarts");
        self.record(next)
    }
}
