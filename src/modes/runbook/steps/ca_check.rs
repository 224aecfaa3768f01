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
        if let Some(why) = renew::ca_not_valid(&cas, self.env.now()) {
            return Err(fail(Phase::CaCheck, why));
        }
        let now = node_pki::ca_fingerprints(&cas);
        let none = BTreeMap::new();
        let expected = match self.env.req {
            Request::V2 { expect_ca, .. } => expect_ca,
            Request::Legacy { .. } => &none,
        };
        if let Some(why) = renew::ca_changed(&now, expected, &self.phase.ca) {
            return Err(fail(Phase::CaCheck, why));
        }
        self.phase.ca = CA_KEYS
            .iter()
            .filter_map(|k| now.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        Ok(())
    }
}
