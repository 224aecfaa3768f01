//! Step 8: kubeadm renews the leaves; verified, or rolled back.

use super::Step;
use crate::modes::runbook::*;

impl Run<'_> {
    /// StepLog 8's checks after kubeadm ran.
    pub(in crate::modes::runbook) fn verify_renewed(&self) -> Result<(), String> {
        let now = self.env.now();
        let pki = node_pki::read(self.env.root);
        let errors = pki.errors();
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        for l in &pki.leaves {
            let Some(cert) = &l.cert else { continue };
            // A leaf not valid yet would pass every other check and then
            // break the component it is restarted with.
            if cert.not_before > now {
                return Err(format!(
                    "{} is not valid until {} after kubeadm (the node's clock or kubeadm is wrong)",
                    l.spec.name,
                    clock::rfc3339(cert.not_before)
                ));
            }
            if node_pki::within_threshold(now, cert.not_after, self.env.g.threshold_days) {
                return Err(format!(
                    "{} still expires {} (within {} days) after kubeadm",
                    l.spec.name,
                    clock::rfc3339(cert.not_after),
                    self.env.g.threshold_days
                ));
            }
            if l.chains_to_ca != Some(true) {
                return Err(format!(
                    "{} is not signed by its CA {}",
                    l.spec.name,
                    l.spec.ca.name()
                ));
            }
            let key = match l.spec.kind {
                LeafKind::Pem => self
                    .env
                    .root
                    .read_file(
                        l.spec.key_path,
                        crate::node::fsx::NODE_FILE_MAX,
                        Trust::TypeOnly,
                    )
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| {
                        format!(
                            "{} does not exist",
                            crate::node::paths::node(l.spec.key_path)
                        )
                    })?,
                LeafKind::Kubeconfig => {
                    let conf = self
                        .env
                        .root
                        .read_file(
                            l.spec.path,
                            crate::node::fsx::NODE_FILE_MAX,
                            Trust::TypeOnly,
                        )
                        .map_err(|e| e.to_string())?
                        .unwrap_or_default();
                    pki::kubeconfig_client_key(&conf)
                        .map_err(|e| format!("{}: {e}", l.spec.name))?
                        .ok_or_else(|| format!("{} has no embedded client key", l.spec.name))?
                }
            };
            match pki::key_matches_cert(cert, &key) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(format!(
                        "the private key of {} does not match its certificate",
                        l.spec.name
                    ))
                }
                Err(e) => return Err(format!("the private key of {}: {e}", l.spec.name)),
            }
        }
        let now_ca = pki.ca_sha256();
        if now_ca != self.phase.ca {
            return Err("a CA changed while renewing: CAs are never rotated here".into());
        }
        Ok(())
    }

    /// StepLog 8: record, back up, kubeadm, verify; roll back on any failure.
    pub(in crate::modes::runbook) fn renew(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("renew-certs");
        self.record(Progress::Renewing)?;
        crate::crash_point!("renew-after-phase-renewing");
        let (kind, name) = self.phase.backup_kind_name();
        let n = backup::create(self.env.root, &self.phase.state, kind, &name)
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
                self.verify_renewed()
            }
            Ok(out) => Err(format!(
                "kubeadm certs renew all failed ({}): {}",
                crate::tools::proc::describe_exit(out.code),
                out.stderr_tail()
            )),
            Err(e) => Err(e.to_string()),
        };
        if let Err(why) = result {
            let restored = backup::restore(self.env.root, &self.phase.state, kind, &name);
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
