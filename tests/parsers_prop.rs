//! Property tests for the pure parsers: they never panic on arbitrary input,
//! and every renderer round-trips through its parser for arbitrary valid
//! values.

use nvke_cert_runbook::agent::parse_agent_state;
use nvke_cert_runbook::component::Component;
use nvke_cert_runbook::opid::OperationId;
use nvke_cert_runbook::outcome::{ManifestLocation, Outcome, Phase};
use nvke_cert_runbook::phase::{
    parse_phase_file, render_legacy, render_v2, LegacyPhase, PhaseFile, PhaseState, PhaseV2,
    ResumedFrom, CA_KEYS, LEGACY_FORMAT, V2_FORMAT,
};
use nvke_cert_runbook::receipt::{bounded_message, parse_receipt, render_receipt, Receipt};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::subsequence;
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------
// Strategies for valid values

fn arb_id() -> impl Strategy<Value = OperationId> {
    "[A-Za-z0-9_:@][A-Za-z0-9._:@-]{0,199}"
        .prop_filter("no ..", |s| !s.contains(".."))
        .prop_map(|s| OperationId::parse(&s).expect("strategy yields valid IDs"))
}

fn arb_component() -> impl Strategy<Value = Component> {
    prop::sample::select(Component::ALL.to_vec())
}

fn arb_hex() -> impl Strategy<Value = String> {
    "[0-9a-f]{64}"
}

fn arb_time() -> impl Strategy<Value = String> {
    (
        1970u32..=9999,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0u32..60,
        prop::option::of("[0-9]{1,9}"),
    )
        .prop_map(|(y, mo, d, h, mi, s, frac)| {
            let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}Z")
        })
}

fn arb_state_pair() -> impl Strategy<Value = (PhaseState, Option<Component>)> {
    prop_oneof![
        Just((PhaseState::Renewing, None)),
        Just((PhaseState::Done, None)),
        prop::option::of(arb_component()).prop_map(|c| (PhaseState::RestartPending, c)),
    ]
}

fn arb_full_ca_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    [arb_hex(), arb_hex(), arb_hex()].prop_map(|hs| {
        CA_KEYS
            .iter()
            .zip(hs)
            .map(|(k, h)| (k.to_string(), h))
            .collect()
    })
}

fn arb_resumed_from() -> impl Strategy<Value = Option<ResumedFrom>> {
    prop::option::of(prop_oneof![
        arb_id().prop_map(|id| ResumedFrom {
            operation_id: Some(id),
            format: V2_FORMAT.to_string(),
        }),
        Just(ResumedFrom {
            operation_id: None,
            format: LEGACY_FORMAT.to_string(),
        }),
    ])
}

fn arb_v2() -> impl Strategy<Value = PhaseV2> {
    (
        arb_id(),
        arb_state_pair(),
        arb_full_ca_map(),
        any::<bool>(),
        7u32..=90,
        arb_time(),
        arb_time(),
        arb_resumed_from(),
    )
        .prop_map(
            |(operation_id, (state, next_component), ca_sha256, force, threshold_days, s, u, r)| {
                PhaseV2 {
                    operation_id,
                    state,
                    next_component,
                    ca_sha256,
                    force,
                    threshold_days,
                    started_at: s,
                    updated_at: u,
                    resumed_from: r,
                }
            },
        )
}

fn arb_legacy() -> impl Strategy<Value = LegacyPhase> {
    (arb_state_pair(), any::<u64>(), arb_hex(), 1u32..=u32::MAX).prop_map(
        |((state, component), started, ca_sha256, pid)| LegacyPhase {
            state,
            component,
            started,
            ca_sha256,
            pid,
        },
    )
}

fn arb_phase() -> impl Strategy<Value = Phase> {
    prop::sample::select(Phase::all())
}

fn arb_outcome() -> impl Strategy<Value = Outcome> {
    prop::sample::select(Outcome::ALL.to_vec())
}

fn arb_manifests() -> impl Strategy<Value = BTreeMap<Component, ManifestLocation>> {
    vec(prop::sample::select(ManifestLocation::ALL.to_vec()), 4)
        .prop_map(|ls| Component::ALL.into_iter().zip(ls).collect())
}

fn arb_partial_ca_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    (subsequence(CA_KEYS.to_vec(), 0..=3), vec(arb_hex(), 3)).prop_map(|(keys, hs)| {
        keys.into_iter()
            .zip(hs)
            .map(|(k, h)| (k.to_string(), h))
            .collect()
    })
}

fn arb_receipt() -> impl Strategy<Value = Receipt> {
    (
        arb_id(),
        arb_outcome(),
        arb_phase(),
        any::<String>().prop_map(|m| bounded_message(&m)),
        prop::option::of(arb_component()),
        arb_manifests(),
        arb_time(),
        "\\PC{1,100}",
        arb_partial_ca_map(),
    )
        .prop_map(
            |(
                operation_id,
                outcome,
                phase,
                message,
                failed_component,
                manifests,
                finished_at,
                runbook_version,
                ca_sha256,
            )| Receipt {
                operation_id,
                outcome,
                phase,
                message,
                failed_component,
                manifests,
                finished_at,
                runbook_version,
                ca_sha256,
            },
        )
}

/// Arbitrary JSON-ish text, more likely than random bytes to get deep into
/// the parsers.
fn arb_jsonish() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
        prop::sample::select(vec![
            "\"renewing\"",
            "\"restart_pending\"",
            "\"done\"",
            "\"etcd\"",
            "\"nvke-cert-runbook/phase/v2\"",
            "\"nvke-cert-runbook/receipt/v1\"",
            "\"2026-11-30T00:00:00Z\"",
            "30",
            "\"op-1\"",
        ])
        .prop_map(str::to_string),
    ];
    let key = prop::sample::select(vec![
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
        "outcome",
        "phase",
        "message",
        "failedComponent",
        "manifests",
        "finishedAt",
        "runbookVersion",
        "k8sCertRenewalState",
        "ca.crt",
        "etcd",
        "x",
    ]);
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            vec((key.clone(), inner), 0..8).prop_map(|kv| {
                let body: Vec<String> = kv
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

// ---------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn phase_parser_never_panics(
        prefix in prop::sample::select(vec!["", "{", "STATE=", "STATE=done\nCOMPONENT="]),
        b in vec(any::<u8>(), 0..2048),
    ) {
        let mut bytes = prefix.as_bytes().to_vec();
        bytes.extend_from_slice(&b);
        let _ = parse_phase_file(&bytes);
    }

    #[test]
    fn phase_parser_never_panics_on_legacy_like_text(
        lines in vec("(STATE|COMPONENT|STARTED|CA_SHA256|PID|X)=[ -~\r\u{feff}]{0,70}", 0..8),
        crlf in any::<bool>(),
    ) {
        let sep = if crlf { "\r\n" } else { "\n" };
        let text: String = lines.iter().map(|l| format!("{l}{sep}")).collect();
        let _ = parse_phase_file(text.as_bytes());
    }

    #[test]
    fn json_parsers_never_panic_on_jsonish_text(s in arb_jsonish(), id in arb_id()) {
        let _ = parse_phase_file(s.as_bytes());
        let _ = parse_receipt(s.as_bytes(), &id);
        let _ = parse_agent_state(s.as_bytes());
    }

    #[test]
    fn receipt_parser_never_panics(b in vec(any::<u8>(), 0..2048), id in arb_id()) {
        let _ = parse_receipt(&b, &id);
    }

    #[test]
    fn agent_parser_never_panics(b in vec(any::<u8>(), 0..2048)) {
        let _ = parse_agent_state(&b);
    }

    #[test]
    fn errors_are_short_and_escaped(b in vec(any::<u8>(), 0..4096), id in arb_id()) {
        for e in [parse_phase_file(&b).err(), parse_receipt(&b, &id).err()].into_iter().flatten() {
            prop_assert!(e.len() <= 600, "{}", e.len());
            prop_assert!(!e.chars().any(char::is_control), "{:?}", e);
        }
    }

    #[test]
    fn opid_parser_never_panics_and_valid_ids_are_in_charset(s in any::<String>()) {
        match OperationId::parse(&s) {
            Ok(id) => {
                prop_assert_eq!(id.as_str(), s.as_str());
                prop_assert!(is_valid_id_by_hand(&s));
            }
            Err(e) => {
                prop_assert!(!is_valid_id_by_hand(&s));
                prop_assert!(!e.contains('\n') && !e.chars().any(char::is_control));
                prop_assert!(e.len() <= 200);
            }
        }
    }

    #[test]
    fn opid_parser_agrees_on_near_valid_strings(s in "[A-Za-z0-9._:@/ -]{0,210}") {
        prop_assert_eq!(OperationId::parse(&s).is_ok(), is_valid_id_by_hand(&s));
    }

    #[test]
    fn generated_ids_are_valid(id in arb_id()) {
        prop_assert!(is_valid_id_by_hand(id.as_str()));
    }

    #[test]
    fn v2_round_trips(p in arb_v2()) {
        let bytes = render_v2(&p);
        prop_assert_eq!(bytes.last(), Some(&b'\n'));
        prop_assert_eq!(parse_phase_file(&bytes), Ok(PhaseFile::V2(p)));
    }

    #[test]
    fn legacy_round_trips(p in arb_legacy()) {
        let bytes = render_legacy(&p);
        prop_assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 5);
        prop_assert_eq!(parse_phase_file(&bytes), Ok(PhaseFile::Legacy(p)));
    }

    #[test]
    fn legacy_any_single_byte_change_is_never_a_panic(p in arb_legacy(), i in any::<prop::sample::Index>(), b in any::<u8>()) {
        let mut bytes = render_legacy(&p);
        let i = i.index(bytes.len());
        bytes[i] = b;
        let _ = parse_phase_file(&bytes);
        bytes.truncate(i);
        prop_assert!(parse_phase_file(&bytes).is_err());
    }

    #[test]
    fn receipt_round_trips(r in arb_receipt()) {
        let bytes = render_receipt(&r);
        prop_assert_eq!(bytes.last(), Some(&b'\n'));
        prop_assert_eq!(parse_receipt(&bytes, &r.operation_id), Ok(r));
    }

    #[test]
    fn receipt_is_bound_to_its_file_name(r in arb_receipt(), other in arb_id()) {
        prop_assume!(other != r.operation_id);
        prop_assert!(parse_receipt(&render_receipt(&r), &other).is_err());
    }

    #[test]
    fn bounded_message_is_bounded_and_clean(s in any::<String>(), pad in 0usize..700) {
        let long = format!("{}{s}", "é".repeat(pad));
        for input in [&s, &long] {
            let m = bounded_message(input);
            prop_assert!(m.len() <= 512);
            prop_assert!(!m.chars().any(char::is_control));
            // Idempotent, and a prefix (modulo controls) of the input.
            prop_assert_eq!(bounded_message(&m), m.clone());
            if input.len() <= 512 {
                prop_assert_eq!(m.chars().count(), input.chars().count());
            } else {
                prop_assert!(m.ends_with("..."));
            }
        }
    }
}

fn is_valid_id_by_hand(s: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._:@-".contains(c);
    (1..=200).contains(&s.len())
        && s.chars().all(allowed)
        && !s.starts_with('.')
        && !s.starts_with('-')
        && !s.contains("..")
}
