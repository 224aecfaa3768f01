//! The live node in the operator view and check (SPEC 10, v1.2), against
//! the simulated node: its kubelet runs the static pods, kube-apiserver
//! answers `/readyz`, etcd `/health` (re-reading its certificate files per
//! connection, as real etcd does), kube-controller-manager and
//! kube-scheduler `/healthz` over TLS with a self-signed certificate.
//!
//! The text views are goldens at 80 columns (`tests/live/<case>.txt`: the
//! exit code, then stdout, with the root as `[ROOT]`, ports as `[PORT]` and
//! live times as `[T]`); `SNAPSHOTS=overwrite` rewrites them (read the
//! diff). The JSON documents are checked field by field.

// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};
use support::node::{Node, COMPONENTS};

/// The operator view as an operator types it: text at 80 columns.
fn text(node: &Node, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["--status-only"];
    args.extend_from_slice(extra);
    let mut v = node.runbook_args(&args);
    // Text, not the JSON the harness asks for.
    let i = v.iter().position(|a| a == "--output").unwrap();
    v.drain(i..i + 2);
    // As an operator types it: the commands the text prints name it so.
    let out = std::process::Command::new(support::node::RUNBOOK)
        .arg0("nvke-cert-runbook")
        .args(v)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// `[T]` for every live time (`40 s`, `12 min`, `3 h`), `[PORT]` for
/// every port after `127.0.0.1:`, `[ROOT]` for the root.
fn normalize(s: &str, root: &Path) -> String {
    // The simulated node's tools beside the root, then the root.
    let sim = root.parent().unwrap().join("sim");
    let s = s
        .replace(&sim.display().to_string(), "[SIM]")
        .replace(&root.display().to_string(), "[ROOT]");
    s.lines()
        .map(|l| container_ids(&normalize_line(l)) + "\n")
        .collect()
}

/// `[ID]` for every container ID (64 lowercase hex digits).
fn container_ids(line: &str) -> String {
    line.split(' ')
        .map(|w| {
            let id = w.trim_end_matches([';', ',', ')']);
            let hex = id.len() == 64
                && id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if hex {
                format!("[ID]{}", &w[64..])
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn normalize_line(s: &str) -> String {
    let mut out = String::new();
    let words: Vec<&str> = s.split(' ').collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let next = words.get(i + 1).copied().unwrap_or("");
        let unit = next.trim_end_matches([',', ')', ';']);
        if !w.is_empty()
            && w.chars().all(|c| c.is_ascii_digit())
            && matches!(unit, "s" | "min" | "h")
        {
            out.push_str("[T]");
            out.push_str(&next[unit.len()..]);
            i += 2;
        } else {
            out.push_str(w);
            i += 1;
        }
        if i < words.len() {
            out.push(' ');
        }
    }
    for key in ["127.0.0.1:", "port "] {
        let mut o2 = String::new();
        let mut rest = out.as_str();
        while let Some(p) = rest.find(key) {
            let after = &rest[p + key.len()..];
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            o2.push_str(&rest[..p + key.len()]);
            o2.push_str(if digits > 0 { "[PORT]" } else { "" });
            rest = &after[digits..];
        }
        o2.push_str(rest);
        out = o2;
    }
    out
}

fn golden(case: &str, code: i32, stdout: &str, root: &Path) {
    // The width is the printed text's (a masked port, "[PORT]", may be
    // wider than the port it stands for).
    for l in stdout.lines() {
        assert!(
            l.chars().count() <= 80,
            "{case}: a line over 80 columns:\n{l}"
        );
    }
    let got = format!("exit {code}\n{}", normalize(stdout, root));
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/live")
        .join(format!("{case}.txt"));
    if std::env::var("SNAPSHOTS").as_deref() == Ok("overwrite") {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(want, got, "golden {case} ({})", path.display());
}

/// The view's JSON document.
fn status(node: &Node, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--status-only"];
    args.extend_from_slice(extra);
    let (code, v, _) = node.run(&args);
    (code, v)
}

/// The simulated node, up and answering: every component's endpoint
/// serves (the kubelet calls a container running before its process
/// listens).
fn live_node(knobs: Value) -> Node {
    let node = Node::new("rsa", knobs);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, v) = status(&node, &[]);
        if code == 0 {
            return node;
        }
        assert!(
            Instant::now() < deadline,
            "the simulated node never came up healthy: {:#}",
            v["live"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pod<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["live"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no live pod {name}: {:#}", v["live"]))
}

#[test]
fn a_clean_node_is_clean_live() {
    let node = live_node(json!({}));
    let (code, v) = status(&node, &[]);
    assert_eq!(code, 0, "{v:#}");
    for c in COMPONENTS {
        let p = pod(&v, c);
        assert_eq!(p["state"], "healthy", "{p:#}");
        assert_eq!(p["container"]["running"], true);
        assert_eq!(p["health"], "healthy");
    }
    let served: Vec<(u64, String)> = ["etcd", "kube-apiserver"]
        .iter()
        .flat_map(|c| pod(&v, c)["served"].as_array().unwrap().clone())
        .map(|s| {
            (
                s["port"].as_u64().unwrap(),
                s["served"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    assert_eq!(
        served.len(),
        3,
        "6443, 2379 and 2380 are compared: {served:?}"
    );
    assert!(served.iter().all(|(_, s)| s == "current"), "{served:?}");
    let (code, out) = text(&node, &[]);
    golden("clean", code, &out, &node.root);
    // One screen (SPEC 6, v1.3: at most 24 lines at 80 columns); every
    // table with --wide.
    assert!(
        out.lines().count() <= 24,
        "{} lines:\n{out}",
        out.lines().count()
    );
    let (_, wide) = text(&node, &["--wide"]);
    assert!(wide.contains("\nkube-scheduler.yaml "), "{wide}");
    assert!(wide.contains("\nAGENT STAGING "), "{wide}");
}

/// The host PID of the running container of `name`.
/// SIGKILL to `name`'s running process (as the OOM killer would).
fn kill_container(node: &Node, name: &str) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid_of(node, name)),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

fn pid_of(node: &Node, name: &str) -> i32 {
    let id = node.running_id(name).unwrap();
    let out = node.crictl(&["inspect", "-o", "json", &id]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["info"]["pid"].as_i64().unwrap() as i32
}

/// Poll the view until `done` says so (bounded).
fn until(node: &Node, extra: &[&str], done: impl Fn(i32, &Value) -> bool) -> (i32, Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, v) = status(node, extra);
        if done(code, &v) {
            return (code, v);
        }
        assert!(
            Instant::now() < deadline,
            "never came: {code} {:#}",
            v["live"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SPEC 6, 10: kube-apiserver's container exited (its manifest in place):
/// ACTION NEEDED, exit 4, with its exit code and when; check warns that a
/// renewal would fail its gate, and decides as before.
#[test]
fn a_component_that_exited_is_action_needed() {
    let mut node = live_node(json!({}));
    node.set_knobs(json!({"neverStart": ["kube-apiserver"]}));
    kill_container(&node, "kube-apiserver");
    let (code, v) = until(&node, &[], |_, v| {
        pod(v, "kube-apiserver")["state"] == "not_running"
    });
    assert_eq!(code, 4, "{:#}", v["live"]);
    let api = pod(&v, "kube-apiserver");
    assert_eq!(api["container"]["running"], false);
    assert_eq!(api["container"]["exitCode"], 137, "{api:#}");
    assert!(api["container"]["finishedAt"].is_string(), "{api:#}");
    assert_eq!(v["severity"], "action_needed");
    let (code, out) = text(&node, &[]);
    golden("apiserver-not-running", code, &out, &node.root);

    let (code, v, _) = node.run(&["--check"]);
    assert_eq!(code, 0, "check decides as before: {v:#}");
    assert_eq!(v["decision"], "unchanged");
    let warned = v["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .starts_with("kube-apiserver not running: exited 137 (killed)")
            && w.as_str()
                .unwrap()
                .ends_with("a renewal would fail its health gate")
    });
    assert!(warned, "{:#}", v["warnings"]);
    assert_eq!(pod(&v, "kube-apiserver")["state"], "not_running");
    let mut args = node.runbook_args(&["--check"]);
    let i = args.iter().position(|a| a == "--output").unwrap();
    args.drain(i..i + 2);
    let out = std::process::Command::new(support::node::RUNBOOK)
        .arg0("nvke-cert-runbook")
        .args(args)
        .env_clear()
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    golden(
        "check-apiserver-not-running",
        out.status.code().unwrap(),
        &String::from_utf8_lossy(&out.stdout),
        &node.root,
    );
}

/// The view's JSON once `kcm`'s state is `want` (the container passing
/// its one-second start allowance), within 10 s.
fn status_once(node: &Node, component: &str, want: &str) -> (i32, Value) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, v) = status(node, &[]);
        if pod(&v, component)["state"] == want {
            return (code, v);
        }
        assert!(
            Instant::now() < deadline,
            "{component} never {want}: {:#}",
            v["live"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SPEC 10, 12: a health endpoint that answers 500 past its probe's start
/// allowance is unhealthy: exit 4.
#[test]
fn an_unhealthy_component_is_action_needed() {
    let mut node = Node::with_short_start("rsa", json!({}), "kube-controller-manager");
    node.set_knobs(json!({"health": {"kube-controller-manager": "unhealthy"}}));
    let (code, v) = status_once(&node, "kube-controller-manager", "unhealthy");
    assert_eq!(code, 4, "{:#}", v["live"]);
    let kcm = pod(&v, "kube-controller-manager");
    assert_eq!(kcm["state"], "unhealthy");
    assert_eq!(
        kcm["health"],
        "unhealthy: HTTP 500: [-]leaderElection failed: reason withheld"
    );
    let (code, out) = text(&node, &[]);
    golden("kcm-unhealthy", code, &out, &node.root);
}

/// SPEC 12 (v1.3, row 26): a port that refuses on a running container is
/// `starting` (exit 1, the gate waits) within its probe's start allowance
/// and `unhealthy` (exit 4) after it, as the kubelet counts it; never `not
/// checked`, which is left for what the runbook could not do.
#[test]
fn a_closed_port_is_starting_then_unhealthy_as_the_kubelet_counts_it() {
    // kubeadm's own allowance (250 s): a young container is starting.
    let closed = json!({"health": {"kube-scheduler": "closed"}});
    let node = Node::new("rsa", closed.clone());
    let (code, v) = status_once(&node, "kube-scheduler", "starting");
    assert_eq!(code, 1, "{:#}", v["live"]);
    let s = &pod(&v, "kube-scheduler")["findings"][0];
    let m = s["message"].as_str().unwrap();
    assert!(
        m.starts_with("starting: /healthz: connect 127.0.0.1:")
            && m.contains("Connection refused (up ")
            && m.ends_with(" of the probe's 4 min start allowance)"),
        "{m}"
    );
    assert_eq!(s["blocksGate"], true);
    // One second of allowance, passed: unhealthy, exit 4.
    let node = Node::with_short_start("rsa", closed, "kube-scheduler");
    let (code, v) = status_once(&node, "kube-scheduler", "unhealthy");
    assert_eq!(code, 4, "{:#}", v["live"]);
    let m = pod(&v, "kube-scheduler")["health"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        m.starts_with("unhealthy: /healthz: connect 127.0.0.1:")
            && m.ends_with("Connection refused"),
        "{m}"
    );
    // The same answer for check: exit 4 and ACTION NEEDED are the view's;
    // check warns that a renewal would fail its gate.
    let (_, out) = text(&node, &[]);
    assert!(
        out.contains("kube-scheduler") && out.contains("unhealthy"),
        "{out}"
    );
}

/// SPEC 10 "Restart needed": a file a component reads at start written
/// after its container started: exit 1, naming the file and both times.
#[test]
fn a_component_older_than_its_files_needs_a_restart() {
    let node = live_node(json!({}));
    std::thread::sleep(Duration::from_millis(20));
    let f = node.root.join("etc/kubernetes/scheduler.conf");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, bytes).unwrap();
    let (code, v) = status(&node, &[]);
    assert_eq!(code, 1, "{:#}", v["live"]);
    let s = pod(&v, "kube-scheduler");
    assert_eq!(s["state"], "restart_needed", "{s:#}");
    assert!(s["findings"][0]["message"]
        .as_str()
        .unwrap()
        .starts_with("restart needed: /etc/kubernetes/scheduler.conf renewed "));
    assert_eq!(s["findings"][0]["blocksGate"], false);
    let (code, out) = text(&node, &[]);
    golden("scheduler-restart-needed", code, &out, &node.root);
}

/// SPEC 9, 10: a runtime that cannot be reached: containers not checked,
/// said once, never clean (exit 1).
#[test]
fn an_unreachable_runtime_is_not_checked() {
    let mut node = live_node(json!({}));
    node.set_knobs(json!({"runtimeEndpoint": "unix:///run/elsewhere/containerd.sock"}));
    let (code, v) = status(&node, &[]);
    assert_eq!(code, 1, "{:#}", v["live"]);
    let why = v["live"]["runtime"].as_str().unwrap();
    assert!(why.starts_with("not checked: "), "{why}");
    assert!(why.contains("cannot be reached"), "{why}");
    assert!(
        !why.contains("level=fatal"),
        "crictl's message, not its log line: {why}"
    );
    let (code, out) = text(&node, &[]);
    golden("runtime-unreachable", code, &out, &node.root);
}

/// SPEC 10: an expired leaf is ACTION NEEDED with its date (exit 4), and
/// etcd's peer port serves it: said too.
#[test]
fn an_expired_leaf_is_action_needed_live() {
    let node = live_node(json!({}));
    let (code, out) = text(&node, &["--now", "2027-03-03T00:00:00Z"]);
    assert_eq!(code, 4, "{out}");
    golden("leaf-expired", code, &out, &node.root);
    let (_, v) = status(&node, &["--now", "2027-03-03T00:00:00Z"]);
    let peer = pod(&v, "etcd")["served"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["file"] == "/etc/kubernetes/pki/etcd/peer.crt")
        .cloned()
        .unwrap();
    assert_eq!(peer["served"], "expired", "{peer:#}");
}

/// SPEC 10: a leaf within the threshold is RENEWAL DUE: clean, exit 0,
/// with the next step.
#[test]
fn a_due_leaf_is_renewal_due_and_clean() {
    let node = live_node(json!({}));
    let (code, out) = text(&node, &["--now", "2027-02-18T00:00:00Z"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("NODE: RENEWAL DUE: etcd-peer in 11 days (2027-03-01)"),
        "{out}"
    );
    golden("leaf-due", code, &out, &node.root);
}

/// SPEC 6 (v1.1 evidence): a bundle that is not written never exits 0: on
/// a clean live node, `--evidence` at a path that exists is refused, the
/// view still says CLEAN, and exits 1.
#[test]
fn a_refused_bundle_on_a_clean_node_exits_1() {
    let node = live_node(json!({}));
    std::fs::create_dir_all(node.root.join("tmp")).unwrap();
    std::fs::write(node.root.join("tmp/x.tgz"), b"keep\n").unwrap();
    let (code, v) = status(&node, &["--evidence", "/tmp/x.tgz"]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["clean"], true);
    assert_eq!(v["evidence"]["written"], false);
    assert_eq!(
        std::fs::read(node.root.join("tmp/x.tgz")).unwrap(),
        b"keep\n"
    );
    // The text's closing verdict does not contradict the code (SPEC 6,
    // v1.2): clean, and the bundle not written.
    let (code, t) = text(&node, &["--evidence", "/tmp/x.tgz"]);
    assert_eq!(code, 1);
    assert!(
        t.contains("\nNODE: CLEAN; EVIDENCE NOT WRITTEN [exit 1]\n"),
        "{t}"
    );
}

/// SPEC 10 "Budget": an endpoint that accepts and never answers is `not
/// checked`, and the view ends within `--probe-timeout` (and the time a
/// process takes to start and print).
#[test]
fn a_silent_endpoint_is_not_checked_within_the_budget() {
    let mut node = live_node(json!({}));
    node.set_knobs(json!({"health": {"kube-scheduler": "slow"}}));
    let t0 = Instant::now();
    let (code, v) = status(&node, &["--probe-timeout", "1"]);
    let took = t0.elapsed();
    assert_eq!(code, 1, "{:#}", v["live"]);
    let s = pod(&v, "kube-scheduler");
    assert_eq!(s["state"], "not_checked", "{s:#}");
    assert!(s["health"]
        .as_str()
        .unwrap()
        .contains("no answer within the probe's time"));
    // A bound, not a benchmark: 1 s of budget, 1 s of grace (SPEC 10).
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

/// A crash loop (sim.json `crashAfterMs`): whenever the view looks, the
/// component is not running (exited 1) or restarting (up less than a
/// minute after a crash in its pod): ACTION NEEDED either way, never
/// healthy.
#[test]
fn a_crash_looping_component_is_never_healthy() {
    let mut node = live_node(json!({}));
    node.set_knobs(json!({"crashAfterMs": {"kube-controller-manager": 150}}));
    // Its running process started before the knob: kill it once; the
    // kubelet's restarts then crash on their own.
    kill_container(&node, "kube-controller-manager");
    until(&node, &[], |_, v| {
        pod(v, "kube-controller-manager")["state"] == "not_running"
    });
    // From then on, whenever the view looks: never healthy. Between a
    // crash and the kubelet's noticing it, the container still counts as
    // running and its port refuses: not checked (exit 1).
    let mut seen = std::collections::BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let (code, v) = status(&node, &[]);
        let state = pod(&v, "kube-controller-manager")["state"]
            .as_str()
            .unwrap()
            .to_string();
        let want = match state.as_str() {
            "not_running" | "restarting" => 4,
            "not_checked" => 1,
            other => panic!("a crash-looping component is {other}: {:#}", v["live"]),
        };
        assert_eq!(code, want, "{state}: {:#}", v["live"]);
        *seen.entry(state).or_insert(0) += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("crash loop seen as {seen:?}");
}

/// SPEC 6 (v1.3): a crash loop caught while its container runs names its
/// last exit and when, and its step gives the commands that show why,
/// ready to paste: pasted, they list its containers and print the log of
/// the one that crashed.
#[test]
fn a_crash_loop_names_its_last_exit_and_the_commands_that_show_why() {
    let mut node = live_node(json!({}));
    node.set_knobs(json!({"crashAfterMs": {"kube-scheduler": 4000}}));
    kill_container(&node, "kube-scheduler");
    // Killed once (restart 1), then it crashes by itself (restart 2): seen
    // running again after its own crash.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (code, out) = loop {
        let (code, out) = text(&node, &[]);
        if out.contains("  - kube-scheduler crash-looping: 2 restarts") {
            break (code, out);
        }
        assert!(
            Instant::now() < deadline,
            "never seen crash-looping:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, 4, "{out}");
    golden("scheduler-crash-looping", code, &out, &node.root);
    // The step, pasted as printed (its continuation lines joined).
    let step = pasted_step(&out, "kube-scheduler crash-looping");
    assert!(step.contains(" logs --tail 40 "), "{step}");
    let ran = std::process::Command::new("/bin/sh")
        .args(["-c", &step])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let shown =
        String::from_utf8_lossy(&ran.stdout).to_string() + &String::from_utf8_lossy(&ran.stderr);
    assert!(
        shown.contains("kube-scheduler") && shown.contains("Exited"),
        "its containers, the one that crashed among them:\n{shown}"
    );
    assert!(
        shown.contains("exiting 1 after 4000 ms"),
        "the log of the container that crashed:\n{shown}"
    );
}

/// The command of the printed step whose text starts with `starts`, its
/// continuation lines (`\` at the end) joined as a shell joins them.
fn pasted_step(out: &str, starts: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.trim_start().split_once(". ").is_some_and(|(n, rest)| {
                n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(starts)
            })
        })
        .unwrap_or_else(|| panic!("no step starting {starts:?}:\n{out}"));
    // The text ends at the line ending with ':'; the command follows.
    let mut i = at;
    while !lines[i].trim_end().ends_with(':') {
        i += 1;
    }
    let mut cmd = String::new();
    for l in &lines[i + 1..] {
        let l = l.trim();
        match l.strip_suffix('\\') {
            Some(part) => cmd.push_str(part),
            None => {
                cmd.push_str(l);
                break;
            }
        }
    }
    cmd
}

/// SPEC 6 (v1.3): a renewal alive and progressing lists no problems of its
/// own making: the pod it has down and the components it has not reached
/// yet (they keep their old certificates until it restarts them) are its
/// progress; the headline says RENEWAL IN PROGRESS (exit 4: a pod is down).
#[test]
fn a_healthy_renewal_in_progress_lists_no_problems() {
    let mut node = live_node(json!({}));
    node.set_knobs(json!({"neverStop": ["kube-controller-manager"]}));
    let mut child = node
        .command(&[
            "--operation-id",
            "op-live",
            "--force",
            "--stop-timeout",
            "60",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !node.staged("kube-controller-manager").exists() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never staged");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, out) = text(&node, &[]);
    let (jcode, v) = status(&node, &[]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!((code, jcode), (4, 4), "{out}");
    assert_eq!(v["severity"], "in_progress", "{out}");
    let head = out
        .split("\nin progress: ")
        .next()
        .unwrap()
        .replace("\n ", "");
    // No problem counted (kube-vip's old credential is a warning).
    assert!(
        head == "NODE: RENEWAL IN PROGRESS: restarting kube-controller-manager (3 of 4); do not touch"
            || head == "NODE: RENEWAL IN PROGRESS: restarting kube-controller-manager (3 of 4); do not touch (1 warning)",
        "{out}"
    );
    assert!(!out.contains("\nproblems:\n"), "{out}");
    // The one it has not reached yet is its progress, not a problem.
    let progress = out
        .split("\nprogress:\n")
        .nth(1)
        .and_then(|p| p.split("\n\n").next())
        .unwrap_or_else(|| panic!("no progress listed:\n{out}"));
    assert!(progress.contains("kube-scheduler restart needed"), "{out}");
}
