//! The JSON state files: the receipt, the V2 phase file, the lock owner, and
//! the node agent's state file (read only). The contract re-exports them
//! (`crate::contract`); they live here, on the floor of the rules that read
//! and write them, so no rule imports the contract.

use crate::rules::strict::{de, StrictFile};
use crate::rules::values::*;
use serde::{Deserialize, Deserializer, Serialize};

/// `nvke-cert-runbook/receipt/v1`.
pub const RECEIPT_FORMAT: &str = "nvke-cert-runbook/receipt/v1";
pub use crate::rules::values::V2_FORMAT;

fn de_v2_format<'de, D: Deserializer<'de>>(d: D) -> Result<PhaseV2Format, D::Error> {
    de::exactly(d, V2_FORMAT).map(|()| PhaseV2Format::V2)
}

fn de_receipt_format<'de, D: Deserializer<'de>>(d: D) -> Result<ReceiptFormat, D::Error> {
    de::exactly(d, RECEIPT_FORMAT).map(|()| ReceiptFormat::V1)
}

/// Always `nvke-cert-runbook/receipt/v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ReceiptFormat {
    #[serde(rename = "nvke-cert-runbook/receipt/v1")]
    V1,
}

/// A receipt, `state/completed/<ID>.json` (create once, never modified or
/// removed). Also embedded in status and renew output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook receipt (state/completed/<ID>.json)")
)]
pub struct Receipt {
    #[serde(deserialize_with = "de_receipt_format")]
    pub format: ReceiptFormat,
    /// Equal to the file name's ID; otherwise the receipt is malformed.
    #[serde(rename = "operationID", deserialize_with = "de::operation_id")]
    pub operation_id: OperationId,
    #[serde(deserialize_with = "de::parsed")]
    pub outcome: Outcome,
    #[serde(deserialize_with = "de::parsed")]
    pub phase: Phase,
    #[serde(deserialize_with = "de::message")]
    pub message: Message,
    #[serde(deserialize_with = "de::opt_component")]
    pub failed_component: Option<Component>,
    #[serde(deserialize_with = "de::manifests")]
    pub manifests: ManifestLocations,
    #[serde(deserialize_with = "de::timestamp")]
    pub finished_at: Timestamp,
    /// 1 to 100 characters, no control characters.
    #[serde(deserialize_with = "crate::rules::receipt::de_version")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 100)))]
    pub runbook_version: String,
    #[serde(rename = "caSHA256", deserialize_with = "de::ca_some")]
    pub ca_sha256: CaSha256,
    /// v1.2: the restarts this run made, in order (as in the renew
    /// document). Absent when it made none, and in v1.1 receipts.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::rules::receipt::de_restarts"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = 4)))]
    pub restarts: Vec<Restart>,
    /// v1.2 (SPEC 11): true for a `--recover-expired` run; absent
    /// otherwise.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "de::boolean"
    )]
    pub recovery: bool,
    /// v1.2 (SPEC 11): a recovery's health as observed at its end (quorum
    /// and `/readyz` are reported, not required); absent otherwise.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de::opt_message"
    )]
    pub health_at_end: Option<Message>,
    /// v1.3 (SPEC 4 step 8, "Leaf by leaf"): every leaf this operation's
    /// renewal proved renewed, in SPEC order. Absent when no renewal of
    /// this operation's was proven (a failure before or in `renew-certs`,
    /// `unchanged`), and in older receipts.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::rules::receipt::de_certificates"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = 11)))]
    pub certificates: Vec<LeafRenewal>,
}

impl StrictFile for Receipt {
    const OPTIONAL: &'static [&'static str] =
        &["restarts", "recovery", "healthAtEnd", "certificates"];
}

/// How an operation ended, as its receipt records it.
#[derive(Debug, Clone, Copy)]
pub struct Ended<'m> {
    pub outcome: Outcome,
    pub phase: Phase,
    /// Bounded by [`Receipt::new`].
    pub message: &'m str,
    pub failed_component: Option<Component>,
    /// What the run did (a renewal's own receipt; none otherwise).
    pub did: Did<'m>,
}

/// What a renewal did, as its own receipt records it (SPEC 3, v1.2): the
/// restarts it made, whether it was a recovery, the health seen at its end
/// (bounded by [`Receipt::new`]). The fencing check and a superseded
/// operation's receipt record none of it (`Did::default()`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Did<'m> {
    pub restarts: &'m [Restart],
    pub recovery: bool,
    pub health_at_end: Option<&'m str>,
    /// Every leaf its renewal proved renewed (v1.3).
    pub certificates: &'m [LeafRenewal],
}

impl Receipt {
    /// The one place a receipt is made, field by field (SPEC 3): the
    /// messages bounded. `node::statedir::new_receipt` gives it the node's
    /// CAs and this binary's version; tests build theirs here too.
    pub fn new(
        operation_id: OperationId,
        end: Ended<'_>,
        manifests: ManifestLocations,
        finished_at: Timestamp,
        runbook_version: String,
        ca_sha256: CaSha256,
    ) -> Receipt {
        Receipt {
            format: ReceiptFormat::V1,
            operation_id,
            outcome: end.outcome,
            phase: end.phase,
            message: Message::bounded(end.message),
            failed_component: end.failed_component,
            manifests,
            finished_at,
            runbook_version,
            ca_sha256,
            restarts: end.did.restarts.to_vec(),
            recovery: end.did.recovery,
            health_at_end: end.did.health_at_end.map(Message::bounded),
            certificates: end.did.certificates.to_vec(),
        }
    }
}

/// Always `nvke-cert-runbook/phase/v2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PhaseV2Format {
    #[serde(rename = "nvke-cert-runbook/phase/v2")]
    V2,
}

/// The V2 phase file, `state/phase` (replaced atomically). Valid pairs:
/// `renewing`/null, `restart_pending`/a component or null, `done`/null.
/// (The legacy five-line format is not JSON: see SPEC section 3.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(
    title = "nvke-cert-runbook phase file, V2 (state/phase)",
    extend("allOf" = [{
        "if": { "properties": { "state": { "not": { "const": "restart_pending" } } } },
        "then": { "properties": { "nextComponent": { "type": "null" } } }
    }])
))]
pub struct PhaseV2File {
    #[serde(deserialize_with = "de_v2_format")]
    pub format: PhaseV2Format,
    /// The operation whose receipt this work leads to.
    #[serde(rename = "operationID", deserialize_with = "de::operation_id")]
    pub operation_id: OperationId,
    #[serde(deserialize_with = "crate::rules::phase::de_state")]
    pub state: PhaseState,
    /// Only with `restart_pending`; null there means postflight only.
    #[serde(deserialize_with = "de::opt_component")]
    pub next_component: Option<Component>,
    #[serde(rename = "caSHA256", deserialize_with = "de::ca_all")]
    pub ca_sha256: CaSha256All,
    #[serde(deserialize_with = "de::boolean")]
    pub force: bool,
    #[serde(deserialize_with = "crate::rules::phase::de_threshold")]
    #[cfg_attr(feature = "schema", schemars(range(min = 7, max = 90)))]
    pub threshold_days: u32,
    #[serde(deserialize_with = "de::timestamp")]
    pub started_at: Timestamp,
    #[serde(deserialize_with = "de::timestamp")]
    pub updated_at: Timestamp,
    #[serde(deserialize_with = "crate::rules::phase::de_resumed_from")]
    pub resumed_from: Option<ResumedFrom>,
    /// v1.2 (SPEC 11): true while the work is a `--recover-expired` run's;
    /// absent otherwise. v1.3: only `--recover-expired` resumes it as a
    /// recovery; a plain renewal refuses it while a leaf is expired, else
    /// finishes it as a renewal (and records its own phase without it).
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "de::boolean"
    )]
    pub recovery: bool,
}

impl StrictFile for PhaseV2File {
    const OPTIONAL: &'static [&'static str] = &["recovery"];
}

/// The mode of the process that holds (or last held) the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum OwnerMode {
    #[serde(rename = "renew")]
    Renew,
    #[serde(rename = "legacy-v1")]
    LegacyV1,
    #[serde(rename = "status-fence")]
    StatusFence,
}

/// `state/owner`: who holds (or last held) the renewal lock, as written by
/// this binary (one line of JSON, replaced atomically). Readers are lenient:
/// any other content is shown raw (`{"raw": ...}` in the lock view).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook lock owner (state/owner)")
)]
pub struct LockOwnerFile {
    pub pid: u32,
    /// Null for `--legacy-v1`.
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub mode: OwnerMode,
    pub started_at: Timestamp,
    /// `/proc/sys/kernel/random/boot_id`, or `unknown`.
    #[serde(rename = "bootID")]
    pub boot_id: String,
}

/// The node agent's renewal phase as the runbook understands it: `renewing`
/// and `restart_pending` are pending; `idle`, `done`, `completed` and
/// `failed` are not. Any other value makes the agent state `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AgentPhase {
    Renewing,
    RestartPending,
    Idle,
    Done,
    Completed,
    Failed,
}

/// `k8sCertRenewalState` of the agent state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentRenewalState {
    pub phase: AgentPhase,
    /// A string when present (null is refused).
    #[serde(
        rename = "operationID",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_string_not_null"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub operation_id: Option<String>,
}

fn de_string_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// The node agent's state file (read, never written; default
/// `/var/lib/nvke/node-agent/k8s-cert-renewal-state.json`, `--agent-state`).
/// Other keys, at the top and inside, are ignored. At most 1 MiB; duplicate
/// keys make it unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(title = "node agent state file (read only)")
)]
pub struct AgentStateFile {
    #[serde(rename = "k8sCertRenewalState")]
    pub k8s_cert_renewal_state: AgentRenewalState,
}

/// v1.3 (SPEC 4 step 8, "Leaf by leaf"): one leaf as its renewal was
/// proven: a new serial, and its end before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LeafRenewal {
    pub name: LeafName,
    /// Lowercase hex, 1 to 128 digits. Null for a leaf that was not there
    /// before kubeadm ran (super-admin.conf, created meanwhile).
    #[serde(deserialize_with = "de_nullable")]
    #[cfg_attr(feature = "schema", schemars(regex(pattern = r"^[0-9a-f]{1,128}$")))]
    pub serial_before: Option<String>,
    /// Lowercase hex, 1 to 128 digits; never the serial before.
    #[cfg_attr(feature = "schema", schemars(regex(pattern = r"^[0-9a-f]{1,128}$")))]
    pub serial_after: String,
    /// Null when `serialBefore` is.
    #[serde(deserialize_with = "de_nullable")]
    pub not_after_before: Option<Timestamp>,
    pub not_after_after: Timestamp,
}

/// One component's restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Restart {
    #[cfg_attr(feature = "schema", schemars(with = "Component"))]
    pub component: crate::rules::component::Component,
    #[serde(rename = "oldContainerID")]
    pub old_container_id: String,
    #[serde(rename = "newContainerID")]
    pub new_container_id: String,
    /// Milliseconds from staging the manifest to the old container gone.
    pub stop_ms: u64,
    /// Milliseconds from putting it back to the new container healthy.
    pub healthy_ms: u64,
    /// The whole step, health gate before and phase write after included.
    pub total_ms: u64,
    /// v1.2: the longest run of failed `/readyz` probes of the local
    /// kube-apiserver, probed in-process every 200 ms from staging the
    /// manifest to the new container healthy: from a failed probe to the
    /// next answered one, in milliseconds. Null when it was not measured
    /// (kube-apiserver's port or client identity unreadable, or no probe
    /// ran: the run was cancelled at once). Required, null or a number.
    #[serde(deserialize_with = "de_nullable")]
    pub api_unavailable_ms: Option<u64>,
}
