//! Where the local control plane answers and who asks it: each
//! component's port from its active manifest and the TLS identities the
//! probes present (re-read at each call: kubeadm renews them). Shared by the
//! gate (`tools::health`), etcd's questions (`tools::etcd`), the live
//! observation (`tools::live`) and the API watch (`tools::apiwatch`).

use crate::node::fsx::{FsError, Root, Trust, NODE_FILE_MAX};
use crate::node::manifests::{self, ManifestError};
use crate::node::paths::MANIFESTS_DIR;
use crate::rules::pki::{self, KubeconfigCert, PkiError};
use crate::tools::tlsprobe::TlsIdentity;

/// Why a port, an identity or a served file's certificate is not known.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Fs(#[from] FsError),
    /// The node path.
    #[error("{0} does not exist")]
    Missing(String),
    #[error("admin.conf: {0}")]
    AdminConf(PkiError),
    #[error("admin.conf has no embedded client key")]
    NoClientKey,
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The node path of a certificate file that does not parse.
    #[error("{path}: {pki}")]
    Certificate { path: String, pki: PkiError },
    /// A serving file's flag names no absolute path without `..`.
    #[error("{what} {flag}={value} is not an absolute path without ..")]
    BadPath {
        what: &'static str,
        flag: &'static str,
        value: String,
    },
    /// What the manifest declares could not be read without a guess.
    #[error(transparent)]
    Declared(#[from] crate::rules::declared::DeclError),
    /// A probe's host is another machine's: nothing is sent there (the
    /// apiserver's probe presents admin.conf's client certificate).
    #[error("its {probe} asks {addr}, not an address of this host")]
    ProbeNotLocal {
        probe: crate::rules::declared::ProbeSource,
        addr: std::net::SocketAddr,
    },
    /// A probe the runbook does not ask as written: plain HTTP where only
    /// TLS is asked (kube-apiserver's client certificate never goes in
    /// clear; the other two answer on TLS only).
    #[error("its {probe} is {url}: plain HTTP, not asked (kubeadm writes HTTPS)")]
    PlainHttp {
        probe: crate::rules::declared::ProbeSource,
        url: String,
    },
}

/// The node file `rel` (under the root), which must exist.
pub(crate) fn read(root: &Root, rel: &str) -> Result<Vec<u8>, TargetError> {
    root.read_file(rel, NODE_FILE_MAX, Trust::TypeOnly)?
        .ok_or_else(|| TargetError::Missing(crate::node::paths::node(rel)))
}

/// The identity to probe kube-apiserver with: pki/ca.crt and admin.conf's
/// client certificate and key (re-read each time: kubeadm renews them).
pub fn apiserver_identity(root: &Root) -> Result<TlsIdentity, TargetError> {
    let ca_pem = read(root, "etc/kubernetes/pki/ca.crt")?;
    let admin = read(root, "etc/kubernetes/admin.conf")?;
    let client_cert_pem =
        match pki::kubeconfig_client_cert(&admin).map_err(TargetError::AdminConf)? {
            KubeconfigCert::Embedded(p) => p,
            KubeconfigCert::File(p) => read(root, p.trim_start_matches('/'))?,
        };
    let client_key_pem = pki::kubeconfig_client_key(&admin)
        .map_err(TargetError::AdminConf)?
        .ok_or(TargetError::NoClientKey)?;
    Ok(TlsIdentity {
        ca_pem,
        client_cert_pem,
        client_key_pem,
    })
}

/// The identity to probe etcd's client port with (healthcheck client).
pub fn etcd_identity(root: &Root) -> Result<TlsIdentity, TargetError> {
    Ok(TlsIdentity {
        ca_pem: read(root, "etc/kubernetes/pki/etcd/ca.crt")?,
        client_cert_pem: read(root, "etc/kubernetes/pki/etcd/healthcheck-client.crt")?,
        client_key_pem: read(root, "etc/kubernetes/pki/etcd/healthcheck-client.key")?,
    })
}

/// A certificate a component serves, as its flag names it (SPEC 12, v1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// kube-apiserver `--tls-cert-file`.
    Apiserver,
    /// etcd `--cert-file`, on its client port.
    EtcdClient,
    /// etcd `--peer-cert-file`, on its peer port.
    EtcdPeer,
}

impl Serving {
    /// The component, its flag, and kubeadm's file (what serves when the
    /// flag is unset, as kubeadm writes the manifest).
    fn flag(
        self,
    ) -> (
        &'static str,
        &'static str,
        crate::rules::flags::Syntax,
        &'static str,
    ) {
        use crate::rules::flags::Syntax::{GoFlag, Pflag};
        match self {
            Serving::Apiserver => (
                "kube-apiserver",
                "--tls-cert-file",
                Pflag,
                "etc/kubernetes/pki/apiserver.crt",
            ),
            Serving::EtcdClient => (
                "etcd",
                "--cert-file",
                GoFlag,
                "etc/kubernetes/pki/etcd/server.crt",
            ),
            Serving::EtcdPeer => (
                "etcd",
                "--peer-cert-file",
                GoFlag,
                "etc/kubernetes/pki/etcd/peer.crt",
            ),
        }
    }
}

impl Serving {
    /// kubeadm's file (relative to the root).
    pub fn kubeadm_file(self) -> &'static str {
        self.flag().3
    }
}

/// The file (relative to the root) a component serves, from its active
/// manifest's flag (kubeadm's file when unset); read under the root,
/// no-follow, like every node file.
pub fn serving_file(root: &Root, s: Serving) -> Result<String, TargetError> {
    use crate::rules::component::Component;
    let (_, _, _, default) = s.flag();
    let d = match s {
        Serving::Apiserver => declared(root, Component::KubeApiserver)?,
        Serving::EtcdClient | Serving::EtcdPeer => declared(root, Component::Etcd)?,
    };
    let named = match (s, &d.flags) {
        (Serving::Apiserver, crate::rules::declared::Flags::Server(f)) => f.tls_cert_file.clone(),
        (Serving::EtcdClient, crate::rules::declared::Flags::Etcd(e)) => e.cert_file.clone(),
        (Serving::EtcdPeer, crate::rules::declared::Flags::Etcd(e)) => e.peer_cert_file.clone(),
        _ => None,
    };
    let Some(v) = named else {
        return Ok(default.to_string());
    };
    // An absolute path without `..` (the reader refuses others), as a node
    // path relative to the root; `.` and repeated `/` dropped.
    let rel = v
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/");
    if rel.is_empty() {
        let (what, flag, _, _) = s.flag();
        return Err(TargetError::BadPath {
            what,
            flag,
            value: v,
        });
    }
    // Under an accepted `pki` link's target (kubespray's flags name
    // `/etc/kubernetes/ssl/...`): the same file as under `pki/`, which
    // kubeadm renews.
    if let Some(rest) = root
        .pki_link_target()
        .and_then(|t| rel.strip_prefix(t))
        .and_then(|r| r.strip_prefix('/'))
    {
        return Ok(format!("{}/{rest}", crate::node::paths::PKI_DIR));
    }
    Ok(rel.to_string())
}

/// A component as its active manifest declares it (SPEC 12, v1.3).
pub fn declared(
    root: &Root,
    c: crate::rules::component::Component,
) -> Result<crate::rules::declared::Declared, TargetError> {
    let m = read(root, &format!("{MANIFESTS_DIR}/{}", c.manifest_file()))?;
    Ok(crate::rules::declared::read(c, &m)?)
}

/// Where kube-apiserver, kube-controller-manager or kube-scheduler is
/// asked its health, as the kubelet probes it (SPEC 12, v1.3): its
/// static pod's probe (host, port, path; an unspecified or absent host
/// as section 12 says), over TLS, on an address of this host only.
pub fn health_probe(
    d: &crate::rules::declared::Declared,
) -> Result<crate::rules::declared::Probe, TargetError> {
    use crate::rules::declared::Scheme;
    let p = d
        .probe
        .as_ref()
        .map_err(|e| TargetError::Declared(e.clone()))?;
    if p.scheme == Scheme::Http {
        return Err(TargetError::PlainHttp {
            probe: p.source,
            url: p.url(),
        });
    }
    let ip = p.target.ip();
    if !ip.is_loopback() && !crate::node::host::is_local(ip) {
        return Err(TargetError::ProbeNotLocal {
            probe: p.source,
            addr: p.target,
        });
    }
    Ok(p.clone())
}

/// kube-apiserver's secure port, from its active manifest.
pub fn apiserver_port(root: &Root) -> Result<u16, TargetError> {
    let m = read(root, &format!("{MANIFESTS_DIR}/kube-apiserver.yaml"))?;
    Ok(manifests::apiserver_secure_port(&m)?)
}

/// Where kube-apiserver is asked, from its active manifest: its
/// `--bind-address` (an unspecified one, and none, on its family's
/// loopback) at its `--secure-port` (SPEC 12, v1.3).
pub fn apiserver_address(root: &Root) -> Result<std::net::SocketAddr, TargetError> {
    let d = declared(root, crate::rules::component::Component::KubeApiserver)?;
    let f = d
        .server()
        .ok_or_else(|| TargetError::Missing("kube-apiserver's flags".to_string()))?;
    let ip = match f.bind_address {
        Some(ip) if !ip.is_unspecified() => ip,
        Some(ip) => crate::rules::declared::loopback_of(ip),
        None => std::net::Ipv4Addr::LOCALHOST.into(),
    };
    Ok((ip, f.secure_port).into())
}

/// The TLS name an address is verified for: the address asked (kubeadm's
/// etcd certificates name both loopbacks and the node's addresses); empty
/// when there is no address (the question then fails on that).
pub fn ip_name(addr: &Result<std::net::SocketAddr, TargetError>) -> String {
    addr.as_ref()
        .map(|a| a.ip().to_string())
        .unwrap_or_default()
}

/// etcd's flags, from its active manifest.
fn etcd_flags(root: &Root) -> Result<crate::rules::declared::EtcdFlags, TargetError> {
    let d = declared(root, crate::rules::component::Component::Etcd)?;
    d.etcd()
        .cloned()
        .ok_or_else(|| TargetError::Missing("etcd's flags".to_string()))
}

/// Where etcd is asked its own questions, from its active manifest's
/// `--listen-client-urls` (`declared::etcd_client_target`: loopback of
/// either family first, else an address of this host; SPEC 12, v1.3).
pub fn etcd_client(root: &Root) -> Result<std::net::SocketAddr, TargetError> {
    let e = etcd_flags(root)?;
    Ok(crate::rules::declared::etcd_client_target(
        &e,
        &crate::node::host::addresses(),
    )?)
}

/// etcd's peer port as its manifest's first https `--listen-peer-urls`
/// URL names it (shown beside what it serves, asked or not).
pub fn etcd_peer_port(root: &Root) -> Result<u16, TargetError> {
    let e = etcd_flags(root)?;
    e.listen_peer_urls
        .iter()
        .find(|u| u.scheme == crate::rules::declared::Scheme::Https)
        .map(|u| u.port)
        .ok_or_else(|| {
            TargetError::Missing("an https URL in etcd's --listen-peer-urls".to_string())
        })
}

/// Where etcd's peer port is asked, from its active manifest's
/// `--listen-peer-urls`: loopback or an address of this host only
/// (`declared::etcd_peer_target`).
pub fn etcd_peer(root: &Root) -> Result<std::net::SocketAddr, TargetError> {
    let e = etcd_flags(root)?;
    Ok(crate::rules::declared::etcd_peer_target(
        &e,
        &crate::node::host::addresses(),
    )?)
}
