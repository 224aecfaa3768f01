//! Receipts (SPEC section 3): `state/completed/<ID>.json`. Pure.

use crate::rules::opid::{excerpt, OperationId};
use crate::rules::phase::pretty_json_line;
use crate::rules::strict::check_time;
use crate::rules::strict::{self, ParseError, KEY};
use crate::rules::values::{LeafName, Sha256Hex};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

pub use crate::rules::files::{LeafRenewal, Receipt, Restart, RECEIPT_FORMAT};
pub use crate::rules::values::{bounded_message, MAX_MESSAGE_BYTES};
/// `runbookVersion` bound, in characters.
pub const MAX_VERSION_CHARS: usize = 100;
/// A receipt larger than this is malformed (a real one is under 2 KiB).
/// Readers should not read more than this plus one byte.
pub const MAX_RECEIPT_BYTES: usize = 64 * 1024;

/// Parse strictly. `file_id` is the ID from the file name: a receipt whose
/// `operationID` differs is malformed.
pub fn parse_receipt(bytes: &[u8], file_id: &OperationId) -> Result<Receipt, ParseError> {
    if bytes.len() > MAX_RECEIPT_BYTES {
        return Err(ParseError::whole(format!(
            "receipt is {} bytes (at most {MAX_RECEIPT_BYTES})",
            bytes.len()
        )));
    }
    let r: Receipt = strict::read(bytes)?;
    if &r.operation_id != file_id {
        return Err(ParseError::at(
            "operationID",
            format!(
                "{KEY} {} is not the file's ID {}",
                excerpt(r.operation_id.as_str()),
                excerpt(file_id.as_str())
            ),
        ));
    }
    Ok(r)
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

/// `restarts` (`#[serde(deserialize_with)]`).
pub(crate) fn de_restarts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Restart>, D::Error> {
    parse_restarts(Value::deserialize(d)?).map_err(serde::de::Error::custom)
}

fn parse_restarts(mut v: Value) -> Result<Vec<Restart>, ParseError> {
    if let Value::Array(entries) = &mut v {
        for e in entries.iter_mut() {
            if let Value::Object(m) = e {
                m.retain(|k, _| RESTART_KEYS.contains(&k.as_str()));
            }
        }
    }
    let restarts: Vec<Restart> = serde_json::from_value(v)
        .map_err(|e| ParseError::at("restarts", format!("{KEY}: {}", excerpt(&e.to_string()))))?;
    check_restarts(&restarts)?;
    Ok(restarts)
}

fn check_restarts(restarts: &[Restart]) -> Result<(), ParseError> {
    if restarts.len() > MAX_RESTARTS {
        return Err(ParseError::at(
            "restarts",
            format!(
                "{KEY} has {} entries (at most {MAX_RESTARTS})",
                restarts.len()
            ),
        ));
    }
    Ok(())
}

/// At most this many leaves in a receipt: every leaf of SPEC 2, once.
pub const MAX_LEAVES: usize = 11;

/// The fields of a `certificates` entry this version knows (v1.3): one a
/// newer version added is ignored (SPEC 3, "Forward compatibility").
const LEAF_KEYS: [&str; 5] = [
    "name",
    "serialBefore",
    "serialAfter",
    "notAfterBefore",
    "notAfterAfter",
];

/// `certificates` (`#[serde(deserialize_with)]`, v1.3).
pub(crate) fn de_certificates<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<LeafRenewal>, D::Error> {
    let mut v = Value::deserialize(d)?;
    if let Value::Array(entries) = &mut v {
        for e in entries.iter_mut() {
            if let Value::Object(m) = e {
                m.retain(|k, _| LEAF_KEYS.contains(&k.as_str()));
            }
        }
        // A leaf a newer version knows (a string name this one does not) is
        // left out, as a field it added would be (SPEC 3).
        entries.retain(|e| match e.get("name") {
            Some(Value::String(n)) => crate::contract::by_name::<LeafName>(n).is_some(),
            _ => true,
        });
    }
    let leaves: Vec<LeafRenewal> = serde_json::from_value(v)
        .map_err(|e| {
            ParseError::at(
                "certificates",
                format!("{KEY}: {}", excerpt(&e.to_string())),
            )
        })
        .map_err(serde::de::Error::custom)?;
    check_certificates(&leaves).map_err(serde::de::Error::custom)?;
    Ok(leaves)
}

/// `certificates`: at most eleven, each leaf once; serials lowercase hex
/// (1 to 128 digits: X.509 allows 40, parsers accept more), a new one after; the times UTC; a leaf with no serial
/// before has no end before.
fn check_certificates(leaves: &[LeafRenewal]) -> Result<(), ParseError> {
    let refuse = |why: String| Err(ParseError::at("certificates", format!("{KEY}: {why}")));
    if leaves.len() > MAX_LEAVES {
        return refuse(format!("{} entries (at most {MAX_LEAVES})", leaves.len()));
    }
    let hex = |s: &str| {
        (1..=128).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    for (i, l) in leaves.iter().enumerate() {
        if leaves[..i].iter().any(|o| o.name == l.name) {
            return refuse(format!("entry {i} repeats a leaf"));
        }
        if !hex(&l.serial_after) || l.serial_before.as_deref().is_some_and(|b| !hex(b)) {
            return refuse(format!(
                "entry {i}: a serial is not 1 to 128 lowercase hex digits"
            ));
        }
        if l.serial_before.as_deref() == Some(l.serial_after.as_str()) {
            return refuse(format!("entry {i}: the serial after is the serial before"));
        }
        if l.serial_before.is_none() != l.not_after_before.is_none() {
            return refuse(format!(
                "entry {i}: serialBefore and notAfterBefore are not both null or both set"
            ));
        }
        for t in l.not_after_before.iter().chain([&l.not_after_after]) {
            check_time("certificates", &t.0)?;
        }
    }
    Ok(())
}

/// `runbookVersion` (`#[serde(deserialize_with)]`).
pub(crate) fn de_version<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = strict::de::string(d)?;
    check_version(&v).map_err(serde::de::Error::custom)?;
    Ok(v)
}

/// `runbookVersion`: 1..=100 characters, no control character.
fn check_version(v: &str) -> Result<(), ParseError> {
    let refuse = |reason: String| Err(ParseError::at("runbookVersion", reason));
    if v.is_empty() {
        return refuse(format!("{KEY} is empty"));
    }
    if v.chars().count() > MAX_VERSION_CHARS {
        return refuse(format!(
            "{KEY} is longer than {MAX_VERSION_CHARS} characters"
        ));
    }
    if v.chars().any(char::is_control) {
        return refuse(format!("{KEY} contains a control character"));
    }
    Ok(())
}

/// Render (pretty JSON, trailing newline); round-trips through
/// `parse_receipt`. Call `validate_receipt` first: a receipt is written
/// once and never repaired.
pub fn render_receipt(r: &Receipt) -> Vec<u8> {
    pretty_json_line(r)
}

/// Check that a receipt would be written as one `parse_receipt` accepts
/// (bounded message, UTC time, version, CA hex, at most four restarts):
/// the parser's checks on the fields, in its order and with its messages.
/// Writers call this before the create-once write.
pub fn validate_receipt(r: &Receipt) -> Result<(), ParseError> {
    strict::de::check_message(&r.message.0)
        .map_err(|e| ParseError::at("message", e.to_string()))?;
    check_time("finishedAt", &r.finished_at.0)?;
    check_version(&r.runbook_version)?;
    let ca = &r.ca_sha256;
    for (k, h) in
        crate::rules::values::CA_KEYS
            .iter()
            .zip([&ca.ca, &ca.etcd_ca, &ca.front_proxy_ca])
    {
        if let Some(Sha256Hex(h)) = h {
            if !crate::rules::values::is_sha256_hex(h) {
                return Err(ParseError::whole(format!(
                    "caSHA256.{k} is not 64 lowercase hex digits"
                )));
            }
        }
    }
    if let Some(h) = &r.health_at_end {
        strict::de::check_message(&h.0)
            .map_err(|e| ParseError::at("healthAtEnd", format!("{KEY}: {e}")))?;
    }
    check_restarts(&r.restarts)?;
    check_certificates(&r.certificates)
}

/// A message and the notes that changed its outcome (a manifest not put
/// back), bounded: the notes are the tail that survives the cut.
pub fn full_message(message: &str, notes: &[String]) -> String {
    if notes.is_empty() {
        bounded_message(message)
    } else {
        with_tail(message, "; ", &notes.join("; "))
    }
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
    use crate::rules::component::Component;
    use crate::rules::outcome::{ManifestLocation, Outcome, Phase};
    use crate::rules::values::{CaSha256, ManifestLocations, Message, Timestamp};

    const H1: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn id(s: &str) -> OperationId {
        OperationId::parse(s).unwrap()
    }

    fn receipt() -> Receipt {
        Receipt::new(
            id("cycle-1@node-a"),
            crate::rules::files::Ended {
                outcome: Outcome::FailedNotRestored,
                phase: Phase::Restart(Component::KubeApiserver),
                message: "kube-apiserver manifest differs from the staged copy",
                failed_component: Some(Component::KubeApiserver),
                did: Default::default(),
            },
            ManifestLocations {
                etcd: ManifestLocation::Active,
                kube_apiserver: ManifestLocation::Both,
                kube_controller_manager: ManifestLocation::Active,
                kube_scheduler: ManifestLocation::Active,
            },
            Timestamp("2026-11-30T00:10:00Z".to_string()),
            "0.1.0 (abc1234)".to_string(),
            CaSha256 {
                ca: Some(Sha256Hex(H1.to_string())),
                etcd_ca: Some(Sha256Hex(H1.to_string())),
                front_proxy_ca: Some(Sha256Hex(H1.to_string())),
            },
        )
    }

    fn parse(bytes: &[u8], file_id: &OperationId) -> Result<Receipt, ParseError> {
        parse_receipt(bytes, file_id)
    }

    fn json() -> Value {
        serde_json::from_slice(&render_receipt(&receipt())).unwrap()
    }

    fn with(key: &str, val: Value) -> Result<Receipt, ParseError> {
        let mut j = json();
        j.as_object_mut().unwrap().insert(key.to_string(), val);
        parse(
            serde_json::to_string(&j).unwrap().as_bytes(),
            &id("cycle-1@node-a"),
        )
    }

    fn bad(r: Result<Receipt, ParseError>, needle: &str) {
        let e = r.expect_err("should be malformed").to_string();
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
        assert_eq!(parse(&render_receipt(&r), &r.operation_id).unwrap(), r);
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

    /// v1.3: `certificates` is optional (older receipts have none); each
    /// entry whole, a leaf once, a new serial.
    #[test]
    fn certificates_are_optional_and_checked() {
        let leaf = |name: &str, before: Value, after: &str| {
            let nb = if before.is_null() {
                Value::Null
            } else {
                "2027-06-01T00:00:00Z".into()
            };
            serde_json::json!({
                "name": name, "serialBefore": before, "serialAfter": after,
                "notAfterBefore": nb, "notAfterAfter": "2027-12-01T00:00:00Z"
            })
        };
        assert!(json().get("certificates").is_none(), "absent when empty");
        let r = with(
            "certificates",
            serde_json::json!([
                leaf("apiserver", "0a".into(), "1b"),
                leaf("super-admin.conf", Value::Null, "2c")
            ]),
        )
        .unwrap();
        assert_eq!(r.certificates.len(), 2);
        assert_eq!(r.certificates[1].serial_before, None);
        assert_eq!(parse(&render_receipt(&r), &r.operation_id).unwrap(), r);
        assert!(validate_receipt(&r).is_ok());
        let mut extra = leaf("apiserver", "0a".into(), "1b");
        extra["surprise"] = 1.into();
        assert!(with("certificates", serde_json::json!([extra])).is_ok());
        // A leaf a newer version names is left out (SPEC 3); a name that
        // is not a string is malformed.
        let r = with(
            "certificates",
            serde_json::json!([
                leaf("kubelet-serving", "0a".into(), "1b"),
                leaf("apiserver", "0a".into(), "1b")
            ]),
        )
        .unwrap();
        assert_eq!(r.certificates.len(), 1);
        let mut bad_name = leaf("apiserver", "0a".into(), "1b");
        bad_name["name"] = 7.into();
        bad(
            with("certificates", serde_json::json!([bad_name])),
            "certificates",
        );
        for (v, needle) in [
            (
                serde_json::json!([leaf("apiserver", "0a".into(), "0a")]),
                "serial after is the serial before",
            ),
            (
                serde_json::json!([leaf("apiserver", "0A".into(), "1b")]),
                "lowercase hex",
            ),
            (
                serde_json::json!([leaf("apiserver", "0a".into(), "")]),
                "lowercase hex",
            ),
            (
                serde_json::json!([
                    leaf("apiserver", "0a".into(), "1b"),
                    leaf("apiserver", "2c".into(), "3d")
                ]),
                "repeats",
            ),
            (
                serde_json::json!(vec![leaf("apiserver", "0a".into(), "1b"); 12]),
                "12 entries",
            ),
            (Value::Null, "certificates"),
        ] {
            bad(with("certificates", v), needle);
        }
        let mut half = leaf("apiserver", Value::Null, "1b");
        half["notAfterBefore"] = "2027-06-01T00:00:00Z".into();
        bad(with("certificates", serde_json::json!([half])), "both null");
        let mut local = leaf("apiserver", "0a".into(), "1b");
        local["notAfterAfter"] = "2027-12-01T00:00:00+01:00".into();
        bad(
            with("certificates", serde_json::json!([local])),
            "certificates",
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
        assert_eq!(parse(text.as_bytes(), &r.operation_id).unwrap(), r);
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
                assert_eq!(parse(&render_receipt(&r), &r.operation_id).unwrap(), r);
            }
        }
        for l in ManifestLocation::ALL {
            let mut r = receipt();
            r.manifests.etcd = l;
            assert_eq!(parse(&render_receipt(&r), &r.operation_id).unwrap(), r);
        }
    }

    #[test]
    fn ca_map_may_be_partial_or_empty() {
        let mut r = receipt();
        r.ca_sha256 = CaSha256::default();
        assert_eq!(parse(&render_receipt(&r), &r.operation_id).unwrap(), r);
        r.ca_sha256.etcd_ca = Some(Sha256Hex(H1.into()));
        assert_eq!(parse(&render_receipt(&r), &r.operation_id).unwrap(), r);
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
        bad(parse(&bytes, &id("cycle-2@node-a")), "file's ID");
        bad(parse(&bytes, &id("Cycle-1@node-a")), "file's ID");
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
                parse(j.to_string().as_bytes(), &id("cycle-1@node-a")),
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
            parse(dup.as_bytes(), &id("cycle-1@node-a")),
            "duplicate key",
        );
        let dup = text.replacen(
            "\"etcd\": \"active\"",
            "\"etcd\": \"active\", \"etcd\": \"active\"",
            1,
        );
        bad(
            parse(dup.as_bytes(), &id("cycle-1@node-a")),
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
            parse(&full[..full.len() / 2], &id("cycle-1@node-a")),
            "JSON",
        );
        bad(parse(b"", &id("cycle-1@node-a")), "JSON");
        bad(parse(b"[]", &id("cycle-1@node-a")), "object");
        bad(parse(b"null", &id("cycle-1@node-a")), "object");
        bad(
            parse(b"{\"message\": \"\xff\"}", &id("cycle-1@node-a")),
            "UTF-8",
        );
        bad(
            parse(&vec![b' '; MAX_RECEIPT_BYTES + 1], &id("cycle-1@node-a")),
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
        let long = format!("line1\nline2\t{}", "x".repeat(1000));
        r.message = Message::bounded(&long);
        let back = parse(&render_receipt(&r), &r.operation_id).unwrap();
        assert_eq!(back.message.0, bounded_message(&long));
        assert!(back.message.0.starts_with("line1 line2 "));
        validate_receipt(&r).unwrap();
    }

    #[test]
    fn validate_catches_what_render_cannot_fix() {
        let mut r = receipt();
        r.message = Message("a\nb".into());
        assert!(validate_receipt(&r).is_err());
        let mut r = receipt();
        r.finished_at = Timestamp("2026-11-30T01:00:00+01:00".into());
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
