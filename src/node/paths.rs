//! Node paths of SPEC section 2, relative to `--root`.

/// Static pod manifests kubelet watches.
pub const MANIFESTS_DIR: &str = "etc/kubernetes/manifests";
/// The runbook's staging directory (same filesystem as the manifests).
pub const STAGING_DIR: &str = "etc/kubernetes/nvke-cert-renewal-staging";
/// The node agent's staging directory: read, never written.
pub const AGENT_STAGING_DIR: &str = "etc/kubernetes/nvke-cert-renewal-manifests";
pub const PKI_DIR: &str = "etc/kubernetes/pki";
/// The runbook's state directory (0700, root).
pub const STATE_DIR: &str = "var/lib/nvke/k8s-cert-renewal";
/// Names inside the state directory.
pub const LOCK_FILE: &str = "lock";
pub const OWNER_FILE: &str = "owner";
pub const PHASE_FILE: &str = "phase";
pub const COMPLETED_DIR: &str = "completed";
pub const BACKUP_DIR: &str = "backup";
pub const BACKUP_V1_DIR: &str = "backup-v1";
pub const LOG_DIR: &str = "log";
/// Where the kubelet links every container it creates
/// (`<pod>_<namespace>_<container>-<id>.log`): watched, never written.
pub const CONTAINER_LOGS_DIR: &str = "var/log/containers";
/// The node agent's state file (default of `--agent-state`).
pub const AGENT_STATE_FILE: &str = "var/lib/nvke/node-agent/k8s-cert-renewal-state.json";

/// Mode of the state directory and everything the runbook creates in it.
pub const STATE_DIR_MODE: u32 = 0o700;
pub const STATE_FILE_MODE: u32 = 0o600;

/// The node path (as an operator sees it) of a path relative to the root.
pub fn node(rel: &str) -> String {
    format!("/{}", rel.trim_start_matches('/'))
}

/// The node path of a name in the state directory.
pub fn state(name: &str) -> String {
    node(&format!("{STATE_DIR}/{name}"))
}
