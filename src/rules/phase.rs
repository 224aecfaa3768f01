//! The phase file (SPEC section 3): V2 JSON and the legacy five-line format.
//! Pure: parse from bytes, render to bytes. One writer each.

use crate::rules::component::Component;
use crate::rules::opid::{excerpt, excerpt_bytes, OperationId};
use crate::rules::strict::{self, ParseError, KEY};
pub use crate::rules::strict::{check_keys, check_known_keys, check_time, parse_json_strict};
use crate::rules::values::{PhaseFormat, Sha256Hex};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub use crate::rules::files::{PhaseV2File as PhaseV2, V2_FORMAT};
pub use crate::rules::values::ResumedFrom;
/// The name used for the legacy format in `resumedFrom.format` and in output.
pub const LEGACY_FORMAT: &str = "legacy-five-line";
pub use crate::rules::values::CA_KEYS;
/// `thresholdDays` bounds (SPEC section 1).
pub const MIN_THRESHOLD_DAYS: u32 = 7;
pub const MAX_THRESHOLD_DAYS: u32 = 90;
/// A phase file larger than this is malformed (a real one is under 1 KiB).
/// Readers should not read more than this plus one byte.
pub const MAX_PHASE_FILE_BYTES: usize = 64 * 1024;

pub use crate::rules::values::PhaseState;

impl std::fmt::Display for PhaseState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// Where the work stood, in plain words for an operator (SPEC 6,
    /// v1.2): "renewing the certificates", "restarting kube-apiserver (2
    /// of 4)", "checking the restarted components", "finished". The
    /// phase-file state names stay in JSON.
    pub fn plain_step(&self) -> String {
        match (self.state(), self.next_component()) {
            (PhaseState::Renewing, _) => "renewing the certificates (before any restart)".into(),
            (PhaseState::RestartPending, Some(c)) => {
                let i = Component::ALL.iter().position(|x| *x == c).unwrap_or(0) + 1;
                format!("restarting {c} ({i} of {})", Component::ALL.len())
            }
            (PhaseState::RestartPending, None) => {
                "checking the restarted components (all four restarted)".into()
            }
            (PhaseState::Done, _) => "finished".into(),
        }
    }
    /// Who did the work, in plain words: "renewal ID", "recovery ID", or
    /// "legacy runbook renewal (pid P)".
    pub fn plain_who(&self) -> String {
        match self {
            PhaseFile::V2(p) if p.recovery => format!("recovery {}", p.operation_id),
            PhaseFile::V2(p) => format!("renewal {}", p.operation_id),
            PhaseFile::Legacy(l) => format!("legacy runbook renewal (pid {})", l.pid),
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
pub fn parse_phase_file(bytes: &[u8]) -> Result<PhaseFile, PhaseFileError> {
    if bytes.len() > MAX_PHASE_FILE_BYTES {
        return Err(PhaseFileError::TooBig(bytes.len()));
    }
    if bytes.first() == Some(&b'{') {
        parse_v2(bytes)
            .map(PhaseFile::V2)
            .map_err(PhaseFileError::V2)
    } else if bytes.starts_with(b"STATE=") {
        parse_legacy(bytes)
            .map(PhaseFile::Legacy)
            .map_err(PhaseFileError::Legacy)
    } else if bytes.is_empty() {
        Err(PhaseFileError::Empty)
    } else {
        Err(PhaseFileError::Unknown(excerpt_bytes(
            &bytes[..bytes.len().min(16)],
        )))
    }
}

/// Why a phase file was refused (or would be, before it is written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseFileError {
    #[error("phase file is {0} bytes (at most {MAX_PHASE_FILE_BYTES})")]
    TooBig(usize),
    #[error("V2 phase file: {0}")]
    V2(ParseError),
    #[error("legacy five-line phase file: {0}")]
    Legacy(ParseError),
    #[error("phase file is empty")]
    Empty,
    #[error("phase file is neither the V2 JSON nor the legacy five-line format (starts with {0})")]
    Unknown(String),
    #[error("legacy phase file does not round-trip")]
    NoRoundTrip,
}

/// Render a V2 phase file (pretty JSON, trailing newline). Must round-trip
/// through `parse_phase_file`.
pub fn render_v2(p: &PhaseV2) -> Vec<u8> {
    pretty_json_line(p)
}

/// Render the legacy five lines. Must round-trip through `parse_phase_file`.
pub fn render_legacy(p: &LegacyPhase) -> Vec<u8> {
    format!(
        "STATE={}\nCOMPONENT={}\nSTARTED={}\nCA_SHA256={}\nPID={}\n",
        p.state.as_str(),
        p.component.map_or("none", Component::name),
        p.started,
        p.ca_sha256,
        p.pid
    )
    .into_bytes()
}

/// Check that a V2 value would be written as a valid phase file: the checks
/// the parser makes on the fields, in its order and with its messages.
/// Writers call this before they persist.
pub fn validate_v2(p: &PhaseV2) -> Result<(), PhaseFileError> {
    check_v2(p).map_err(PhaseFileError::V2)
}

fn check_v2(p: &PhaseV2) -> Result<(), ParseError> {
    check_pair(p.state, p.next_component)?;
    let ca = &p.ca_sha256;
    for (k, Sha256Hex(h)) in CA_KEYS
        .iter()
        .zip([&ca.ca, &ca.etcd_ca, &ca.front_proxy_ca])
    {
        if !is_sha256_hex(h) {
            return Err(ParseError::whole(format!(
                "caSHA256.{k} is not 64 lowercase hex digits"
            )));
        }
    }
    check_threshold(p.threshold_days.into())?;
    check_time("startedAt", &p.started_at.0)?;
    check_time("updatedAt", &p.updated_at.0)
}

/// Check that a legacy value would be written as a valid phase file.
pub fn validate_legacy(p: &LegacyPhase) -> Result<(), PhaseFileError> {
    match parse_phase_file(&render_legacy(p))? {
        PhaseFile::Legacy(q) if &q == p => Ok(()),
        _ => Err(PhaseFileError::NoRoundTrip),
    }
}

// ---------------------------------------------------------------------------
// V2

fn parse_v2(bytes: &[u8]) -> Result<PhaseV2, ParseError> {
    let p: PhaseV2 = strict::read(bytes)?;
    check_pair(p.state, p.next_component)?;
    Ok(p)
}

/// `state` (`#[serde(deserialize_with)]`).
pub(crate) fn de_state<'de, D: Deserializer<'de>>(d: D) -> Result<PhaseState, D::Error> {
    let s = strict::de::string(d)?;
    PhaseState::from_name(&s).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{KEY} {} is not renewing, restart_pending or done",
            excerpt(&s)
        ))
    })
}

/// `thresholdDays` (`#[serde(deserialize_with)]`).
pub(crate) fn de_threshold<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    match Value::deserialize(d)?.as_u64() {
        Some(n) => {
            check_threshold(n).map_err(serde::de::Error::custom)?;
            Ok(n as u32)
        }
        None => Err(serde::de::Error::custom(format!(
            "thresholdDays is not an integer in {MIN_THRESHOLD_DAYS}..={MAX_THRESHOLD_DAYS}"
        ))),
    }
}

/// `resumedFrom` (`#[serde(deserialize_with)]`): null, or the operation
/// and format taken over (a key a newer version added is ignored).
pub(crate) fn de_resumed_from<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<ResumedFrom>, D::Error> {
    use serde::de::Error;
    let r = match Value::deserialize(d)? {
        Value::Null => return Ok(None),
        Value::Object(r) => r,
        _ => return Err(D::Error::custom("resumedFrom is not an object or null")),
    };
    check_known_keys(&r, &["operationID", "format"], "resumedFrom.").map_err(D::Error::custom)?;
    let operation_id = match &r["operationID"] {
        Value::Null => None,
        Value::String(s) => Some(
            OperationId::parse(s)
                .map_err(|e| D::Error::custom(format!("resumedFrom.operationID: {e}")))?,
        ),
        _ => {
            return Err(D::Error::custom(
                "resumedFrom.operationID is not a string or null",
            ))
        }
    };
    let format = match &r["format"] {
        Value::String(f) => {
            check_resumed_format(f).map_err(D::Error::custom)?;
            if f == LEGACY_FORMAT {
                PhaseFormat::LegacyFiveLine
            } else {
                PhaseFormat::V2
            }
        }
        _ => return Err(D::Error::custom("resumedFrom.format is not a string")),
    };
    Ok(Some(ResumedFrom {
        operation_id,
        format,
    }))
}

/// Only `restart_pending` may name a next component.
fn check_pair(state: PhaseState, next: Option<Component>) -> Result<(), ParseError> {
    if state.allows_component(next) {
        Ok(())
    } else {
        Err(ParseError::whole(format!(
            "state {} with nextComponent {} is not a valid pair",
            state.as_str(),
            next.map_or("null", Component::name)
        )))
    }
}

fn check_threshold(n: u64) -> Result<(), ParseError> {
    if (u64::from(MIN_THRESHOLD_DAYS)..=u64::from(MAX_THRESHOLD_DAYS)).contains(&n) {
        Ok(())
    } else {
        Err(ParseError::at(
            "thresholdDays",
            format!("{KEY} {n} is outside {MIN_THRESHOLD_DAYS}..={MAX_THRESHOLD_DAYS}"),
        ))
    }
}

fn check_resumed_format(f: &str) -> Result<(), ParseError> {
    if f == V2_FORMAT || f == LEGACY_FORMAT {
        Ok(())
    } else {
        Err(ParseError::at(
            "resumedFrom.format",
            format!(
                "{KEY} is {}, expected {V2_FORMAT:?} or {LEGACY_FORMAT:?}",
                excerpt(f)
            ),
        ))
    }
}

// ---------------------------------------------------------------------------
// Legacy five-line

fn parse_legacy(bytes: &[u8]) -> Result<LegacyPhase, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        ParseError::whole(format!(
            "not UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    if let Some(i) = text.find('\r') {
        return Err(ParseError::whole(format!(
            "carriage return at byte {} (CRLF line endings are not allowed)",
            i
        )));
    }
    let body = text
        .strip_suffix('\n')
        .ok_or_else(|| ParseError::whole("the last line has no final newline"))?;
    let lines: Vec<&str> = body.split('\n').collect();
    if lines.len() != 5 {
        return Err(ParseError::whole(format!(
            "{} lines, expected exactly 5",
            lines.len()
        )));
    }
    let field = |n: usize, key: &'static str| -> Result<&str, ParseError> {
        let line = lines[n - 1];
        if line.is_empty() {
            return Err(ParseError::at(
                key,
                format!("line {n} is blank, expected {KEY}=..."),
            ));
        }
        line.strip_prefix(key)
            .and_then(|l| l.strip_prefix('='))
            .ok_or_else(|| {
                ParseError::at(
                    key,
                    format!("line {n} is {}, expected {KEY}=...", excerpt(line)),
                )
            })
    };
    let bad = |n: usize, key: &'static str, v: &str, want: &str| -> ParseError {
        ParseError::at(key, format!("line {n}: {KEY}={} is not {want}", excerpt(v)))
    };

    let v = field(1, "STATE")?;
    let state = PhaseState::from_name(v)
        .ok_or_else(|| bad(1, "STATE", v, "renewing, restart_pending or done"))?;
    let v = field(2, "COMPONENT")?;
    let component = if v == "none" {
        None
    } else {
        Some(Component::from_name(v).ok_or_else(|| {
            bad(
                2,
                "COMPONENT",
                v,
                "none, etcd, kube-apiserver, kube-controller-manager or kube-scheduler",
            )
        })?)
    };
    if !state.allows_component(component) {
        return Err(ParseError::whole(format!(
            "STATE={} with COMPONENT={} is not a valid pair",
            state.as_str(),
            component.map_or("none", Component::name)
        )));
    }
    let v = field(3, "STARTED")?;
    let started = parse_digits::<u64>(v).ok_or_else(|| {
        bad(
            3,
            "STARTED",
            v,
            "unix seconds (digits only, fitting 64 bits)",
        )
    })?;
    let v = field(4, "CA_SHA256")?;
    if !is_sha256_hex(v) {
        return Err(bad(4, "CA_SHA256", v, "64 lowercase hex digits"));
    }
    let ca_sha256 = v.to_string();
    let v = field(5, "PID")?;
    let pid = parse_digits::<u32>(v)
        .filter(|p| *p > 0)
        .ok_or_else(|| bad(5, "PID", v, "a positive decimal process ID"))?;
    Ok(LegacyPhase {
        state,
        component,
        started,
        ca_sha256,
        pid,
    })
}

/// ASCII digits only (no sign, no space), non-empty, fitting `T`.
fn parse_digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

// ---------------------------------------------------------------------------
// Strict JSON helpers, shared with `receipt` and `agent`.

/// Pretty JSON with a trailing newline.
pub(crate) fn pretty_json_line<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing plain structs of strings, bools and integers into a Vec
    // cannot fail; fall back to an empty object (which no parser accepts)
    // rather than panic.
    let mut out = serde_json::to_vec_pretty(v).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

pub use crate::rules::values::is_sha256_hex;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::values::Timestamp;

    const H1: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const H2: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const H3: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

    fn v2() -> PhaseV2 {
        PhaseV2 {
            format: crate::rules::files::PhaseV2Format::V2,
            operation_id: OperationId::parse("cycle-1@node-a").unwrap(),
            state: PhaseState::RestartPending,
            next_component: Some(Component::KubeApiserver),
            ca_sha256: CA_KEYS
                .iter()
                .zip([H1, H2, H3])
                .map(|(k, h)| (k.to_string(), h.to_string()))
                .collect(),
            force: false,
            threshold_days: 30,
            started_at: Timestamp("2026-11-30T00:00:00Z".to_string()),
            updated_at: Timestamp("2026-11-30T00:05:00Z".to_string()),
            resumed_from: None,
            recovery: false,
        }
    }

    #[test]
    fn plain_words_say_where_the_work_stood() {
        let mut p = v2();
        let step = |p: &PhaseV2| PhaseFile::V2(p.clone()).plain_step();
        assert_eq!(step(&p), "restarting kube-apiserver (2 of 4)");
        p.next_component = Some(Component::Etcd);
        assert_eq!(step(&p), "restarting etcd (1 of 4)");
        p.next_component = Some(Component::KubeScheduler);
        assert_eq!(step(&p), "restarting kube-scheduler (4 of 4)");
        p.next_component = None;
        assert!(step(&p).starts_with("checking the restarted"));
        p.state = PhaseState::Renewing;
        assert!(step(&p).starts_with("renewing the certificates"));
        p.state = PhaseState::Done;
        assert_eq!(step(&p), "finished");
        assert_eq!(
            PhaseFile::V2(p.clone()).plain_who(),
            "renewal cycle-1@node-a"
        );
        p.recovery = true;
        assert_eq!(PhaseFile::V2(p).plain_who(), "recovery cycle-1@node-a");
        let l = parse_phase_file(LEGACY.as_bytes()).unwrap();
        assert_eq!(l.plain_who(), "legacy runbook renewal (pid 4242)");
        assert_eq!(l.plain_step(), "restarting kube-apiserver (2 of 4)");
        for w in [l.plain_step(), l.plain_who()] {
            assert!(!w.contains("restart_pending") && !w.contains("V2"), "{w}");
        }
    }

    fn v2_json() -> Value {
        serde_json::from_slice(&render_v2(&v2())).unwrap()
    }

    /// Parse a V2 file built from `v2()` with one key changed.
    fn with(key: &str, val: Value) -> Result<PhaseFile, PhaseFileError> {
        let mut j = v2_json();
        j.as_object_mut().unwrap().insert(key.to_string(), val);
        parse_phase_file(serde_json::to_string(&j).unwrap().as_bytes())
    }

    fn without(key: &str) -> Result<PhaseFile, PhaseFileError> {
        let mut j = v2_json();
        j.as_object_mut().unwrap().remove(key);
        parse_phase_file(serde_json::to_string(&j).unwrap().as_bytes())
    }

    fn assert_short_one_line(e: &str) {
        assert!(e.len() < 400, "too long: {e}");
        assert!(!e.chars().any(char::is_control), "control in {e:?}");
    }

    fn bad(r: Result<PhaseFile, PhaseFileError>, needle: &str) {
        let e = r.expect_err("should be malformed").to_string();
        assert_short_one_line(&e);
        assert!(e.contains(needle), "{e:?} does not mention {needle:?}");
    }

    const LEGACY: &str = "STATE=restart_pending\nCOMPONENT=kube-apiserver\nSTARTED=1764460800\nCA_SHA256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nPID=4242\n";

    fn legacy() -> LegacyPhase {
        LegacyPhase {
            state: PhaseState::RestartPending,
            component: Some(Component::KubeApiserver),
            started: 1_764_460_800,
            ca_sha256: H1.to_string(),
            pid: 4242,
        }
    }

    // ----- V2 -----

    #[test]
    fn v2_renders_in_documented_key_order_and_round_trips() {
        let text = String::from_utf8(render_v2(&v2())).unwrap();
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
        let keys = [
            "\"format\"",
            "\"operationID\"",
            "\"state\"",
            "\"nextComponent\"",
            "\"caSHA256\"",
            "\"force\"",
            "\"thresholdDays\"",
            "\"startedAt\"",
            "\"updatedAt\"",
            "\"resumedFrom\"",
        ];
        let pos: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("\"format\": \"nvke-cert-runbook/phase/v2\""));
        assert!(text.contains("\"nextComponent\": \"kube-apiserver\""));
        assert!(text.contains("\"resumedFrom\": null"));
        let p = parse_phase_file(text.as_bytes()).unwrap();
        assert_eq!(p, PhaseFile::V2(v2()));
        assert_eq!(p.format_name(), V2_FORMAT);
        assert!(p.is_unfinished());
        assert_eq!(p.next_component(), Some(Component::KubeApiserver));
        validate_v2(&v2()).unwrap();
    }

    #[test]
    fn v2_resumed_from_round_trips() {
        for rf in [
            ResumedFrom {
                operation_id: Some(OperationId::parse("older").unwrap()),
                format: PhaseFormat::V2,
            },
            ResumedFrom {
                operation_id: None,
                format: PhaseFormat::LegacyFiveLine,
            },
        ] {
            let mut p = v2();
            p.resumed_from = Some(rf);
            assert_eq!(
                parse_phase_file(&render_v2(&p)).unwrap(),
                PhaseFile::V2(p.clone())
            );
        }
    }

    #[test]
    fn v2_valid_state_pairs() {
        let mut ok = vec![
            (PhaseState::Renewing, None),
            (PhaseState::RestartPending, None),
            (PhaseState::Done, None),
        ];
        ok.extend(
            Component::ALL
                .into_iter()
                .map(|c| (PhaseState::RestartPending, Some(c))),
        );
        for (state, next) in ok {
            let mut p = v2();
            p.state = state;
            p.next_component = next;
            assert_eq!(
                parse_phase_file(&render_v2(&p)).unwrap(),
                PhaseFile::V2(p.clone())
            );
        }
        for state in [PhaseState::Renewing, PhaseState::Done] {
            for c in Component::ALL {
                let mut p = v2();
                p.state = state;
                p.next_component = Some(c);
                bad(parse_phase_file(&render_v2(&p)), "not a valid pair");
                assert!(validate_v2(&p).is_err());
            }
        }
    }

    #[test]
    fn v2_bad_state_and_component() {
        bad(with("state", "finished".into()), "state");
        bad(with("state", "RENEWING".into()), "state");
        bad(with("state", "".into()), "state");
        bad(with("state", Value::Null), "state");
        bad(with("nextComponent", "kube-vip".into()), "nextComponent");
        bad(with("nextComponent", "none".into()), "nextComponent");
        bad(with("nextComponent", 1.into()), "nextComponent");
    }

    #[test]
    fn v2_truncated_json() {
        let full = render_v2(&v2());
        for n in [1, 2, 10, full.len() / 2, full.len() - 2] {
            bad(parse_phase_file(&full[..n]), "not valid JSON");
        }
    }

    #[test]
    fn v2_trailing_garbage() {
        let mut full = render_v2(&v2());
        full.extend_from_slice(b"{}");
        bad(parse_phase_file(&full), "not valid JSON");
    }

    #[test]
    fn v2_unknown_and_missing_keys() {
        // Forward compatibility (SPEC 3, v1.2): a field a newer version
        // added is ignored, and the file reads as this version wrote it.
        for (k, v) in [
            ("extra", 1.into()),
            ("Format", "x".into()),
            ("nextSomething", serde_json::json!({"a": [1, 2]})),
        ] {
            assert_eq!(with(k, v).unwrap(), PhaseFile::V2(v2()), "{k}");
        }
        for k in [
            "format",
            "operationID",
            "state",
            "nextComponent",
            "caSHA256",
            "force",
            "thresholdDays",
            "startedAt",
            "updatedAt",
            "resumedFrom",
        ] {
            bad(without(k), "missing key");
        }
    }

    #[test]
    fn v2_duplicate_keys() {
        let text = String::from_utf8(render_v2(&v2())).unwrap();
        let dup = text.replacen(
            "\"force\": false",
            "\"force\": false,\n  \"force\": true",
            1,
        );
        bad(parse_phase_file(dup.as_bytes()), "duplicate key");
        let dup = text.replacen(
            "\"state\": \"restart_pending\"",
            "\"state\": \"done\", \"state\": \"restart_pending\"",
            1,
        );
        bad(parse_phase_file(dup.as_bytes()), "duplicate key");
        // Nested too.
        let dup = text.replacen(
            &format!("\"ca.crt\": \"{H1}\""),
            &format!("\"ca.crt\": \"{H1}\", \"ca.crt\": \"{H1}\""),
            1,
        );
        bad(parse_phase_file(dup.as_bytes()), "duplicate key");
    }

    #[test]
    fn v2_wrong_format_string() {
        bad(
            with("format", "nvke-cert-runbook/phase/v1".into()),
            "format",
        );
        bad(
            with("format", "nvke-cert-runbook/phase/v3".into()),
            "format",
        );
        bad(with("format", LEGACY_FORMAT.into()), "format");
        bad(with("format", 2.into()), "format");
    }

    #[test]
    fn v2_bad_operation_id() {
        for id in ["", "a/b", "../x", "a..b", ".a", "-a", "a\nb", "a\u{2215}b"] {
            bad(with("operationID", id.into()), "operationID");
        }
        bad(with("operationID", "a".repeat(201).into()), "operationID");
        bad(with("operationID", Value::Null), "operationID");
    }

    #[test]
    fn v2_threshold_bounds() {
        for n in [7, 30, 90] {
            assert!(with("thresholdDays", n.into()).is_ok(), "{n}");
        }
        bad(with("thresholdDays", 6.into()), "outside");
        bad(with("thresholdDays", 91.into()), "outside");
        bad(with("thresholdDays", 0.into()), "outside");
        bad(with("thresholdDays", (-30).into()), "thresholdDays");
        bad(with("thresholdDays", 30.5.into()), "thresholdDays");
        bad(with("thresholdDays", "30".into()), "thresholdDays");
        bad(
            parse_phase_file(
                String::from_utf8(render_v2(&v2()))
                    .unwrap()
                    .replace("30,", "30.0,")
                    .as_bytes(),
            ),
            "thresholdDays",
        );
        bad(
            parse_phase_file(
                String::from_utf8(render_v2(&v2()))
                    .unwrap()
                    .replace("30,", "1e400,")
                    .as_bytes(),
            ),
            "JSON",
        );
    }

    #[test]
    fn v2_force_must_be_bool() {
        bad(with("force", "false".into()), "force");
        bad(with("force", 0.into()), "force");
        bad(with("force", Value::Null), "force");
        let mut p = v2();
        p.force = true;
        assert_eq!(
            parse_phase_file(&render_v2(&p)).unwrap(),
            PhaseFile::V2(p.clone())
        );
    }

    #[test]
    fn v2_times_must_be_utc_rfc3339() {
        for key in ["startedAt", "updatedAt"] {
            assert!(with(key, "2026-11-30T00:00:00.5Z".into()).is_ok());
            bad(with(key, "2026-11-30T01:00:00+01:00".into()), key);
            bad(with(key, "2026-11-30T00:00:00+00:00".into()), key);
            bad(with(key, "2026-11-30 00:00:00Z".into()), key);
            bad(with(key, "2026-11-30".into()), key);
            bad(with(key, "2026-11-30t00:00:00Z".into()), key);
            bad(with(key, "2026-11-30T00:00:00z".into()), key);
            bad(with(key, "2026-11-30T00:00:00.Z".into()), key);
            bad(with(key, "2026-11-30T00:00:00.1234567890Z".into()), key);
            bad(with(key, "2026-11-30T24:00:00Z".into()), key);
            bad(with(key, " 2026-11-30T00:00:00Z".into()), key);
            bad(with(key, "2026-11-30T00:00:00Z ".into()), key);
            bad(with(key, "+2026-11-30T00:00:00Z".into()), key);
            assert!(with(key, "2026-11-30T00:00:00.123456789Z".into()).is_ok());
            bad(with(key, "2026-02-30T00:00:00Z".into()), key);
            bad(with(key, "yesterdayZ".into()), key);
            bad(with(key, "".into()), key);
            bad(with(key, 1764460800.into()), key);
            bad(
                with(
                    key,
                    format!("2026-11-30T00:00:00{}Z", "0".repeat(500)).into(),
                ),
                key,
            );
        }
    }

    #[test]
    fn v2_ca_map() {
        let mut m = serde_json::Map::new();
        for k in CA_KEYS {
            m.insert(k.to_string(), H1.into());
        }
        assert!(with("caSHA256", Value::Object(m.clone())).is_ok());
        let mut upper = m.clone();
        upper.insert("ca.crt".into(), H1.to_uppercase().into());
        bad(with("caSHA256", Value::Object(upper)), "hex");
        let mut short = m.clone();
        short.insert("etcd/ca.crt".into(), H1[1..].into());
        bad(with("caSHA256", Value::Object(short)), "hex");
        let mut nonhex = m.clone();
        nonhex.insert("etcd/ca.crt".into(), H1.replace('a', "g").into());
        bad(with("caSHA256", Value::Object(nonhex)), "hex");
        let mut missing = m.clone();
        missing.remove("front-proxy-ca.crt");
        bad(
            with("caSHA256", Value::Object(missing)),
            "missing key caSHA256.front-proxy-ca.crt",
        );
        let mut extra = m.clone();
        extra.insert("apiserver.crt".into(), H1.into());
        bad(with("caSHA256", Value::Object(extra)), "unknown key");
        bad(with("caSHA256", Value::Null), "caSHA256");
        bad(with("caSHA256", H1.into()), "caSHA256");
    }

    #[test]
    fn v2_resumed_from_is_strict_on_its_known_keys() {
        bad(with("resumedFrom", "x".into()), "resumedFrom");
        bad(
            with("resumedFrom", serde_json::json!({"operationID": null})),
            "missing key resumedFrom.format",
        );
        // A field a newer version added is ignored (SPEC 3, v1.2).
        let PhaseFile::V2(p) = with(
            "resumedFrom",
            serde_json::json!({"operationID": null, "format": LEGACY_FORMAT, "x": 1}),
        )
        .unwrap() else {
            panic!("not V2")
        };
        assert_eq!(p.resumed_from.unwrap().format, PhaseFormat::LegacyFiveLine);
        bad(
            with(
                "resumedFrom",
                serde_json::json!({"operationID": "a/b", "format": V2_FORMAT}),
            ),
            "resumedFrom.operationID",
        );
        bad(
            with(
                "resumedFrom",
                serde_json::json!({"operationID": 3, "format": V2_FORMAT}),
            ),
            "resumedFrom.operationID",
        );
        bad(
            with(
                "resumedFrom",
                serde_json::json!({"operationID": null, "format": "v1"}),
            ),
            "resumedFrom.format",
        );
    }

    #[test]
    fn v2_not_an_object_or_not_utf8() {
        bad(parse_phase_file(b"{"), "JSON");
        bad(parse_phase_file(b"{}"), "missing key");
        bad(parse_phase_file(b"{\"format\": \"\xff\"}"), "UTF-8");
        // Leading whitespace or a BOM is neither format.
        bad(parse_phase_file(b" {}"), "neither");
        bad(parse_phase_file(b"\xef\xbb\xbf{}"), "neither");
        bad(parse_phase_file(b"[1]"), "neither");
    }

    // ----- detection -----

    #[test]
    fn detection() {
        bad(parse_phase_file(b""), "empty");
        bad(parse_phase_file(b"\n"), "neither");
        bad(parse_phase_file(b"state=done\n"), "neither");
        bad(parse_phase_file(b"STATE"), "legacy");
        let e = parse_phase_file(&[0x1b; 5000]).unwrap_err().to_string();
        assert_short_one_line(&e);
        assert!(
            e.contains("neither the V2 JSON nor the legacy five-line format"),
            "{e}"
        );
        bad(
            parse_phase_file(&vec![b'{'; MAX_PHASE_FILE_BYTES + 1]),
            "at most",
        );
    }

    // ----- legacy -----

    #[test]
    fn legacy_parses_the_documented_example_and_round_trips() {
        let p = parse_phase_file(LEGACY.as_bytes()).unwrap();
        assert_eq!(p, PhaseFile::Legacy(legacy()));
        assert_eq!(render_legacy(&legacy()), LEGACY.as_bytes());
        assert_eq!(p.format_name(), LEGACY_FORMAT);
        assert!(p.is_unfinished());
        validate_legacy(&legacy()).unwrap();
    }

    #[test]
    fn legacy_valid_pairs() {
        let mut ok = vec![
            (PhaseState::Renewing, None),
            (PhaseState::RestartPending, None),
            (PhaseState::Done, None),
        ];
        ok.extend(
            Component::ALL
                .into_iter()
                .map(|c| (PhaseState::RestartPending, Some(c))),
        );
        for (state, component) in ok {
            let p = LegacyPhase {
                state,
                component,
                ..legacy()
            };
            let bytes = render_legacy(&p);
            assert_eq!(parse_phase_file(&bytes).unwrap(), PhaseFile::Legacy(p));
        }
        for state in ["renewing", "done"] {
            for c in Component::ALL {
                let text = LEGACY
                    .replace("restart_pending", state)
                    .replace("kube-apiserver", c.name());
                bad(parse_phase_file(text.as_bytes()), "not a valid pair");
            }
        }
        let done = LEGACY
            .replace("restart_pending", "done")
            .replace("kube-apiserver", "none");
        let p = parse_phase_file(done.as_bytes()).unwrap();
        assert!(!p.is_unfinished());
    }

    #[test]
    fn legacy_structure_errors() {
        // sixth line
        bad(
            parse_phase_file(format!("{LEGACY}EXTRA=1\n").as_bytes()),
            "6 lines",
        );
        // trailing blank line
        bad(
            parse_phase_file(format!("{LEGACY}\n").as_bytes()),
            "6 lines",
        );
        // missing line
        let four: String = LEGACY.lines().take(4).map(|l| format!("{l}\n")).collect();
        bad(parse_phase_file(four.as_bytes()), "4 lines");
        let no_pid: String = LEGACY
            .lines()
            .filter(|l| !l.starts_with("COMPONENT"))
            .map(|l| format!("{l}\n"))
            .collect();
        bad(parse_phase_file(no_pid.as_bytes()), "4 lines");
        // blank line in the middle (replacing one)
        let blank = LEGACY.replace("STARTED=1764460800", "");
        bad(parse_phase_file(blank.as_bytes()), "blank");
        // wrong order
        let lines: Vec<&str> = LEGACY.lines().collect();
        let swapped = format!(
            "{}\n{}\n{}\n{}\n{}\n",
            lines[0], lines[2], lines[1], lines[3], lines[4]
        );
        bad(parse_phase_file(swapped.as_bytes()), "line 2");
        // CRLF
        bad(
            parse_phase_file(LEGACY.replace('\n', "\r\n").as_bytes()),
            "carriage return",
        );
        bad(
            parse_phase_file(LEGACY.replacen('\n', "\r\n", 1).as_bytes()),
            "carriage return",
        );
        bad(
            parse_phase_file(format!("{LEGACY}\r").as_bytes()),
            "carriage return",
        );
        // missing final newline
        bad(
            parse_phase_file(LEGACY.trim_end_matches('\n').as_bytes()),
            "final newline",
        );
        // BOM
        bad(
            parse_phase_file(format!("\u{feff}{LEGACY}").as_bytes()),
            "neither",
        );
        // non-UTF-8
        let mut b = LEGACY.as_bytes().to_vec();
        b[8] = 0xff;
        bad(parse_phase_file(&b), "UTF-8");
    }

    #[test]
    fn legacy_spaces_are_errors() {
        for (from, to) in [
            ("STATE=restart_pending", "STATE= restart_pending"),
            ("STATE=restart_pending", "STATE=restart_pending "),
            ("COMPONENT=kube-apiserver", " COMPONENT=kube-apiserver"),
            ("COMPONENT=kube-apiserver", "COMPONENT =kube-apiserver"),
            ("STARTED=1764460800", "STARTED=1764460800 "),
            ("PID=4242", "PID= 4242"),
            ("PID=4242", "PID=4242\t"),
        ] {
            let text = LEGACY.replace(from, to);
            assert!(parse_phase_file(text.as_bytes()).is_err(), "{text:?}");
        }
    }

    #[test]
    fn legacy_bad_values() {
        for (from, to, needle) in [
            ("STATE=restart_pending", "STATE=finished", "STATE"),
            ("STATE=restart_pending", "STATE=", "STATE"),
            ("STATE=restart_pending", "STATE=RESTART_PENDING", "STATE"),
            (
                "COMPONENT=kube-apiserver",
                "COMPONENT=kube-vip",
                "COMPONENT",
            ),
            ("COMPONENT=kube-apiserver", "COMPONENT=", "COMPONENT"),
            ("COMPONENT=kube-apiserver", "COMPONENT=None", "COMPONENT"),
            ("STARTED=1764460800", "STARTED=-1764460800", "STARTED"),
            ("STARTED=1764460800", "STARTED=+1764460800", "STARTED"),
            ("STARTED=1764460800", "STARTED=", "STARTED"),
            ("STARTED=1764460800", "STARTED=1764460800.5", "STARTED"),
            (
                "STARTED=1764460800",
                "STARTED=18446744073709551616",
                "STARTED",
            ),
            ("STARTED=1764460800", "STARTED=0x10", "STARTED"),
            ("STARTED=1764460800", "STARTED=\u{0661}", "STARTED"),
            ("PID=4242", "PID=0", "PID"),
            ("PID=4242", "PID=-1", "PID"),
            ("PID=4242", "PID=4294967296", "PID"),
            ("PID=4242", "PID=", "PID"),
            ("PID=4242", "PID=abc", "PID"),
            ("PID=4242", "PID=+4242", "PID"),
        ] {
            let text = LEGACY.replace(from, to);
            bad(parse_phase_file(text.as_bytes()), needle);
        }
        // Limits that fit.
        let max = LEGACY
            .replace("STARTED=1764460800", "STARTED=18446744073709551615")
            .replace("PID=4242", "PID=4294967295");
        let PhaseFile::Legacy(p) = parse_phase_file(max.as_bytes()).unwrap() else {
            panic!("not legacy")
        };
        assert_eq!((p.started, p.pid), (u64::MAX, u32::MAX));
    }

    #[test]
    fn legacy_bad_hex() {
        bad(
            parse_phase_file(LEGACY.replace(H1, &H1.to_uppercase()).as_bytes()),
            "CA_SHA256",
        );
        bad(
            parse_phase_file(LEGACY.replace(H1, &H1[..63]).as_bytes()),
            "CA_SHA256",
        );
        bad(
            parse_phase_file(LEGACY.replace(H1, &format!("{H1}0")).as_bytes()),
            "CA_SHA256",
        );
        bad(
            parse_phase_file(LEGACY.replace(H1, &H1.replace('0', "g")).as_bytes()),
            "CA_SHA256",
        );
        bad(
            parse_phase_file(LEGACY.replace(H1, "").as_bytes()),
            "CA_SHA256",
        );
    }

    #[test]
    fn legacy_errors_do_not_echo_long_input() {
        let long = LEGACY.replace("PID=4242", &format!("PID={}", "\u{1b}".repeat(10_000)));
        let e = parse_phase_file(long.as_bytes()).unwrap_err().to_string();
        assert_short_one_line(&e);
    }

    #[test]
    fn sha256_hex() {
        assert!(is_sha256_hex(H1));
        assert!(!is_sha256_hex(&H1.to_uppercase()));
        assert!(!is_sha256_hex(&H1[..63]));
        assert!(!is_sha256_hex(""));
    }

    #[test]
    fn strict_json_refuses_duplicates_anywhere() {
        assert!(parse_json_strict(br#"{"a": 1, "b": [1, {"c": 2}]}"#).is_ok());
        assert!(parse_json_strict(br#"{"a": 1, "a": 1}"#)
            .unwrap_err()
            .to_string()
            .contains("duplicate key"));
        assert!(parse_json_strict(br#"[{"a": {"b": 1, "b": 2}}]"#)
            .unwrap_err()
            .to_string()
            .contains("duplicate key"));
        // Keys equal after unescaping are duplicates.
        assert!(parse_json_strict(br#"{"a": 1, "\u0061": 1}"#).is_err());
        let e = parse_json_strict(
            format!(
                "{{\"{}\": 1, \"{}\": 2}}",
                "\\n".repeat(500),
                "\\n".repeat(500)
            )
            .as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.len() < 300 && !e.contains('\n'), "{e}");
        // Deep nesting is an error, not a stack overflow.
        let deep = "[".repeat(100_000);
        assert!(parse_json_strict(deep.as_bytes()).is_err());
    }
}
