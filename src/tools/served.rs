//! What a component serves is the renewed certificate on disk (SPEC 4
//! step 10, SPEC 11): kube-apiserver its `apiserver.crt` on its secure
//! port, etcd its `server.crt` on its client port and `peer.crt` on its
//! peer port. One look each, within a budget and the controller's
//! deadline; the renewal's postflight and a recovery's restarts ask it.

use crate::node::fsx::{Root, Trust, NODE_FILE_MAX};
use crate::rules::pki;
use crate::tools::runtime::Runtime;
use crate::tools::signals::Cancel;
use crate::tools::targets::{self, Serving};
use crate::tools::tlsprobe::{Question, TlsIdentity};
use std::time::Duration;

/// A serving file kubeadm does not renew (SPEC 12, v1.3): said in the log,
/// never asked to change; None for kubeadm's own.
fn unmanaged(what: &str, rel: &str) -> Option<()> {
    let node = crate::node::paths::node(rel);
    if crate::rules::live::kubeadm_renews(&node) {
        return None;
    }
    tracing::warn!(
        "{}: not asked to change",
        crate::rules::live::unmanaged_words(what, &node)
    );
    Some(())
}

/// Why a component was not seen serving its renewed certificate.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotServed {
    /// A signal or the controller's deadline came first (the caller says
    /// why, as the flag says it).
    #[error("cancelled")]
    Cancelled,
    /// It could not be asked, or did not answer: why.
    #[error("{0}")]
    Said(String),
    /// `what` serves a certificate that is not the renewed file `path` (a
    /// node path).
    #[error("{what} does not serve the renewed certificate {path}")]
    NotRenewed { what: String, path: String },
}

/// Who asks: the tools, the node, the signal flag, the run's clock.
#[derive(Clone, Copy)]
pub(crate) struct Asker<'a> {
    pub rt: &'a dyn Runtime,
    pub root: &'a Root,
    pub cancel: &'a Cancel,
    pub clock: &'a crate::rules::clock::Clock,
}

impl Asker<'_> {
    fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    fn check_cancel(&self) -> Result<(), NotServed> {
        if self.cancel.is_cancelled() {
            Err(NotServed::Cancelled)
        } else {
            Ok(())
        }
    }

    /// kube-apiserver serves the renewed `apiserver.crt` on its secure port.
    pub(crate) fn apiserver(&self, budget: Duration) -> Result<(), NotServed> {
        self.served(
            "kube-apiserver",
            targets::apiserver_address(self.root),
            "kubernetes",
            targets::apiserver_identity(self.root),
            targets::serving_file(self.root, Serving::Apiserver),
            budget,
        )
    }

    /// etcd's client port (the manifest's client URL this host asks,
    /// either family) serves the renewed `server.crt`, asked as the
    /// runbook's health checks ask it.
    pub(crate) fn etcd_client(&self, budget: Duration) -> Result<(), NotServed> {
        let addr = targets::etcd_client(self.root);
        let name = targets::ip_name(&addr);
        self.served(
            "etcd",
            addr,
            &name,
            targets::etcd_identity(self.root),
            targets::serving_file(self.root, Serving::EtcdClient),
            budget,
        )
    }

    /// The TLS peer certificate on `port`, verified for `name` with `id`,
    /// is the file `disk`.
    fn served(
        &self,
        what: &str,
        addr: Result<std::net::SocketAddr, crate::tools::targets::TargetError>,
        name: &str,
        id: Result<TlsIdentity, crate::tools::targets::TargetError>,
        disk: Result<String, crate::tools::targets::TargetError>,
        budget: Duration,
    ) -> Result<(), NotServed> {
        let disk = disk.map_err(|e| NotServed::Said(e.to_string()))?;
        if unmanaged(what, &disk).is_some() {
            return Ok(());
        }
        let disk = disk.as_str();
        let addr = addr.map_err(|e| NotServed::Said(e.to_string()))?;
        let id = id.map_err(|e| NotServed::Said(e.to_string()))?;
        // Never past the controller's deadline (SPEC 4, v1.1).
        self.check_cancel()?;
        let r = self
            .rt
            .probe(addr, name, &id, self.now(), None, self.cancel.bound(budget))
            .map_err(|e| NotServed::Said(format!("{what}: {e}")))?;
        let disk_pem = self
            .root
            .read_file(disk, NODE_FILE_MAX, Trust::TypeOnly)
            .map_err(|e| NotServed::Said(e.to_string()))?
            .unwrap_or_default();
        let disk_der = pki::parse_pem_certificate(&disk_pem)
            .map_err(|e| NotServed::Said(e.to_string()))?
            .der;
        if r.peer_cert != disk_der {
            return Err(NotServed::NotRenewed {
                what: what.to_string(),
                path: crate::node::paths::node(disk),
            });
        }
        Ok(())
    }

    /// etcd's peer port (its `--listen-peer-urls`) presents the renewed
    /// `peer.crt`, asked as a peer asks, presenting `peer.crt` (SPEC 4
    /// step 10, v1.2). etcd reloads its files per connection, so this
    /// proves the renewed files load, not the restart (the new container
    /// IDs prove that). A peer URL on no address of this host cannot be
    /// asked here: said in the log, not a failure.
    pub(crate) fn etcd_peer(&self, budget: Duration) -> Result<(), NotServed> {
        let pf = NotServed::Said;
        let addr = match crate::tools::targets::etcd_peer(self.root) {
            Ok(a) => a,
            Err(crate::tools::targets::TargetError::Declared(
                e @ crate::rules::declared::DeclError::NoPeerUrl { .. },
            )) => {
                tracing::warn!(
                    why = %e,
                    "etcd's peer URL is not an address of this host: its certificate not asked"
                );
                return Ok(());
            }
            Err(e) => return Err(pf(e.to_string())),
        };
        let read = |rel: &str| -> Result<Vec<u8>, NotServed> {
            self.root
                .read_file(rel, NODE_FILE_MAX, Trust::TypeOnly)
                .map_err(|e| pf(e.to_string()))?
                .ok_or_else(|| pf(format!("{} does not exist", crate::node::paths::node(rel))))
        };
        let served_file =
            targets::serving_file(self.root, Serving::EtcdPeer).map_err(|e| pf(e.to_string()))?;
        if unmanaged("etcd's peer port", &served_file).is_some() {
            return Ok(());
        }
        let peer_pem = read("etc/kubernetes/pki/etcd/peer.crt")?;
        let id = TlsIdentity {
            ca_pem: read("etc/kubernetes/pki/etcd/ca.crt")?,
            client_cert_pem: peer_pem.clone(),
            client_key_pem: read("etc/kubernetes/pki/etcd/peer.key")?,
        };
        self.check_cancel()?;
        let name = addr.ip().to_string();
        let a = self.rt.ask(&Question {
            host: addr.ip(),
            port: addr.port(),
            trust: crate::tools::tlsprobe::Trust::Pinned {
                id: &id,
                name: &name,
            },
            now: self.now(),
            path: None,
            body: None,
            budget: self.cancel.bound(budget),
        });
        if let Err(e) = &a.reply {
            return Err(pf(format!("etcd's peer port {addr}: {e}")));
        }
        // Compared with the file its flag names (the view compares the same).
        let disk = pki::parse_pem_certificate(&read(&served_file)?)
            .map_err(|e| pf(e.to_string()))?
            .der;
        let file = crate::node::paths::node(&served_file);
        if a.presented.as_deref() != Some(&disk[..]) || !a.proven {
            return Err(pf(format!(
                "etcd's peer port {addr} does not serve the renewed certificate {file}"
            )));
        }
        tracing::info!(peer = %addr, "etcd's peer port serves the renewed {file}");
        Ok(())
    }
}
