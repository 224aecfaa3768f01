//! The building blocks of the documents (constants, checked strings), the
//! closed vocabularies and the objects several documents share.

#[cfg(feature = "schema")]
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
#[cfg(feature = "schema")]
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

#[cfg(feature = "schema")]
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

#[cfg(feature = "schema")]
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

#[cfg(feature = "schema")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EmptyObject {}

/// Why a checked string was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("{0:?} is not 64 lowercase hex digits")]
    NotSha256Hex(String),
    #[error(transparent)]
    Time(#[from] crate::rules::clock::TimeError),
    #[error(transparent)]
    Message(#[from] MessageError),
}

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("message is {0} bytes (at most {MAX_MESSAGE_BYTES})")]
    TooLong(usize),
    #[error("message contains a control character")]
    Control,
}

/// `message`: at most 512 bytes, no control character.
pub(crate) fn check_message(message: &str) -> Result<(), MessageError> {
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(MessageError::TooLong(message.len()));
    }
    if message.chars().any(char::is_control) {
        return Err(MessageError::Control);
    }
    Ok(())
}

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
                let check: fn(&str) -> Result<(), ValueError> = $check;
                check(&s).map_err(serde::de::Error::custom)?;
                Ok($name(s))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        #[cfg(feature = "schema")]
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
    /// 64 lowercase hex digits.
    Sha256Hex,
    |s| {
        if is_sha256_hex(s) {
            Ok(())
        } else {
            Err(ValueError::NotSha256Hex(s.to_string()))
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
    |s| Ok(crate::rules::clock::parse_rfc3339(s, true).map(drop)?),
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
    |s| Ok(check_message(s)?),
    {
        "description": "For people: at most 512 bytes of UTF-8 (so at most 512 characters), no control characters, never key material.",
        "type": "string",
        "maxLength": 512,
        "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    }
);

/// Serialize the inner value of a present `Option<Option<T>>` field (used
/// with `skip_serializing_if = "Option::is_none"`: absent, null, or a value).
pub(crate) fn ser_present<S: Serializer, T: Serialize>(
    v: &Option<Option<T>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(inner) => inner.serialize(s),
        None => s.serialize_none(),
    }
}

/// A required field that may be null: missing is an error (serde would
/// take a missing `Option` for null).
pub(crate) fn de_nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// A present field (null or a value) of an `Option<Option<T>>`.
pub(crate) fn de_present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

// ---------------------------------------------------------------------------
// Closed vocabularies

/// The domain's own enums are the contract's (one type per vocabulary; their
/// doc comments are the schema's descriptions).
pub use crate::rules::component::Component;
pub use crate::rules::opid::OperationId;
pub use crate::rules::outcome::{ManifestLocation, Outcome, Phase};

/// The phase file format: V2 JSON, or the shell runbook's five lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PhaseFormat {
    #[serde(rename = "nvke-cert-runbook/phase/v2")]
    V2,
    #[serde(rename = "legacy-five-line")]
    LegacyFiveLine,
}

/// kubeadm's name of a leaf certificate (SPEC section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum CaName {
    #[serde(rename = "ca")]
    Ca,
    #[serde(rename = "etcd-ca")]
    EtcdCa,
    #[serde(rename = "front-proxy-ca")]
    FrontProxyCa,
}

/// The mode a document comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum RenewMode {
    #[serde(rename = "renew")]
    Renew,
    #[serde(rename = "legacy-v1")]
    LegacyV1,
}

/// Always `renew`: only a V2 renewal has receipts to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum RenewOnly {
    #[serde(rename = "renew")]
    Renew,
}

/// Always `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum CheckMode {
    #[serde(rename = "check")]
    Check,
}

/// Always `status` (operator view and fencing check alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StatusMode {
    #[serde(rename = "status")]
    Status,
}

/// Always `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum VersionMode {
    #[serde(rename = "version")]
    Version,
}

/// Always `help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum HelpMode {
    #[serde(rename = "help")]
    Help,
}

/// The check's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Renew,
    Unchanged,
    Failed,
}

/// An executor the controller must run, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    Legacy,
    Typed,
}

/// The first failure's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// Why the fencing check answered as it did (SPEC 6, v1.1). A controller
/// retries only `lock-timeout`; every other unconfirmed reason is
/// definitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum FenceReason {
    /// Confirmed: the operation already had a receipt.
    Receipt,
    /// Confirmed: this check recorded an `abandoned` receipt.
    Abandoned,
    /// Unconfirmed: the phase file is legacy five-line and unfinished (never
    /// abandoned: it carries no operation ID).
    LegacyUnfinished,
    /// Unconfirmed: the phase file cannot be read or parsed.
    MalformedPhase,
    /// Unconfirmed: the operation's receipt (or the receipts directory)
    /// cannot be read or parsed.
    MalformedReceipt,
    /// Unconfirmed: a write failed (the state directory, the lock file, the
    /// owner record, a put-back, the receipt), or the state directory or
    /// lock file is not one the runbook can trust.
    WriteFailed,
    /// Unconfirmed, exit 3: the lock stayed held for `--lock-timeout`.
    LockTimeout,
    /// Unconfirmed: `--deadline` had passed before the check began (nothing
    /// written, exit 1) or passed while it waited for the lock (exit 3).
    Deadline,
}

// ---------------------------------------------------------------------------
// Shared objects

/// Where each of the four manifests was (receipts and renew results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CaSha256 {
    #[serde(rename = "ca.crt", default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Sha256Hex"))]
    pub ca: Option<Sha256Hex>,
    #[serde(
        rename = "etcd/ca.crt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Sha256Hex"))]
    pub etcd_ca: Option<Sha256Hex>,
    #[serde(
        rename = "front-proxy-ca.crt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Sha256Hex"))]
    pub front_proxy_ca: Option<Sha256Hex>,
}

/// All three CA fingerprints, keyed by path relative to `pki/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ResumedFrom {
    /// Null when the work taken over was legacy five-line (it has no ID).
    #[serde(rename = "operationID")]
    pub operation_id: Option<OperationId>,
    pub format: PhaseFormat,
}

/// The three CA files, keyed as in `caSHA256` (relative to `pki/`).
pub const CA_KEYS: [&str; 3] = ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"];

/// `nvke-cert-runbook/phase/v2`.
pub const V2_FORMAT: &str = "nvke-cert-runbook/phase/v2";

/// Sanitize a message for output and receipts: controls become spaces, at
/// most 512 bytes (cut at a char boundary, ending in "..." when cut).
pub fn bounded_message(s: &str) -> String {
    const ELLIPSIS: &str = "...";
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.len() <= MAX_MESSAGE_BYTES {
        return clean;
    }
    let mut cut = MAX_MESSAGE_BYTES - ELLIPSIS.len();
    while !clean.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = clean[..cut].to_string();
    out.push_str(ELLIPSIS);
    out
}

/// `message` bound, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 512;

/// True for exactly 64 lowercase hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

// The doc comment is the contract's description (the schema's text).
/// `state` of a phase file (either format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    Renewing,
    RestartPending,
    Done,
}

impl PhaseState {
    /// `renewing`, `restart_pending`, `done`.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseState::Renewing => "renewing",
            PhaseState::RestartPending => "restart_pending",
            PhaseState::Done => "done",
        }
    }

    /// The exact state string of either format.
    pub fn from_name(s: &str) -> Option<PhaseState> {
        [
            PhaseState::Renewing,
            PhaseState::RestartPending,
            PhaseState::Done,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }

    /// Valid `state`/component pairs (both formats): only `restart_pending`
    /// may name a component.
    pub fn allows_component(self, c: Option<Component>) -> bool {
        c.is_none() || self == PhaseState::RestartPending
    }
}

/// Where each manifest is, one entry per component (a component the map
/// lacks is `missing`).
impl
    From<
        &std::collections::BTreeMap<
            crate::rules::component::Component,
            crate::rules::outcome::ManifestLocation,
        >,
    > for ManifestLocations
{
    fn from(
        m: &std::collections::BTreeMap<
            crate::rules::component::Component,
            crate::rules::outcome::ManifestLocation,
        >,
    ) -> Self {
        use crate::rules::component::Component as C;
        let at = |c: C| m.get(&c).map_or(ManifestLocation::Missing, |l| *l);
        ManifestLocations {
            etcd: at(C::Etcd),
            kube_apiserver: at(C::KubeApiserver),
            kube_controller_manager: at(C::KubeControllerManager),
            kube_scheduler: at(C::KubeScheduler),
        }
    }
}

/// CA fingerprints keyed as `phase::CA_KEYS` (other keys are not CAs).
impl From<&std::collections::BTreeMap<String, String>> for CaSha256 {
    fn from(m: &std::collections::BTreeMap<String, String>) -> Self {
        let at = |k: &str| m.get(k).cloned().map(Sha256Hex);
        CaSha256 {
            ca: at(CA_KEYS[0]),
            etcd_ca: at(CA_KEYS[1]),
            front_proxy_ca: at(CA_KEYS[2]),
        }
    }
}

impl Message {
    /// At most 512 bytes, control characters replaced (`receipt::bounded_message`).
    pub fn bounded(s: &str) -> Message {
        Message(bounded_message(s))
    }
}

impl ManifestLocations {
    /// Where `c`'s manifest is.
    pub fn get(&self, c: Component) -> ManifestLocation {
        match c {
            Component::Etcd => self.etcd,
            Component::KubeApiserver => self.kube_apiserver,
            Component::KubeControllerManager => self.kube_controller_manager,
            Component::KubeScheduler => self.kube_scheduler,
        }
    }
    /// Each component's location, in restart order.
    pub fn iter(&self) -> impl Iterator<Item = (Component, ManifestLocation)> + '_ {
        Component::ALL.into_iter().map(|c| (c, self.get(c)))
    }
}

impl PhaseFormat {
    /// `nvke-cert-runbook/phase/v2` or `legacy-five-line`.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseFormat::V2 => V2_FORMAT,
            PhaseFormat::LegacyFiveLine => "legacy-five-line",
        }
    }
}

impl std::fmt::Display for PhaseFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CaSha256All {
    /// Keyed as `phase::CA_KEYS`.
    pub fn to_map(&self) -> std::collections::BTreeMap<String, String> {
        [&self.ca, &self.etcd_ca, &self.front_proxy_ca]
            .into_iter()
            .zip(CA_KEYS)
            .map(|(h, k)| (k.to_string(), h.0.clone()))
            .collect()
    }
}

/// A CA the map lacks is an empty string (which no reader accepts, and
/// `phase::validate_v2` refuses first); other keys are not CAs.
impl From<&std::collections::BTreeMap<String, String>> for CaSha256All {
    fn from(m: &std::collections::BTreeMap<String, String>) -> Self {
        let at = |k: &str| Sha256Hex(m.get(k).cloned().unwrap_or_default());
        CaSha256All {
            ca: at(CA_KEYS[0]),
            etcd_ca: at(CA_KEYS[1]),
            front_proxy_ca: at(CA_KEYS[2]),
        }
    }
}

impl From<&CaSha256All> for CaSha256 {
    fn from(c: &CaSha256All) -> Self {
        CaSha256 {
            ca: Some(c.ca.clone()),
            etcd_ca: Some(c.etcd_ca.clone()),
            front_proxy_ca: Some(c.front_proxy_ca.clone()),
        }
    }
}

impl FromIterator<(String, String)> for CaSha256All {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(it: I) -> Self {
        CaSha256All::from(&it.into_iter().collect())
    }
}
