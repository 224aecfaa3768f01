//! What `--status-only` prints: the operator view and the fencing check.

use super::*;
use serde::{Deserialize, Serialize};

/// `clean` or `not_clean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Cleanliness {
    Clean,
    NotClean,
}

/// Always `confirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Confirmed {
    Confirmed,
}

/// Always `unconfirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Unconfirmed {
    Unconfirmed,
}

/// How serious the node's state is, most serious first (v1.1): a runbook
/// is at work (`in_progress`: do not touch), one of the four manifests is
/// not active (`action_needed`: a pod is down on this node, exit 4),
/// anything else unclean (`not_clean`, exit 1), or `clean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Clean,
    NotClean,
    ActionNeeded,
    InProgress,
}

/// One thing to do next: what and why, and the exact command when there
/// is one (a shell command line, node paths under `--root`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NextStep {
    pub what: String,
    pub command: Option<String>,
}

/// One copy of a manifest in a staging conflict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestCopy {
    pub path: String,
    /// Null when the copy could not be read (see `error`).
    pub sha256: Option<Sha256Hex>,
    pub size: Option<u64>,
    pub modified_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
}

/// A manifest both active and staged (v1.1): the two copies, whether they
/// are identical, which is newer, and a bounded unified diff (active to
/// staged) when they differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StagingConflict {
    pub component: Component,
    /// Whose staging directory holds the other copy: `runbook` or `agent`.
    pub staging: String,
    pub active: ManifestCopy,
    pub staged: ManifestCopy,
    /// Null when a copy could not be read.
    pub identical: Option<bool>,
    /// `active`, `staged` or `same` (by modification time); null when unknown.
    pub newer: Option<String>,
    #[cfg_attr(feature = "schema", schemars(length(max = 60)))]
    pub diff: Vec<String>,
}

/// What a fencing check would do now (operator view with an ID).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum FencingPlan {
    /// A receipt exists (staged manifests are still put back, v1.1).
    Confirm {
        termination: Confirmed,
        restore: Vec<Component>,
    },
    /// No receipt: put back these staged manifests, record `abandoned`.
    Abandon {
        termination: Confirmed,
        restore: Vec<Component>,
    },
    /// Never abandon (legacy unfinished, malformed phase file or receipt);
    /// staged manifests are still put back once the lock is held (v1.1).
    Refuse {
        termination: Unconfirmed,
        reason: String,
        restore: Vec<Component>,
    },
}

/// A recent receipt (by modification time, newest first). The fields other
/// than `operationID` are null when it could not be read (see `error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReceiptSummary {
    /// The file name's stem (not necessarily a valid ID: see `error`).
    #[serde(rename = "operationID")]
    pub operation_id: String,
    pub outcome: Option<Outcome>,
    pub phase: Option<Phase>,
    pub finished_at: Option<Timestamp>,
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub error: Option<String>,
    /// v1.2 (SPEC 11): the receipt of a recovery; absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovery: bool,
    /// v1.2 (SPEC 11): a recovery's health at its end; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_at_end: Option<Message>,
    /// v1.3 (SPEC 4 step 8, "Leaf by leaf"): the leaves the receipt lists
    /// as proven renewed; absent when it lists none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<LeafRenewal>,
}

/// What `--status-only [--operation-id ID]` prints with `--output json`
/// (read-only; exit 0: clean node, 1: not clean).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook --status-only operator view")
)]
pub struct StatusDocument {
    pub mode: StatusMode,
    pub runbook_version: String,
    /// The operation asked about, if any.
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub fence: ConstBool<false>,
    pub outcome: Cleanliness,
    pub clean: bool,
    /// How serious an unclean state is (v1.1).
    pub severity: Severity,
    /// Why the node is not clean (empty: clean).
    pub reasons: Vec<String>,
    /// Things to know that do not make the node unclean (the node agent's
    /// pending work, stray manifests, a CA or leaf near expiry, an unreadable
    /// certificate).
    pub warnings: Vec<String>,
    /// What to do next, most urgent first (empty: clean, nothing to do).
    pub next_steps: Vec<NextStep>,
    /// Manifests both active and staged, with their copies compared.
    pub conflicts: Vec<StagingConflict>,
    pub message: Message,
    pub now: Timestamp,
    #[cfg_attr(feature = "schema", schemars(range(min = 7, max = 90)))]
    pub threshold_days: u32,
    pub lock: LockView,
    pub phase_file: PhaseFileView,
    pub agent_state: AgentStateView,
    /// How many receipts `completed/` holds.
    pub receipt_count: u64,
    /// The receipts listed, newest first: the 20 most recent, or with
    /// `--receipts all` every one, with `--receipts failed` every one that
    /// is not a success.
    pub receipts: Vec<ReceiptSummary>,
    /// Which receipts `receipts` lists: `recent`, `all` or `failed`.
    pub receipts_listed: String,
    /// The receipt of the operation asked about (null: none, or no ID asked).
    pub receipt: Option<ReceiptLookup>,
    /// With an ID: what a fencing check would do (null without an ID).
    pub fencing: Option<FencingPlan>,
    pub manifests: ManifestViews,
    pub staging: StagingViews,
    pub stray_manifests: Vec<Stray>,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
    pub certificates: Vec<CertificateView>,
    pub certificate_authorities: Vec<CaView>,
    /// v1.2: the kubelet's client and serving certificates (never renewed here).
    pub kubelet_certificates: Vec<KubeletCertificateView>,
    /// The live node (v1.2, SPEC 10): null in a document from before it.
    pub live: Option<LiveView>,
    /// The state directory could not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub state_error: Option<String>,
    /// With `--evidence PATH` only: the bundle written, or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "EvidenceView"))]
    pub evidence: Option<EvidenceView>,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

/// A file the evidence bundle left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EvidenceSkip {
    /// The node path; what is not printable ASCII is escaped (`\n`, `\u{1b}`).
    pub path: String,
    pub reason: String,
}

/// The evidence bundle, written (SPEC 6, v1.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EvidenceWritten {
    /// The node path of the archive (`--evidence`).
    pub path: String,
    pub written: ConstBool<true>,
    /// The archive's (gzipped tar's) digest.
    pub sha256: Sha256Hex,
    /// The archive's size.
    pub bytes: u64,
    /// Files in the archive, `nvke-evidence/evidence.json` included.
    pub members: u64,
    /// Receipts in the archive (v1.2): the asked operation's, the ones the
    /// document lists, then the newest.
    pub receipts: u64,
    /// Receipts of `completed/` the archive left out (v1.2): the oldest,
    /// and any skipped below.
    #[serde(rename = "receiptsLeftOut")]
    pub receipts_left_out: u64,
    /// Credential values in manifests replaced by `<redacted sha256:...>`
    /// (v1.2).
    pub redacted: u64,
    /// What was left out, and why (at most 100; the last says how many more).
    #[cfg_attr(feature = "schema", schemars(length(max = 101)))]
    pub skipped: Vec<EvidenceSkip>,
}

/// The evidence bundle, not written: nothing is left at `path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EvidenceNotWritten {
    pub path: String,
    pub written: ConstBool<false>,
    pub error: String,
}

/// `--evidence PATH`: the bundle, or why it was not written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum EvidenceView {
    Written(EvidenceWritten),
    NotWritten(EvidenceNotWritten),
}

/// Always `nvke-cert-runbook/evidence/v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum EvidenceFormat {
    #[serde(rename = "nvke-cert-runbook/evidence/v1")]
    V1,
}

/// One file of the evidence bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EvidenceMember {
    /// The member's name in the archive (`nvke-evidence/manifests/etcd.yaml`).
    pub name: String,
    /// The node path it was read from (null: written by the runbook, `status.json`).
    pub source: Option<String>,
    pub bytes: u64,
    pub sha256: Sha256Hex,
}

/// `nvke-evidence/evidence.json`, the first member of an evidence bundle:
/// what the bundle holds and what it left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook evidence bundle manifest (nvke-evidence/evidence.json)")
)]
pub struct EvidenceManifest {
    pub format: EvidenceFormat,
    pub runbook_version: String,
    pub git_commit: String,
    /// The running binary's digest (`/proc/self/exe`; null: unreadable, see `binaryError`).
    #[serde(rename = "binarySHA256")]
    pub binary_sha256: Option<Sha256Hex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub binary_error: Option<String>,
    /// The status view's `now`.
    pub now: Timestamp,
    /// The other members, in archive order.
    pub members: Vec<EvidenceMember>,
    /// Receipts in the bundle (v1.2).
    pub receipts: u64,
    /// Receipts of `completed/` left out (v1.2).
    pub receipts_left_out: u64,
    /// Credential values in manifests replaced by `<redacted sha256:...>`
    /// (v1.2).
    pub redacted: u64,
    /// What was left out, and why (at most 100; the last says how many more).
    #[cfg_attr(feature = "schema", schemars(length(max = 101)))]
    pub skipped: Vec<EvidenceSkip>,
}

/// `confirmed` or `unconfirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    Confirmed,
    Unconfirmed,
}

/// What the fencing check did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FenceAction {
    /// Unconfirmed: no receipt written (a dead run's staged manifest may
    /// still have been put back, v1.1).
    #[serde(rename = "none")]
    None,
    /// A receipt for the ID was already there.
    #[serde(rename = "existing-receipt")]
    ExistingReceipt,
    /// Recorded an `abandoned` receipt (after putting back staged manifests).
    #[serde(rename = "abandoned")]
    Abandoned,
}

/// What `--status-only --operation-id ID --fence` prints with `--output json`
/// (exit 0: confirmed, 1: unconfirmed, 3: the lock stayed held).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook fencing check result")
)]
pub struct FenceDocument {
    pub mode: StatusMode,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: OperationId,
    pub fence: ConstBool<true>,
    pub termination: Termination,
    pub confirmed: bool,
    pub action: FenceAction,
    /// Why (v1.1): retry only `lock-timeout`.
    pub reason: FenceReason,
    /// The receipt's outcome (null when unconfirmed).
    pub outcome: Option<Outcome>,
    /// The receipt's phase (null when unconfirmed).
    pub phase: Option<Phase>,
    pub message: Message,
    pub receipt: Option<Receipt>,
    /// Staged manifests put back.
    pub restored: Vec<Component>,
    /// Manifests left alone, both copies present: an operator must act.
    pub conflicts: Vec<String>,
    pub manifests: ManifestViews,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}
