//! What `--check` prints.

use super::*;
use serde::{Deserialize, Serialize};

/// What `--check` prints with `--output json` (exit 0: decided, 1: failed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(title = "nvke-cert-runbook --check result")
)]
pub struct CheckDocument {
    pub mode: CheckMode,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: Null,
    /// Equal to `decision`.
    pub outcome: Decision,
    pub decision: Decision,
    /// Empty unless the decision is `renew`.
    pub executors: Vec<Executor>,
    /// The controller may fall back to this runbook when the typed executor
    /// is unimplemented (only with no pending intent at all).
    pub legacy_fallback: bool,
    pub failure: Option<CheckFailure>,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub message: Message,
    pub force: bool,
    #[cfg_attr(feature = "schema", schemars(range(min = 7, max = 90)))]
    pub threshold_days: u32,
    pub now: Timestamp,
    pub agent_state: AgentStateView,
    pub phase_file: PhaseFileView,
    pub lock: LockView,
    pub manifests: ManifestViews,
    pub staging: StagingViews,
    pub stray_manifests: Vec<Stray>,
    pub certificates: Vec<CertificateView>,
    pub certificate_authorities: Vec<CaView>,
    /// v1.2: the kubelet's client and serving certificates (never renewed here).
    pub kubelet_certificates: Vec<KubeletCertificateView>,
    /// The live node (v1.2, SPEC 10): null in a document from before it.
    pub live: Option<LiveView>,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}
