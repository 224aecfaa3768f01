//! What a renewal (`--operation-id ID`, `--legacy-v1`) prints.

use super::*;
use serde::{Deserialize, Serialize};

/// One leaf's expiry before and after the run (null when not read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateChange {
    pub name: LeafName,
    /// Node path.
    pub path: String,
    pub not_after_before: Option<Timestamp>,
    /// Only after a `renewed` outcome.
    pub not_after_after: Option<Timestamp>,
    pub days_left_before: Option<i64>,
    pub days_left_after: Option<i64>,
    /// v1.3 (SPEC 4 step 8, "Leaf by leaf"): the serial before the run
    /// (lowercase hex; null when not read).
    pub serial_before: Option<String>,
    /// v1.3: the serial after a `renewed` outcome (null otherwise).
    pub serial_after: Option<String>,
}

/// etcd membership seen by the health gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EtcdVoters {
    pub voters: u64,
    pub healthy_voters: u64,
}

/// A renewal that ran past its own-receipt check (any outcome).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenewResult {
    pub mode: RenewMode,
    pub runbook_version: String,
    /// Null for `legacy-v1`.
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub outcome: Outcome,
    pub phase: Phase,
    pub message: Message,
    pub failed_component: Option<Component>,
    pub replayed: ConstBool<false>,
    /// Whether this run wrote its receipt (`completed/<ID>.json`); always
    /// false for `legacy-v1`, which writes none. A success is never reported
    /// without it (SPEC 3, v1.1).
    pub receipt_written: bool,
    /// The container runtime endpoint every crictl call was given (v1.1);
    /// null only where no container runtime is used.
    pub runtime_endpoint: Option<RuntimeEndpointUsed>,
    /// Whether this run re-signed the leaf certificates: its `kubeadm certs
    /// renew all` succeeded and was not rolled back. False for `unchanged`,
    /// and for a run that only finished the restarts (and postflight) of
    /// work resumed from another operation, legacy work or an earlier
    /// attempt: an outcome `renewed` then means the restarts were finished.
    pub resigned: bool,
    pub resumed_from: Option<ResumedFrom>,
    /// Every leaf, in SPEC order.
    pub certificates: Vec<CertificateChange>,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
    /// Where each manifest ended (the runbook's own staging counts as staged).
    pub manifests: ManifestLocations,
    pub restarts: Vec<Restart>,
    /// Null when the health gate never read the member list.
    pub etcd: Option<EtcdVoters>,
    /// v1.2 (SPEC 11): true for a recovery (`--recover-expired`); absent
    /// otherwise (v1.3: also for a plain renewal that finished a
    /// recovery's work: the mode asked decides).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovery: bool,
    /// v1.2 (SPEC 11): a recovery's health as observed at its end (quorum
    /// and `/readyz` reported, not required); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_at_end: Option<Message>,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

/// Where crictl's `--runtime-endpoint` came from (SPEC 9, v1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum EndpointSource {
    /// The caller's `--runtime-endpoint`.
    Flag,
    /// `--container-runtime-endpoint` in `/var/lib/kubelet/kubeadm-flags.env`.
    KubeadmFlags,
    /// `containerRuntimeEndpoint` in `/var/lib/kubelet/config.yaml`.
    KubeletConfig,
    /// Neither: crictl's own configuration (`/etc/crictl.yaml`) or defaults.
    Crictl,
}

/// The container runtime endpoint a renewal used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RuntimeEndpointUsed {
    /// Null: crictl was given none (source `crictl`).
    pub endpoint: Option<String>,
    pub source: EndpointSource,
    /// A kubelet file that could not be read or parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A V2 renewal whose operation already had a receipt: nothing was done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenewReplay {
    pub mode: RenewOnly,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: OperationId,
    pub outcome: Outcome,
    pub phase: Phase,
    pub message: Message,
    pub failed_component: Option<Component>,
    pub replayed: ConstBool<true>,
    /// This run wrote nothing: the receipt is the original one.
    pub receipt_written: ConstBool<false>,
    /// This run re-signed nothing.
    pub resigned: ConstBool<false>,
    pub resumed_from: Null,
    pub certificates: EmptyArray,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
    pub manifests: ManifestLocations,
    pub restarts: EmptyArray,
    pub receipt: Receipt,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

/// `failed` or `cancelled` (while waiting for the lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EarlyOutcome {
    Failed,
    Cancelled,
}

/// `lock`, `receipt`, or `phase-file` (`--legacy-v1` over an unfinished V2
/// phase file, refused before anything is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum EarlyPhase {
    Lock,
    Receipt,
    PhaseFile,
}

/// A renewal that stopped before it could look at the node (but for where
/// the manifests are): the state directory or lock was unusable, the lock
/// stayed held (exit 3), the wait was cancelled, or this operation's
/// receipt is malformed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenewEarlyFailure {
    pub mode: RenewMode,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub outcome: EarlyOutcome,
    pub phase: EarlyPhase,
    pub message: Message,
    pub replayed: ConstBool<false>,
    /// Nothing was written.
    pub receipt_written: ConstBool<false>,
    /// Nothing was re-signed.
    pub resigned: ConstBool<false>,
    pub resumed_from: Null,
    pub certificates: EmptyArray,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: EmptyObject,
    /// Where each manifest is (a read-only look; the runbook's own staging
    /// counts as staged): a refused run leaves them as it found them.
    pub manifests: ManifestLocations,
    pub restarts: EmptyArray,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

/// What `--operation-id ID` and `--legacy-v1` print with `--output json`
/// (a usage error or an unusable `--root` prints `usage-error` instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook renew / legacy-v1 result")
)]
pub enum RenewDocument {
    Replay(RenewReplay),
    // Before `Result`, whose optional fields a reader would default: an
    // early failure has none of them (and `Result` always prints them).
    EarlyFailure(RenewEarlyFailure),
    Result(RenewResult),
}

// ---------------------------------------------------------------------------
// From the renewal's own values to the contract's vocabulary.

impl LeafName {
    /// Every leaf, in SPEC order (the order of `pki::LEAVES`).
    pub const SPEC_ORDER: [LeafName; 11] = [
        LeafName::Apiserver,
        LeafName::ApiserverKubeletClient,
        LeafName::ApiserverEtcdClient,
        LeafName::FrontProxyClient,
        LeafName::EtcdServer,
        LeafName::EtcdPeer,
        LeafName::EtcdHealthcheckClient,
        LeafName::AdminConf,
        LeafName::SuperAdminConf,
        LeafName::ControllerManagerConf,
        LeafName::SchedulerConf,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_names_follow_the_leaves_of_pki() {
        let names: Vec<String> = LeafName::SPEC_ORDER
            .iter()
            .map(|n| {
                serde_json::to_value(n)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let leaves: Vec<&str> = crate::rules::pki::LEAVES.iter().map(|l| l.name).collect();
        assert_eq!(names, leaves);
    }
}
