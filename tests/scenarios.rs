//! Renewal scenarios on the simulated node (tests/simnode): a kubelet that
//! really starts and stops "containers" as manifests move, crictl, kubeadm,
//! and TLS stand-ins for kube-apiserver and etcd. Run with
//! `cargo test --features sim`.
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// Skips and measurements are printed through the harness (captured unless --nocapture); the print lints bind src/.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::node::*;
use support::tree::chmod;

/// SPEC 7 (v1.2): `apiUnavailableMs` per restart, from the runbook's own
/// `/readyz` probes every 200 ms. The stand-in kubelet starts each new
/// container 800 ms after its manifest is back, so kube-apiserver's own
/// restart leaves nothing on its port for at least that long (at least
/// three failed probes); kube-scheduler's restart leaves it serving. (With
/// the default 30 ms an outage can fall between two probes: 0 is then the
/// truthful answer of a 200 ms prober.)
#[test]
fn restarts_record_the_apis_unavailability() {
    let node = Node::new("rsa", json!({ "startLatencyMs": 800 }));
    let (code, v, stderr) = node.run(&["--operation-id", "op-api", "--force"]);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(restarted(&v), COMPONENTS);
    let api_ms = |c: &str| {
        v["restarts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["component"] == c)
            .and_then(|r| r["apiUnavailableMs"].as_u64())
            .unwrap()
    };
    assert!(api_ms("kube-apiserver") >= 600, "{v:#}");
    assert!(
        api_ms("kube-apiserver") <= v["restarts"][1]["totalMs"].as_u64().unwrap(),
        "measured within its restart: {v:#}"
    );
    assert!(api_ms("kube-scheduler") < api_ms("kube-apiserver"), "{v:#}");
    let r = node.receipt("op-api").expect("receipt");
    assert_eq!(r["restarts"], v["restarts"], "{r:#}");
}

#[test]
fn happy_path_renews_and_restarts_in_order() {
    let node = Node::new("rsa", json!({}));
    let vip_before = node.crictl_json("kube-vip");
    let ids_before: Vec<_> = COMPONENTS
        .iter()
        .map(|c| node.running_id(c).unwrap())
        .collect();
    let cas = (
        node.ca_sha("ca.crt"),
        node.ca_sha("etcd/ca.crt"),
        node.ca_sha("front-proxy-ca.crt"),
    );
    let (code, v, stderr) = node.run(&["--operation-id", "op-happy", "--force"]);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(v["outcome"], "renewed");
    assert_eq!(v["phase"], "done");
    // Issue 14: this run re-signed the leaves.
    assert_eq!(v["resigned"], true, "{v:#}");
    assert_eq!(restarted(&v), COMPONENTS);
    for (i, c) in COMPONENTS.iter().enumerate() {
        let r = &v["restarts"][i];
        assert_eq!(r["oldContainerID"], ids_before[i].as_str());
        assert_ne!(r["newContainerID"], ids_before[i].as_str());
        assert_eq!(
            node.running_id(c).unwrap(),
            r["newContainerID"].as_str().unwrap()
        );
    }
    // kube-vip never moved: same container, still running.
    assert_eq!(node.crictl_json("kube-vip"), vip_before);
    assert_eq!(
        cas,
        (
            node.ca_sha("ca.crt"),
            node.ca_sha("etcd/ca.crt"),
            node.ca_sha("front-proxy-ca.crt")
        )
    );
    node.assert_all_active();
    let r = node.receipt("op-happy").expect("receipt");
    assert_eq!(r["outcome"], "renewed");
    // v1.2 (SPEC 7): the receipt carries the restarts as the document
    // lists them.
    assert_eq!(r["restarts"], v["restarts"], "{r:#}");
    assert!(
        node.phase().contains("\"state\": \"done\""),
        "{}",
        node.phase()
    );
    assert!(node
        .kubeadm_calls()
        .contains(&format!("--rootfs {}", node.root.display())));
    // Certificates renewed beyond the threshold.
    for c in v["certificates"].as_array().unwrap() {
        if c["notAfterAfter"].is_null() {
            continue;
        }
        assert!(c["daysLeftAfter"].as_i64().unwrap() > 300, "{c}");
    }
    // A backup was taken, and the log file written.
    assert!(node.state().join("backup/op-happy/pki/ca.crt").is_file());
    let log = std::fs::read_to_string(node.state().join("log/op-happy.log")).unwrap();
    assert!(log.contains("kubeadm"), "{log}");
    // Replay: same outcome, nothing done.
    let (code, v, _) = node.run(&["--operation-id", "op-happy"]);
    assert_eq!(
        (code, v["replayed"].as_bool(), v["outcome"].as_str()),
        (0, Some(true), Some("renewed"))
    );
    assert_eq!(node.kubeadm_calls().lines().count(), 1);
}

#[test]
fn unchanged_when_nothing_is_due_and_kubeadm_never_runs() {
    let node = Node::new("rsa", json!({}));
    let before: Vec<_> = COMPONENTS
        .iter()
        .map(|c| node.running_id(c).unwrap())
        .collect();
    let (code, v, _) = node.run(&["--operation-id", "op-unch"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("unchanged")));
    assert_eq!(v["resigned"], false, "{v:#}");
    assert!(node.kubeadm_calls().is_empty());
    assert_eq!(
        before,
        COMPONENTS
            .iter()
            .map(|c| node.running_id(c).unwrap())
            .collect::<Vec<_>>()
    );
    assert_eq!(node.receipt("op-unch").unwrap()["outcome"], "unchanged");
    assert!(
        node.phase().is_empty(),
        "no phase file for an unchanged run"
    );
}

#[test]
fn due_leaf_renews_without_force_and_ecdsa_works() {
    let node = Node::new("ecdsa", json!({}));
    let (code, v, e) = node.run(&["--operation-id", "op-ec", "--now", "2027-02-10T00:00:00Z"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    node.assert_all_active();
}

#[test]
fn failure_replays_with_its_exit_code() {
    let mut node = Node::new("rsa", json!({ "kubeadm": { "failHalfway": true } }));
    let pki_before = std::fs::read(node.root.join("etc/kubernetes/pki/apiserver.crt")).unwrap();
    let (code, v, e) = node.run(&["--operation-id", "op-half", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (1, Some("failed"), Some("renew-certs")),
        "{v:#}\n{e}"
    );
    // Rolled back from the backup; nothing restarted.
    assert_eq!(
        std::fs::read(node.root.join("etc/kubernetes/pki/apiserver.crt")).unwrap(),
        pki_before
    );
    assert!(v["restarts"].as_array().unwrap().is_empty());
    assert!(node.phase().contains("\"state\": \"renewing\""));
    let (code, v, _) = node.run(&["--operation-id", "op-half", "--force"]);
    assert_eq!((code, v["replayed"].as_bool()), (1, Some(true)));
    // The next operation resumes the work and finishes it.
    node.set_knobs(json!({ "kubeadm": { "failHalfway": false } }));
    let (code, v, e) = node.run(&["--operation-id", "op-next"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["resumedFrom"]["operationID"], "op-half");
    // Resumed at `renewing`: kubeadm ran again, so this run re-signed.
    assert_eq!(v["resigned"], true, "{v:#}");
    // op-half already has a receipt (failed): no superseded receipt replaces it.
    assert_eq!(node.receipt("op-half").unwrap()["outcome"], "failed");
}

#[test]
fn kubeadm_changing_a_ca_or_writing_a_bad_key_is_rolled_back() {
    for (knob, id) in [("changeCA", "op-ca"), ("keyMismatch", "op-key")] {
        let node = Node::new("rsa", json!({ "kubeadm": { knob: true } }));
        let ca = node.ca_sha("ca.crt");
        let key = std::fs::read(node.root.join("etc/kubernetes/pki/apiserver.key")).unwrap();
        let (code, v, e) = node.run(&["--operation-id", id, "--force"]);
        assert_eq!(
            (code, v["phase"].as_str()),
            (1, Some("renew-certs")),
            "{knob}: {v:#}\n{e}"
        );
        assert_eq!(node.ca_sha("ca.crt"), ca, "{knob}");
        assert_eq!(
            std::fs::read(node.root.join("etc/kubernetes/pki/apiserver.key")).unwrap(),
            key,
            "{knob}"
        );
        node.assert_all_active();
    }
}

#[test]
fn ca_mismatch_refuses_before_anything_changes() {
    let node = Node::new("rsa", json!({}));
    let bad = format!("ca.crt={}", "0".repeat(64));
    let (code, v, _) = node.run(&[
        "--operation-id",
        "op-cam",
        "--force",
        "--expect-ca-sha256",
        &bad,
    ]);
    assert_eq!((code, v["phase"].as_str()), (1, Some("ca-check")));
    assert!(node.kubeadm_calls().is_empty());
    assert!(node.phase().is_empty());
    let good = format!("ca.crt={}", node.ca_sha("ca.crt"));
    let (code, v, _) = node.run(&["--operation-id", "op-cag", "--expect-ca-sha256", &good]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("unchanged")));
}

#[test]
fn etcd_membership_rules() {
    let node = Node::new("rsa", json!({ "etcd": { "voters": 2 } }));
    let (code, v, _) = node.run(&["--operation-id", "op-two", "--force"]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("two-control-plane-voters"))
    );
    assert!(node.kubeadm_calls().is_empty());

    node_with_learner();

    let node = Node::new("rsa", json!({ "etcd": { "voters": 3 } }));
    let (code, v, e) = node.run(&["--operation-id", "op-three", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["etcd"]["voters"], 3);

    let node = Node::new("rsa", json!({ "etcd": { "voters": 3, "unhealthy": 1 } }));
    let (code, v, _) = node.run(&[
        "--operation-id",
        "op-3u",
        "--force",
        "--health-timeout",
        "1",
    ]);
    assert_eq!((code, v["phase"].as_str()), (1, Some("health")), "{v:#}");
}

fn node_with_learner() {
    let node = Node::new("rsa", json!({ "etcd": { "voters": 3, "learners": 1 } }));
    let start = Instant::now();
    let (code, v, _) = node.run(&["--operation-id", "op-learner", "--force"]);
    assert_eq!((code, v["phase"].as_str()), (1, Some("health")));
    assert!(v["message"].as_str().unwrap().contains("learner"));
    // Structural: refused at once, not after the health timeout.
    assert!(start.elapsed() < Duration::from_secs(15));
}

#[test]
fn staging_conflict_and_leftover_staged_manifest() {
    let node = Node::new("rsa", json!({}));
    let staging = node.root.join("etc/kubernetes/nvke-cert-renewal-staging");
    std::fs::create_dir_all(&staging).unwrap();
    chmod(&staging, 0o700);
    std::fs::write(node.staged("kube-scheduler"), "different bytes\n").unwrap();
    let (code, v, _) = node.run(&["--operation-id", "op-conf", "--force"]);
    // SPEC 7 (v1.1): all four are in manifests/, so exit 1 (the controller
    // releases the lock and retries), not 4.
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("staging-conflict")),
        "{v:#}"
    );
    assert_eq!(
        node.receipt("op-conf").unwrap()["manifests"]["kube-scheduler"],
        "both"
    );
    // Leftover: the active copy goes away (an interrupted run staged it).
    std::fs::remove_file(node.staged("kube-scheduler")).unwrap();
    std::fs::rename(
        node.manifest("kube-scheduler"),
        node.staged("kube-scheduler"),
    )
    .unwrap();
    let (code, v, e) = node.run(&["--operation-id", "op-left", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    node.assert_all_active();
}

#[test]
fn component_never_healthy_and_stop_timeout_restore_the_manifest() {
    let node = Node::new("rsa", json!({}));
    node.write_state(
        "phase",
        &node.v2_phase("op-old", "restart_pending", Some("kube-scheduler")),
    );
    let mut node = node;
    node.set_knobs(json!({ "neverStop": ["kube-scheduler"] }));
    let (code, v, e) = node.run(&["--operation-id", "op-stop", "--stop-timeout", "1"]);
    assert_eq!(
        (code, v["phase"].as_str(), v["outcome"].as_str()),
        (1, Some("restart:kube-scheduler"), Some("failed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["failedComponent"], "kube-scheduler");
    node.assert_all_active();
    // op-old was superseded by op-stop's first phase write.
    assert_eq!(node.receipt("op-old").unwrap()["outcome"], "superseded");
    // A delayed attempt of op-old is fenced (exit 5) and changes nothing.
    let (code, v, _) = node.run(&["--operation-id", "op-old"]);
    assert_eq!((code, v["replayed"].as_bool()), (5, Some(true)));

    node.set_knobs(json!({ "neverStop": [], "neverStart": ["kube-scheduler"] }));
    let (code, v, e) = node.run(&["--operation-id", "op-never", "--health-timeout", "2"]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("restart:kube-scheduler")),
        "{v:#}\n{e}"
    );
    node.assert_all_active();
    node.set_knobs(json!({ "neverStart": [] }));
    let (code, v, e) = node.run(&["--operation-id", "op-fin"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(restarted(&v), ["kube-scheduler"]);
}

#[test]
fn v2_resume_of_own_and_crash_between_receipt_and_done() {
    let node = Node::new("rsa", json!({}));
    node.write_state(
        "phase",
        &node.v2_phase("op-own", "restart_pending", Some("kube-controller-manager")),
    );
    let (code, v, e) = node.run(&["--operation-id", "op-own"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(restarted(&v), ["kube-controller-manager", "kube-scheduler"]);
    assert!(
        node.kubeadm_calls().is_empty(),
        "resuming restart_pending does not renew again"
    );
    assert_eq!(v["resigned"], false, "{v:#}");

    // Crash between receipt and done: phase unfinished, success receipt exists.
    node.write_state("phase", &node.v2_phase("op-own", "restart_pending", None));
    let (code, v, _) = node.run(&["--operation-id", "op-after"]);
    assert_eq!((code, v["outcome"].as_str()), (0, Some("unchanged")));
    assert!(v["resumedFrom"].is_null());
}

#[test]
fn legacy_resume_from_each_component_keeps_the_format() {
    for (i, c) in COMPONENTS.iter().enumerate() {
        let node = Node::new("rsa", json!({}));
        node.write_state("phase", &node.legacy_phase("restart_pending", c));
        let (code, v, e) = node.run(&["--operation-id", &format!("op-leg-{i}")]);
        assert_eq!(
            (code, v["outcome"].as_str()),
            (0, Some("renewed")),
            "{c}: {v:#}\n{e}"
        );
        assert_eq!(restarted(&v), COMPONENTS[i..].to_vec());
        assert_eq!(v["resumedFrom"]["format"], "legacy-five-line");
        let phase = node.phase();
        assert!(
            phase.starts_with("STATE=done\nCOMPONENT=none\nSTARTED=1764460800\n"),
            "{phase}"
        );
        assert_eq!(phase.lines().count(), 5);
    }
}

#[test]
fn legacy_v1_mode() {
    let node = Node::new("rsa", json!({}));
    let (code, v, e) = node
        .command(&["--legacy-v1", "--force"])
        .output()
        .map(|o| {
            (
                o.status.code().unwrap(),
                serde_json::from_slice::<Value>(&o.stdout).unwrap(),
                String::from_utf8_lossy(&o.stderr).to_string(),
            )
        })
        .unwrap();
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert!(node.phase().starts_with("STATE=done\nCOMPONENT=none\n"));
    assert!(
        !node.state().join("completed").exists(),
        "legacy runs write no receipts"
    );
    assert!(
        std::fs::read_dir(node.state().join("backup-v1"))
            .unwrap()
            .count()
            == 1
    );
    // Refuses an unfinished V2 phase file, changing nothing.
    node.write_state(
        "phase",
        &node.v2_phase("op-v2", "restart_pending", Some("etcd")),
    );
    let before = node.phase();
    let (code, v, _) = node.run(&["--legacy-v1", "--force"]);
    assert_eq!((code, v["phase"].as_str()), (1, Some("phase-file")));
    assert_eq!(node.phase(), before);
}

#[test]
fn sigterm_while_waiting_cancels_and_restores() {
    let mut node = Node::new("rsa", json!({}));
    node.set_knobs(json!({ "neverStop": ["kube-apiserver"] }));
    node.write_state(
        "phase",
        &node.v2_phase("op-t", "restart_pending", Some("kube-apiserver")),
    );
    let child = node
        .command(&["--operation-id", "op-t", "--stop-timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the manifest is staged, then SIGTERM.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !node.staged("kube-apiserver").exists() {
        assert!(Instant::now() < deadline, "never staged");
        std::thread::sleep(Duration::from_millis(10));
    }
    let t = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(30));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), v["outcome"].as_str()),
        (Some(1), Some("cancelled")),
        "{v:#}"
    );
    node.assert_all_active();
    assert_eq!(node.receipt("op-t").unwrap()["outcome"], "cancelled");
}

/// `--deadline` (SPEC 4, v1.1): when the controller's deadline passes
/// mid-restart, the run cancels as on SIGTERM: the wait for the old
/// container ends, the staged manifest goes back, a `cancelled` receipt
/// names the deadline. The deadline is 5 s after the fixed `--now`; the stop
/// wait alone would take 60 s.
#[test]
fn a_deadline_mid_restart_cancels_and_restores() {
    let mut node = Node::new("rsa", json!({}));
    node.set_knobs(json!({ "neverStop": ["kube-apiserver"] }));
    node.write_state(
        "phase",
        &node.v2_phase("op-d", "restart_pending", Some("kube-apiserver")),
    );
    assert_eq!(support::node::NOW, "2026-11-30T00:00:00Z");
    let t = Instant::now();
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-d",
        "--stop-timeout",
        "60",
        "--deadline",
        "2026-11-30T00:00:05Z",
    ]);
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the deadline did not cut the wait"
    );
    assert_eq!(
        (code, v["outcome"].as_str(), v["exitCode"].as_u64()),
        (1, Some("cancelled"), Some(1)),
        "{v:#}\n{stderr}"
    );
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("the controller's deadline 2026-11-30T00:00:05Z passed"),
        "{message}"
    );
    node.assert_all_active();
    let r = node.receipt("op-d").unwrap();
    assert_eq!(
        (r["outcome"].as_str(), r["phase"].as_str()),
        (Some("cancelled"), Some("cancelled"))
    );
    // The phase file is left for the next operation to resume.
    let phase: Value = serde_json::from_str(&node.phase()).unwrap();
    assert_eq!(phase["state"], "restart_pending");
}

#[test]
fn sigkill_while_staged_then_fence_then_next_operation_resumes() {
    let mut node = Node::new("rsa", json!({}));
    node.set_knobs(json!({ "neverStop": ["kube-controller-manager"] }));
    node.write_state(
        "phase",
        &node.v2_phase("op-k", "restart_pending", Some("kube-controller-manager")),
    );
    let mut child = node
        .command(&["--operation-id", "op-k", "--stop-timeout", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !node.staged("kube-controller-manager").exists() {
        assert!(Instant::now() < deadline, "never staged");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(node.staged("kube-controller-manager").exists());
    node.set_knobs(json!({ "neverStop": [] }));
    // The controller's fencing check.
    node.fence("op-k");
    assert_eq!(node.receipt("op-k").unwrap()["outcome"], "abandoned");
    node.assert_all_active();
    // A delayed attempt of op-k is fenced.
    let (code, _, _) = node.run(&["--operation-id", "op-k"]);
    assert_eq!(code, 5);
    // The next cycle's operation resumes at kube-controller-manager.
    let (code, v, e) = node.run(&["--operation-id", "op-k2"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(restarted(&v), ["kube-controller-manager", "kube-scheduler"]);
    // Issue 14: it only finished op-k's restarts, and says so.
    assert_eq!(v["resigned"], false, "{v:#}");
    assert_eq!(
        v["message"],
        "resumed: finished the restarts of operation op-k (restarted kube-controller-manager, kube-scheduler one at a time); no certificate re-signed"
    );
}

#[test]
fn sighup_and_closed_pipes_do_not_stop_the_run() {
    let node = Node::new("rsa", json!({}));
    let child = node
        .command(&["--operation-id", "op-hup", "--force"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    std::thread::sleep(Duration::from_millis(100));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    // Close both pipes: the SSH session went away.
    let mut child = child;
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(node.receipt("op-hup").unwrap()["outcome"], "renewed");
    node.assert_all_active();
}

#[test]
fn lock_held_times_out_with_exit_3_and_writes_nothing() {
    let node = Node::new("rsa", json!({}));
    std::fs::create_dir_all(node.state()).unwrap();
    chmod(&node.state(), 0o700);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(node.state().join("lock"))
        .unwrap();
    chmod(&node.state().join("lock"), 0o600);
    lock.lock().unwrap();
    let (code, v, e) = node.run(&["--operation-id", "op-lock", "--lock-timeout", "1"]);
    assert_eq!((code, v["phase"].as_str()), (3, Some("lock")), "{v:#}");
    assert!(e.contains("waiting for lock"), "{e}");
    assert!(node.receipt("op-lock").is_none());
    // Where the four manifests are, even though nothing else was looked at.
    for c in COMPONENTS {
        assert_eq!(v["manifests"][c], "active", "{v:#}");
    }
    drop(lock);
}

#[test]
fn kubeadm_config_is_passed_and_a_hanging_kubeadm_is_killed() {
    let mut node = Node::new("rsa", json!({}));
    std::fs::write(
        node.root.join("etc/kubernetes/kubeadm.yaml"),
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
    )
    .unwrap();
    let (code, v, e) = node.run(&[
        "--operation-id",
        "op-cfg",
        "--force",
        "--kubeadm-config",
        "/etc/kubernetes/kubeadm.yaml",
    ]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert!(
        node.kubeadm_calls()
            .contains("--config /etc/kubernetes/kubeadm.yaml"),
        "{}",
        node.kubeadm_calls()
    );

    node.set_knobs(json!({ "kubeadm": { "hangSecs": 60 } }));
    let start = Instant::now();
    let (code, v, _) = node.run(&[
        "--operation-id",
        "op-hang",
        "--force",
        "--command-timeout",
        "1",
    ]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("renew-certs")),
        "{v:#}"
    );
    assert!(
        v["message"].as_str().unwrap().contains("timed out"),
        "{v:#}"
    );
    assert!(start.elapsed() < Duration::from_secs(30));
    node.assert_all_active();
}

#[test]
fn a_missing_tool_fails_at_once_and_the_callers_path_is_ignored() {
    let node = Node::new("rsa", json!({}));
    // A fake kubeadm first on the caller's PATH must never run.
    let fake = node.sim.join("evil");
    std::fs::create_dir_all(&fake).unwrap();
    support::tree::write_executable(
        &fake.join("kubeadm"),
        "#!/bin/sh\ntouch \"$0.ran\"\nexit 0\n",
    );
    let start = Instant::now();
    let out = Command::new(RUNBOOK)
        .args([
            "--output",
            "json",
            "--now",
            NOW,
            "--operation-id",
            "op-miss",
            "--force",
            "--health-timeout",
            "60",
        ])
        .arg("--root")
        .arg(&node.root)
        .arg("--crictl")
        .arg(node.sim.join("bin/crictl"))
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    assert!(
        !fake.join("kubeadm.ran").exists(),
        "the caller's PATH was trusted"
    );
    // On a machine without kubeadm on the fixed PATH (CI), the run is
    // refused before anything changes.
    if !Path::new("/usr/bin/kubeadm").exists() && !Path::new("/usr/local/bin/kubeadm").exists() {
        assert_eq!(
            (out.status.code(), v["phase"].as_str()),
            (Some(1), Some("renew-certs")),
            "{v:#}"
        );
        assert!(
            v["message"].as_str().unwrap().contains("kubeadm not found"),
            "{v:#}"
        );
        assert!(node.phase().is_empty(), "nothing was changed");
    }
    node.assert_all_active();
}

/// Run a renewal in the background; when kube-scheduler's manifest is staged
/// (the last restart: everything but the receipt is done soon after), call
/// `during`; then wait for the run. Returns (exit code, JSON).
fn run_and_at_last_restart(node: &Node, args: &[&str], during: impl FnOnce()) -> (i32, Value) {
    let child = node
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !node.staged("kube-scheduler").exists() {
        assert!(Instant::now() < deadline, "kube-scheduler was never staged");
        std::thread::sleep(Duration::from_millis(2));
    }
    during();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap(),
    )
}

/// SPEC 3 (v1.1), no success without its receipt: the run did all its work
/// but its receipt could not be written, so it says `failed` (phase
/// `receipt`, `receiptWritten: false`, exit 1), leaves the phase file
/// unfinished, and the retry with the same ID runs postflight only and
/// commits.
fn assert_no_receipt_no_success_then_retry_commits(node: &Node, code: i32, v: &Value, id: &str) {
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["outcome"], "failed", "{v:#}");
    assert_eq!(v["phase"], "receipt", "{v:#}");
    assert_eq!(v["receiptWritten"], false, "{v:#}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("NOT RENEWED: the receipt could not be written"),
        "the outcome-changing words come first: {v:#}"
    );
    assert_eq!(restarted(v).len(), 4, "{v:#}");
    assert!(node.receipt(id).is_none(), "no receipt was written");
    let phase = node.phase();
    assert!(
        phase.contains("\"state\": \"restart_pending\"")
            && phase.contains("\"nextComponent\": null"),
        "the phase file is never done without the receipt: {phase}"
    );
    node.assert_all_active();
}

#[test]
fn a_receipt_that_cannot_be_written_is_no_success_mode_change() {
    let node = Node::new("rsa", json!({ "stopLatencyMs": 300 }));
    let completed = node.state().join("completed");
    std::fs::create_dir_all(&completed).unwrap();
    chmod(&node.state(), 0o700);
    chmod(&completed, 0o700);
    let (code, v) =
        run_and_at_last_restart(&node, &["--operation-id", "op-norcpt", "--force"], || {
            // Someone loosens completed/: the runbook refuses to write into it.
            chmod(&completed, 0o777);
        });
    assert_no_receipt_no_success_then_retry_commits(&node, code, &v, "op-norcpt");
    chmod(&completed, 0o700);
    let (code, v, stderr) = node.run(&["--operation-id", "op-norcpt"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    assert_eq!(v["receiptWritten"], true);
    assert!(restarted(&v).is_empty(), "postflight only: {v:#}");
    assert_eq!(node.receipt("op-norcpt").unwrap()["outcome"], "renewed");
    assert!(node.phase().contains("\"state\": \"done\""));
}

#[test]
fn a_receipt_that_cannot_be_written_is_no_success_full_filesystem() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: mounting a tmpfs needs root (CI runs as root)");
        return;
    }
    let node = Node::new("rsa", json!({}));
    let completed = node.state().join("completed");
    std::fs::create_dir_all(&completed).unwrap();
    chmod(&node.state(), 0o700);
    let ok = Command::new("/bin/mount")
        .args(["-t", "tmpfs", "-o", "size=16k,mode=0700", "nvke-full"])
        .arg(&completed)
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("/bin/umount").arg(&self.0).status();
        }
    }
    let guard = Unmount(completed.clone());
    // Fill it: a dot-named file (never taken for a receipt) until ENOSPC.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(completed.join(".fill")).unwrap();
        let block = [0u8; 4096];
        while f.write_all(&block).is_ok() {}
    }
    let (code, v, stderr) = node.run(&["--operation-id", "op-full", "--force"]);
    assert_no_receipt_no_success_then_retry_commits(&node, code, &v, "op-full");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    drop(guard);
    let (code, v, stderr) = node.run(&["--operation-id", "op-full"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    assert_eq!(v["receiptWritten"], true);
    assert!(restarted(&v).is_empty(), "postflight only: {v:#}");
    assert_eq!(node.receipt("op-full").unwrap()["outcome"], "renewed");
}

/// SPEC 4 step 7 (v1.1): containers of more than one static pod for a
/// component are refused at once, naming the pods; nothing is moved.
#[test]
fn two_static_pods_with_a_scheduler_container_are_refused() {
    let node = Node::new("rsa", json!({}));
    // A second static pod (another name) whose container is kube-scheduler.
    let copy = std::fs::read_to_string(node.manifest("kube-scheduler"))
        .unwrap()
        .replace(
            "name: kube-scheduler\n  namespace",
            "name: kube-scheduler-copy\n  namespace",
        );
    std::fs::write(
        node.root
            .join("etc/kubernetes/manifests/kube-scheduler-copy.yaml"),
        copy,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while node
        .crictl_json("kube-scheduler")
        .iter()
        .filter(|c| c["state"] == "CONTAINER_RUNNING")
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the copy never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-amb",
        "--force",
        "--health-timeout",
        "60",
    ]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("health")),
        "{v:#}\n{stderr}"
    );
    let msg = v["message"].as_str().unwrap();
    assert!(
        msg.contains("kube-scheduler-cp-1") && msg.contains("kube-scheduler-copy-cp-1"),
        "names both pods: {msg}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "refused at once, not at the timeout"
    );
    assert!(v["restarts"].as_array().unwrap().is_empty());
    assert_eq!(node.kubeadm_calls(), "", "refused before kubeadm");
    node.assert_all_active();
}

/// SPEC 7 (v1.1): a copy in the node agent's staging directory with all
/// four active is a staging conflict with exit 1 (the controller releases
/// the lock and retries), not 4.
#[test]
fn agent_staging_copy_with_all_four_active_exits_1() {
    let node = Node::new("rsa", json!({}));
    let agent = node.root.join("etc/kubernetes/nvke-cert-renewal-manifests");
    std::fs::create_dir_all(&agent).unwrap();
    chmod(&agent, 0o755);
    std::fs::copy(node.manifest("etcd"), agent.join("etcd.yaml")).unwrap();
    let (code, v, stderr) = node.run(&["--operation-id", "op-agent", "--force"]);
    assert_eq!(
        (code, v["phase"].as_str(), v["outcome"].as_str()),
        (1, Some("staging-conflict"), Some("failed")),
        "{v:#}\n{stderr}"
    );
    node.assert_all_active();
}

/// SPEC 4 "Waits" (v1.1), issue 12: a renewal at kubelet latencies of 2 s
/// (stop) and 5 s (start) costs a bounded number of crictl calls, counted
/// from the simulated crictl's own log (a count, never a time), and its log
/// stays under 200 lines.
#[test]
fn waits_cost_few_tool_calls_and_log_lines() {
    let node = Node::new(
        "ecdsa",
        json!({ "stopLatencyMs": 2000, "startLatencyMs": 5000 }),
    );
    let before = std::fs::read_to_string(node.sim.join("crictl.log")).unwrap_or_default();
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-calls",
        "--force",
        "--health-timeout",
        "60",
    ]);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    let log = std::fs::read_to_string(node.sim.join("crictl.log")).unwrap();
    let calls: Vec<&str> = log[before.len()..].lines().collect();
    let kind = |k: &str| {
        calls
            .iter()
            .filter(|l| {
                l.split_whitespace()
                    .find(|w| !w.starts_with('-') && !w.contains("://"))
                    == Some(k)
            })
            .count()
    };
    let (ps, pods, exec, inspect) = (kind("ps"), kind("pods"), kind("exec"), kind("inspect"));
    let oplog = std::fs::read_to_string(node.state().join("log/op-calls.log")).unwrap();
    let lines = oplog.lines().count();
    println!(
        "crictl calls at 2 s / 5 s: ps {ps}, pods {pods}, inspect {inspect}, exec {exec}; log lines {lines}"
    );
    // The issue's target: at most 60 crictl calls per renewal at 2 s / 5 s.
    assert_eq!(
        ps + pods + exec + inspect,
        calls.len(),
        "every call counted"
    );
    assert!(
        calls.len() <= 60,
        "{} crictl calls (ps {ps}, pods {pods}, inspect {inspect}, exec {exec}):\n{oplog}",
        calls.len()
    );
    assert!(lines <= 200, "{lines} log lines:\n{oplog}");
}

/// SPEC 9 (v1.1): crictl gets the kubelet's runtime endpoint. The runtime
/// here listens on a socket that is none of crictl's defaults.
#[test]
fn the_runtime_endpoint_is_the_kubelets() {
    let ep = "unix:///run/k3s/containerd/containerd.sock";
    let mut node = Node::new("ecdsa", json!({}));
    node.set_runtime_endpoint(ep);
    let source = |v: &Value| v["runtimeEndpoint"]["source"].as_str().map(str::to_string);

    // Nothing configured: crictl tries its defaults and fails; the gate
    // fails at once (not at the health timeout), naming where it looked.
    let t0 = Instant::now();
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-ep-0",
        "--force",
        "--health-timeout",
        "60",
    ]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("health")),
        "{v:#}\n{stderr}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "structural, at once"
    );
    let msg = v["message"].as_str().unwrap();
    assert!(
        msg.contains("cannot be reached") && msg.contains("crictl"),
        "{msg}"
    );
    assert_eq!(source(&v).as_deref(), Some("crictl"));
    node.assert_all_active();

    // The kubelet's config.yaml.
    node.write_kubelet_config(Some(ep));
    let (code, v, stderr) = node.run(&["--operation-id", "op-ep-1", "--force"]);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(source(&v).as_deref(), Some("kubelet-config"));
    assert_eq!(v["runtimeEndpoint"]["endpoint"], ep);

    // kubeadm-flags.env (an older kubeadm's layout): the kubelet's flag,
    // which overrides config.yaml in the kubelet too.
    node.write_kubelet_config(Some("unix:///run/not-this-one.sock"));
    node.write_kubeadm_flags(ep);
    let (code, v, stderr) = node.run(&["--operation-id", "op-ep-2", "--force"]);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(source(&v).as_deref(), Some("kubeadm-flags"));

    // --runtime-endpoint wins over both; an unreachable one fails at once,
    // naming it.
    let t0 = Instant::now();
    let bad = "unix:///run/nothing-here.sock";
    let (code, v, _) = node.run(&[
        "--operation-id",
        "op-ep-3",
        "--force",
        "--runtime-endpoint",
        bad,
        "--health-timeout",
        "60",
    ]);
    assert_eq!((code, v["phase"].as_str()), (1, Some("health")), "{v:#}");
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert!(v["message"].as_str().unwrap().contains(bad), "{v:#}");
    assert_eq!(source(&v).as_deref(), Some("flag"));
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-ep-4",
        "--force",
        "--runtime-endpoint",
        ep,
    ]);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(source(&v).as_deref(), Some("flag"));
    node.assert_all_active();
}

/// SPEC 4 step 7 (v1.1): another kube-system pod with a container named
/// `etcd` (from the API server, not a static pod) is never judged, exec'd
/// into or waited for, and the renewal completes next to it.
#[test]
fn an_unrelated_etcd_container_is_never_judged() {
    let mut node = Node::new("ecdsa", json!({}));
    node.set_api_pods(json!([{ "name": "etcd-backup-29123", "namespace": "kube-system", "containers": ["etcd"] }]));
    node.wait_for("the backup pod", 20, |n| {
        n.containers("etcd").iter().any(|c| {
            c["labels"]["io.kubernetes.pod.name"] == "etcd-backup-29123"
                && c["state"] == "CONTAINER_RUNNING"
        })
    });
    let backup: Vec<String> = node
        .containers("etcd")
        .iter()
        .filter(|c| c["labels"]["io.kubernetes.pod.name"] == "etcd-backup-29123")
        .filter_map(|c| c["id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(backup.len(), 1);
    let before = std::fs::read_to_string(node.sim.join("crictl.log")).unwrap_or_default();
    let (code, v, stderr) = node.run(&["--operation-id", "op-bk", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    let calls = std::fs::read_to_string(node.sim.join("crictl.log")).unwrap();
    assert!(
        !calls[before.len()..].contains(&backup[0]),
        "the backup container was exec'd into or inspected"
    );
    assert_ne!(v["restarts"][0]["oldContainerID"], backup[0].as_str());
    assert!(node.running_ids("etcd").contains(&backup[0]), "left alone");
}

/// SPEC 4 step 7 (v1.1): `--secure-port` as two list items, and repeated:
/// read as pflag reads it (the last wins), so the gate probes the port
/// kube-apiserver really serves.
#[test]
fn secure_port_as_two_items_and_repeated() {
    let node = Node::new("ecdsa", json!({}));
    let m = node.manifest("kube-apiserver");
    let text = std::fs::read_to_string(&m).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("- --secure-port="))
        .unwrap()
        .to_string();
    let port = line
        .trim()
        .trim_start_matches("- --secure-port=")
        .to_string();
    let indent = &line[..line.find('-').unwrap()];
    let replaced = text.replace(
        &line,
        &format!("{indent}- --secure-port=1\n{indent}- --secure-port\n{indent}- \"{port}\""),
    );
    std::fs::write(&m, replaced).unwrap();
    // The kubelet restarts kube-apiserver for the edited manifest.
    std::thread::sleep(Duration::from_millis(300));
    node.wait_all_running();
    let (code, v, stderr) = node.run(&["--operation-id", "op-port", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
}

/// SPEC 4 step 7 (v1.1): an unreachable etcd member makes every etcdctl
/// health call take its whole --command-timeout; the gate is still bounded
/// by --health-timeout (overshoot at most 2 s).
#[test]
fn an_unreachable_etcd_member_does_not_stretch_the_gate() {
    let node = Node::new(
        "ecdsa",
        json!({ "etcd": { "voters": 3, "unreachable": 1 } }),
    );
    let t0 = Instant::now();
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-unr",
        "--force",
        "--health-timeout",
        "10",
    ]);
    let took = t0.elapsed();
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("health")),
        "{v:#}\n{stderr}"
    );
    assert!(
        took < Duration::from_secs(12),
        "the gate ran {took:?} for --health-timeout 10"
    );
    node.assert_all_active();
}

/// SPEC 4 step 7 (v1.2): etcd is asked by the runbook itself, its JSON
/// gateway's member list and each voter's /health: a renewal of a
/// three-voter node execs nothing in a container. With the gateway off
/// (`--enable-grpc-gateway=false` in etcd's manifest), etcdctl through
/// `crictl exec`, as v1.1, and the log says so.
#[test]
fn etcd_is_asked_directly_and_through_etcdctl_only_with_the_gateway_off() {
    let node = Node::new("rsa", json!({ "etcd": { "voters": 3 } }));
    let (code, v, e) = node.run(&["--operation-id", "op-direct", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["etcd"]["voters"], 3);
    let crictl = std::fs::read_to_string(node.sim.join("crictl.log")).unwrap();
    assert!(!crictl.contains("exec"), "no crictl exec: {crictl}");
    assert!(!e.contains("JSON gateway"), "{e}");
    // Postflight asked the peer port (SPEC 4 step 10, v1.2).
    assert!(
        e.contains("etcd's peer port serves the renewed /etc/kubernetes/pki/etcd/peer.crt"),
        "{e}"
    );

    let mut node = Node::prepare("rsa", json!({ "etcd": { "voters": 3 } }));
    let etcd = node.manifest("etcd");
    let m = std::fs::read_to_string(&etcd).unwrap();
    let m = m.replacen(
        "    - --cert-file=",
        "    - --enable-grpc-gateway=false\n    - --cert-file=",
        1,
    );
    assert!(m.contains("--enable-grpc-gateway=false"));
    std::fs::write(&etcd, m).unwrap();
    node.start_kubelet();
    node.wait_all_running();
    let (code, v, e) = node.run(&["--operation-id", "op-fallback", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["etcd"]["voters"], 3);
    let crictl = std::fs::read_to_string(node.sim.join("crictl.log")).unwrap();
    assert!(
        crictl
            .lines()
            .any(|l| l.contains("exec") && l.contains("etcdctl")),
        "etcdctl asked through crictl exec: {crictl}"
    );
    assert_eq!(
        e.matches("etcd's JSON gateway answered 404").count(),
        1,
        "said once: {e}"
    );
}

/// SPEC 4 step 7 (v1.2), staying up: a restarted kube-controller-manager
/// that crashes 2 s after each start (sim.json `crashAfterMs`, set once
/// the node runs: its first container is healthy) fails the run in its own
/// restart phase, seen by a later gate or by postflight after --settle;
/// every manifest active, exit 1, the receipt names the container that died
/// and how. The same for kube-scheduler, the last to restart.
#[test]
fn a_component_that_crashes_after_its_restart_fails_that_restart() {
    for c in ["kube-controller-manager", "kube-scheduler"] {
        let mut node = Node::new("rsa", json!({}));
        node.set_knobs(json!({ "crashAfterMs": { c: 2000 } }));
        let id = format!("op-crash-{c}");
        let (code, v, e) = node.run(&["--operation-id", &id, "--force", "--settle", "3"]);
        let phase = format!("restart:{c}");
        assert_eq!(
            (code, v["outcome"].as_str(), v["phase"].as_str()),
            (1, Some("failed"), Some(phase.as_str())),
            "{v:#}\n{e}"
        );
        node.assert_all_active();
        let r = node.receipt(&id).unwrap();
        assert_eq!(r["outcome"], "failed");
        assert_eq!(r["failedComponent"], c, "{r:#}");
        let m = r["message"].as_str().unwrap();
        assert!(
            m.contains(&format!("{c} did not stay up after its restart")),
            "{m}"
        );
        assert!(m.contains("exited 1"), "{m}");
    }
}

/// SPEC 10: kube-scheduler's /healthz answering 500 keeps the gate from
/// passing, and the run fails with that answer in its message.
#[test]
fn a_scheduler_whose_healthz_answers_500_fails_the_gate_with_the_answer() {
    let node = Node::new(
        "rsa",
        json!({ "health": { "kube-scheduler": "unhealthy" } }),
    );
    let (code, v, e) = node.run(&[
        "--operation-id",
        "op-sched-500",
        "--force",
        "--health-timeout",
        "2",
    ]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("health")),
        "{v:#}\n{e}"
    );
    let m = v["message"].as_str().unwrap();
    assert!(m.contains("kube-scheduler"), "{m}");
    assert!(m.contains("HTTP 500"), "{m}");
    assert!(m.contains("leaderElection failed"), "{m}");
    node.assert_all_active();
    assert!(node.kubeadm_calls().is_empty(), "nothing renewed");
}

/// SPEC 11 (v1.2): a renewal refuses at once when a leaf has expired: phase
/// `expiry`, exit 1, nothing changed (no kubeadm, no crictl call, no phase
/// file, every container as it was), the leaf and its notAfter named with
/// the next step; forced work too. The fixture's etcd-peer expires
/// 2027-03-01, every other leaf 2027-06-01.
#[test]
fn an_expired_leaf_is_refused_at_once_and_nothing_changes() {
    let node = Node::new("rsa", json!({}));
    let ids: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "2027-07-01T00:00:00Z",
            &[],
            // The other leaves' names, or only their count when the step's
            // command (a long --root here) leaves no room for them.
            "leaf etcd-peer expired 2027-03-01T00:00:00Z (122 days ago; /etc/kubernetes/pki/etcd/peer.crt) and 10 more",
        ),
        (
            "2027-03-03T00:00:00Z",
            &["--force"],
            "leaf etcd-peer expired 2027-03-01T00:00:00Z (2 days ago; /etc/kubernetes/pki/etcd/peer.crt): ",
        ),
        (
            "2026-05-01T00:00:00Z",
            &[],
            "the node's clock (2026-05-01T00:00:00Z) is before leaf ",
        ),
    ];
    for (i, (now, extra, starts)) in cases.iter().enumerate() {
        let id = format!("op-expired-{i}");
        let crictl_before =
            std::fs::read_to_string(node.sim.join("crictl.log")).unwrap_or_default();
        let mut args = vec!["--operation-id", id.as_str(), "--now", now];
        args.extend_from_slice(extra);
        // The gate's timeout would be 300 s: the refusal never reaches it.
        args.extend_from_slice(&["--health-timeout", "300"]);
        let (code, v, e) = node.run(&args);
        assert_eq!(
            (code, v["outcome"].as_str(), v["phase"].as_str()),
            (1, Some("failed"), Some("expiry")),
            "{now}: {v:#}\n{e}"
        );
        let message = v["message"].as_str().unwrap();
        assert!(message.starts_with(starts), "{now}: {message}");
        if i < 2 {
            // SPEC 6 (v1.3): the step carries a fresh ID, never this one
            // (it has its receipt now), and no placeholder.
            let step = next_command(message);
            assert_eq!(
                step[step.len() - 3..],
                [
                    "--operation-id".to_string(),
                    format!("recover-{}", now.replace([':', '-'], "")),
                    "--recover-expired".to_string()
                ],
                "{message}"
            );
            assert!(
                message.contains("next, recover it (then every other control-plane node whose certificates expired; "),
                "{message}"
            );
        } else {
            assert!(
                message.contains("a clock problem, not an expiry"),
                "{message}"
            );
        }
        let receipt = node.receipt(&id).unwrap();
        assert_eq!(
            (receipt["outcome"].as_str(), receipt["phase"].as_str()),
            (Some("failed"), Some("expiry"))
        );
        assert!(node.kubeadm_calls().is_empty(), "kubeadm never runs");
        assert_eq!(
            std::fs::read_to_string(node.sim.join("crictl.log")).unwrap_or_default(),
            crictl_before,
            "no gate attempt: not one crictl call"
        );
        assert!(node.phase().is_empty(), "no phase file: nothing began");
        node.assert_all_active();
        let now_ids: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
        assert_eq!(now_ids, ids, "no container restarted");
    }
}

/// SPEC 11 (v1.2): resumed work over an expired leaf is refused the same
/// way and its phase file is left for the next run; a staged manifest from
/// the interrupted run is put back first (the staging preflight runs before
/// expiry); the legacy runbook refuses too.
#[test]
fn an_expired_leaf_refuses_resumed_and_legacy_work_after_putting_back() {
    let node = Node::new("rsa", json!({}));
    let phase = node.v2_phase("op-killed", "restart_pending", Some("kube-apiserver"));
    node.write_state("phase", &phase);
    let staging = node.root.join("etc/kubernetes/nvke-cert-renewal-staging");
    std::fs::create_dir_all(&staging).unwrap();
    chmod(&staging, 0o700);
    std::fs::rename(
        node.manifest("kube-apiserver"),
        node.staged("kube-apiserver"),
    )
    .unwrap();
    let (code, v, e) = node.run(&[
        "--operation-id",
        "op-after-kill",
        "--now",
        "2027-07-01T00:00:00Z",
    ]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("expiry")),
        "{v:#}\n{e}"
    );
    node.assert_all_active();
    assert_eq!(node.phase(), phase, "the resumed work stays recorded");
    assert!(node.kubeadm_calls().is_empty());

    let node = Node::new("rsa", json!({}));
    let (code, v, e) = node.run(&["--legacy-v1", "--now", "2027-07-01T00:00:00Z"]);
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("expiry")),
        "{v:#}\n{e}"
    );
    assert!(node.phase().is_empty());
    assert!(node.kubeadm_calls().is_empty());
}

/// Runs the runbook with `args` and checks it failed in `phase` (exit 1,
/// outcome `failed`); its document.
fn failed_in(node: &Node, args: &[&str], phase: &str) -> Value {
    let (code, v, e) = node.run(args);
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (1, Some("failed"), Some(phase)),
        "{args:?}: {v:#}\n{e}"
    );
    v
}

/// The simulated node at `now`: its TLS stand-ins judge certificates as of
/// that instant too, so the fixture's leaves are as expired for etcd and
/// kube-apiserver as for the runbook.
fn node_at(now: &str) -> Node {
    Node::new("rsa", json!({ "tlsNow": now }))
}

const ALL_EXPIRED: &str = "2027-07-01T00:00:00Z";

/// SPEC 11 (v1.2): `--recover-expired` on a node whose every leaf expired
/// renews without a gate before, restarts the four one at a time, each new
/// container serving its renewed certificate, and records `renewed` with
/// `recovery: true` and the health seen at the end; the text ends with the
/// next steps across the control plane. Then a plain renewal's whole gate
/// passes.
#[test]
fn recover_expired_brings_an_all_expired_node_back() {
    let node = node_at(ALL_EXPIRED);
    let now = ["--now", ALL_EXPIRED];
    let (code, v, e) = node.run(&[&["--operation-id", "op-plain"][..], &now].concat());
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("expiry")),
        "{v:#}\n{e}"
    );
    let (code, v, e) = node.run(
        &[
            &["--operation-id", "op-recover", "--recover-expired"][..],
            &now,
        ]
        .concat(),
    );
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["recovery"], true, "{v:#}");
    assert_eq!(restarted(&v), COMPONENTS.to_vec());
    let message = v["message"].as_str().unwrap();
    assert!(
        message.starts_with("recovered (--recover-expired): renewed every leaf (expired: etcd-peer expired 2027-03-01 and 10 more); restarted etcd, "),
        "{message}"
    );
    let health = v["healthAtEnd"].as_str().unwrap();
    assert!(
        health.starts_with("the whole local health gate passes"),
        "{health}"
    );
    let receipt = node.receipt("op-recover").unwrap();
    assert_eq!(
        (
            &receipt["outcome"],
            &receipt["recovery"],
            &receipt["healthAtEnd"]
        ),
        (&json!("renewed"), &json!(true), &json!(health))
    );
    // kubeadm ran once, without the cluster's API: it said so and fell
    // back to its defaults (the simulated kubeadm, as the real one does).
    let calls = node.kubeadm_calls();
    assert_eq!(
        calls.lines().filter(|l| !l.starts_with('#')).count(),
        1,
        "{calls}"
    );
    assert!(
        calls.contains("# the API is unreachable: apiserver.crt expired"),
        "{calls}"
    );
    node.assert_all_active();
    assert!(
        node.phase().contains("\"state\": \"done\""),
        "{}",
        node.phase()
    );
    // Healthy at its end: the view asks nothing more of the other nodes.
    let (_, view, _) = node.run(&[&["--status-only"][..], &now].concat());
    assert!(
        !view["nextSteps"]
            .to_string()
            .contains("this node was recovered"),
        "{:#}",
        view["nextSteps"]
    );
    // Every leaf renewed: a plain renewal (forced) passes its whole gate.
    let (code, v, e) = node.run(&[&["--operation-id", "op-after", "--force"][..], &now].concat());
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert!(
        v.get("recovery").is_none(),
        "a plain renewal says nothing of recovery"
    );
}

/// SPEC 11: one leaf expired (etcd-peer) on a member of three voters whose
/// two others are unhealthy (their certificates expired too): no quorum,
/// so `/readyz` cannot pass; the recovery still brings this node's
/// components back serving renewed certificates, and reports the health it
/// saw at the end, not required.
#[test]
fn recover_expired_reports_missing_quorum_without_requiring_it() {
    let now = "2027-03-03T00:00:00Z";
    let node = Node::new(
        "rsa",
        json!({ "tlsNow": now, "etcd": { "voters": 3, "unhealthy": 2 } }),
    );
    // The node's saved ClusterConfiguration (SPEC 11: recommended): kubeadm
    // reads it, not the cluster's API.
    std::fs::write(
        node.root.join("etc/kubernetes/kubeadm-config.yaml"),
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
    )
    .unwrap();
    let (code, v, e) = node.run(&[
        "--operation-id",
        "op-one",
        "--recover-expired",
        "--kubeadm-config",
        "/etc/kubernetes/kubeadm-config.yaml",
        "--now",
        now,
        "--health-timeout",
        "10",
    ]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("(expired: etcd-peer expired 2027-03-01); "),
        "{v:#}"
    );
    let health = v["healthAtEnd"].as_str().unwrap();
    assert!(health.starts_with("not healthy yet: "), "{health}");
    assert_eq!(node.receipt("op-one").unwrap()["healthAtEnd"], health);
    node.assert_all_active();
    // The operator view names what the other nodes still need (SPEC 11).
    let (_, view, _) = node.run(&["--status-only", "--now", now]);
    let steps = view["nextSteps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s["what"].as_str().unwrap().starts_with(
                "this node was recovered by op-one but the cluster was not healthy at its end"
            )),
        "{steps:#?}"
    );
    assert_eq!(
        view["receipts"][0]["recovery"], true,
        "{:#}",
        view["receipts"]
    );
    let calls = node.kubeadm_calls();
    assert!(
        calls.contains("--config /etc/kubernetes/kubeadm-config.yaml"),
        "{calls}"
    );
    assert!(!calls.contains("unreachable"), "{calls}");
}

/// SPEC 11 with SPEC 4 step 4: every leaf expired and a manifest left
/// staged by an interrupted run; the recovery puts it back first, then
/// renews and restarts all four.
#[test]
fn recover_expired_puts_a_staged_manifest_back_first() {
    let node = node_at(ALL_EXPIRED);
    let staging = node.root.join("etc/kubernetes/nvke-cert-renewal-staging");
    std::fs::create_dir_all(&staging).unwrap();
    chmod(&staging, 0o700);
    std::fs::rename(
        node.manifest("kube-scheduler"),
        node.staged("kube-scheduler"),
    )
    .unwrap();
    let (code, v, e) = node.run(&[
        "--operation-id",
        "op-staged",
        "--recover-expired",
        "--now",
        ALL_EXPIRED,
    ]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(restarted(&v), COMPONENTS.to_vec());
    node.assert_all_active();
}

/// SPEC 11: `--recover-expired` on a node where no leaf expired is refused
/// (phase `expiry`, exit 1, nothing changed): renew it normally.
#[test]
fn recover_expired_is_refused_on_a_healthy_node() {
    let node = Node::new("rsa", json!({}));
    let v = failed_in(
        &node,
        &["--operation-id", "op-healthy", "--recover-expired"],
        "expiry",
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("no leaf has expired: "),
        "{v:#}"
    );
    assert!(node.kubeadm_calls().is_empty());
    assert!(node.phase().is_empty());
    assert_eq!(node.receipt("op-healthy").unwrap()["recovery"], true);
    // SPEC 6 (v1.3): the step is a renewal under a fresh ID (the same
    // command without --recover-expired would replay this receipt).
    let step = next_command(v["message"].as_str().unwrap());
    assert_eq!(step.len(), 2, "{step:?}");
    assert!(step[1].starts_with("manual-"), "{step:?}");
}

/// SPEC 11: a recovery killed (SIGKILL) with a manifest staged; the
/// fencing check puts it back and records it abandoned; the next operation,
/// a plain renewal, finds the leaves renewed (kubeadm's step was done) and
/// finishes the restarts as a renewal (v1.3: the mode asked decides the
/// table, never the phase file): the whole gate before each restart, and a
/// receipt that is not a recovery's.
#[test]
fn sigkill_mid_recovery_then_a_plain_renewal_finishes_it_as_a_renewal() {
    let mut node = node_at(ALL_EXPIRED);
    node.set_knobs(json!({ "neverStop": ["kube-controller-manager"] }));
    let mut child = node
        .command(&[
            "--operation-id",
            "op-rk",
            "--recover-expired",
            "--now",
            ALL_EXPIRED,
            "--stop-timeout",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !node.staged("kube-controller-manager").exists() {
        assert!(Instant::now() < deadline, "never staged");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let phase = node.phase();
    assert!(phase.contains("\"recovery\": true"), "{phase}");
    assert!(
        phase.contains("\"nextComponent\": \"kube-controller-manager\""),
        "{phase}"
    );
    node.set_knobs(json!({ "neverStop": [] }));
    node.fence("op-rk");
    assert_eq!(node.receipt("op-rk").unwrap()["outcome"], "abandoned");
    node.assert_all_active();
    // The legacy runbook refuses to run over it, as over any V2 work.
    let v = failed_in(&node, &["--legacy-v1", "--now", ALL_EXPIRED], "phase-file");
    assert!(v["message"].as_str().unwrap().contains("op-rk"), "{v:#}");
    assert_eq!(node.phase(), phase);
    let (code, v, e) = node.run(&["--operation-id", "op-rk2", "--now", ALL_EXPIRED]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["recovery"], Value::Null, "a renewal's: {v:#}");
    assert_eq!(restarted(&v), ["kube-controller-manager", "kube-scheduler"]);
    assert!(
        !v["message"].as_str().unwrap().contains("recovery"),
        "{v:#}"
    );
    assert!(
        e.contains("finishing an unfinished recovery as a renewal"),
        "{e}"
    );
    assert_eq!(node.receipt("op-rk2").unwrap()["recovery"], Value::Null);
}

/// SPEC 11: one leaf expired, kube-apiserver's serving certificate
/// (re-signed by the node's CA with notAfter in the past; the TLS stand-ins
/// judge it at the tests' clock): a plain renewal is refused naming it, the
/// recovery renews every leaf and kube-apiserver serves the renewed one.
#[test]
fn recover_expired_when_only_the_apiserver_certificate_expired() {
    let node = Node::new("rsa", json!({}));
    let pki = node.root.join("etc/kubernetes/pki");
    support::tree::resign(
        &pki.join("ca.crt"),
        &pki.join("ca.key"),
        &pki.join("apiserver.crt"),
        &pki.join("apiserver.key"),
        "20250601000000Z",
        "20251201000000Z",
    );
    let v = failed_in(&node, &["--operation-id", "op-api-plain"], "expiry");
    let msg = v["message"].as_str().unwrap();
    assert!(
        msg.starts_with("leaf apiserver expired 2025-12-01T00:00:00Z (364 days ago; /etc/kubernetes/pki/apiserver.crt): "),
        "{msg}"
    );
    let (code, v, e) = node.run(&["--operation-id", "op-api", "--recover-expired"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("(expired: apiserver expired 2025-12-01); "),
        "{v:#}"
    );
    assert_eq!(restarted(&v), COMPONENTS.to_vec());
    let health = v["healthAtEnd"].as_str().unwrap();
    assert!(
        health.starts_with("the whole local health gate passes"),
        "{health}"
    );
    node.assert_all_active();
}

/// SPEC 11 with SPEC 4 "Deadline": the controller's deadline passing while
/// a recovery waits for kube-apiserver to stop cancels it as it cancels a
/// renewal: the manifest back, a `cancelled` receipt (a recovery's), the
/// phase file left as a recovery's work for the next operation.
#[test]
fn a_deadline_mid_recovery_cancels_and_restores() {
    let mut node = node_at(ALL_EXPIRED);
    node.set_knobs(json!({ "neverStop": ["kube-apiserver"] }));
    let (code, v, stderr) = node.run(&[
        "--operation-id",
        "op-rd",
        "--recover-expired",
        "--now",
        ALL_EXPIRED,
        "--stop-timeout",
        "60",
        // 20 s after --now: the stand-in kubeadm's RSA renewal alone took
        // up to 4.8 s here (the keys' generation varies), so the 5 s this
        // had was a race with the one wait the test means.
        "--deadline",
        "2027-07-01T00:00:20Z",
    ]);
    assert_eq!(
        (code, v["outcome"].as_str(), v["failedComponent"].as_str()),
        (1, Some("cancelled"), Some("kube-apiserver")),
        "{v:#}\n{stderr}"
    );
    node.assert_all_active();
    let r = node.receipt("op-rd").unwrap();
    assert_eq!(
        (&r["outcome"], &r["recovery"]),
        (&json!("cancelled"), &json!(true))
    );
    let phase: Value = serde_json::from_str(&node.phase()).unwrap();
    assert_eq!(
        (&phase["state"], &phase["nextComponent"], &phase["recovery"]),
        (
            &json!("restart_pending"),
            &json!("kube-apiserver"),
            &json!(true)
        )
    );
}

/// SPEC 11: an expired CA refuses a recovery too (phase `ca-check`, named):
/// CAs are never rotated here.
#[test]
fn an_expired_ca_refuses_a_recovery() {
    let node = Node::new("rsa", json!({}));
    let v = failed_in(
        &node,
        &[
            "--operation-id",
            "op-ca",
            "--recover-expired",
            "--now",
            "2035-02-01T00:00:00Z",
        ],
        "ca-check",
    );
    let msg = v["message"].as_str().unwrap();
    assert!(
        msg.contains("expired at") && msg.contains("CAs are never renewed here"),
        "{msg}"
    );
    assert!(node.kubeadm_calls().is_empty());
    node.assert_all_active();
}

/// SPEC 11: a recovery over a renewal's unfinished work on a node where no
/// leaf has expired is refused like a fresh one (that renewal's gate is
/// what must pass), and changes nothing: not the phase file, not a
/// container.
#[test]
fn a_recovery_over_a_renewals_work_without_an_expired_leaf_is_refused() {
    let node = Node::new("rsa", json!({ "etcd": { "voters": 3, "unhealthy": 1 } }));
    let phase = node.v2_phase("op-a", "restart_pending", Some("etcd"));
    node.write_state("phase", &phase);
    let ids: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
    let v = failed_in(
        &node,
        &["--operation-id", "op-b", "--recover-expired"],
        "expiry",
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("no leaf has expired: "),
        "{v:#}"
    );
    assert_eq!(node.phase(), phase);
    let now: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
    assert_eq!(now, ids, "no container restarted");
}

/// A recovery's phase file (`recovery: true`) as a recovery killed in
/// `state` (`next`: the component it would restart next) leaves it.
fn recovery_phase(node: &Node, id: &str, state: &str, next: Option<&str>) -> String {
    let mut p: Value = serde_json::from_str(&node.v2_phase(id, state, next)).unwrap();
    p["recovery"] = json!(true);
    serde_json::to_string_pretty(&p).unwrap() + "\n"
}

/// Every phase a recovery can leave in its phase file.
const RECOVERY_LEFT: [(&str, Option<&str>); 6] = [
    ("renewing", None),
    ("restart_pending", Some("etcd")),
    ("restart_pending", Some("kube-apiserver")),
    ("restart_pending", Some("kube-controller-manager")),
    ("restart_pending", Some("kube-scheduler")),
    ("restart_pending", None),
];

/// The command a refusal's message ends with (SPEC 6, v1.3), its words
/// from `--operation-id` on.
fn next_command(message: &str) -> Vec<String> {
    let at = message
        .rfind(" --operation-id ")
        .unwrap_or_else(|| panic!("no command in {message}"));
    message[at..]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// SPEC 11 (v1.3), the audit's worst case: a recovery's unfinished work,
/// for every phase it can leave, while a leaf is still expired. A plain
/// renewal (the controller's) never runs the recovery's steps: it refuses
/// at once (phase `expiry`, exit 1), changes nothing (the phase file, no
/// superseded receipt for the recovery, no kubeadm, no crictl call, no
/// restart) and names `--recover-expired` with a fresh ID; pasted, that
/// recovery finishes the work.
#[test]
fn a_plain_renewal_refuses_a_recoverys_work_while_a_leaf_is_expired() {
    let node = node_at(ALL_EXPIRED);
    let ids: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
    for (i, (state, next)) in RECOVERY_LEFT.iter().enumerate() {
        let phase = recovery_phase(&node, "op-r", state, *next);
        node.write_state("phase", &phase);
        let crictl_before =
            std::fs::read_to_string(node.sim.join("crictl.log")).unwrap_or_default();
        let id = format!("op-plain-{i}");
        let v = failed_in(
            &node,
            &["--operation-id", &id, "--now", ALL_EXPIRED],
            "expiry",
        );
        let message = v["message"].as_str().unwrap();
        assert!(
            message.starts_with("the unfinished recovery op-r (stopped while "),
            "{state} {next:?}: {message}"
        );
        assert!(
            message.contains(") is resumed only by --recover-expired while a leaf is expired: leaf etcd-peer expired 2027-03-01T00:00:00Z and 10 more "),
            "{message}"
        );
        let step = next_command(message);
        assert_eq!(
            step,
            [
                "--operation-id",
                "recover-20270701T000000Z",
                "--recover-expired"
            ],
            "{message}"
        );
        assert_eq!(v["recovery"], Value::Null, "{v:#}");
        assert_eq!(node.phase(), phase, "the recovery's work stays recorded");
        assert!(node.receipt("op-r").is_none(), "nothing superseded");
        assert!(node.kubeadm_calls().is_empty(), "kubeadm never runs");
        assert_eq!(
            std::fs::read_to_string(node.sim.join("crictl.log")).unwrap_or_default(),
            crictl_before,
            "no gate attempt: not one crictl call"
        );
        node.assert_all_active();
        let now: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
        assert_eq!(now, ids, "no container restarted");
    }
    // Killed during kubeadm (the leaves still expired): the step, pasted,
    // is the recovery that finishes it.
    node.write_state("phase", &recovery_phase(&node, "op-r", "renewing", None));
    let v = failed_in(
        &node,
        &["--operation-id", "op-plain", "--now", ALL_EXPIRED],
        "expiry",
    );
    let step = next_command(v["message"].as_str().unwrap());
    let words: Vec<&str> = step.iter().map(String::as_str).collect();
    let (code, v, e) = node.run(&[&words[..], &["--now", ALL_EXPIRED]].concat());
    assert_eq!(
        (code, v["outcome"].as_str(), &v["recovery"]),
        (0, Some("renewed"), &json!(true)),
        "{v:#}\n{e}"
    );
    assert_eq!(restarted(&v).len(), 4, "{v:#}");
    assert_eq!(node.receipt("op-r").unwrap()["outcome"], "superseded");
    node.assert_all_active();
}

/// SPEC 11 (v1.3): a recovery's unfinished work once its leaves are valid
/// (kubeadm's step was done), for every phase it can leave: a plain renewal
/// finishes it with the renewal's gate before every restart and its
/// postflight. With one of three etcd voters unhealthy the gate refuses
/// (quorum): nothing is restarted, where a recovery's table would have
/// restarted etcd and reported `renewed`. Once the member is back, the
/// renewal finishes the restarts the phase file names, and its receipt is
/// a renewal's.
#[test]
fn a_plain_renewal_finishes_a_recoverys_work_only_through_the_whole_gate() {
    let mut node = Node::new("rsa", json!({ "etcd": { "voters": 3, "unhealthy": 1 } }));
    let ids: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
    for (i, (state, next)) in RECOVERY_LEFT.iter().enumerate() {
        let phase = recovery_phase(&node, "op-r", state, *next);
        node.write_state("phase", &phase);
        let id = format!("op-quorum-{i}");
        let (code, v, e) = node.run(&[
            "--operation-id",
            &id,
            "--health-timeout",
            "1",
            "--settle",
            "0",
        ]);
        assert_eq!(
            (code, v["outcome"].as_str(), v["phase"].as_str()),
            (1, Some("failed"), Some("health")),
            "{state} {next:?}: {v:#}\n{e}"
        );
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("only 2 of 3 etcd voters are healthy"),
            "{state} {next:?}: {v:#}"
        );
        assert!(restarted(&v).is_empty(), "{v:#}");
        assert_eq!(v["recovery"], Value::Null, "{v:#}");
        assert!(node.kubeadm_calls().is_empty(), "the gate comes first");
        node.assert_all_active();
        let now: Vec<_> = COMPONENTS.iter().map(|c| node.running_id(c)).collect();
        assert_eq!(now, ids, "{state} {next:?}: no container restarted");
        // The first phase write never came: the work stays the recovery's.
        assert_eq!(node.phase(), phase);
    }
    node.set_knobs(json!({ "etcd": { "voters": 3, "unhealthy": 0 } }));
    for (i, (state, next)) in RECOVERY_LEFT.iter().enumerate() {
        node.write_state("phase", &recovery_phase(&node, "op-r2", state, *next));
        let id = format!("op-finish-{i}");
        let (code, v, e) = node.run(&["--operation-id", &id, "--settle", "0"]);
        assert_eq!(
            (code, v["outcome"].as_str()),
            (0, Some("renewed")),
            "{state} {next:?}: {v:#}\n{e}"
        );
        let from = next.map_or(if *state == "renewing" { 0 } else { 4 }, |c| {
            COMPONENTS.iter().position(|x| *x == c).unwrap()
        });
        assert_eq!(restarted(&v), &COMPONENTS[from..], "{state} {next:?}");
        assert_eq!(v["recovery"], Value::Null, "{v:#}");
        assert_eq!(node.receipt(&id).unwrap()["recovery"], Value::Null);
        assert!(
            e.contains("finishing an unfinished recovery as a renewal"),
            "{e}"
        );
        node.assert_all_active();
    }
}

/// SPEC 11 (v1.3): a recovery's phase file written by an older version
/// (v1.2, the same format) is still finished by `--recover-expired` under
/// another ID, as a recovery: no gate, the recovery's receipt.
#[test]
fn a_second_recovery_finishes_a_recoverys_work_as_a_recovery() {
    let node = node_at(ALL_EXPIRED);
    node.write_state("phase", &recovery_phase(&node, "op-r", "renewing", None));
    let (code, v, e) = node.run(&[
        "--operation-id",
        "op-r2",
        "--recover-expired",
        "--now",
        ALL_EXPIRED,
    ]);
    assert_eq!(
        (code, v["outcome"].as_str(), &v["recovery"]),
        (0, Some("renewed"), &json!(true)),
        "{v:#}\n{e}"
    );
    assert_eq!(v["resumedFrom"]["operationID"], "op-r", "{v:#}");
    assert_eq!(node.receipt("op-r").unwrap()["outcome"], "superseded");
}

/// SPEC 6 "Next steps" with SPEC 11: a renewal's unfinished work on a node
/// whose leaves expired: the view's step finishes it as a recovery (a
/// renewal would refuse), and pasted, it does.
#[test]
fn the_view_finishes_a_renewals_work_on_an_expired_node_as_a_recovery() {
    let node = node_at(ALL_EXPIRED);
    node.write_state("phase", &node.v2_phase("op-a", "renewing", None));
    let (_, view, _) = node.run(&["--status-only", "--now", ALL_EXPIRED]);
    let commands: Vec<String> = view["nextSteps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["command"].as_str().map(str::to_string))
        .collect();
    let finish = commands
        .iter()
        .find(|c| c.ends_with("--operation-id op-a --recover-expired"))
        .unwrap_or_else(|| panic!("{commands:#?}"));
    assert!(
        !commands.iter().any(|c| c.ends_with("--operation-id op-a")),
        "a plain renewal would refuse: {commands:#?}"
    );
    // Pasted as printed (its words after the program and --root).
    let words: Vec<&str> = finish.split_whitespace().skip(3).collect();
    assert_eq!(words, ["--operation-id", "op-a", "--recover-expired"]);
    let (code, v, e) = node.run(&[&words[..], &["--now", ALL_EXPIRED]].concat());
    assert_eq!(
        (code, v["outcome"].as_str(), &v["recovery"]),
        (0, Some("renewed"), &json!(true)),
        "{v:#}\n{e}"
    );
    node.assert_all_active();
}

/// SPEC 4 step 8 (v1.3 row 30): kubeadm fails halfway through `certs renew
/// all`, the run rolls back (phase `renew-certs`, exit 1), and every
/// backed-up file (`pki/`, the four kubeconfigs) is back with its bytes,
/// mode, owner, group and modification time to the nanosecond (only the
/// inode is new). So the operator view, which judges "restart needed" by
/// those times (SPEC 10), tells nobody to restart a healthy component, in
/// JSON or in text. The control: a certificate written after
/// kube-apiserver's container started is "restart needed" in both views.
#[test]
fn a_rollback_leaves_no_restart_needed() {
    use std::os::unix::process::CommandExt;
    let node = Node::new("rsa", json!({ "kubeadm": { "failHalfway": true } }));
    let kube = node.root.join("etc/kubernetes");
    // What a rollback puts back: everything the snapshot sees of a file
    // (kind, mode, owner, group, sha256, mtime) but its inode.
    let backed_up = || {
        let confs = [
            "admin.conf",
            "super-admin.conf",
            "controller-manager.conf",
            "scheduler.conf",
        ];
        support::tree::snapshot(&kube, true)
            .into_iter()
            .filter(|(p, e)| {
                e.kind == 'f'
                    && (p.starts_with("pki") || confs.iter().any(|c| p.as_path() == Path::new(c)))
            })
            .map(|(p, mut e)| {
                e.stamp = e.stamp.map(|(s, ns, _inode)| (s, ns, 0));
                (p, e)
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let before = backed_up();
    assert!(before.len() > 20, "{before:#?}");
    let (code, v, e) = node.run(&["--operation-id", "op-half", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (1, Some("failed"), Some("renew-certs")),
        "{v:#}\n{e}"
    );
    assert!(v.to_string().contains("the backup was put back ("), "{v:#}");
    let after = backed_up();
    let differ: Vec<_> = before
        .iter()
        .filter(|(p, e)| after.get(*p) != Some(e))
        .map(|(p, e)| format!("{}: {e:?} -> {:?}", p.display(), after.get(p)))
        .collect();
    assert!(differ.is_empty(), "not put back as it was:\n{differ:#?}");
    assert_eq!(after.len(), before.len());

    // The operator view, JSON: every component observed live, none with a
    // "restart needed" finding.
    let json_view = || node.run(&["--status-only"]).1;
    let restart_needed = |v: &Value| -> Vec<String> {
        let pods = v["live"]["pods"].as_array().expect("a live view");
        for c in COMPONENTS {
            let pod = pods.iter().find(|p| p["name"] == *c);
            assert!(
                pod.is_some_and(|p| p["container"]["running"] == true),
                "{c} not observed running: {v:#}"
            );
        }
        pods.iter()
            .filter(|p| {
                p["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["kind"] == "restart_needed")
            })
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    // The same view as an operator reads it: text.
    let text_view = || {
        let mut args = node.runbook_args(&["--status-only", "--wide"]);
        let i = args.iter().position(|a| a == "--output").unwrap();
        args.drain(i..i + 2);
        let out = Command::new(RUNBOOK)
            .arg0("nvke-cert-runbook")
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("COLUMNS", "200")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let v = json_view();
    assert_eq!(restart_needed(&v), Vec::<String>::new(), "{v:#}");
    let text = text_view();
    assert!(text.contains("LIVE"), "{text}");
    assert!(!text.contains("restart needed"), "{text}");

    // The control: a serving certificate written after kube-apiserver's
    // container started is "restart needed" in the same views.
    std::fs::File::options()
        .write(true)
        .open(kube.join("pki/apiserver.crt"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let v = json_view();
    assert_eq!(restart_needed(&v), ["kube-apiserver"], "{v:#}");
    let text = text_view();
    assert!(text.contains("restart needed"), "{text}");
}

/// Every regular file under `etc/kubernetes` with its bytes, mode, owner
/// and modification time (not its inode: a rollback rewrites by rename).
fn files_and_times(node: &Node) -> Vec<(std::path::PathBuf, String, u32, (i64, i64))> {
    support::tree::snapshot(&node.root.join("etc/kubernetes"), true)
        .into_iter()
        .filter(|(_, e)| e.kind == 'f')
        .map(|(p, e)| {
            let (s, ns, _) = e.stamp.unwrap();
            (p, e.sha256, e.mode, (s, ns))
        })
        .collect()
}

/// Re-issue the node's CA `rel` (under `pki/`) with its own key, subject
/// and extensions (every leaf still chains to it), ending at `end`
/// (`YYYYMMDDhhmmssZ`), as an operator's CA that ends soon.
fn reissue_ca(node: &Node, rel: &str, end: &str) {
    let pki = node.root.join("etc/kubernetes/pki");
    let (crt, key) = (pki.join(rel), pki.join(rel.replace(".crt", ".key")));
    support::tree::resign(&crt, &key, &crt, &key, "20250101000000Z", end);
}

/// SPEC 4 step 8 (v1.3): a due leaf whose CA ends within the threshold
/// cannot be moved past it. `--check` fails naming the CA first; a
/// renewal refuses in `expiry` before kubeadm: nothing restarted, every
/// file with its bytes and time as it was, the refusal in the receipt.
#[test]
fn a_ca_ending_within_the_threshold_is_refused_before_kubeadm() {
    let node = Node::new("rsa", json!({}));
    reissue_ca(&node, "etcd/ca.crt", "20270225000000Z");
    // etcd-peer ends 2027-03-01: due (19 days left), not expired; the
    // other leaves are not due.
    let now = ["--now", "2027-02-10T00:00:00Z"];
    let wall = "ca etcd-ca ends 2027-02-25T00:00:00Z: renewing its leaves cannot move them past the threshold; the CA must be rotated (never done here)";
    let (code, v, e) = node.run(&[&now[..], &["--check"]].concat());
    assert_eq!(
        (code, v["decision"].as_str(), v["failure"].as_str()),
        (1, Some("failed"), Some("pki")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["reasons"][0], format!("pki: {wall}"), "{v:#}");
    // The operator view: ACTION NEEDED (exit 4), the CA named in the
    // headline, a step to rotate it and no renewal offered.
    let (code, v, e) = node.run(&[&now[..], &["--status-only"]].concat());
    assert_eq!(
        (code, v["severity"].as_str()),
        (4, Some("action_needed")),
        "{v:#}\n{e}"
    );
    let head = v["message"].as_str().unwrap_or_default();
    assert!(
        head.contains(&format!("node is not clean: {wall}")),
        "{v:#}"
    );
    let steps = v["nextSteps"].to_string();
    assert!(
        steps.contains("rotate the CA") && !steps.contains("renew before"),
        "{steps}"
    );
    let files = files_and_times(&node);
    let (code, v, e) = node.run(&[&now[..], &["--operation-id", "op-wall"]].concat());
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (1, Some("failed"), Some("expiry")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["message"], wall, "{v:#}");
    assert!(node.kubeadm_calls().is_empty(), "{}", node.kubeadm_calls());
    assert!(restarted(&v).is_empty(), "{v:#}");
    assert_eq!(
        files_and_times(&node),
        files,
        "nothing under /etc/kubernetes changed"
    );
    let receipt: Value = node.receipt("op-wall").unwrap();
    assert_eq!(
        (receipt["phase"].as_str(), receipt["message"].as_str()),
        (Some("expiry"), Some(wall))
    );
    // The control: the same node with the CA's end past the threshold
    // renews (kubeadm runs, every leaf proven).
    reissue_ca(&node, "etcd/ca.crt", "20350101000000Z");
    let (code, v, e) = node.run(&[&now[..], &["--operation-id", "op-after"]].concat());
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    let receipt: Value = node.receipt("op-after").unwrap();
    assert_eq!(
        receipt["certificates"].as_array().map(Vec::len),
        Some(11),
        "{receipt:#}"
    );
}

/// SPEC 4 step 8, "Leaf by leaf" (v1.3): what a kubeadm that did not
/// renew a leaf as it was leaves behind (the simulated kubeadm's knobs,
/// modelled on kubeadm's own behaviour: `tests/simnode/README.md`) fails
/// the renewal in `renew-certs`, naming the leaf and what differs; the
/// backup is put back (every file's bytes, mode and time as before),
/// nothing restarts, the receipt lists no leaf.
#[test]
fn a_leaf_not_renewed_as_it_was_is_named_and_rolled_back() {
    let cases = [
        (
            json!({ "skip": ["apiserver-etcd-client"] }),
            "apiserver-etcd-client was not renewed: its serial ",
        ),
        (
            json!({ "dropSans": { "apiserver": ["DNS:kubernetes.default"] } }),
            "apiserver lost DNS:kubernetes.default",
        ),
        (
            json!({ "changeSubject": { "admin.conf": "/O=system:masters/CN=kubernetes-admin" } }),
            "admin.conf changed its subject from O=kubeadm:cluster-admins, CN=kubernetes-admin to O=system:masters, CN=kubernetes-admin",
        ),
    ];
    for (i, (knob, said)) in cases.into_iter().enumerate() {
        let node = Node::new("rsa", json!({ "kubeadm": knob }));
        let files = files_and_times(&node);
        let id = format!("op-leaf-{i}");
        let (code, v, e) = node.run(&["--operation-id", &id, "--force"]);
        assert_eq!(
            (code, v["outcome"].as_str(), v["phase"].as_str()),
            (1, Some("failed"), Some("renew-certs")),
            "{knob}: {v:#}\n{e}"
        );
        let msg = v["message"].as_str().unwrap();
        assert!(msg.starts_with(said), "{knob}: {msg}");
        assert!(msg.contains("the backup was put back"), "{knob}: {msg}");
        assert_eq!(node.kubeadm_calls().lines().count(), 1, "{knob}");
        assert!(restarted(&v).is_empty(), "{knob}: {v:#}");
        assert_eq!(files_and_times(&node), files, "{knob}: rolled back");
        node.assert_all_active();
        let receipt: Value = node.receipt(&id).unwrap();
        assert!(receipt.get("certificates").is_none(), "{knob}: {receipt:#}");
    }
}

/// SPEC 4 step 8 and 11 (v1.3): an expired leaf under a CA that ends
/// within the threshold (not yet ended): the view offers no recovery (it
/// would be refused) but the CA's rotation, and `--recover-expired`
/// refuses in `expiry` before kubeadm, nothing changed.
#[test]
fn a_recovery_under_a_ca_ending_within_the_threshold_is_refused() {
    let node = Node::new("rsa", json!({}));
    reissue_ca(&node, "etcd/ca.crt", "20270320000000Z");
    // etcd-peer ended 2027-03-01; etcd-ca ends 2027-03-20 (15 days on).
    let now = ["--now", "2027-03-05T00:00:00Z"];
    let wall = "ca etcd-ca ends 2027-03-20T00:00:00Z: renewing its leaves cannot move them past the threshold; the CA must be rotated (never done here)";
    let (code, v, e) = node.run(&[&now[..], &["--status-only"]].concat());
    assert_eq!(code, 4, "{v:#}\n{e}");
    let steps = v["nextSteps"].to_string();
    assert!(steps.contains("rotate the CA"), "{steps}");
    assert!(!steps.contains("--recover-expired"), "{steps}");
    let files = files_and_times(&node);
    let (code, v, e) = node.run(
        &[
            &now[..],
            &["--operation-id", "op-rec-wall", "--recover-expired"],
        ]
        .concat(),
    );
    assert_eq!(
        (code, v["outcome"].as_str(), v["phase"].as_str()),
        (1, Some("failed"), Some("expiry")),
        "{v:#}\n{e}"
    );
    assert_eq!(v["message"], wall, "{v:#}");
    assert!(node.kubeadm_calls().is_empty(), "{}", node.kubeadm_calls());
    assert_eq!(
        files_and_times(&node),
        files,
        "nothing under /etc/kubernetes changed"
    );
}

/// SPEC 4 step 8 (v1.3): a renewal killed after its kubeadm and resumed
/// under its own ID (its receipt not written yet) proves its leaves again
/// from its backup: the receipt lists every leaf with the serial it had
/// before that kubeadm, and the document's rows say the same.
#[test]
fn a_resumed_renewal_lists_the_leaves_its_kubeadm_renewed() {
    let node = Node::new("rsa", json!({}));
    let leaf = |rel: &str| {
        let pem = std::fs::read(node.root.join("etc/kubernetes/pki").join(rel)).unwrap();
        nvke_cert_runbook::rules::pki::parse_pem_certificate(&pem)
            .unwrap()
            .serial
    };
    let before = leaf("apiserver.crt");
    let (code, v, e) = node.run(&["--operation-id", "op-killed", "--force"]);
    assert_eq!(code, 0, "{v:#}\n{e}");
    // As if it had been killed during its restarts: no receipt yet, the
    // phase file at kube-controller-manager (the backup stays).
    std::fs::remove_file(node.state().join("completed/op-killed.json")).unwrap();
    node.write_state(
        "phase",
        &node.v2_phase(
            "op-killed",
            "restart_pending",
            Some("kube-controller-manager"),
        ),
    );
    let (code, v, e) = node.run(&["--operation-id", "op-killed"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{e}"
    );
    assert!(restarted(&v).len() == 2, "{v:#}");
    let receipt: Value = node.receipt("op-killed").unwrap();
    let leaves = receipt["certificates"].as_array().unwrap();
    assert_eq!(leaves.len(), 11, "{receipt:#}");
    let ap = leaves.iter().find(|l| l["name"] == "apiserver").unwrap();
    assert_eq!(ap["serialBefore"], before.as_str(), "{ap}");
    assert_eq!(ap["serialAfter"], leaf("apiserver.crt").as_str(), "{ap}");
    let row = v["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "apiserver")
        .unwrap();
    assert_eq!(row["serialBefore"], ap["serialBefore"], "{row}");
    assert_eq!(row["serialAfter"], ap["serialAfter"], "{row}");
}
