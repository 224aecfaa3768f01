//! Step 5: the CA fingerprints.

use crate::modes::runbook::*;

impl Run<'_> {
    /// StepLog 5: the CA fingerprints.
    pub(in crate::modes::runbook) fn ca_check(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("ca-check");
        let cas = node_pki::read_cas(self.env.root);
        if let Some(e) = cas.iter().find_map(|c| c.error.clone()) {
            return Err(fail(Phase::CaCheck, e));
        }
        // The CAs are what every renewed leaf is signed with: a CA certificate
        // or key that someone other than root can replace is refused before
        // kubeadm signs anything with it (root-owned, not group/world
        // writable; a missing key, as with an external CA, is kubeadm's to
        // report). --check and --status-only read them as before.
        for ca in &cas {
            let cert = ca.id.cert_path();
            let key = cert.replace(".crt", ".key");
            for rel in [cert, key] {
                if let Err(e) = self.env.root.read_file(&rel, NODE_FILE_MAX, Trust::Strict) {
                    return Err(fail(
                        Phase::CaCheck,
                        format!("CA {}: {e}; refusing to renew leaves under it", ca.id.key()),
                    ));
                }
            }
        }
        // CAs are never rotated here: leaves renewed under a CA that is not
        // valid now could never be trusted.
        let clock_now = self.env.now();
        for ca in &cas {
            let Some(cert) = &ca.cert else { continue };
            let path = crate::node::paths::node(&ca.id.cert_path());
            if cert.not_after <= clock_now {
                return Err(fail(
                    Phase::CaCheck,
                    format!(
                        "CA {} ({path}) expired at {}: CAs are never renewed here; rotate it first",
                        ca.id.key(),
                        clock::rfc3339(cert.not_after)
                    ),
                ));
            }
            if cert.not_before > clock_now {
                return Err(fail(
                    Phase::CaCheck,
                    format!(
                        "CA {} ({path}) is not valid until {}: check the node's clock",
                        ca.id.key(),
                        clock::rfc3339(cert.not_before)
                    ),
                ));
            }
        }
        let now = node_pki::ca_fingerprints(&cas);
        let expected = match self.env.req {
            Request::V2 { expect_ca, .. } => expect_ca.iter().collect(),
            Request::Legacy { .. } => Vec::new(),
        };
        for (name, want) in expected {
            if now.get(name) != Some(want) {
                return Err(fail(
                    Phase::CaCheck,
                    format!(
                        "CA {name} has sha256 {}, expected {want}",
                        now.get(name).cloned().unwrap_or_default()
                    ),
                ));
            }
        }
        for (name, want) in &self.phase.ca {
            if now.get(name) != Some(want) {
                return Err(fail(
                    Phase::CaCheck,
                    format!(
                        "CA {name} changed since the resumed work began: sha256 {} now, {want} recorded",
                        now.get(name).cloned().unwrap_or_default()
                    ),
                ));
            }
        }
        self.phase.ca = CA_KEYS
            .iter()
            .filter_map(|k| now.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        Ok(())
    }
}
