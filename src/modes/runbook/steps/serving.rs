//! What a component serves is the renewed certificate on disk: asked by
//! the postflight, and after each of a recovery's restarts.

use crate::modes::runbook::*;

impl Run<'_> {
    /// What `c` serves is the renewed certificate on disk (SPEC 4 step 10):
    /// kube-apiserver its `apiserver.crt` on its secure port, etcd its
    /// `server.crt` on its client port and `peer.crt` on its peer port;
    /// nothing for the other two. One look, each probe within `budget`
    /// (and the controller's deadline); a failure is the postflight's.
    pub(in crate::modes::runbook) fn serves_renewed(
        &self,
        c: Component,
        budget: Duration,
    ) -> Result<(), Fail> {
        match c {
            Component::KubeApiserver => self.served(
                "kube-apiserver",
                targets::apiserver_port(self.env.root),
                "kubernetes",
                targets::apiserver_identity(self.env.root),
                "etc/kubernetes/pki/apiserver.crt",
                budget,
            ),
            Component::Etcd => (self.table().way().etcd_serves)(self, budget),
            _ => Ok(()),
        }
    }

    /// The renewal's etcd serves the renewed certificates on its client
    /// and its peer port.
    pub(in crate::modes::runbook) fn etcd_serves(&self, budget: Duration) -> Result<(), Fail> {
        self.etcd_client_served(budget)?;
        self.peer_served(budget)
    }

    /// etcd's client port (the manifest's client URL) serves the renewed
    /// `server.crt`, asked as the runbook's health checks ask it.
    pub(in crate::modes::runbook) fn etcd_client_served(
        &self,
        budget: Duration,
    ) -> Result<(), Fail> {
        self.served(
            "etcd",
            targets::etcd_port(self.env.root),
            "127.0.0.1",
            targets::etcd_identity(self.env.root),
            "etc/kubernetes/pki/etcd/server.crt",
            budget,
        )
    }

    /// The TLS peer certificate on `port`, verified for `name` with `id`,
    /// is the file `disk`.
    fn served(
        &self,
        what: &str,
        port: Result<u16, String>,
        name: &str,
        id: Result<crate::tools::tlsprobe::TlsIdentity, String>,
        disk: &str,
        budget: Duration,
    ) -> Result<(), Fail> {
        let port = port.map_err(|e| fail(Phase::Postflight, e))?;
        let id = id.map_err(|e| fail(Phase::Postflight, e))?;
        // Never past the controller's deadline (SPEC 4, v1.1).
        self.env.check_cancel(None)?;
        let r = self
            .env
            .rt
            .probe(
                port,
                name,
                &id,
                self.env.now(),
                None,
                self.env.cancel.bound(budget),
            )
            .map_err(|e| fail(Phase::Postflight, format!("{what}: {e}")))?;
        let disk_pem = self
            .env
            .root
            .read_file(disk, crate::node::fsx::NODE_FILE_MAX, Trust::TypeOnly)
            .map_err(|e| fail(Phase::Postflight, e.to_string()))?
            .unwrap_or_default();
        let disk_der = pki::parse_pem_certificate(&disk_pem)
            .map_err(|e| fail(Phase::Postflight, e.to_string()))?
            .der;
        if r.peer_cert != disk_der {
            return Err(Fail {
                phase: Phase::Postflight,
                cause: Cause::NotRenewed {
                    what: what.to_string(),
                    path: crate::node::paths::node(disk),
                },
                component: None,
            });
        }
        Ok(())
    }

    /// Postflight (SPEC 4 step 10, v1.2): etcd's peer port (its
    /// `--listen-peer-urls`) presents the renewed `peer.crt`, asked as a
    /// peer asks, presenting `peer.crt`. etcd reloads its files per
    /// connection, so this proves the renewed files load, not the restart
    /// (the new container IDs prove that). A peer URL on no address of this
    /// host cannot be asked here: said in the log, not a failure.
    pub(in crate::modes::runbook) fn peer_served(&self, budget: Duration) -> Result<(), Fail> {
        let pf = |m: String| fail(Phase::Postflight, m);
        let manifest = self
            .env
            .root
            .read_file(
                &format!("{}/etcd.yaml", crate::node::paths::MANIFESTS_DIR),
                crate::node::fsx::NODE_FILE_MAX,
                Trust::TypeOnly,
            )
            .map_err(|e| pf(e.to_string()))?
            .ok_or_else(|| pf("etcd.yaml is not in manifests/".into()))?;
        let mut addr = manifests::etcd_peer_address(&manifest).map_err(pf)?;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        if !crate::tools::live::is_local(addr.ip()) {
            tracing::warn!(
                peer = %addr,
                "etcd's peer URL is not an address of this host: its certificate not asked"
            );
            return Ok(());
        }
        let read = |rel: &str| -> Result<Vec<u8>, Fail> {
            self.env
                .root
                .read_file(rel, crate::node::fsx::NODE_FILE_MAX, Trust::TypeOnly)
                .map_err(|e| pf(e.to_string()))?
                .ok_or_else(|| pf(format!("{} does not exist", crate::node::paths::node(rel))))
        };
        let peer_pem = read("etc/kubernetes/pki/etcd/peer.crt")?;
        let id = crate::tools::tlsprobe::TlsIdentity {
            ca_pem: read("etc/kubernetes/pki/etcd/ca.crt")?,
            client_cert_pem: peer_pem.clone(),
            client_key_pem: read("etc/kubernetes/pki/etcd/peer.key")?,
        };
        self.env.check_cancel(None)?;
        let name = addr.ip().to_string();
        let a = self.env.rt.ask(&crate::tools::tlsprobe::Question {
            host: addr.ip(),
            port: addr.port(),
            trust: crate::tools::tlsprobe::Trust::Pinned {
                id: &id,
                name: &name,
            },
            now: self.env.now(),
            path: None,
            body: None,
            budget: self.env.cancel.bound(budget),
        });
        if let Err(e) = &a.reply {
            return Err(pf(format!("etcd's peer port {addr}: {e}")));
        }
        let disk = pki::parse_pem_certificate(&peer_pem)
            .map_err(|e| pf(e.to_string()))?
            .der;
        if a.presented.as_deref() != Some(&disk[..]) || !a.proven {
            return Err(pf(format!(
                "etcd's peer port {addr} does not serve the renewed certificate /etc/kubernetes/pki/etcd/peer.crt"
            )));
        }
        tracing::info!(peer = %addr, "etcd's peer port serves the renewed peer.crt");
        Ok(())
    }
}
