//! The node under --root: files read and written without following symlinks, the lock, the state directory.

/// Backups of pki/ and the kubeconfigs, and putting them back.
pub(crate) mod backup;
/// Staging conflicts: both copies of a manifest compared.
pub(crate) mod conflict;
/// The sanitized evidence bundle of `--status-only --evidence PATH`.
pub(crate) mod evidence;
/// The fencing check's file mechanics under the lock: the owner record,
/// the put-back of what a dead run left staged.
pub(crate) mod fence;
/// The no-follow descriptor walk and the three durable write disciplines.
pub(crate) mod fsx;
/// This host's own addresses.
pub(crate) mod host;
/// Read-only views of the state directory (phase file, lock, receipts).
pub(crate) mod inspect;
/// The kubelet's own certificates (listed, never renewed; v1.2).
pub(crate) mod kubelet;
/// The renewal flock and its owner file.
pub(crate) mod lock;
/// The four manifests, the staging directories, strays.
pub(crate) mod manifests;
/// The kubelet's rotation flags, for the YAML fuzz target
/// (fuzz/fuzz_targets/yaml.rs).
pub use kubelet::parse_rotation;
/// The other parse entry points of a manifest, for the YAML fuzz target.
pub use manifests::{apiserver_secure_port, pod_component, renewed_mounts};
/// etcd's local client port as the runbook reads it from a manifest (the
/// tests find the port of the node they build with it).
pub use manifests::{etcd_client_port, etcd_peer_address};
/// The node PKI as read (leaves and CAs).
pub(crate) mod node_pki;
/// A renewal as one transaction: the lock, the phase file, the staged
/// manifest and the one receipt.
pub(crate) mod operation;
/// The operation log and the bounded stderr queue.
pub(crate) mod oplog;
/// Fixed node paths under --root.
pub(crate) mod paths;
/// One read of the node that check and status share.
pub(crate) mod snapshot;
/// Moving a manifest out and back (kubelet stops and starts the pod).
pub(crate) mod staging;
/// The state directory: one owner of its files.
pub(crate) mod statedir;
