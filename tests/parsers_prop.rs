//! Property tests for the pure parsers: they never panic on arbitrary input,
//! and every renderer round-trips through its parser for arbitrary valid
//! values.
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]

use nvke_cert_runbook::rules::agent::parse_agent_state;
use nvke_cert_runbook::rules::component::Component;
use nvke_cert_runbook::rules::files::Ended;
use nvke_cert_runbook::rules::opid::OperationId;
use nvke_cert_runbook::rules::outcome::{ManifestLocation, Outcome, Phase};
use nvke_cert_runbook::rules::phase::{
    parse_phase_file, render_legacy, render_v2, LegacyPhase, PhaseFile, PhaseState, PhaseV2,
    ResumedFrom, CA_KEYS,
};
use nvke_cert_runbook::rules::receipt::{bounded_message, parse_receipt, render_receipt, Receipt};
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
            format: nvke_cert_runbook::contract::PhaseFormat::V2,
        }),
        Just(ResumedFrom {
            operation_id: None,
            format: nvke_cert_runbook::contract::PhaseFormat::LegacyFiveLine,
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
        any::<bool>(),
    )
        .prop_map(
            |(
                operation_id,
                (state, next_component),
                ca_sha256,
                force,
                threshold_days,
                s,
                u,
                r,
                recovery,
            )| {
                PhaseV2 {
                    format: nvke_cert_runbook::contract::PhaseV2Format::V2,
                    operation_id,
                    state,
                    next_component,
                    ca_sha256: (&ca_sha256).into(),
                    force,
                    threshold_days,
                    started_at: nvke_cert_runbook::contract::Timestamp(s),
                    updated_at: nvke_cert_runbook::contract::Timestamp(u),
                    resumed_from: r,
                    recovery,
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
        prop::collection::vec(arb_restart(), 0..=4),
        any::<bool>(),
        prop::option::of(any::<String>().prop_map(|m| bounded_message(&m))),
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
                restarts,
                recovery,
                health_at_end,
            )| Receipt {
                restarts,
                recovery,
                health_at_end: health_at_end.map(nvke_cert_runbook::contract::Message),
                ..Receipt::new(
                    operation_id,
                    Ended {
                        outcome,
                        phase,
                        message: &message,
                        failed_component,
                        did: Default::default(),
                    },
                    (&manifests).into(),
                    nvke_cert_runbook::contract::Timestamp(finished_at),
                    runbook_version,
                    (&ca_sha256).into(),
                )
            },
        )
}

/// A restart row as a receipt records it (v1.2).
fn arb_restart() -> impl Strategy<Value = nvke_cert_runbook::contract::Restart> {
    (
        arb_component(),
        "[0-9a-f]{0,64}",
        "[0-9a-f]{0,64}",
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        prop::option::of(any::<u64>()),
    )
        .prop_map(|(component, old, new, stop, healthy, total, api)| {
            nvke_cert_runbook::contract::Restart {
                component,
                old_container_id: old,
                new_container_id: new,
                stop_ms: stop,
                healthy_ms: healthy,
                total_ms: total,
                api_unavailable_ms: api,
            }
        })
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
        for e in [parse_phase_file(&b).err().map(|e| e.to_string()), parse_receipt(&b, &id).err().map(|e| e.to_string())].into_iter().flatten() {
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
                let e = e.to_string();
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

// ---------------------------------------------------------------------------
// What the tools print (crictl, etcdctl), kubeconfigs and PEM.

mod tools_and_pki {
    use base64::Engine;
    use nvke_cert_runbook::rules::cri::{
        judge_etcd, parse_endpoint_health, parse_member_list, parse_pods, parse_ps_kube_system,
        running, EndpointHealth, EtcdVerdict, Listing, Member, MemberHeader, MemberList,
    };
    use nvke_cert_runbook::rules::pki::{
        key_matches_cert, kubeconfig_client_cert, kubeconfig_client_key, parse_pem_certificate,
        verify_signed_by, KubeconfigCert,
    };
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use serde_json::json;
    use std::path::Path;

    const PKI: &str = "fixtures/nodes/rsa/etc/kubernetes/pki";

    fn fixture(rel: &str) -> Vec<u8> {
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
    }

    /// One container as `crictl ps -a -o json` prints it.
    #[derive(Debug, Clone)]
    struct Ctr {
        id: String,
        running: bool,
        created: u64,
        namespace: String,
        name: String,
    }

    fn arb_ctr() -> impl Strategy<Value = Ctr> {
        (
            "[0-9a-f]{12,64}",
            any::<bool>(),
            any::<u64>(),
            prop::sample::select(vec![
                "kube-system",
                "default",
                "kube-system ",
                "KUBE-SYSTEM",
            ]),
            prop::sample::select(vec![
                "etcd",
                "kube-apiserver",
                "kube-vip",
                "etcd-backup",
                "kube-apiserver ",
                "",
            ]),
        )
            .prop_map(|(id, running, created, ns, name)| Ctr {
                id,
                running,
                created,
                namespace: ns.to_string(),
                name: name.to_string(),
            })
    }

    fn ps_json(ctrs: &[Ctr]) -> Vec<u8> {
        let v: Vec<_> = ctrs
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "podSandboxId": "f00d",
                    "metadata": {"name": c.name, "attempt": 0},
                    "image": {"image": "registry.k8s.io/x"},
                    "state": if c.running { "CONTAINER_RUNNING" } else { "CONTAINER_EXITED" },
                    "createdAt": c.created.to_string(),
                    "labels": {
                        "io.kubernetes.pod.namespace": c.namespace,
                        "io.kubernetes.container.name": c.name,
                    },
                    "annotations": {},
                })
            })
            .collect();
        serde_json::to_vec(&json!({ "containers": v })).unwrap()
    }

    /// `crictl pods -o json` with the one static pod sandbox (`f00d`) that
    /// every container of [`ps_json`] belongs to.
    fn static_sandbox() -> Vec<u8> {
        serde_json::to_vec(&json!({ "items": [{
            "id": "f00d",
            "state": "SANDBOX_READY",
            "labels": { "io.kubernetes.pod.namespace": "kube-system" },
            "annotations": { "kubernetes.io/config.source": "file" },
        }]}))
        .unwrap()
    }

    /// A member list and its health, generated from counts: `voters` voting
    /// members (the first is this node unless `self_missing`), `learners`,
    /// the first `healthy` voters healthy in the cluster view.
    #[derive(Debug, Clone)]
    struct Cluster {
        ids: Vec<u64>,
        voters: usize,
        learners: usize,
        healthy: usize,
        local_healthy: bool,
        self_learner: bool,
        self_missing: bool,
    }

    fn arb_cluster() -> impl Strategy<Value = Cluster> {
        (0usize..6, 0usize..3)
            .prop_flat_map(|(voters, learners)| {
                (
                    // IDs are 64-bit: most are above 2^53 and must survive
                    // the JSON round trip exactly (no float on the way).
                    prop::collection::btree_set(any::<u64>(), voters + learners + 1),
                    Just(voters),
                    Just(learners),
                    0..=voters,
                    any::<bool>(),
                    prop::bool::weighted(0.1),
                    prop::bool::weighted(0.1),
                )
            })
            .prop_map(
                |(ids, voters, learners, healthy, local_healthy, self_learner, self_missing)| {
                    Cluster {
                        ids: ids.into_iter().collect(),
                        voters,
                        learners,
                        healthy,
                        local_healthy,
                        self_learner,
                        self_missing,
                    }
                },
            )
    }

    fn url(i: usize) -> String {
        format!("https://10.0.0.{}:2379", i + 1)
    }

    impl Cluster {
        fn members(&self) -> MemberList {
            let n = self.voters + self.learners;
            let members = (0..n)
                .map(|i| Member {
                    id: self.ids[i],
                    name: format!("cp-{i}"),
                    client_urls: vec![url(i)],
                    is_learner: i >= self.voters || (i == 0 && self.self_learner),
                })
                .collect();
            let me = if self.self_missing || n == 0 {
                self.ids[n] // the spare ID: not in the list
            } else {
                self.ids[0]
            };
            MemberList {
                header: MemberHeader { member_id: me },
                members,
            }
        }
        fn cluster_health(&self) -> Vec<EndpointHealth> {
            (0..self.voters + self.learners)
                .map(|i| EndpointHealth {
                    endpoint: url(i),
                    health: i < self.healthy,
                    error: None,
                })
                .collect()
        }
        fn local_health(&self) -> Vec<EndpointHealth> {
            vec![EndpointHealth {
                endpoint: "https://127.0.0.1:2379".into(),
                health: self.local_healthy,
                error: (!self.local_healthy).then(|| "context deadline exceeded".into()),
            }]
        }
    }

    /// The reference: SPEC step 7's quorum rules, written from the SPEC text
    /// with counts instead of lists.
    fn expected(c: &Cluster) -> &'static str {
        let n = c.voters + c.learners;
        let self_voter_count = if c.self_learner {
            c.voters.saturating_sub(1)
        } else {
            c.voters
        };
        if c.self_missing || n == 0 {
            return "structural";
        }
        if c.self_learner || c.voters == 0 {
            return "structural";
        }
        if c.learners > 0 {
            return "structural";
        }
        if self_voter_count == 2 {
            return "two-voters";
        }
        if !c.local_healthy {
            return "not-yet";
        }
        if self_voter_count == 1 {
            return "ok";
        }
        let quorum = self_voter_count / 2 + 1;
        if c.healthy < quorum + 1 {
            "not-yet"
        } else {
            "ok"
        }
    }

    fn kubeconfig(user: &str, cert_b64: &str, key_b64: &str, current: bool) -> String {
        let cc = if current {
            "current-context: kubernetes-admin@kubernetes\n"
        } else {
            ""
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: kubernetes\n\
             contexts:\n- context:\n    cluster: kubernetes\n    user: {user}\n  name: kubernetes-admin@kubernetes\n\
             {cc}users:\n- name: {user}\n  user:\n    client-certificate-data: {cert_b64}\n    client-key-data: {key_b64}\n"
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn tool_parsers_never_panic(b in vec(any::<u8>(), 0..4096), name in "[a-z-]{0,20}") {
            if let (Ok(containers), Ok(sandboxes)) = (parse_ps_kube_system(&b), parse_pods(&b)) {
                let _ = Listing { containers, sandboxes }.component(&name);
            }
            let _ = parse_member_list(&b);
            let _ = parse_endpoint_health(&b);
        }

        #[test]
        fn tool_parsers_never_panic_on_jsonish_text(s in super::arb_jsonish()) {
            let _ = parse_ps_kube_system(s.as_bytes());
            let _ = parse_pods(s.as_bytes());
            let _ = parse_member_list(s.as_bytes());
            let _ = parse_endpoint_health(s.as_bytes());
        }

        /// A listing (`crictl ps -a` then `crictl pods`, as the runbook reads
        /// kube-system) gives exactly the kube-system containers of that name
        /// in its static pod (labels compared exactly, not by prefix or
        /// case), newest first, and `running` picks the newest running one.
        #[test]
        fn crictl_ps_keeps_exact_labels_newest_first(ctrs in vec(arb_ctr(), 0..12), which in prop::sample::select(vec!["etcd", "kube-apiserver"])) {
            let listing = Listing {
                containers: parse_ps_kube_system(&ps_json(&ctrs)).unwrap(),
                sandboxes: parse_pods(&static_sandbox()).unwrap(),
            };
            let got = listing.component(which).unwrap();
            let mut want: Vec<&Ctr> = ctrs.iter().filter(|c| c.namespace == "kube-system" && c.name == which).collect();
            prop_assert_eq!(got.len(), want.len());
            for g in &got {
                prop_assert!(want.iter().any(|w| w.id == g.id));
            }
            for w in got.windows(2) {
                let a: u64 = w[0].created_at.parse().unwrap();
                let b: u64 = w[1].created_at.parse().unwrap();
                prop_assert!(a >= b, "not newest first: {} then {}", a, b);
            }
            want.sort_by_key(|c| std::cmp::Reverse(c.created));
            let newest_running = want.iter().filter(|c| c.running).map(|c| c.created).max();
            prop_assert_eq!(running(&got).map(|c| c.created_at.parse::<u64>().unwrap()), newest_running);
        }

        /// Member IDs are full 64-bit integers: they round-trip exactly,
        /// including above 2^53, and a float where an ID belongs is refused.
        #[test]
        fn etcd_member_ids_round_trip_exactly(c in arb_cluster()) {
            let m = c.members();
            let text = serde_json::to_string(&json!({
                "header": {"cluster_id": 1u64 << 63, "member_id": m.header.member_id, "revision": 7, "raft_term": 3},
                "members": m.members.iter().map(|x| json!({
                    "ID": x.id, "name": x.name, "peerURLs": ["https://10.0.0.1:2380"],
                    "clientURLs": x.client_urls, "isLearner": x.is_learner,
                })).collect::<Vec<_>>(),
            })).unwrap();
            let back = parse_member_list(text.as_bytes()).unwrap();
            prop_assert_eq!(&back, &m);
            let id_text = m.header.member_id.to_string();
            let as_float = text.replacen(&format!("\"member_id\":{id_text}"), &format!("\"member_id\":{}", m.header.member_id as f64), 1);
            if as_float != text && (m.header.member_id as f64).to_string().contains(['.', 'e']) {
                prop_assert!(parse_member_list(as_float.as_bytes()).is_err());
            }
        }

        /// The health array is found inside whatever etcdctl prints around
        /// it (warnings, a trailing error line).
        #[test]
        fn endpoint_health_is_found_among_noise(c in arb_cluster(), pre in "[a-zA-Z :{}\n]{0,80}", post in "[a-zA-Z :{}\n]{0,80}") {
            let h = c.cluster_health();
            let arr = serde_json::to_string(&h.iter().map(|e| json!({"endpoint": e.endpoint, "health": e.health, "took": "1ms"})).collect::<Vec<_>>()).unwrap();
            let got = parse_endpoint_health(format!("{pre}{arr}{post}").as_bytes()).unwrap();
            prop_assert_eq!(got, h);
        }

        /// judge_etcd agrees with the reference written from SPEC step 7.
        #[test]
        fn etcd_judgement_matches_the_reference(c in arb_cluster()) {
            let got = judge_etcd(&c.local_health(), &c.cluster_health(), &c.members());
            let kind = match &got {
                EtcdVerdict::Ok { .. } => "ok",
                EtcdVerdict::Structural { two_voters: true, .. } => "two-voters",
                EtcdVerdict::Structural { .. } => "structural",
                EtcdVerdict::NotYet(_) => "not-yet",
            };
            prop_assert_eq!(kind, expected(&c), "{:?} for {:?}", got, c);
        }

        /// Kubeconfig: arbitrary bytes never panic; errors never echo the data.
        #[test]
        fn kubeconfig_parsers_never_panic(b in vec(any::<u8>(), 0..2048)) {
            let _ = kubeconfig_client_cert(&b);
            let _ = kubeconfig_client_key(&b);
        }

        /// Embedded data round-trips however it is wrapped, with or without a
        /// current-context; invalid base64 is an error that does not quote it.
        #[test]
        fn kubeconfig_data_round_trips_and_errors_do_not_leak(
            cert in vec(any::<u8>(), 1..600),
            key in vec(any::<u8>(), 1..600),
            user in "[a-z][a-z0-9-]{0,20}",
            current in any::<bool>(),
            wrap in prop::option::of(16usize..80),
            secret in "[A-Za-z0-9]{24}",
        ) {
            let enc = |b: &[u8]| {
                let s = base64::engine::general_purpose::STANDARD.encode(b);
                match wrap {
                    // A YAML folded scalar: line breaks inside the base64.
                    Some(w) => {
                        let lines: Vec<String> = s.as_bytes().chunks(w).map(|c| format!("      {}", String::from_utf8_lossy(c))).collect();
                        format!(">-\n{}", lines.join("\n"))
                    }
                    None => s,
                }
            };
            let kc = kubeconfig(&user, &enc(&cert), &enc(&key), current);
            prop_assert_eq!(kubeconfig_client_cert(kc.as_bytes()).unwrap(), KubeconfigCert::Embedded(cert.clone()));
            prop_assert_eq!(kubeconfig_client_key(kc.as_bytes()).unwrap(), Some(key.clone()));
            // Key material that is not base64 (a '!' in it): refused, unquoted.
            let bad = kubeconfig(&user, &enc(&cert), &format!("{secret}!{secret}"), current);
            let e = kubeconfig_client_key(bad.as_bytes()).unwrap_err().to_string();
            prop_assert!(!e.contains(&secret), "{}", e);
            // Broken YAML around the key: the error names a place, not the data.
            let broken = kc.replace("client-key-data: ", &format!("client-key-data: [{secret}"));
            if let Err(e) = kubeconfig_client_key(broken.as_bytes()) {
                prop_assert!(!e.to_string().contains(&secret), "{}", e);
            }
        }

        /// PEM: arbitrary bytes and single-byte corruptions of real
        /// certificates and keys never panic, and a corrupted certificate is
        /// never taken as signed by the CA unless its signed part is intact.
        #[test]
        fn pem_parsers_never_panic(b in vec(any::<u8>(), 0..4096)) {
            let _ = parse_pem_certificate(&b);
        }

        #[test]
        fn corrupted_certificates_and_keys_never_panic(
            which in prop::sample::select(vec!["apiserver", "front-proxy-client", "apiserver-kubelet-client"]),
            i in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            prefix in prop::sample::select(vec!["", "junk\n", "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"]),
        ) {
            let ca_file = if which.starts_with("front-proxy") { "front-proxy-ca.crt" } else { "ca.crt" };
            let ca = parse_pem_certificate(&fixture(&format!("{PKI}/{ca_file}"))).unwrap();
            let mut pem = prefix.as_bytes().to_vec();
            pem.extend(fixture(&format!("{PKI}/{which}.crt")));
            let key = fixture(&format!("{PKI}/{which}.key"));
            let good = parse_pem_certificate(&pem).unwrap();
            prop_assert!(verify_signed_by(&good, &ca));
            prop_assert!(key_matches_cert(&good, &key).unwrap());
            let mut bad = pem.clone();
            let at = i.index(bad.len());
            bad[at] = byte;
            if let Ok(cert) = parse_pem_certificate(&bad) {
                // Decoded to the same DER: the change was in PEM whitespace
                // or the prefix. Otherwise the signature must not verify,
                // unless the change fell outside the signed bytes' meaning
                // (x509-parser accepts some encodings that DER forbids).
                if cert.der != good.der && verify_signed_by(&cert, &ca) {
                    prop_assert_eq!(&cert.subject, &good.subject);
                    prop_assert_eq!(cert.not_after, good.not_after);
                }
                let _ = key_matches_cert(&cert, &key);
            }
            let mut bad_key = key.clone();
            let at = i.index(bad_key.len());
            bad_key[at] = byte;
            let _ = key_matches_cert(&good, &bad_key);
        }
    }

    #[test]
    fn the_reference_covers_every_verdict() {
        // The generator reaches each branch (a cheap guard against a
        // strategy that never produces the interesting cases).
        let mut seen = std::collections::BTreeSet::new();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for _ in 0..2000 {
            let c = arb_cluster().new_tree(&mut runner).unwrap().current();
            seen.insert(expected(&c));
        }
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            ["not-yet", "ok", "structural", "two-voters"]
        );
    }
}
