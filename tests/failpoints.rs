//! Named crash points (src/failpoints.rs): for every one, a renewal on the
//! simulated node is killed there (SIGKILL from inside: no unwinding, no
//! Drop), then the controller's recovery runs (the fencing status check,
//! then a new operation) and the oracle is checked. Run with
//! `cargo test --features sim,failpoints --test failpoints`.
#![cfg(all(feature = "sim", feature = "failpoints"))]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]

mod support;

use serde_json::json;
use std::os::unix::process::ExitStatusExt;
use support::node::*;
use support::oracle::*;
use support::tree::chmod;

fn run_with_failpoint(node: &Node, point: &str, args: &[&str]) -> std::process::ExitStatus {
    node.command(args)
        .env("FAILPOINTS", format!("{point}=return"))
        .output()
        .unwrap()
        .status
}

/// The oracle's verdict, or a failure naming the crash point.
fn or_fail<T>(point: &str, r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| panic!("{point}: {e}"))
}

struct Case {
    point: &'static str,
    /// Forced fresh run (kubeadm included), or a resume from restart_pending/etcd.
    fresh: bool,
}

#[test]
fn every_crash_point_is_recovered() {
    let cases = [
        Case {
            point: "renew-after-lock",
            fresh: true,
        },
        Case {
            point: "renew-after-phase-renewing",
            fresh: true,
        },
        Case {
            point: "renew-after-backup",
            fresh: true,
        },
        Case {
            point: "renew-after-kubeadm",
            fresh: true,
        },
        Case {
            point: "renew-after-verify",
            fresh: true,
        },
        Case {
            point: "restart-after-stage",
            fresh: false,
        },
        Case {
            point: "restart-in-wait-stop",
            fresh: false,
        },
        Case {
            point: "restart-after-stop",
            fresh: false,
        },
        Case {
            point: "restart-after-unstage",
            fresh: false,
        },
        Case {
            point: "restart-in-wait-start",
            fresh: false,
        },
        Case {
            point: "gate-in-wait",
            fresh: false,
        },
        Case {
            point: "restart-before-record",
            fresh: false,
        },
        Case {
            point: "renew-before-receipt",
            fresh: false,
        },
        Case {
            point: "renew-after-receipt-before-done",
            fresh: false,
        },
    ];
    let listed: Vec<&str> = nvke_cert_runbook::failpoints::ALL.to_vec();
    let mut covered: Vec<&str> = cases.iter().map(|c| c.point).collect();
    covered.push("fence-after-restore-before-receipt");
    covered.sort();
    let mut all = listed.clone();
    all.sort();
    assert_eq!(covered, all, "every failpoint must have a case");

    let mut n_recovered = 0;
    for case in &cases {
        let mut node = Node::new("rsa", json!({ "stopLatencyMs": 20, "startLatencyMs": 20 }));
        let base = base_of(&node);
        let mut seen = Seen::default();
        let mut args = vec!["--operation-id", "op-crash"];
        if case.fresh {
            args.push("--force");
        } else {
            node.write_state(
                "phase",
                &node.v2_phase("op-crash", "restart_pending", Some("etcd")),
            );
        }
        let status = run_with_failpoint(&node, case.point, &args);
        assert_eq!(
            status.signal(),
            Some(9),
            "{}: the run was not killed at its crash point ({status:?})",
            case.point
        );
        // Oracle 1: each manifest in exactly one place with its bytes and
        // mode; receipts, CAs and the phase file as the oracle wants them.
        let obs = or_fail(
            case.point,
            observe(&node, &base, &mut seen, "after the kill"),
        );
        let receipt_before = obs.receipts.get("op-crash").cloned();

        // Recovery as the controller does it: the fencing check, then a new
        // operation. A receipt, once written, never changes (`seen`).
        node.set_knobs(json!({}));
        let obs = or_fail(
            case.point,
            fence(&node, "op-crash", &mut seen, &base, "after fencing"),
        );
        let crash_outcome = obs.receipts["op-crash"].clone();
        if receipt_before.is_none() {
            assert_eq!(crash_outcome, "abandoned", "{}", case.point);
        }
        or_fail(
            case.point,
            new_operation(
                &node,
                &base,
                &mut seen,
                &obs.receipts,
                "op-next",
                After {
                    phase_may_be_absent: case.fresh,
                    taken_over: None,
                    kept: ("op-crash", &crash_outcome),
                },
            ),
        );
        // A delayed attempt of the crashed operation never acts.
        let (code, v, _) = node.run(&["--operation-id", "op-crash"]);
        assert!(
            v["replayed"].as_bool().unwrap_or(false),
            "{}: {v:#}",
            case.point
        );
        assert!(code == 0 || code == 5, "{}: replay exit {code}", case.point);

        // Oracle 2: everything back, original bytes, staging empty, CAs
        // kept, the phase file done, the node clean.
        or_fail(
            case.point,
            recovered(&node, &base, &mut seen, "after the replay", case.fresh),
        );
        n_recovered += 1;
    }

    // The fencing check itself crashed between putting a manifest back and
    // writing its receipt: the next fencing check confirms.
    {
        let node = Node::new("rsa", json!({ "stopLatencyMs": 20, "startLatencyMs": 20 }));
        let base = base_of(&node);
        let mut seen = Seen::default();
        node.write_state(
            "phase",
            &node.v2_phase("op-f", "restart_pending", Some("kube-scheduler")),
        );
        let staging = node.staged("kube-scheduler");
        std::fs::create_dir_all(staging.parent().unwrap()).unwrap();
        chmod(staging.parent().unwrap(), 0o700);
        std::fs::rename(node.manifest("kube-scheduler"), &staging).unwrap();
        let status = run_with_failpoint(
            &node,
            "fence-after-restore-before-receipt",
            &["--status-only", "--operation-id", "op-f", "--fence"],
        );
        assert_eq!(status.signal(), Some(9));
        assert!(
            node.manifest("kube-scheduler").exists(),
            "the put-back happened before the crash"
        );
        assert!(node.receipt("op-f").is_none());
        let point = "fence-after-restore-before-receipt";
        let obs = or_fail(
            point,
            fence(&node, "op-f", &mut seen, &base, "after fencing"),
        );
        assert_eq!(obs.receipts["op-f"], "abandoned");
        // The next operation resumes at kube-scheduler: renewed.
        or_fail(
            point,
            new_operation(
                &node,
                &base,
                &mut seen,
                &obs.receipts,
                "op-f2",
                After {
                    phase_may_be_absent: false,
                    taken_over: None,
                    kept: ("op-f", "abandoned"),
                },
            ),
        );
        n_recovered += 1;
    }
    let n = cases.len() + 1;
    // Past the harness's capture (println! is captured): CI's log shows it.
    support::say(&format!("failpoints: {n_recovered} recovered of {n}"));
    assert_eq!(n_recovered, n);
}

/// SPEC 4 (v1.1), the restore guard: a panic while a manifest is staged (a
/// failpoint whose action is `panic`) puts the manifest back, writes one
/// `failed` receipt and prints one JSON object; the next operation resumes.
#[test]
fn a_panic_while_staged_restores_and_reports_once() {
    for (point, staged_component) in [
        ("restart-after-stage", "etcd"),
        ("restart-in-wait-stop", "etcd"),
        ("restart-after-stop", "etcd"),
        ("renew-before-receipt", ""),
    ] {
        let node = Node::new("rsa", json!({ "stopLatencyMs": 20, "startLatencyMs": 20 }));
        node.write_state(
            "phase",
            &node.v2_phase("op-panic", "restart_pending", Some("etcd")),
        );
        let out = node
            .command(&["--operation-id", "op-panic"])
            .env("FAILPOINTS", format!("{point}=panic"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stdout.lines().count(),
            1,
            "{point}: one JSON object: {stdout}\n{stderr}"
        );
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(out.status.code(), Some(1), "{point}: {v:#}\n{stderr}");
        assert_eq!(v["outcome"], "failed", "{point}: {v:#}");
        assert_eq!(v["receiptWritten"], true, "{point}: {v:#}");
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains("internal error (a panic)"),
            "{point}: {message}"
        );
        if !staged_component.is_empty() {
            assert_eq!(v["phase"], format!("restart:{staged_component}"), "{point}");
            assert!(
                message.contains(&format!("{staged_component} manifest put back")),
                "{point}: {message}"
            );
        }
        assert!(
            stderr.contains("internal error (a panic)"),
            "{point}: the panic is logged: {stderr}"
        );
        node.assert_all_active();
        let r = node.receipt("op-panic").expect("one receipt");
        assert_eq!(r["outcome"], "failed", "{point}");
        assert!(r["manifests"]
            .as_object()
            .unwrap()
            .values()
            .all(|l| l == "active"));
        let (code, v, e) = node.run(&["--operation-id", "op-after-panic"]);
        assert_eq!(
            (code, v["outcome"].as_str()),
            (0, Some("renewed")),
            "{point}: {v:#}\n{e}"
        );
        node.assert_all_active();
    }
}
