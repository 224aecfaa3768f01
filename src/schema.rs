//! The embedded contract: typed mirrors of every JSON document the binary
//! prints and every JSON file it reads or writes, from which the committed
//! JSON Schemas under `embedded/schema/` are generated (`tests/contract.rs`).
//!
//! The modes build their output with `serde_json::json!`; these types are an
//! independent description of that output, not the code that produces it.
//! `tests/contract.rs` keeps them honest: it deserializes real outputs (the
//! golden cases, `--version`, `--help`, rendered phase files and receipts)
//! into them with `deny_unknown_fields` and serializes them back, so a field
//! added, removed, renamed or retyped in the output without a change here
//! fails the test. Schemas are generated for the *serialize* contract: a
//! field is `required` exactly when the binary always prints it.
//!
//! Nothing here is used by the binary at run time.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

// ---------------------------------------------------------------------------
// Building blocks

/// A JSON value that is always `true` (`ConstBool<true>`) or always `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConstBool<const V: bool>;

impl<const V: bool> Serialize for ConstBool<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(V)
    }
}

impl<'de, const V: bool> Deserialize<'de> for ConstBool<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if bool::deserialize(d)? == V {
            Ok(ConstBool)
        } else {
            Err(serde::de::Error::custom(format!(
                "expected the constant {V}"
            )))
        }
    }
}

impl<const V: bool> JsonSchema for ConstBool<V> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        if V {
            "True".into()
        } else {
            "False".into()
        }
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({ "type": "boolean", "const": V })
    }
}

/// A JSON value that is always `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Null;

impl Serialize for Null {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_none()
    }
}

impl<'de> Deserialize<'de> for Null {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <()>::deserialize(d).map(|()| Null)
    }
}

impl JsonSchema for Null {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Null".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({ "type": "null" })
    }
}

/// No value at all: `Vec<Nothing>` is an array that is always empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nothing {}

impl Serialize for Nothing {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        match *self {}
    }
}

impl<'de> Deserialize<'de> for Nothing {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom("no value is allowed here"))
    }
}

impl JsonSchema for Nothing {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Nothing".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        Schema::from(false)
    }
}

/// An array that is always empty (`[]`).
pub type EmptyArray = Vec<Nothing>;

/// An object that is always empty (`{}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyObject {}

/// A string newtype checked on deserialization, with a hand-written schema.
macro_rules! checked_string {
    ($(#[$m:meta])* $name:ident, $check:expr, $schema:tt) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                let check: fn(&str) -> Result<(), String> = $check;
                check(&s).map_err(serde::de::Error::custom)?;
                Ok($name(s))
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

checked_string!(
    /// An operation ID (SPEC section 1).
    OperationId,
    |s| crate::opid::OperationId::parse(s).map(drop),
    {
        "description": "An operation ID: 1 to 200 characters of A-Z a-z 0-9 . _ : @ -, not starting with '.' or '-', never containing '..'.",
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "pattern": "^[A-Za-z0-9_:@]([A-Za-z0-9_:@-]|\\.[A-Za-z0-9_:@-])*\\.?$"
    }
);

checked_string!(
    /// 64 lowercase hex digits.
    Sha256Hex,
    |s| {
        if crate::phase::is_sha256_hex(s) {
            Ok(())
        } else {
            Err(format!("{s:?} is not 64 lowercase hex digits"))
        }
    },
    {
        "description": "A SHA-256 digest: 64 lowercase hex digits.",
        "type": "string",
        "pattern": "^[0-9a-f]{64}$"
    }
);

checked_string!(
    /// An RFC 3339 UTC timestamp ending in `Z`.
    Timestamp,
    |s| crate::clock::parse_rfc3339(s, true).map(drop),
    {
        "description": "An RFC 3339 timestamp in UTC, ending in Z (2026-11-30T00:00:00Z).",
        "type": "string",
        "format": "date-time",
        "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$"
    }
);

checked_string!(
    /// A human message: at most 512 bytes, no control characters, never key material.
    Message,
    |s| {
        if s.len() > crate::receipt::MAX_MESSAGE_BYTES {
            Err(format!("message is {} bytes (at most 512)", s.len()))
        } else if s.chars().any(char::is_control) {
            Err("message contains a control character".to_string())
        } else {
            Ok(())
        }
    },
    {
        "description": "For people: at most 512 bytes of UTF-8 (so at most 512 characters), no control characters, never key material.",
        "type": "string",
        "maxLength": 512,
        "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    }
);

/// Serialize the inner value of a present `Option<Option<T>>` field (used
/// with `skip_serializing_if = "Option::is_none"`: absent, null, or a value).
fn ser_present<S: Serializer, T: Serialize>(
    v: &Option<Option<T>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(inner) => inner.serialize(s),
        None => s.serialize_none(),
    }
}

/// A present field (null or a value) of an `Option<Option<T>>`.
fn de_present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

// ---------------------------------------------------------------------------
// Closed vocabularies

/// One of the four control-plane static pods, in restart order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Component {
    #[serde(rename = "etcd")]
    Etcd,
    #[serde(rename = "kube-apiserver")]
    KubeApiserver,
    #[serde(rename = "kube-controller-manager")]
    KubeControllerManager,
    #[serde(rename = "kube-scheduler")]
    KubeScheduler,
}

/// How an operation ended. `renewed` and `unchanged` are successes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Renewed,
    Unchanged,
    Failed,
    FailedNotRestored,
    Cancelled,
    Abandoned,
    Superseded,
}

/// The closed list of phases (SPEC section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    #[serde(rename = "arguments")]
    Arguments,
    #[serde(rename = "lock")]
    Lock,
    #[serde(rename = "receipt")]
    Receipt,
    #[serde(rename = "phase-file")]
    PhaseFile,
    #[serde(rename = "topology")]
    Topology,
    #[serde(rename = "staging-conflict")]
    StagingConflict,
    #[serde(rename = "ca-check")]
    CaCheck,
    #[serde(rename = "expiry")]
    Expiry,
    #[serde(rename = "health")]
    Health,
    #[serde(rename = "two-control-plane-voters")]
    TwoControlPlaneVoters,
    #[serde(rename = "backup")]
    Backup,
    #[serde(rename = "renew-certs")]
    RenewCerts,
    #[serde(rename = "restart:etcd")]
    RestartEtcd,
    #[serde(rename = "restart:kube-apiserver")]
    RestartKubeApiserver,
    #[serde(rename = "restart:kube-controller-manager")]
    RestartKubeControllerManager,
    #[serde(rename = "restart:kube-scheduler")]
    RestartKubeScheduler,
    #[serde(rename = "postflight")]
    Postflight,
    #[serde(rename = "cancelled")]
    Cancelled,
    #[serde(rename = "done")]
    Done,
}

/// Where one of the four manifests is: `active` (manifests directory only),
/// `staged` (staging only), `both`, or `missing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManifestLocation {
    Active,
    Staged,
    Both,
    Missing,
}

/// `state` of a phase file (either format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    Renewing,
    RestartPending,
    Done,
}

/// The phase file format: V2 JSON, or the shell runbook's five lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PhaseFormat {
    #[serde(rename = "nvke-cert-runbook/phase/v2")]
    V2,
    #[serde(rename = "legacy-five-line")]
    LegacyFiveLine,
}

/// kubeadm's name of a leaf certificate (SPEC section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LeafName {
    #[serde(rename = "apiserver")]
    Apiserver,
    #[serde(rename = "apiserver-kubelet-client")]
    ApiserverKubeletClient,
    #[serde(rename = "apiserver-etcd-client")]
    ApiserverEtcdClient,
    #[serde(rename = "front-proxy-client")]
    FrontProxyClient,
    #[serde(rename = "etcd-server")]
    EtcdServer,
    #[serde(rename = "etcd-peer")]
    EtcdPeer,
    #[serde(rename = "etcd-healthcheck-client")]
    EtcdHealthcheckClient,
    #[serde(rename = "admin.conf")]
    AdminConf,
    #[serde(rename = "super-admin.conf")]
    SuperAdminConf,
    #[serde(rename = "controller-manager.conf")]
    ControllerManagerConf,
    #[serde(rename = "scheduler.conf")]
    SchedulerConf,
}

/// kubeadm's name of a CA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CaName {
    #[serde(rename = "ca")]
    Ca,
    #[serde(rename = "etcd-ca")]
    EtcdCa,
    #[serde(rename = "front-proxy-ca")]
    FrontProxyCa,
}

/// The mode a document comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ModeName {
    #[serde(rename = "renew")]
    Renew,
    #[serde(rename = "legacy-v1")]
    LegacyV1,
    #[serde(rename = "check")]
    Check,
    #[serde(rename = "status")]
    Status,
    #[serde(rename = "version")]
    Version,
}

/// `renew` (V2, `--operation-id`) or `legacy-v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RenewMode {
    #[serde(rename = "renew")]
    Renew,
    #[serde(rename = "legacy-v1")]
    LegacyV1,
}

/// Always `renew`: only a V2 renewal has receipts to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RenewOnly {
    #[serde(rename = "renew")]
    Renew,
}

/// Always `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CheckMode {
    #[serde(rename = "check")]
    Check,
}

/// Always `status` (operator view and fencing check alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StatusMode {
    #[serde(rename = "status")]
    Status,
}

/// Always `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum VersionMode {
    #[serde(rename = "version")]
    Version,
}

/// Always `help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HelpMode {
    #[serde(rename = "help")]
    Help,
}

// ---------------------------------------------------------------------------
// Shared objects

/// Where each of the four manifests was (receipts and renew results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestLocations {
    pub etcd: ManifestLocation,
    #[serde(rename = "kube-apiserver")]
    pub kube_apiserver: ManifestLocation,
    #[serde(rename = "kube-controller-manager")]
    pub kube_controller_manager: ManifestLocation,
    #[serde(rename = "kube-scheduler")]
    pub kube_scheduler: ManifestLocation,
}

/// CA fingerprints keyed by path relative to `pki/`; a CA that could not be
/// read is left out.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaSha256 {
    #[serde(rename = "ca.crt", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Sha256Hex")]
    pub ca: Option<Sha256Hex>,
    #[serde(
        rename = "etcd/ca.crt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Sha256Hex")]
    pub etcd_ca: Option<Sha256Hex>,
    #[serde(
        rename = "front-proxy-ca.crt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Sha256Hex")]
    pub front_proxy_ca: Option<Sha256Hex>,
}

/// All three CA fingerprints, keyed by path relative to `pki/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaSha256All {
    #[serde(rename = "ca.crt")]
    pub ca: Sha256Hex,
    #[serde(rename = "etcd/ca.crt")]
    pub etcd_ca: Sha256Hex,
    #[serde(rename = "front-proxy-ca.crt")]
    pub front_proxy_ca: Sha256Hex,
}

/// The operation (or legacy work) a renewal took over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumedFrom {
    /// Null when the work taken over was legacy five-line (it has no ID).
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub format: PhaseFormat,
}

// ---------------------------------------------------------------------------
// Files

/// Always `nvke-cert-runbook/receipt/v1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReceiptFormat {
    #[serde(rename = "nvke-cert-runbook/receipt/v1")]
    V1,
}

/// A receipt, `state/completed/<ID>.json` (create once, never modified or
/// removed). Also embedded in status and renew output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook receipt (state/completed/<ID>.json)")]
pub struct Receipt {
    pub format: ReceiptFormat,
    /// Equal to the file name's ID; otherwise the receipt is malformed.
    #[serde(rename = "operationID")]
    pub operation_id: OperationId,
    pub outcome: Outcome,
    pub phase: Phase,
    pub message: Message,
    pub failed_component: Option<Component>,
    pub manifests: ManifestLocations,
    pub finished_at: Timestamp,
    /// 1 to 100 characters, no control characters.
    #[schemars(length(min = 1, max = 100))]
    pub runbook_version: String,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
}

/// Always `nvke-cert-runbook/phase/v2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PhaseV2Format {
    #[serde(rename = "nvke-cert-runbook/phase/v2")]
    V2,
}

/// The V2 phase file, `state/phase` (replaced atomically). Valid pairs:
/// `renewing`/null, `restart_pending`/a component or null, `done`/null.
/// (The legacy five-line format is not JSON: see SPEC section 3.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(
    title = "nvke-cert-runbook phase file, V2 (state/phase)",
    extend("allOf" = [{
        "if": { "properties": { "state": { "not": { "const": "restart_pending" } } } },
        "then": { "properties": { "nextComponent": { "type": "null" } } }
    }])
)]
pub struct PhaseV2File {
    pub format: PhaseV2Format,
    /// The operation whose receipt this work leads to.
    #[serde(rename = "operationID")]
    pub operation_id: OperationId,
    pub state: PhaseState,
    /// Only with `restart_pending`; null there means postflight only.
    pub next_component: Option<Component>,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256All,
    pub force: bool,
    #[schemars(range(min = 7, max = 90))]
    pub threshold_days: u32,
    pub started_at: Timestamp,
    pub updated_at: Timestamp,
    pub resumed_from: Option<ResumedFrom>,
}

/// The mode of the process that holds (or last held) the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook lock owner (state/owner)")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentRenewalState {
    pub phase: AgentPhase,
    /// A string when present (null is refused).
    #[serde(
        rename = "operationID",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_string_not_null"
    )]
    #[schemars(with = "String")]
    pub operation_id: Option<String>,
}

fn de_string_not_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// The node agent's state file (read, never written; default
/// `/var/lib/nvke/node-agent/k8s-cert-renewal-state.json`, `--agent-state`).
/// Other keys, at the top and inside, are ignored. At most 1 MiB; duplicate
/// keys make it unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "node agent state file (read only)")]
pub struct AgentStateFile {
    #[serde(rename = "k8sCertRenewalState")]
    pub k8s_cert_renewal_state: AgentRenewalState,
}

// ---------------------------------------------------------------------------
// Renew / legacy-v1 output

/// One leaf's expiry before and after the run (null when not read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
}

/// One component's restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Restart {
    pub component: Component,
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
}

/// etcd membership seen by the health gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EtcdVoters {
    pub voters: u64,
    pub healthy_voters: u64,
}

/// A renewal that ran past its own-receipt check (any outcome).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    pub duration_ms: u64,
}

/// Where crictl's `--runtime-endpoint` came from (SPEC 9, v1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    pub resumed_from: Null,
    pub certificates: EmptyArray,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
    pub manifests: ManifestLocations,
    pub restarts: EmptyArray,
    pub receipt: Receipt,
    pub duration_ms: u64,
}

/// `failed` or `cancelled` (while waiting for the lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EarlyOutcome {
    Failed,
    Cancelled,
}

/// `lock`, `receipt`, or `phase-file` (`--legacy-v1` over an unfinished V2
/// phase file, refused before anything is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EarlyPhase {
    Lock,
    Receipt,
    PhaseFile,
}

/// A renewal that stopped before it could look at the node: the state
/// directory or lock was unusable, the lock stayed held (exit 3), the wait
/// was cancelled, or this operation's receipt is malformed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    pub resumed_from: Null,
    pub certificates: EmptyArray,
    #[serde(rename = "caSHA256")]
    pub ca_sha256: EmptyObject,
    pub manifests: EmptyObject,
    pub restarts: EmptyArray,
    pub duration_ms: u64,
}

/// What `--operation-id ID` and `--legacy-v1` print with `--output json`
/// (a usage error or an unusable `--root` prints `usage-error` instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "nvke-cert-runbook renew / legacy-v1 result")]
pub enum RenewDocument {
    Replay(RenewReplay),
    Result(RenewResult),
    EarlyFailure(RenewEarlyFailure),
}

// ---------------------------------------------------------------------------
// Read-only views shared by check and status

/// A manifest as found in the manifests directory and both staging directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManifestView {
    /// `staged`: in either staging directory.
    pub location: ManifestLocation,
    pub active: bool,
    pub runbook_staged: bool,
    pub agent_staged: bool,
    /// A refusal (symlink, wrong type, owner, mode) naming the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// The four manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// Both staging directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StagingViews {
    pub runbook: StagingView,
    pub agent: StagingView,
}

/// A file in the manifests directory that kubelet would run as an extra pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stray {
    pub path: String,
    pub reason: String,
}

/// `ok`, `skipped` (optional and absent: super-admin.conf), `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeafStatus {
    Ok,
    Skipped,
    Error,
}

/// A leaf certificate as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateView {
    pub name: LeafName,
    /// Node path (a kubeconfig for the `.conf` leaves).
    pub path: String,
    pub status: LeafStatus,
    /// The CA it must chain to.
    pub ca: CaName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub subject: Option<String>,
    /// `rsa`, `ecdsa`, `rsa-pss`, `ed25519`, `ed448`, `dsa`, or an OID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub key_algorithm: Option<String>,
    pub not_after: Option<Timestamp>,
    pub days_left: Option<i64>,
    pub within_threshold: Option<bool>,
    /// Null when the CA could not be read.
    #[serde(rename = "chainsToCA")]
    pub chains_to_ca: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// A CA as read (never renewed here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaView {
    pub name: CaName,
    pub path: String,
    pub sha256: Option<Sha256Hex>,
    pub not_after: Option<Timestamp>,
    pub days_left: Option<i64>,
    pub within_threshold: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// The lock owner as parsed from `state/owner` (leniently: `mode` and
/// `startedAt` are shown as found).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockOwner {
    pub pid: u32,
    #[serde(rename = "operationID")]
    pub operation_id: Option<String>,
    pub mode: String,
    pub started_at: String,
    #[serde(rename = "bootID")]
    pub boot_id: String,
}

/// An owner file that is not this binary's JSON: printable text, at most 120 characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerRaw {
    pub raw: String,
}

/// An owner file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerError {
    pub error: String,
}

/// What `state/owner` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OwnerView {
    Known(LockOwner),
    Raw(OwnerRaw),
    Error(OwnerError),
}

/// The result of the non-blocking lock probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LockState {
    /// No lock file (or no state directory).
    Absent,
    Free,
    Held,
    /// The lock file could not be used: see `error`.
    Error,
}

/// The renewal lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockView {
    pub path: String,
    pub state: LockState,
    pub held: bool,
    /// The owner when held, else null.
    pub holder: Option<OwnerView>,
    /// The owner file when the lock is not held (null without one).
    pub last_owner: Option<OwnerView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// A receipt that exists but cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MalformedReceipt {
    pub malformed: ConstBool<true>,
    pub error: String,
}

/// A receipt looked up by ID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReceiptLookup {
    Found(Receipt),
    Malformed(MalformedReceipt),
}

/// `present`, `absent`, or `malformed` (unreadable, or the receipt it depends on is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseFileStatus {
    Absent,
    Present,
    Malformed,
}

/// The phase file judged as a renewal would judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RunbookIntent {
    #[serde(rename = "absent")]
    Absent,
    #[serde(rename = "done")]
    Done,
    /// Unfinished V2 whose operation has a success receipt: treated as done.
    #[serde(rename = "done-by-receipt")]
    DoneByReceipt,
    /// Unfinished work the next renewal resumes.
    #[serde(rename = "pending")]
    Pending,
    #[serde(rename = "malformed")]
    Malformed,
}

/// The phase file. The V2-only and legacy-only fields are absent for the
/// other format and when there is no (parsable) file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    #[schemars(with = "Timestamp")]
    pub started_at: Option<Timestamp>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Timestamp")]
    pub updated_at: Option<Timestamp>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub force: Option<bool>,
    /// V2 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub threshold_days: Option<u32>,
    /// V2: all three; legacy: only `ca.crt`.
    #[serde(rename = "caSHA256", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "CaSha256")]
    pub ca_sha256: Option<CaSha256>,
    /// V2 only: the receipt of the operation it names when unfinished (null: none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_present",
        deserialize_with = "de_present"
    )]
    #[schemars(with = "Option<ReceiptLookup>")]
    pub receipt: Option<Option<ReceiptLookup>>,
    /// Legacy only: STARTED, unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub started: Option<u64>,
    /// Legacy only: PID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub pid: Option<u32>,
    /// Why it is malformed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// The node agent's idle (not pending) phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentIdlePhase {
    Idle,
    Done,
    Completed,
    Failed,
}

/// The node agent's pending phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentPendingPhase {
    Renewing,
    RestartPending,
}

/// The node agent's intent, from its state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

// ---------------------------------------------------------------------------
// Check

/// The check's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Renew,
    Unchanged,
    Failed,
}

/// An executor the controller must run, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    Legacy,
    Typed,
}

/// The first failure's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CheckFailure {
    #[serde(rename = "busy")]
    Busy,
    #[serde(rename = "state")]
    State,
    #[serde(rename = "phase-file")]
    PhaseFile,
    #[serde(rename = "manifests")]
    Manifests,
    #[serde(rename = "agent-state")]
    AgentState,
    #[serde(rename = "pki")]
    Pki,
}

/// What `--check` prints with `--output json` (exit 0: decided, 1: failed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook --check result")]
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
    #[schemars(range(min = 7, max = 90))]
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
    #[serde(rename = "caSHA256")]
    pub ca_sha256: CaSha256,
    pub duration_ms: u64,
}

// ---------------------------------------------------------------------------
// Status

/// `clean` or `not_clean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cleanliness {
    Clean,
    NotClean,
}

/// Always `confirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confirmed {
    Confirmed,
}

/// Always `unconfirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unconfirmed {
    Unconfirmed,
}

/// What a fencing check would do now (operator view with an ID).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// What `--status-only [--operation-id ID]` prints with `--output json`
/// (read-only; exit 0: clean node, 1: not clean).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook --status-only operator view")]
pub struct StatusDocument {
    pub mode: StatusMode,
    pub runbook_version: String,
    /// The operation asked about, if any.
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub fence: ConstBool<false>,
    pub outcome: Cleanliness,
    pub clean: bool,
    /// Why the node is not clean (empty: clean).
    pub reasons: Vec<String>,
    pub message: Message,
    pub now: Timestamp,
    #[schemars(range(min = 7, max = 90))]
    pub threshold_days: u32,
    pub lock: LockView,
    pub phase_file: PhaseFileView,
    pub agent_state: AgentStateView,
    /// How many receipts `completed/` holds.
    pub receipt_count: u64,
    /// The most recent receipts, at most 20.
    #[schemars(length(max = 20))]
    pub receipts: Vec<ReceiptSummary>,
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
    /// The state directory could not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub state_error: Option<String>,
    pub duration_ms: u64,
}

/// `confirmed` or `unconfirmed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    Confirmed,
    Unconfirmed,
}

/// What the fencing check did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook fencing check result")]
pub struct FenceDocument {
    pub mode: StatusMode,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: OperationId,
    pub fence: ConstBool<true>,
    pub termination: Termination,
    pub confirmed: bool,
    pub action: FenceAction,
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
}

// ---------------------------------------------------------------------------
// Usage error, version, help

/// `usage_error` (exit 2, nothing written) or `failed` (exit 1: `--root`
/// could not be opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsOutcome {
    UsageError,
    Failed,
}

/// Always `arguments`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsPhase {
    Arguments,
}

/// What any mode prints with `--output json` when its arguments are refused
/// (`usage_error`, exit 2) or `--root` cannot be opened (`failed`, exit 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook usage error")]
pub struct UsageErrorDocument {
    /// The mode the caller seemed to ask for; null when that was unclear.
    pub mode: Option<ModeName>,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: Null,
    pub outcome: ArgumentsOutcome,
    pub phase: ArgumentsPhase,
    pub message: Message,
    pub replayed: ConstBool<false>,
    pub duration_ms: u64,
}

/// What `--version --output json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook --version")]
pub struct VersionDocument {
    pub mode: VersionMode,
    pub runbook_version: String,
    /// The git commit built from, or `unknown`.
    pub git_commit: String,
    /// The version of this contract (CLI, files, exit codes).
    pub contract_version: String,
    pub duration_ms: u64,
}

/// What `--help --output json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "nvke-cert-runbook --help")]
pub struct HelpDocument {
    pub mode: HelpMode,
    pub runbook_version: String,
    /// The usage text.
    pub help: String,
}

// ---------------------------------------------------------------------------
// Generation

/// The schema of `T`, for what the binary serializes: a field is required
/// exactly when it is always printed.
pub fn schema_for<T: JsonSchema>(name: &str) -> Schema {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.insert(
        "$id".into(),
        format!("urn:nvke-cert-runbook:schema:{name}").into(),
    );
    schema.insert(
        "x-contractVersion".into(),
        crate::version::CONTRACT_VERSION.into(),
    );
    schema
}

/// Every schema of the contract: `(name, schema)`; the committed file is
/// `embedded/schema/<name>.schema.json`.
pub fn all() -> Vec<(&'static str, Schema)> {
    vec![
        ("renew", schema_for::<RenewDocument>("renew")),
        ("check", schema_for::<CheckDocument>("check")),
        ("status", schema_for::<StatusDocument>("status")),
        ("fence", schema_for::<FenceDocument>("fence")),
        (
            "usage-error",
            schema_for::<UsageErrorDocument>("usage-error"),
        ),
        ("version", schema_for::<VersionDocument>("version")),
        ("help", schema_for::<HelpDocument>("help")),
        ("phase-v2", schema_for::<PhaseV2File>("phase-v2")),
        ("receipt", schema_for::<Receipt>("receipt")),
        ("agent-state", schema_for::<AgentStateFile>("agent-state")),
        ("lock-owner", schema_for::<LockOwnerFile>("lock-owner")),
    ]
}

/// The committed file name of a schema.
pub fn file_name(name: &str) -> String {
    format!("{name}.schema.json")
}

/// A committed schema file's text: pretty JSON, trailing newline.
pub fn render(schema: &Schema) -> String {
    let mut s = serde_json::to_string_pretty(schema.as_value()).unwrap_or_default();
    s.push('\n');
    s
}

/// The static part of `embedded/manifest.json`: everything but the binary's
/// sha256, size and git commit, which `embedded/gen-manifest` fills in next to
/// a built binary.
pub fn manifest_template() -> serde_json::Value {
    use crate::outcome::exit;
    let schemas: serde_json::Map<String, serde_json::Value> = all()
        .iter()
        .map(|(n, _)| (n.to_string(), file_name(n).into()))
        .collect();
    serde_json::json!({
        "manifestFormat": "nvke-cert-runbook/embedded-manifest/v1",
        "binary": {
            "name": "nvke-cert-runbook",
            "target": "x86_64-unknown-linux-gnu",
            "static": true,
            "sha256": null,
            "size": null,
        },
        "runbookVersion": crate::version::RUNBOOK_VERSION,
        "gitCommit": null,
        "contractVersion": crate::version::CONTRACT_VERSION,
        "globalOptions": [
            "--root DIR", "--output text|json", "--log-format text|json",
            "--threshold-days N", "--lock-timeout SECS", "--stop-timeout SECS",
            "--health-timeout SECS", "--command-timeout SECS", "--kubeadm PATH",
            "--crictl PATH", "--kubeadm-config PATH"
        ],
        "modes": [
            {
                "name": "renew",
                "args": ["--operation-id", "ID"],
                "options": ["--force", "--threshold-days N", "--expect-ca-sha256 NAME=HEX"],
                "output": "renew",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::LOCK_TIMEOUT, exit::OPERATOR_MUST_ACT, exit::FENCED],
            },
            {
                "name": "legacy-v1",
                "args": ["--legacy-v1"],
                "options": ["--force", "--threshold-days N"],
                "output": "renew",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::LOCK_TIMEOUT, exit::OPERATOR_MUST_ACT],
            },
            {
                "name": "check",
                "args": ["--check"],
                "options": ["--force", "--threshold-days N", "--agent-state PATH"],
                "output": "check",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE],
            },
            {
                "name": "status",
                "args": ["--status-only"],
                "options": ["--operation-id ID"],
                "output": "status",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE],
            },
            {
                "name": "fence",
                "args": ["--status-only", "--operation-id", "ID", "--fence"],
                "options": [],
                "output": "fence",
                "exitCodes": [exit::OK, exit::FAILED, exit::USAGE, exit::LOCK_TIMEOUT],
            },
            {
                "name": "version",
                "args": ["--version"],
                "options": [],
                "output": "version",
                "exitCodes": [exit::OK, exit::USAGE],
            },
            {
                "name": "help",
                "args": ["--help"],
                "options": [],
                "output": "help",
                "exitCodes": [exit::OK],
            },
        ],
        "usageErrorOutput": "usage-error",
        "exitCodes": [
            { "code": exit::OK, "name": "ok",
              "meaning": "renewed or unchanged (or a replayed success); status: confirmed, or a clean node; check: decided" },
            { "code": exit::FAILED, "name": "failed",
              "meaning": "failed, cancelled, or refused, and all four manifests are active; status: unconfirmed or not clean; check: failed" },
            { "code": exit::USAGE, "name": "usage",
              "meaning": "usage error; nothing written" },
            { "code": exit::LOCK_TIMEOUT, "name": "lock-timeout",
              "meaning": "lock not acquired in time; nothing written" },
            { "code": exit::OPERATOR_MUST_ACT, "name": "operator-must-act",
              "meaning": "a manifest is still staged or missing (failed_not_restored, or any run that exits with a manifest not active): an operator must act" },
            { "code": exit::FENCED, "name": "fenced",
              "meaning": "replay of an abandoned or superseded receipt: this attempt was fenced; nothing done" },
        ],
        "files": [
            { "name": "phase-v2", "path": "/var/lib/nvke/k8s-cert-renewal/phase", "access": "read-write",
              "note": "or the legacy five-line format (not JSON, SPEC section 3)" },
            { "name": "receipt", "path": "/var/lib/nvke/k8s-cert-renewal/completed/<ID>.json", "access": "create-once" },
            { "name": "lock-owner", "path": "/var/lib/nvke/k8s-cert-renewal/owner", "access": "read-write" },
            { "name": "agent-state", "path": "/var/lib/nvke/node-agent/k8s-cert-renewal-state.json", "access": "read-only" },
        ],
        "schemaDir": "embedded/schema",
        "schemas": schemas,
    })
}
