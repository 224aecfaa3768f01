//! PKI reading (pure, on bytes): PEM/DER certificates, the client certificate
//! embedded in a kubeconfig, signature chain to a CA, key/certificate match,
//! sha256 fingerprints, and the fixed list of leaves and CAs of SPEC section 2.
//! File I/O lives elsewhere (`node_pki`). Never puts key material in an error.

use time::OffsetDateTime;

/// The three CAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CaId {
    Kubernetes,
    Etcd,
    FrontProxy,
}

impl CaId {
    pub const ALL: [CaId; 3] = [CaId::Kubernetes, CaId::Etcd, CaId::FrontProxy];
    /// The `caSHA256` key, relative to pki/: `ca.crt`, `etcd/ca.crt`, `front-proxy-ca.crt`.
    pub fn key(self) -> &'static str {
        match self {
            CaId::Kubernetes => "ca.crt",
            CaId::Etcd => "etcd/ca.crt",
            CaId::FrontProxy => "front-proxy-ca.crt",
        }
    }
    /// kubeadm's name: `ca`, `etcd-ca`, `front-proxy-ca`.
    pub fn name(self) -> &'static str {
        match self {
            CaId::Kubernetes => "ca",
            CaId::Etcd => "etcd-ca",
            CaId::FrontProxy => "front-proxy-ca",
        }
    }
    /// Node path relative to the root, e.g. `etc/kubernetes/pki/ca.crt`.
    pub fn cert_path(self) -> String {
        format!("etc/kubernetes/pki/{}", self.key())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    /// A PEM file with a `.key` beside it.
    Pem,
    /// A kubeconfig with `client-certificate-data` / `client-key-data`.
    Kubeconfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafSpec {
    /// kubeadm's name: `apiserver`, `etcd-server`, `admin.conf`, ...
    pub name: &'static str,
    /// Node path relative to the root, e.g. `etc/kubernetes/pki/apiserver.crt`.
    pub path: &'static str,
    /// For `Pem`: the private key path; for `Kubeconfig`: same as `path`.
    pub key_path: &'static str,
    pub kind: LeafKind,
    pub ca: CaId,
    /// Only `super-admin.conf` may be missing.
    pub optional: bool,
}

/// Every leaf of SPEC section 2, in a fixed order (PEM leaves first, then the
/// kubeconfigs: admin, super-admin, controller-manager, scheduler).
pub const LEAVES: [LeafSpec; 11] = [
    pem(
        "apiserver",
        "etc/kubernetes/pki/apiserver.crt",
        "etc/kubernetes/pki/apiserver.key",
        CaId::Kubernetes,
    ),
    pem(
        "apiserver-kubelet-client",
        "etc/kubernetes/pki/apiserver-kubelet-client.crt",
        "etc/kubernetes/pki/apiserver-kubelet-client.key",
        CaId::Kubernetes,
    ),
    pem(
        "apiserver-etcd-client",
        "etc/kubernetes/pki/apiserver-etcd-client.crt",
        "etc/kubernetes/pki/apiserver-etcd-client.key",
        CaId::Etcd,
    ),
    pem(
        "front-proxy-client",
        "etc/kubernetes/pki/front-proxy-client.crt",
        "etc/kubernetes/pki/front-proxy-client.key",
        CaId::FrontProxy,
    ),
    pem(
        "etcd-server",
        "etc/kubernetes/pki/etcd/server.crt",
        "etc/kubernetes/pki/etcd/server.key",
        CaId::Etcd,
    ),
    pem(
        "etcd-peer",
        "etc/kubernetes/pki/etcd/peer.crt",
        "etc/kubernetes/pki/etcd/peer.key",
        CaId::Etcd,
    ),
    pem(
        "etcd-healthcheck-client",
        "etc/kubernetes/pki/etcd/healthcheck-client.crt",
        "etc/kubernetes/pki/etcd/healthcheck-client.key",
        CaId::Etcd,
    ),
    kubeconfig("admin.conf", "etc/kubernetes/admin.conf", false),
    kubeconfig("super-admin.conf", "etc/kubernetes/super-admin.conf", true),
    kubeconfig(
        "controller-manager.conf",
        "etc/kubernetes/controller-manager.conf",
        false,
    ),
    kubeconfig("scheduler.conf", "etc/kubernetes/scheduler.conf", false),
];

const fn pem(name: &'static str, path: &'static str, key_path: &'static str, ca: CaId) -> LeafSpec {
    LeafSpec {
        name,
        path,
        key_path,
        kind: LeafKind::Pem,
        ca,
        optional: false,
    }
}

const fn kubeconfig(name: &'static str, path: &'static str, optional: bool) -> LeafSpec {
    LeafSpec {
        name,
        path,
        key_path: path,
        kind: LeafKind::Kubeconfig,
        ca: CaId::Kubernetes,
        optional,
    }
}

/// A parsed X.509 certificate: what the runbook reports and checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCert {
    pub der: Vec<u8>,
    /// RFC 4514-ish, e.g. `CN=kube-apiserver`.
    pub subject: String,
    pub issuer: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
    /// lowercase hex
    pub serial: String,
    /// `rsa`, `ecdsa`, or another short name.
    pub key_algorithm: String,
    pub is_ca: bool,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<String>,
}

/// Errors never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PkiError {
    #[error("no PEM CERTIFICATE block found")]
    NoCertificate,
    #[error("certificate does not parse: {0}")]
    BadCertificate(String),
    #[error("kubeconfig does not parse: {0}")]
    BadKubeconfig(String),
    #[error("private key does not parse: {0}")]
    BadKey(String),
}

/// The first `CERTIFICATE` block of a PEM file.
pub fn parse_pem_certificate(_bytes: &[u8]) -> Result<ParsedCert, PkiError> {
    todo!()
}

pub fn parse_der_certificate(_der: &[u8]) -> Result<ParsedCert, PkiError> {
    todo!()
}

/// Where a kubeconfig keeps the client certificate of its current context's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeconfigCert {
    /// `client-certificate-data`, decoded (PEM bytes).
    Embedded(Vec<u8>),
    /// `client-certificate: <path>` (not how kubeadm writes these four).
    File(String),
}

/// The client certificate of the kubeconfig's current-context user (or of
/// its only user when there is no current-context).
pub fn kubeconfig_client_cert(_yaml: &[u8]) -> Result<KubeconfigCert, PkiError> {
    todo!()
}

/// The client key (`client-key-data`, decoded PEM) of the same user; None when
/// the kubeconfig names a key file instead.
pub fn kubeconfig_client_key(_yaml: &[u8]) -> Result<Option<Vec<u8>>, PkiError> {
    todo!()
}

/// True when `leaf`'s signature verifies with `ca`'s public key (and the
/// issuer names match).
pub fn verify_signed_by(_leaf: &ParsedCert, _ca: &ParsedCert) -> bool {
    todo!()
}

/// True when the PEM private key (PKCS#1 RSA, SEC1 EC, or PKCS#8 of either)
/// belongs to the certificate's public key.
pub fn key_matches_cert(_cert: &ParsedCert, _key_pem: &[u8]) -> Result<bool, PkiError> {
    todo!()
}

/// sha256 as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
