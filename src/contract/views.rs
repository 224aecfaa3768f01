//! The read-only views of the node that check and status share.

use super::*;
use serde::{Deserialize, Serialize};

// Defined with the resume rule (the rules floor), printed as they are.
pub use crate::rules::resume::{MalformedReceipt, ReceiptLookup, RunbookIntent};

/// A manifest as found in the manifests directory and both staging directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestView {
    /// `staged`: in either staging directory.
    pub location: ManifestLocation,
    pub active: bool,
    pub runbook_staged: bool,
    pub agent_staged: bool,
    /// A refusal (symlink, wrong type, owner, mode) naming the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// The four manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ManifestViews {
    pub etcd: ManifestView,
    #[serde(rename = "kube-apiserver")]
    pub kube_apiserver: ManifestView,
    #[serde(rename = "kube-controller-manager")]
    pub kube_controller_manager: ManifestView,
    #[serde(rename = "kube-scheduler")]
    pub kube_scheduler: ManifestView,
}

/// A staging directory's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StagingView {
    /// Node path.
    pub path: String,
    pub exists: bool,
    /// Every entry, sorted.
    pub entries: Vec<String>,
    /// Entries that are not one of the four `<component>.yaml`.
    pub unexpected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// Both staging directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StagingViews {
    pub runbook: StagingView,
    pub agent: StagingView,
}

/// A file in the manifests directory that kubelet would run as an extra pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Stray {
    pub path: String,
    pub reason: String,
}

/// `ok`, `skipped` (optional and absent: super-admin.conf), `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LeafStatus {
    Ok,
    Skipped,
    Error,
}

/// A leaf certificate as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateView {
    pub name: LeafName,
    /// Node path (a kubeconfig for the `.conf` leaves).
    pub path: String,
    pub status: LeafStatus,
    /// The CA it must chain to.
    pub ca: CaName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub subject: Option<String>,
    /// `rsa`, `ecdsa`, `rsa-pss`, `ed25519`, `ed448`, `dsa`, or an OID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub key_algorithm: Option<String>,
    pub not_after: Option<Timestamp>,
    pub days_left: Option<i64>,
    pub within_threshold: Option<bool>,
    /// v1.2: `expired` (past its notAfter: ACTION NEEDED), `due` (within
    /// the threshold), `ok`; null when the leaf could not be read.
    pub severity: Option<crate::rules::expiry::Expiry>,
    /// Null when the CA could not be read.
    #[serde(rename = "chainsToCA")]
    pub chains_to_ca: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// Which of the kubelet's certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum KubeletRole {
    /// Its client certificate to the API (kubelet.conf).
    Client,
    /// The certificate its own server (port 10250) presents.
    Serving,
}

/// One of the kubelet's certificates (v1.2, SPEC 10): listed with its
/// expiry and whether the kubelet rotates it; never renewed here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletCertificateView {
    pub role: KubeletRole,
    /// Node path of the file (kubelet.conf when the certificate is embedded).
    pub path: String,
    pub not_after: Option<Timestamp>,
    pub days_left: Option<i64>,
    pub severity: Option<crate::rules::expiry::Expiry>,
    /// `rotateCertificates` (client) or `serverTLSBootstrap` (serving) of
    /// the kubelet's configuration; null when it cannot be read.
    pub rotates: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// The live node (v1.2, SPEC 10): one observation of the runtime and the
/// components, judged as the renewal's health gate judges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LiveView {
    /// When it was observed (the real clock).
    pub observed_at: Timestamp,
    /// `--probe-timeout`, the bound of the whole observation.
    pub budget_ms: u64,
    /// How long it took.
    pub took_ms: u64,
    /// Why no container could be listed (crictl missing, the runtime
    /// unreachable); null when the listing came.
    pub runtime: Option<String>,
    /// The four components (restart order), then other static pods that
    /// mount a file kubeadm renews (kube-vip).
    pub pods: Vec<LivePodView>,
}

/// How bad a live finding is (SPEC 6): `action_needed` exits 4,
/// `not_clean` 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LiveWeight {
    ActionNeeded,
    NotClean,
}

/// What is wrong with one pod, worst first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LiveFindingView {
    /// `not_running`, `restarting`, `unhealthy`, `serves_expired`,
    /// `starting` (its probe fails within the probe's start allowance,
    /// v1.3), `not_checked`, `serves_other`, `restart_needed`.
    pub kind: String,
    pub weight: LiveWeight,
    /// Whether the renewal's health gate waits on it.
    pub blocks_gate: bool,
    pub message: String,
}

/// One static pod's container as the runtime lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LiveContainerView {
    pub id: String,
    pub running: bool,
    /// Running: when it was created.
    pub since: Option<Timestamp>,
    /// Exited: its exit code and when it finished, when the runtime says.
    pub exit_code: Option<i32>,
    pub finished_at: Option<Timestamp>,
    /// How many times the kubelet restarted it in its pod sandbox.
    pub restarts: u32,
}

/// What a serving port presents, against its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LiveServedView {
    pub port: u16,
    /// Node path of the certificate it should serve.
    pub file: String,
    /// `current`, `other`, `expired`; null when not checked.
    pub served: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub not_checked: Option<String>,
}

/// One static pod, live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LivePodView {
    pub name: String,
    /// `healthy`, or the worst finding's kind.
    pub state: String,
    /// The pod in one line (as the text's LIVE block shows it).
    pub summary: String,
    pub container: Option<LiveContainerView>,
    /// `healthy`, `unhealthy: <answer>`, `not checked: <why>`; null: no
    /// health endpoint is asked (kube-vip).
    pub health: Option<String>,
    pub served: Vec<LiveServedView>,
    pub findings: Vec<LiveFindingView>,
    /// The command that shows its log (v1.3): `crictl logs --tail 40` of
    /// the container that says why (the one that exited, the one before a
    /// crash loop's, else the running one), crictl as this run called it;
    /// absent when no container is known or crictl was not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<String>,
}

/// A CA as read (never renewed here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaView {
    pub name: CaName,
    pub path: String,
    pub sha256: Option<Sha256Hex>,
    pub not_after: Option<Timestamp>,
    pub days_left: Option<i64>,
    pub within_threshold: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

// The one type for an owner record read back (`node::lock::read_owner`);
// `LockOwnerFile` is what this binary writes. Read leniently: keys this
// binary does not write (the shell runbook's) are ignored; the printed
// document has exactly these keys (the schema says so).
/// The lock owner as parsed from `state/owner` (leniently: `mode` and
/// `startedAt` are shown as found).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
#[serde(rename_all = "camelCase")]
pub struct LockOwner {
    pub pid: u32,
    #[serde(rename = "operationID")]
    pub operation_id: Option<String>,
    pub mode: String,
    pub started_at: String,
    #[serde(rename = "bootID")]
    pub boot_id: String,
}

impl LockOwner {
    /// "pid N (mode, operation ID, since T)", as "held by ..." goes on.
    pub fn describe(&self) -> String {
        let op = self.operation_id.as_deref().unwrap_or("none");
        format!(
            "pid {} ({}, operation {op}, since {})",
            self.pid, self.mode, self.started_at
        )
    }
}

/// An owner file that is not this binary's JSON: printable text, at most 120 characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OwnerRaw {
    pub raw: String,
}

/// An owner file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OwnerError {
    pub error: String,
}

/// What `state/owner` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum OwnerView {
    Known(LockOwner),
    Raw(OwnerRaw),
    Error(OwnerError),
}

/// The result of the non-blocking lock probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LockState {
    /// No lock file (or no state directory).
    Absent,
    Free,
    Held,
    /// The lock file could not be used: see `error`.
    Error,
}

/// The process that really holds the lock (v1.1): the flock's holder in the
/// host's `/proc/locks`, matched by the lock file's device and inode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockHolder {
    /// Null when the holder is unknown or not visible in this pid namespace
    /// (see `error`).
    pub pid: Option<u32>,
    /// `/proc/PID/comm`, escaped; null when the process has exited (a
    /// process it passed the descriptor to holds the lock) or is unknown.
    pub command: Option<String>,
    /// `/proc/PID/cmdline`, arguments joined by spaces, escaped, at most 256
    /// characters.
    pub command_line: Option<String>,
    /// `state/owner` (`lastOwner`) names this pid on this boot: the holder
    /// is the runbook that wrote it. False: a stale owner record, or none.
    pub owner_record_matches: bool,
    /// Why the holder is unknown (`/proc/locks` unreadable, no flock on
    /// the file there, or a holder outside this pid namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// The renewal lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockView {
    pub path: String,
    pub state: LockState,
    pub held: bool,
    /// The process holding the lock when held, else null (v1.1; in v1 the
    /// owner record).
    pub holder: Option<LockHolder>,
    /// The owner record `state/owner`, written by the last runbook that
    /// took the lock, held or not (null without one; v1.1: also while held).
    pub last_owner: Option<OwnerView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// `present`, `absent`, or `malformed` (unreadable, or the receipt it depends on is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PhaseFileStatus {
    Absent,
    Present,
    Malformed,
}

/// The phase file. The V2-only and legacy-only fields are absent for the
/// other format and when there is no (parsable) file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PhaseFileView {
    pub path: String,
    pub status: PhaseFileStatus,
    pub intent: RunbookIntent,
    pub pending: bool,
    pub format: Option<PhaseFormat>,
    pub state: Option<PhaseState>,
    pub next_component: Option<Component>,
    /// V2 only (null otherwise).
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Timestamp"))]
    pub started_at: Option<Timestamp>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Timestamp"))]
    pub updated_at: Option<Timestamp>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub force: Option<bool>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "u32"))]
    pub threshold_days: Option<u32>,
    /// V2: all three; legacy: only `ca.crt`.
    #[serde(rename = "caSHA256", default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "CaSha256"))]
    pub ca_sha256: Option<CaSha256>,
    /// V2 only: the receipt of the operation it names when unfinished (null: none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_present",
        deserialize_with = "de_present"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<ReceiptLookup>"))]
    pub receipt: Option<Option<ReceiptLookup>>,
    /// Legacy only: STARTED, unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub started: Option<u64>,
    /// Legacy only: PID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "u32"))]
    pub pid: Option<u32>,
    /// Why it is malformed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// The node agent's idle (not pending) phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AgentIdlePhase {
    Idle,
    Done,
    Completed,
    Failed,
}

/// The node agent's pending phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AgentPendingPhase {
    Renewing,
    RestartPending,
}

/// The node agent's intent, from its state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentStateView {
    /// The default path has no file: no typed intent.
    Absent { path: String },
    Idle {
        path: String,
        phase: AgentIdlePhase,
        #[serde(rename = "operationID")]
        operation_id: Option<String>,
    },
    Pending {
        path: String,
        phase: AgentPendingPhase,
        #[serde(rename = "operationID")]
        operation_id: Option<String>,
    },
    /// Unreadable, unparsable, an unknown phase, or a named path that does not exist.
    Unknown { path: String, reason: String },
}

/// The value of a closed vocabulary named by its JSON string (`etcd`,
/// `restart:etcd`, `renewed`); None when it names none of them.
pub fn by_name<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
    use serde::de::IntoDeserializer;
    T::deserialize(IntoDeserializer::<serde::de::value::Error>::into_deserializer(name)).ok()
}
