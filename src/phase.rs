//! The phase file (SPEC section 3): V2 JSON and the legacy five-line format.
//! Pure: parse from bytes, render to bytes. One writer each.

use crate::component::Component;
use crate::opid::OperationId;
use std::collections::BTreeMap;

pub const V2_FORMAT: &str = "nvke-cert-runbook/phase/v2";
/// The name used for the legacy format in `resumedFrom.format` and in output.
pub const LEGACY_FORMAT: &str = "legacy-five-line";
/// The three CA files, keyed as in `caSHA256` (relative to `pki/`).
pub const CA_KEYS: [&str; 3] = ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"];

/// `state` of either format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhaseState {
    Renewing,
    RestartPending,
    Done,
}

impl PhaseState {
    /// `renewing`, `restart_pending`, `done`.
    pub fn as_str(self) -> &'static str {
        todo!()
    }
}

/// `resumedFrom` of a V2 phase file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumedFrom {
    /// None when the work taken over was legacy (it has no ID).
    pub operation_id: Option<OperationId>,
    /// `V2_FORMAT` or `LEGACY_FORMAT`.
    pub format: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseV2 {
    pub operation_id: OperationId,
    pub state: PhaseState,
    /// Only with `RestartPending` (and may be None there: postflight only).
    pub next_component: Option<Component>,
    /// Exactly the three `CA_KEYS`, 64 lowercase hex each.
    pub ca_sha256: BTreeMap<String, String>,
    pub force: bool,
    /// 7..=90
    pub threshold_days: u32,
    /// RFC 3339 UTC (`...Z`), validated on parse.
    pub started_at: String,
    pub updated_at: String,
    pub resumed_from: Option<ResumedFrom>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyPhase {
    pub state: PhaseState,
    /// `COMPONENT=none` is None; only `RestartPending` may name one.
    pub component: Option<Component>,
    /// Unix seconds.
    pub started: u64,
    /// sha256 of pki/ca.crt, 64 lowercase hex.
    pub ca_sha256: String,
    pub pid: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseFile {
    V2(PhaseV2),
    Legacy(LegacyPhase),
}

impl PhaseFile {
    pub fn state(&self) -> PhaseState {
        match self {
            PhaseFile::V2(p) => p.state,
            PhaseFile::Legacy(p) => p.state,
        }
    }
    /// Unfinished = `renewing` or `restart_pending`.
    pub fn is_unfinished(&self) -> bool {
        self.state() != PhaseState::Done
    }
    pub fn next_component(&self) -> Option<Component> {
        match self {
            PhaseFile::V2(p) => p.next_component,
            PhaseFile::Legacy(p) => p.component,
        }
    }
    /// `V2_FORMAT` or `LEGACY_FORMAT`.
    pub fn format_name(&self) -> &'static str {
        match self {
            PhaseFile::V2(_) => V2_FORMAT,
            PhaseFile::Legacy(_) => LEGACY_FORMAT,
        }
    }
}

/// Parse either format strictly. The error is a short reason naming what is
/// wrong (line number / field), without echoing more than a short, escaped
/// excerpt of the input.
pub fn parse_phase_file(_bytes: &[u8]) -> Result<PhaseFile, String> {
    todo!()
}

/// Render a V2 phase file (pretty JSON, trailing newline). Must round-trip
/// through `parse_phase_file`.
pub fn render_v2(_p: &PhaseV2) -> Vec<u8> {
    todo!()
}

/// Render the legacy five lines. Must round-trip through `parse_phase_file`.
pub fn render_legacy(_p: &LegacyPhase) -> Vec<u8> {
    todo!()
}

/// True for exactly 64 lowercase hex digits.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
