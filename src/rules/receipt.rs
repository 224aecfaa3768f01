//! Receipts (SPEC section 3): `state/completed/<ID>.json`. Pure.

use crate::rules::component::Component;
use crate::rules::opid::{excerpt, OperationId};
use crate::rules::outcome::{ManifestLocation, Outcome, Phase};
use crate::rules::phase::{
    check_ca_map, check_keys, check_known_keys, check_time, get_ca_map, get_id, get_opt_component,
    get_str, get_time, parse_json_strict, pretty_json_line,
};
use crate::rules::{files, values};
use serde_json::Value;
use std::collections::BTreeMap;

pub const RECEIPT_FORMAT: &str = "nvke-cert-runbook/receipt/v1";
pub use crate::rules::values::MAX_MESSAGE_BYTES;
/// `runbookVersion` bound, in characters.
pub const MAX_VERSION_CHARS: usize = 100;
/// A receipt larger than this is malformed (a real one is under 2 KiB).
/// Readers should not read more than this plus one byte.
pub const MAX_RECEIPT_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub operation_id: OperationId,
    pub outcome: Outcome,
    pub phase: Phase,
    /// At most 512 bytes, no control characters (enforced on render by
    /// truncating at a char boundary and replacing controls with spaces;
    /// on parse, a longer message or one with controls is malformed).
    pub message: String,
    pub failed_component: Option<Component>,
    /// All four components, always.
    pub manifests: BTreeMap<Component, ManifestLocation>,
    /// RFC 3339 UTC.
    pub finished_at: String,
    pub runbook_version: String,
    /// Keys among `phase::CA_KEYS`, values 64 lowercase hex; may be empty
    /// (CAs unreadable when the receipt was written).
    pub ca_sha256: BTreeMap<String, String>,
    /// v1.2: the restarts this run made, in order; optional on parse (a
    /// v1.1 receipt has none), not written when empty.
    pub restarts: Vec<files::Restart>,
    /// v1.2 (SPEC 11): a `--recover-expired` run; optional on parse, not
    /// written when false.
    pub recovery: bool,
    /// v1.2 (SPEC 11): a recovery's health observed at its end (bounded
    /// like the message); optional on parse, not written when None.
    pub health_at_end: Option<String>,
}

/// Parse strictly. `file_id` is the ID from the file name: a receipt whose
/// `operationID` differs is malformed.
pub fn parse_receipt(bytes: &[u8], file_id: &OperationId) -> Result<Receipt, String> {
    if bytes.len() > MAX_RECEIPT_BYTES {
        return Err(format!(
            "receipt is {} bytes (at most {MAX_RECEIPT_BYTES})",
            bytes.len()
        ));
    }
    let value = parse_json_strict(bytes)?;
    let mut obj = value
        .as_object()
        .ok_or_else(|| "not a JSON object".to_string())?
        .clone();
    // v1.2's optional key, then the required ones.
    let restarts = match obj.remove("restarts") {
        None => Vec::new(),
        Some(v) => parse_restarts(v)?,
    };
    let recovery = match obj.remove("recovery") {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err("recovery is not a boolean".to_string()),
    };
    let health_at_end = match obj.remove("healthAtEnd") {
        None | Some(Value::Null) => None,
        Some(Value::String(h)) => {
            check_message(&h).map_err(|e| format!("healthAtEnd: {e}"))?;
            Some(h)
        }
        Some(_) => return Err("healthAtEnd is not a string".to_string()),
    };
    let obj = &obj;
    check_known_keys(
        obj,
        &[
            "format",
            "operationID",
            "outcome",
            "phase",
            "message",
            "failedComponent",
            "manifests",
            "finishedAt",
            "runbookVersion",
            "caSHA256",
        ],
        "",
    )?;
    let format = get_str(obj, "format")?;
    if format != RECEIPT_FORMAT {
        return Err(format!(
            "format is {}, expected {RECEIPT_FORMAT:?}",
            excerpt(format)
        ));
    }
    let operation_id = get_id(obj, "operationID")?;
    if &operation_id != file_id {
        return Err(format!(
            "operationID {} is not the file's ID {}",
            excerpt(operation_id.as_str()),
            excerpt(file_id.as_str())
        ));
    }
    let outcome: Outcome = get_str(obj, "outcome")?
        .parse()
        .map_err(|e| format!("outcome: {e}"))?;
    let phase: Phase = get_str(obj, "phase")?
        .parse()
        .map_err(|e| format!("phase: {e}"))?;
    let message = get_str(obj, "message")?;
    check_message(message)?;
    let failed_component = get_opt_component(obj, "failedComponent")?;
    let m = obj
        .get("manifests")
        .and_then(Value::as_object)
        .ok_or_else(|| "manifests is not an object".to_string())?;
    check_keys(m, &Component::ALL.map(Component::name), "manifests.")?;
    let mut manifests = BTreeMap::new();
    for c in Component::ALL {
        let loc: ManifestLocation = m
            .get(c.name())
            .and_then(Value::as_str)
            .ok_or_else(|| format!("manifests.{c} is not a string"))?
            .parse()
            .map_err(|e| format!("manifests.{c}: {e}"))?;
        manifests.insert(c, loc);
    }
    let finished_at = get_time(obj, "finishedAt")?;
    let runbook_version = get_str(obj, "runbookVersion")?;
    check_version(runbook_version)?;
    let ca_sha256 = get_ca_map(obj, "caSHA256", false)?;
    Ok(Receipt {
        operation_id,
        outcome,
        phase,
        message: message.to_string(),
        failed_component,
        manifests,
        finished_at,
        runbook_version: runbook_version.to_string(),
        ca_sha256,
        restarts,
        recovery,
        health_at_end,
    })
}

/// At most this many restarts in a receipt: a run restarts each component
/// at most once.
pub const MAX_RESTARTS: usize = 4;

/// `restarts` (v1.2): the renew document's restart rows, at most four.
/// The fields of a `restarts` entry this version knows: one a newer
/// version added is ignored (SPEC 3, "Forward compatibility").
const RESTART_KEYS: [&str; 7] = [
    "component",
    "oldContainerID",
    "newContainerID",
    "stopMs",
    "healthyMs",
    "totalMs",
    "apiUnavailableMs",
];

fn parse_restarts(mut v: Value) -> Result<Vec<files::Restart>, String> {
    if let Value::Array(entries) = &mut v {
        for e in entries.iter_mut() {
            if let Value::Object(m) = e {
                m.retain(|k, _| RESTART_KEYS.contains(&k.as_str()));
            }
        }
    }
    let restarts: Vec<files::Restart> =
        serde_json::from_value(v).map_err(|e| format!("restarts: {}", excerpt(&e.to_string())))?;
    check_restarts(&restarts)?;
    Ok(restarts)
}

fn check_restarts(restarts: &[files::Restart]) -> Result<(), String> {
    if restarts.len() > MAX_RESTARTS {
        return Err(format!(
            "restarts has {} entries (at most {MAX_RESTARTS})",
            restarts.len()
        ));
    }
    Ok(())
}

/// `message`: at most 512 bytes, no control character.
fn check_message(message: &str) -> Result<(), String> {
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(format!(
            "message is {} bytes (at most {MAX_MESSAGE_BYTES})",
            message.len()
        ));
    }
    if message.chars().any(char::is_control) {
        return Err("message contains a control character".to_string());
    }
    Ok(())
}

/// `runbookVersion`: 1..=100 characters, no control character.
fn check_version(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err("runbookVersion is empty".to_string());
    }
    if v.chars().count() > MAX_VERSION_CHARS {
        return Err(format!(
            "runbookVersion is longer than {MAX_VERSION_CHARS} characters"
        ));
    }
    if v.chars().any(char::is_control) {
        return Err("runbookVersion contains a control character".to_string());
    }
    Ok(())
}

/// Render (pretty JSON, trailing newline) through the contract type;
/// round-trips through `parse_receipt`. The message is passed through
/// `bounded_message`. Call `validate_receipt` first: a receipt is written
/// once and never repaired.
pub fn render_receipt(r: &Receipt) -> Vec<u8> {
    pretty_json_line(&files::Receipt::from(r))
}

/// The one conversion from the domain value to the file's contract type. A
/// component missing from `manifests` renders as `missing` and CA keys other
/// than `CA_KEYS` are not written (`validate_receipt` refuses both first).
impl From<&Receipt> for files::Receipt {
    fn from(r: &Receipt) -> Self {
        files::Receipt {
            format: files::ReceiptFormat::V1,
            operation_id: (&r.operation_id).into(),
            outcome: r.outcome,
            phase: r.phase.into(),
            message: values::Message(bounded_message(&r.message)),
            failed_component: r.failed_component,
            manifests: (&r.manifests).into(),
            finished_at: values::Timestamp(r.finished_at.clone()),
            runbook_version: r.runbook_version.clone(),
            ca_sha256: (&r.ca_sha256).into(),
            restarts: r.restarts.clone(),
            recovery: r.recovery,
            health_at_end: r
                .health_at_end
                .as_deref()
                .map(|h| values::Message(bounded_message(h))),
        }
    }
}

/// Check that a receipt would be written as one `parse_receipt` accepts
/// (all four manifests, UTC time, version, CA keys and hex), after the
/// message is bounded: the parser's checks on the fields, in its order and
/// with its messages. Writers call this before the create-once write.
pub fn validate_receipt(r: &Receipt) -> Result<(), String> {
    check_message(&bounded_message(&r.message))?;
    if let Some(c) = Component::ALL
        .into_iter()
        .find(|c| !r.manifests.contains_key(c))
    {
        return Err(format!("missing key manifests.{c}"));
    }
    check_time("finishedAt", &r.finished_at)?;
    check_version(&r.runbook_version)?;
    check_ca_map(&r.ca_sha256, "caSHA256", false)?;
    check_restarts(&r.restarts)
}

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

/// `head`, `sep` and `tail`, bounded like [`bounded_message`] but cut from
/// `head`: the tail is what changed the outcome (a manifest not put back, a
/// backup not restored) and must survive the 512-byte cut. A tail longer
/// than half the budget is itself bounded to that half.
pub fn with_tail(head: &str, sep: &str, tail: &str) -> String {
    const ELLIPSIS: &str = "...";
    let whole = format!("{head}{sep}{tail}");
    if whole.len() <= MAX_MESSAGE_BYTES {
        return bounded_message(&whole);
    }
    let mut tail = bounded_message(tail);
    let half = MAX_MESSAGE_BYTES / 2;
    if tail.len() > half {
        let mut cut = half - ELLIPSIS.len();
        while !tail.is_char_boundary(cut) {
            cut -= 1;
        }
        tail.truncate(cut);
        tail.push_str(ELLIPSIS);
    }
    let room = MAX_MESSAGE_BYTES - sep.len() - tail.len();
    let mut head = bounded_message(head);
    if head.len() > room {
        let mut cut = room - ELLIPSIS.len();
        while !head.is_char_boundary(cut) {
            cut -= 1;
        }
        head.truncate(cut);
        head.push_str(ELLIPSIS);
    }
    format!("{head}{sep}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::phase::CA_KEYS;

    const H1: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn id(s: &str) -> OperationId {
        OperationId::parse(s).unwrap()
    }

    fn receipt() -> Receipt {
        Receipt {
            operation_id: id("cycle-1@node-a"),
            outcome: Outcome::FailedNotRestored,
            phase: Phase::Restart(Component::KubeApiserver),
            message: "kube-apiserver manifest differs from the staged copy".to_string(),
            failed_component: Some(Component::KubeApiserver),
            manifests: [
                (Component::Etcd, ManifestLocation::Active),
                (Component::KubeApiserver, ManifestLocation::Both),
                (Component::KubeControllerManager, ManifestLocation::Active),
                (Component::KubeScheduler, ManifestLocation::Active),
            ]
            .into_iter()
            .collect(),
            finished_at: "2026-11-30T00:10:00Z".to_string(),
            runbook_version: "0.1.0 (abc1234)".to_string(),
            ca_sha256: CA_KEYS
                .iter()
                .map(|k| (k.to_string(), H1.to_string()))
                .collect(),
            restarts: Vec::new(),
            recovery: false,
            health_at_end: None,
        }
    }

    fn json() -> Value {
        serde_json::from_slice(&render_receipt(&receipt())).unwrap()
    }

    fn with(key: &str, val: Value) -> Result<Receipt, String> {
        let mut j = json();
        j.as_object_mut().unwrap().insert(key.to_string(), val);
        parse_receipt(
            serde_json::to_string(&j).unwrap().as_bytes(),
            &id("cycle-1@node-a"),
        )
    }

    fn bad(r: Result<Receipt, String>, needle: &str) {
        let e = r.expect_err("should be malformed");
        assert!(e.len() < 400 && !e.chars().any(char::is_control), "{e:?}");
        assert!(e.contains(needle), "{e:?} does not mention {needle:?}");
    }

    /// v1.2: `restarts` is optional (v1.1 receipts have none), and when
    /// present it is the renew document's rows, at most four, each whole.
    #[test]
    fn restarts_are_optional_and_bounded() {
        let row = |c: &str, api: Value| {
            serde_json::json!({
                "component": c, "oldContainerID": "a1", "newContainerID": "b2",
                "stopMs": 12, "healthyMs": 340, "totalMs": 700, "apiUnavailableMs": api
            })
        };
        assert!(with("restarts", serde_json::json!([]))
            .unwrap()
            .restarts
            .is_empty());
        let r = with(
            "restarts",
            serde_json::json!([row("etcd", 1400.into()), row("kube-scheduler", Value::Null)]),
        )
        .unwrap();
        assert_eq!(r.restarts.len(), 2);
        assert_eq!(r.restarts[0].api_unavailable_ms, Some(1400));
        assert_eq!(r.restarts[1].api_unavailable_ms, None, "not measured");
        // What the parser accepts, the writer writes back the same.
        assert_eq!(
            parse_receipt(&render_receipt(&r), &r.operation_id).unwrap(),
            r
        );
        bad(with("restarts", Value::Null), "restarts");
        bad(with("restarts", serde_json::json!({})), "restarts");
        bad(
            with(
                "restarts",
                serde_json::json!(vec![row("etcd", 0.into()); 5]),
            ),
            "restarts has 5 entries",
        );
        let mut missing = row("etcd", 0.into());
        missing.as_object_mut().unwrap().remove("apiUnavailableMs");
        bad(
            with("restarts", serde_json::json!([missing])),
            "apiUnavailableMs",
        );
        // A field a newer version added to an entry is ignored (SPEC 3).
        let mut extra = row("etcd", 0.into());
        extra["surprise"] = 1.into();
        let r = with("restarts", serde_json::json!([extra])).unwrap();
        assert_eq!(r.restarts.len(), 1);
        bad(
            with("restarts", serde_json::json!([row("kube-vip", 0.into())])),
            "restarts",
        );
        let mut too_many = receipt();
        too_many.restarts = vec![serde_json::from_value(row("etcd", 0.into())).unwrap(); 5];
        bad(
            validate_receipt(&too_many).map(|_| too_many.clone()),
            "restarts has 5",
        );
    }

    #[test]
    fn renders_in_order_and_round_trips() {
        let r = receipt();
        let text = String::from_utf8(render_receipt(&r)).unwrap();
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
        let keys = [
            "\"format\"",
            "\"operationID\"",
            "\"outcome\"",
            "\"phase\"",
            "\"message\"",
            "\"failedComponent\"",
            "\"manifests\"",
            "\"finishedAt\"",
            "\"runbookVersion\"",
            "\"caSHA256\"",
        ];
        let pos: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
        let comps = [
            "\"etcd\"",
            "\"kube-apiserver\"",
            "\"kube-controller-manager\"",
            "\"kube-scheduler\"",
        ];
        let manifests = &text[text.find("\"manifests\"").unwrap()..];
        let cpos: Vec<usize> = comps.iter().map(|k| manifests.find(k).unwrap()).collect();
        assert!(cpos.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("\"format\": \"nvke-cert-runbook/receipt/v1\""));
        assert!(text.contains("\"outcome\": \"failed_not_restored\""));
        assert!(text.contains("\"phase\": \"restart:kube-apiserver\""));
        assert!(text.contains("\"kube-apiserver\": \"both\""));
        assert_eq!(parse_receipt(text.as_bytes(), &r.operation_id).unwrap(), r);
        validate_receipt(&r).unwrap();
    }

    #[test]
    fn every_outcome_phase_and_location_round_trips() {
        for o in Outcome::ALL {
            for p in Phase::all() {
                let mut r = receipt();
                r.outcome = o;
                r.phase = p;
                r.failed_component = None;
                assert_eq!(
                    parse_receipt(&render_receipt(&r), &r.operation_id).unwrap(),
                    r
                );
            }
        }
        for l in ManifestLocation::ALL {
            let mut r = receipt();
            r.manifests.insert(Component::Etcd, l);
            assert_eq!(
                parse_receipt(&render_receipt(&r), &r.operation_id).unwrap(),
                r
            );
        }
    }

    #[test]
    fn ca_map_may_be_partial_or_empty() {
        let mut r = receipt();
        r.ca_sha256.clear();
        assert_eq!(
            parse_receipt(&render_receipt(&r), &r.operation_id).unwrap(),
            r
        );
        r.ca_sha256.insert("etcd/ca.crt".into(), H1.into());
        assert_eq!(
            parse_receipt(&render_receipt(&r), &r.operation_id).unwrap(),
            r
        );
        bad(
            with("caSHA256", serde_json::json!({"ca.crt": H1.to_uppercase()})),
            "hex",
        );
        bad(
            with("caSHA256", serde_json::json!({"ca.crt": &H1[1..]})),
            "hex",
        );
        bad(with("caSHA256", serde_json::json!({"ca.crt": null})), "hex");
        bad(
            with("caSHA256", serde_json::json!({"pki/ca.crt": H1})),
            "unknown key",
        );
        bad(with("caSHA256", Value::Null), "caSHA256");
    }

    #[test]
    fn operation_id_must_match_the_file_name() {
        let r = receipt();
        let bytes = render_receipt(&r);
        bad(parse_receipt(&bytes, &id("cycle-2@node-a")), "file's ID");
        bad(parse_receipt(&bytes, &id("Cycle-1@node-a")), "file's ID");
        bad(with("operationID", "a/b".into()), "operationID");
        bad(with("operationID", "".into()), "operationID");
        bad(with("operationID", Value::Null), "operationID");
    }

    #[test]
    fn newer_missing_and_duplicate_keys() {
        // Forward compatibility (SPEC 3, v1.2): a field a newer version
        // added is ignored; the receipt reads as this version wrote it.
        assert_eq!(with("replayed", true.into()).unwrap(), receipt());
        assert_eq!(
            with("signature", serde_json::json!({"alg": "x"})).unwrap(),
            receipt()
        );
        for k in [
            "format",
            "operationID",
            "outcome",
            "phase",
            "message",
            "failedComponent",
            "manifests",
            "finishedAt",
            "runbookVersion",
            "caSHA256",
        ] {
            let mut j = json();
            j.as_object_mut().unwrap().remove(k);
            bad(
                parse_receipt(j.to_string().as_bytes(), &id("cycle-1@node-a")),
                "missing key",
            );
        }
        let text = String::from_utf8(render_receipt(&receipt())).unwrap();
        let dup = text.replacen(
            "\"outcome\": \"failed_not_restored\"",
            "\"outcome\": \"renewed\", \"outcome\": \"failed_not_restored\"",
            1,
        );
        bad(
            parse_receipt(dup.as_bytes(), &id("cycle-1@node-a")),
            "duplicate key",
        );
        let dup = text.replacen(
            "\"etcd\": \"active\"",
            "\"etcd\": \"active\", \"etcd\": \"active\"",
            1,
        );
        bad(
            parse_receipt(dup.as_bytes(), &id("cycle-1@node-a")),
            "duplicate key",
        );
    }

    #[test]
    fn wrong_format_and_bad_json() {
        bad(
            with("format", "nvke-cert-runbook/receipt/v2".into()),
            "format",
        );
        bad(
            with("format", "nvke-cert-runbook/phase/v2".into()),
            "format",
        );
        let full = render_receipt(&receipt());
        bad(
            parse_receipt(&full[..full.len() / 2], &id("cycle-1@node-a")),
            "JSON",
        );
        bad(parse_receipt(b"", &id("cycle-1@node-a")), "JSON");
        bad(parse_receipt(b"[]", &id("cycle-1@node-a")), "object");
        bad(parse_receipt(b"null", &id("cycle-1@node-a")), "object");
        bad(
            parse_receipt(b"{\"message\": \"\xff\"}", &id("cycle-1@node-a")),
            "UTF-8",
        );
        bad(
            parse_receipt(&vec![b' '; MAX_RECEIPT_BYTES + 1], &id("cycle-1@node-a")),
            "at most",
        );
    }

    #[test]
    fn outcome_phase_component_values() {
        bad(with("outcome", "success".into()), "outcome");
        bad(with("outcome", "Renewed".into()), "outcome");
        bad(with("outcome", 0.into()), "outcome");
        bad(with("phase", "restart:kube-vip".into()), "phase");
        bad(with("phase", "restart".into()), "phase");
        bad(with("phase", "admission".into()), "phase");
        bad(
            with("failedComponent", "kube-vip".into()),
            "failedComponent",
        );
        bad(with("failedComponent", "".into()), "failedComponent");
        bad(with("failedComponent", false.into()), "failedComponent");
    }

    #[test]
    fn manifests_need_exactly_the_four() {
        let all = serde_json::json!({
            "etcd": "active", "kube-apiserver": "staged",
            "kube-controller-manager": "missing", "kube-scheduler": "both"
        });
        assert!(with("manifests", all.clone()).is_ok());
        let mut missing = all.clone();
        missing.as_object_mut().unwrap().remove("kube-scheduler");
        bad(
            with("manifests", missing),
            "missing key manifests.kube-scheduler",
        );
        let mut extra = all.clone();
        extra
            .as_object_mut()
            .unwrap()
            .insert("kube-vip".into(), "active".into());
        bad(with("manifests", extra), "unknown key manifests.");
        let mut wrong = all.clone();
        wrong
            .as_object_mut()
            .unwrap()
            .insert("etcd".into(), "gone".into());
        bad(with("manifests", wrong), "manifests.etcd");
        let mut wrong = all;
        wrong
            .as_object_mut()
            .unwrap()
            .insert("etcd".into(), Value::Null);
        bad(with("manifests", wrong), "manifests.etcd");
        bad(with("manifests", Value::Null), "manifests");
    }

    #[test]
    fn message_rules() {
        assert!(with("message", "".into()).is_ok());
        assert!(with("message", "é".repeat(256).into()).is_ok()); // 512 bytes
        assert!(with("message", "x".repeat(512).into()).is_ok());
        bad(with("message", "x".repeat(513).into()), "513 bytes");
        bad(with("message", "a\nb".into()), "control");
        bad(with("message", "a\tb".into()), "control");
        bad(with("message", "a\u{1b}[2Jb".into()), "control");
        bad(with("message", "a\u{85}b".into()), "control");
        bad(with("message", "a\0b".into()), "control");
        bad(with("message", Value::Null), "message");
    }

    #[test]
    fn finished_at_and_version() {
        bad(
            with("finishedAt", "2026-11-30T01:00:00+01:00".into()),
            "finishedAt",
        );
        bad(with("finishedAt", "soon".into()), "finishedAt");
        bad(with("runbookVersion", "".into()), "empty");
        bad(with("runbookVersion", "v".repeat(101).into()), "100");
        assert!(with("runbookVersion", "v".repeat(100).into()).is_ok());
        bad(with("runbookVersion", "0.1\n".into()), "control");
        bad(with("runbookVersion", 1.into()), "runbookVersion");
    }

    #[test]
    fn render_bounds_the_message() {
        let mut r = receipt();
        r.message = format!("line1\nline2\t{}", "x".repeat(1000));
        let back = parse_receipt(&render_receipt(&r), &r.operation_id).unwrap();
        assert_eq!(back.message, bounded_message(&r.message));
        assert!(back.message.starts_with("line1 line2 "));
        validate_receipt(&r).unwrap();
    }

    #[test]
    fn validate_catches_what_render_cannot_fix() {
        let mut r = receipt();
        r.manifests.remove(&Component::Etcd);
        assert!(validate_receipt(&r).is_err());
        let mut r = receipt();
        r.finished_at = "2026-11-30T01:00:00+01:00".into();
        assert!(validate_receipt(&r).is_err());
        let mut r = receipt();
        r.runbook_version.clear();
        assert!(validate_receipt(&r).is_err());
    }

    #[test]
    fn the_tail_survives_the_cut() {
        // Short: exactly the three parts.
        assert_eq!(with_tail("a", "; ", "b"), "a; b");
        // A long head (kubeadm's stderr) is cut, the outcome's words stay.
        let m = with_tail(
            &"x".repeat(2000),
            "; ",
            "PUTTING THE BACKUP BACK FAILED: EIO",
        );
        assert_eq!(m.len(), 512);
        assert!(
            m.ends_with("...; PUTTING THE BACKUP BACK FAILED: EIO"),
            "{m}"
        );
        assert_eq!(bounded_message(&m), m);
        // A long tail keeps at most half, and the head keeps the rest.
        let m = with_tail("head", "; ", &"é".repeat(400));
        assert!(m.starts_with("head; é") && m.ends_with("..."), "{m}");
        assert!(m.len() <= 512);
        // Control characters are replaced as in any message.
        assert_eq!(with_tail("a\n", "; ", "b\t"), "a ; b ");
        let m = with_tail(&"é".repeat(300), "; ", "tail");
        assert!(m.len() <= 512 && m.ends_with("...; tail"), "{m}");
    }

    #[test]
    fn bounded_message_rules() {
        assert_eq!(bounded_message("plain"), "plain");
        assert_eq!(bounded_message("a\nb\r\tc\0"), "a b  c ");
        assert_eq!(bounded_message("a\u{7f}\u{9b}b"), "a  b");
        let exact = "x".repeat(512);
        assert_eq!(bounded_message(&exact), exact);
        let cut = bounded_message(&"x".repeat(513));
        assert_eq!(cut.len(), 512);
        assert!(cut.ends_with("...") && cut.starts_with(&"x".repeat(509)));
        // Cut at a char boundary: 3-byte chars.
        let cut = bounded_message(&"€".repeat(300));
        assert!(cut.len() <= 512 && cut.ends_with("..."), "{}", cut.len());
        assert_eq!(cut, format!("{}...", "€".repeat(169)));
        // 4-byte chars.
        let cut = bounded_message(&"😀".repeat(200));
        assert!(cut.len() <= 512 && cut.ends_with("..."));
        assert_eq!(cut.trim_end_matches("...").chars().count(), 127);
    }
}
