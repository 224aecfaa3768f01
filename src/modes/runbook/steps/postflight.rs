//! Step 10: the postflight.

use crate::modes::runbook::*;

/// How long a recovery asks etcd's client port when etcd may lack quorum.
const CLIENT_LOOK: Duration = Duration::from_secs(2);

/// What a served certificate that is not the renewed one is called.
const NOT_RENEWED: &str = "does not serve the renewed certificate";

impl Run<'_> {
    /// StepLog 10.
    pub(in crate::modes::runbook) fn postflight(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("postflight");
        // Until the last restart is --settle old (SPEC 4 step 10, v1.2): a
        // component that crash-loops is caught by the gate after it,
        // without a fixed wait per component.
        if let Some(at) = self.last_restart {
            let until = at + self.env.g.settle;
            let wait = until.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                tracing::info!(
                    settle_ms = wait.as_millis() as u64,
                    "waiting until the last restart is --settle old"
                );
                health::sleep_until(
                    Instant::now() + self.env.cancel.bound(wait),
                    wait,
                    self.env.cancel,
                );
                self.env.check_cancel(None)?;
                self.last_gate = None;
            }
        }
        if self.phase.recovery {
            // No gate to pass (SPEC 11): the restarted containers still
            // run; the health is observed after the certificates below.
            self.stayed()?;
        } else {
            self.gate(self.env.g.health_timeout, None)
                .map_err(|mut f| {
                    // A restarted component that crashed since: its restart
                    // failed, wherever that was seen.
                    if !f.cancelled && !matches!(f.phase, Phase::Restart(_)) {
                        f.phase = Phase::Postflight;
                    }
                    f
                })?;
        }
        let now_ca = node_pki::ca_fingerprints(&node_pki::read_cas(self.env.root));
        if now_ca != self.phase.ca {
            return Err(fail(
                Phase::Postflight,
                "a CA fingerprint changed during the renewal",
            ));
        }
        let budget = self.env.g.health_timeout;
        self.serves_renewed(Component::KubeApiserver, budget)?;
        self.serves_renewed(Component::Etcd, budget)?;
        if self.phase.recovery {
            self.health_at_end()?;
        }
        Ok(())
    }

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
            Component::Etcd if self.phase.recovery => self.recovered_etcd_serves(budget),
            Component::Etcd => {
                self.etcd_client_served(budget)?;
                self.peer_served(budget)
            }
            _ => Ok(()),
        }
    }

    /// etcd in a recovery (SPEC 11): the peer port serves the renewed
    /// `peer.crt` (required: etcd serves its peers from the start); the
    /// client port serves the renewed `server.crt` when it answers, but a
    /// member without quorum does not answer its clients at all (etcd
    /// serves them only once it is ready, having joined a quorum), so no
    /// answer within [`CLIENT_LOOK`] is said, not a failure. A client port
    /// that answers with another certificate is.
    fn recovered_etcd_serves(&self, budget: Duration) -> Result<(), Fail> {
        self.peer_served(budget)?;
        match self.etcd_client_served(budget.min(CLIENT_LOOK)) {
            Err(f) if !f.cancelled && !f.message.contains(NOT_RENEWED) => {
                tracing::info!(
                    "etcd's client port does not answer yet ({}): etcd serves its clients once it has a quorum; reported, not required in a recovery",
                    f.message
                );
                Ok(())
            }
            other => other,
        }
    }

    /// etcd's client port (the manifest's client URL) serves the renewed
    /// `server.crt`, asked as the runbook's health checks ask it.
    fn etcd_client_served(&self, budget: Duration) -> Result<(), Fail> {
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
            return Err(fail(
                Phase::Postflight,
                format!("{what} {NOT_RENEWED} {}", crate::node::paths::node(disk)),
            ));
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

    /// Step 10, unless a signal came.
    pub(in crate::modes::runbook) fn postflight_step(&mut self) -> Result<(), Fail> {
        self.env.check_cancel(None)?;
        self.postflight()
    }
}
