//! Where the local control plane answers and who asks it: each
//! component's port from its active manifest and the TLS identities the
//! probes present (re-read at each call: kubeadm renews them). Shared by the
//! gate (`tools::health`), etcd's questions (`tools::etcd`), the live
//! observation (`tools::live`) and the API watch (`tools::apiwatch`).

use crate::node::fsx::{Root, Trust, NODE_FILE_MAX};
use crate::node::manifests;
use crate::node::paths::MANIFESTS_DIR;
use crate::rules::pki::{self, KubeconfigCert};
use crate::tools::tlsprobe::TlsIdentity;

fn read(root: &Root, rel: &str) -> Result<Vec<u8>, String> {
    root.read_file(rel, NODE_FILE_MAX, Trust::TypeOnly)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} does not exist", crate::node::paths::node(rel)))
}

/// The identity to probe kube-apiserver with: pki/ca.crt and admin.conf's
/// client certificate and key (re-read each time: kubeadm renews them).
pub fn apiserver_identity(root: &Root) -> Result<TlsIdentity, String> {
    let ca_pem = read(root, "etc/kubernetes/pki/ca.crt")?;
    let admin = read(root, "etc/kubernetes/admin.conf")?;
    let client_cert_pem =
        match pki::kubeconfig_client_cert(&admin).map_err(|e| format!("admin.conf: {e}"))? {
            KubeconfigCert::Embedded(p) => p,
            KubeconfigCert::File(p) => read(root, p.trim_start_matches('/'))?,
        };
    let client_key_pem = pki::kubeconfig_client_key(&admin)
        .map_err(|e| format!("admin.conf: {e}"))?
        .ok_or("admin.conf has no embedded client key")?;
    Ok(TlsIdentity {
        ca_pem,
        client_cert_pem,
        client_key_pem,
    })
}

/// The identity to probe etcd's client port with (healthcheck client).
pub fn etcd_identity(root: &Root) -> Result<TlsIdentity, String> {
    Ok(TlsIdentity {
        ca_pem: read(root, "etc/kubernetes/pki/etcd/ca.crt")?,
        client_cert_pem: read(root, "etc/kubernetes/pki/etcd/healthcheck-client.crt")?,
        client_key_pem: read(root, "etc/kubernetes/pki/etcd/healthcheck-client.key")?,
    })
}

/// kube-apiserver's secure port, from its active manifest.
pub fn apiserver_port(root: &Root) -> Result<u16, String> {
    let m = read(root, &format!("{MANIFESTS_DIR}/kube-apiserver.yaml"))?;
    manifests::apiserver_secure_port(&m)
}

/// etcd's local client port, from its active manifest.
pub fn etcd_port(root: &Root) -> Result<u16, String> {
    let m = read(root, &format!("{MANIFESTS_DIR}/etcd.yaml"))?;
    manifests::etcd_client_port(&m)
}
