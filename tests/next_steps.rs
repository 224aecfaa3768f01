//! The next steps the operator view prints are exact commands (issue "The
//! 3 a.m. view"): pasted into a shell as printed, they repair what they
//! say they repair. Each case sets a node up with the golden prelude
//! (tests/golden/prelude.sh), takes the commands from `nextSteps` of the
//! JSON document and from the text (wrapped, with continuations), runs
//! them with `sh`, and reads the node again.
#![allow(clippy::disallowed_methods, clippy::print_stderr)]

mod support;

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const NOW: &str = "2026-11-30T00:00:00Z";

struct Node {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Node {
    fn new(setup: &str) -> Node {
        let (tmp, root) = support::prelude_node(setup);
        Node { _tmp: tmp, root }
    }

    fn status(&self, extra: &[&str]) -> (i32, Value, String) {
        let run = |json: bool| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_nvke-cert-runbook"));
            // No port of the host changes the answer (tests/README.md).
            support::netns::hermetic(&mut c);
            // As an operator types it: the commands name it so.
            c.arg0("nvke-cert-runbook")
                .args([
                    "--root",
                    self.root.to_str().unwrap(),
                    "--now",
                    NOW,
                    "--status-only",
                ])
                .args(extra)
                .env_clear()
                .env("PATH", "/usr/bin:/bin");
            if json {
                c.args(["--output", "json"]);
            }
            c.output().unwrap()
        };
        let j = run(true);
        let t = run(false);
        assert_eq!(j.status.code(), t.status.code());
        let doc: Value = serde_json::from_slice(&j.stdout).unwrap();
        // These nodes are files only: no runtime answers, so the view is
        // never clean (SPEC 10). The code returned is what the files say:
        // 0 when every reason is the live node's `not checked`.
        let live_only = doc["reasons"].as_array().is_some_and(|r| {
            r.iter()
                .all(|x| x.as_str().unwrap_or("").contains(" not checked"))
        });
        let code = match j.status.code().unwrap() {
            1 if live_only => 0,
            c => c,
        };
        (code, doc, String::from_utf8(t.stdout).unwrap())
    }

    /// Run a command as printed, the runbook's name on PATH.
    fn paste(&self, command: &str) {
        let bin = Path::new(env!("CARGO_BIN_EXE_nvke-cert-runbook"));
        let path = format!("{}:/usr/bin:/bin", bin.parent().unwrap().display());
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(command.replace(
                "nvke-cert-runbook ",
                &format!("{} --now {NOW} ", bin.display()),
            ))
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The commands of the JSON's next steps whose text contains `what`.
fn commands(doc: &Value, what: &str) -> Vec<String> {
    doc["nextSteps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["what"].as_str().unwrap().contains(what))
        .filter_map(|s| s["command"].as_str().map(str::to_string))
        .collect()
}

/// The commands as the text prints them: the lines after each numbered
/// step, continuations joined as a shell would read them.
fn text_commands(text: &str) -> Vec<String> {
    // `next:` after the verdict, or `next, in full:` before it.
    let after: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "next:" && *l != "next, in full:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for l in after {
        if l.starts_with("  ")
            && l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
            && l.contains(". ")
            && cur.is_none()
        {
            continue;
        }
        let looks_like_command = |l: &str| {
            let t = l.trim_start();
            ["nvke-cert-runbook ", "cd ", "tail ", "mkdir "]
                .iter()
                .any(|p| t.starts_with(p))
        };
        match &mut cur {
            Some(c) => {
                let part = l.trim();
                if let Some(p) = part.strip_suffix('\\') {
                    c.push_str(p);
                } else {
                    c.push_str(part);
                    out.push(cur.take().unwrap());
                }
            }
            None if looks_like_command(l) => {
                let part = l.trim();
                if let Some(p) = part.strip_suffix('\\') {
                    cur = Some(p.to_string());
                } else {
                    out.push(part.to_string());
                }
            }
            None => {}
        }
    }
    out
}

#[test]
fn a_staged_manifest_goes_back_with_the_printed_command() {
    let n = Node::new("base rsa; stage kube-apiserver");
    let (code, doc, text) = n.status(&[]);
    assert_eq!(code, 4, "{text}");
    let cmds = commands(&doc, "kube-apiserver is down");
    assert_eq!(cmds.len(), 1, "{doc:#}");
    // The text carries the same command, wrapped for 80 columns.
    assert!(text_commands(&text).contains(&cmds[0]), "{text}");
    n.paste(&cmds[0]);
    let (code, doc, text) = n.status(&[]);
    assert_eq!(code, 0, "{text}");
    // Not clean only for want of a runtime (see Node::status).
    assert_eq!(doc["severity"], "not_clean");
    assert!(doc["live"]["runtime"].is_string(), "{doc:#}");
}

#[test]
fn a_killed_renewal_is_fenced_and_its_manifest_put_back_by_the_printed_command() {
    let id = "renew-k8s-certs-2026-11-29T23-00-00Z-7f3e9c1a2b4d4e6f8a0b1c2d3e4f5a6b";
    let n = Node::new(&format!(
        "base rsa; phase_v2 {id} restart_pending kube-apiserver; stage kube-apiserver"
    ));
    let (code, doc, text) = n.status(&[]);
    assert_eq!(code, 4);
    let fence = commands(&doc, "record it as finished");
    assert_eq!(fence.len(), 1, "{doc:#}");
    assert!(fence[0].contains(id) && fence[0].ends_with("--fence"));
    assert!(text_commands(&text).contains(&fence[0]), "{text}");
    n.paste(&fence[0]);
    let (code, doc, text) = n.status(&["--operation-id", id]);
    assert_ne!(code, 4, "{text}");
    assert_eq!(doc["manifests"]["kube-apiserver"]["location"], "active");
    assert_eq!(doc["receipt"]["outcome"], "abandoned", "{doc:#}");
}

#[test]
fn a_conflict_is_settled_either_way_by_the_printed_commands() {
    let setup = r#"base rsa; staging_dir
        cp "$K/manifests/kube-scheduler.yaml" "$K/nvke-cert-renewal-staging/kube-scheduler.yaml"
        echo '# edited' >> "$K/nvke-cert-renewal-staging/kube-scheduler.yaml""#;
    for (keep, what) in [
        ("active", "keep the active one"),
        ("staged", "keep the staged one"),
    ] {
        let n = Node::new(setup);
        let staged = std::fs::read(
            n.root
                .join("etc/kubernetes/nvke-cert-renewal-staging/kube-scheduler.yaml"),
        )
        .unwrap();
        let active =
            std::fs::read(n.root.join("etc/kubernetes/manifests/kube-scheduler.yaml")).unwrap();
        let (code, doc, text) = n.status(&[]);
        assert_eq!(code, 1);
        assert_eq!(doc["conflicts"][0]["identical"], false);
        let cmds = commands(&doc, what);
        assert_eq!(cmds.len(), 1, "{keep}: {doc:#}");
        assert!(text_commands(&text).contains(&cmds[0]), "{text}");
        n.paste(&cmds[0]);
        let (code, _, text) = n.status(&[]);
        assert_eq!(code, 0, "{keep}: {text}");
        let now =
            std::fs::read(n.root.join("etc/kubernetes/manifests/kube-scheduler.yaml")).unwrap();
        assert_eq!(
            now,
            if keep == "active" { active } else { staged },
            "{keep}"
        );
    }
}

#[test]
fn an_identical_staged_copy_is_removed_by_the_printed_command() {
    let n = Node::new(
        r#"base rsa; staging_dir; cp -p "$K/manifests/etcd.yaml" "$K/nvke-cert-renewal-staging/etcd.yaml""#,
    );
    let (code, doc, _) = n.status(&[]);
    assert_eq!(code, 1);
    let cmds = commands(&doc, "identical");
    assert_eq!(cmds.len(), 1, "{doc:#}");
    n.paste(&cmds[0]);
    assert_eq!(n.status(&[]).0, 0);
}

#[test]
fn the_log_command_shows_the_operations_log() {
    let id = "op-logged";
    let n = Node::new(&format!(
        "base rsa; phase_v2 {id} restart_pending etcd; mkdir -p \"$STATE/log\"; echo 'the last line' > \"$STATE/log/{id}.log\""
    ));
    let (_, doc, _) = n.status(&[]);
    let cmds = commands(&doc, "its log");
    assert_eq!(cmds.len(), 1, "{doc:#}");
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&cmds[0])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "the last line\n");
}

#[test]
fn a_200_character_operation_id_pastes_whole_from_the_wrapped_text() {
    let id = format!("op-{}", "x".repeat(197));
    let n = Node::new(&format!(
        "base rsa; phase_v2 {id} restart_pending kube-apiserver; stage kube-apiserver"
    ));
    let (_, doc, text) = n.status(&[]);
    let from_text = text_commands(&text);
    for what in ["record it as finished", "finish it now"] {
        let c = commands(&doc, what);
        assert_eq!(c.len(), 1, "{doc:#}");
        assert!(c[0].contains(&id));
        assert!(
            from_text.contains(&c[0]),
            "{what}: {c:?} not in {from_text:#?}\n{text}"
        );
    }
    // The fence, pasted from the text as wrapped, fences this operation.
    let fence = from_text.iter().find(|c| c.ends_with("--fence")).unwrap();
    n.paste(fence);
    let (_, doc, _) = n.status(&["--operation-id", &id]);
    assert_eq!(doc["receipt"]["outcome"], "abandoned", "{doc:#}");
}

#[test]
fn a_printed_move_does_nothing_once_a_runbook_holds_the_lock() {
    let n = Node::new(r#"base rsa; stage kube-apiserver; state_dir; : | put "$STATE/lock""#);
    let (_, doc, _) = n.status(&[]);
    let cmds = commands(&doc, "kube-apiserver is down");
    assert_eq!(cmds.len(), 1, "{doc:#}");
    assert!(cmds[0].contains("flock -n "), "{}", cmds[0]);
    // A renewal takes the lock between the view and the paste.
    let lock = n.root.join("var/lib/nvke/k8s-cert-renewal/lock");
    let mut holder = Command::new("flock")
        .args(["-x", lock.to_str().unwrap(), "sleep", "30"])
        .spawn()
        .unwrap();
    while Command::new("flock")
        .args(["-n", lock.to_str().unwrap(), "true"])
        .status()
        .unwrap()
        .success()
    {
        std::thread::yield_now();
    }
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&cmds[0])
        .output()
        .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!out.status.success(), "the move ran under a held lock");
    assert!(n
        .root
        .join("etc/kubernetes/nvke-cert-renewal-staging/kube-apiserver.yaml")
        .exists());
    assert!(!n
        .root
        .join("etc/kubernetes/manifests/kube-apiserver.yaml")
        .exists());
}

// ---------------------------------------------------------------------
// Walks (issue 28, SPEC 6 v1.2 "Next steps"): on a simulated node
// (tests/simnode: a kubelet, crictl, kubeadm and health endpoints that
// answer), each situation is set up, then its printed steps are run in
// order, as printed (the text's commands, `\` continuations joined, equal
// to the JSON's), one at a time, the view read again after each: no step
// is a no-op, none exits 5 (a spent operation ID replayed), none fails;
// an alternative ("or ...") is not run after the step it stands for. The
// walk ends when the view is clean with no step left, or when what is
// left is for a person (a step without a command, a look, a wait).

use support::node::Node as SimNode;

/// A simulated node, running, with the `/root` a real node has (where the
/// printed evidence step writes its bundle).
fn sim_node(knobs: Value) -> SimNode {
    let node = SimNode::new("rsa", knobs);
    std::fs::create_dir_all(node.root.join("root")).unwrap();
    node
}

/// The runbook's tool and timing options on the simulated node (what the
/// node's own paths would be on a real one).
fn sim_tools(node: &SimNode, now: &str) -> Vec<String> {
    let mut v = vec![
        "--crictl".to_string(),
        node.sim.join("bin/crictl").display().to_string(),
        "--kubeadm".to_string(),
        node.sim.join("bin/kubeadm").display().to_string(),
    ];
    for (k, val) in [
        ("--now", now),
        ("--health-timeout", "20"),
        ("--stop-timeout", "10"),
        ("--lock-timeout", "5"),
        ("--settle", "0"),
    ] {
        v.push(k.to_string());
        v.push(val.to_string());
    }
    v
}

/// The operator view, as JSON and as an 80-column text, of the simulated
/// node.
fn sim_view(node: &SimNode, now: &str) -> (i32, Value, String) {
    let run = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nvke-cert-runbook"));
        c.arg0("nvke-cert-runbook")
            .args(["--root", node.root.to_str().unwrap()])
            .args(sim_tools(node, now))
            .arg("--status-only")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("COLUMNS", "80");
        if json {
            c.args(["--output", "json"]);
        }
        c.output().unwrap()
    };
    // The simulated kubelet may be restarting a pod a step put back: the
    // two views are taken again until they agree (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (j, t) = (run(true), run(false));
        let doc: Value = serde_json::from_slice(&j.stdout).unwrap();
        let text = String::from_utf8(t.stdout).unwrap();
        let steps: Vec<Option<String>> = doc["nextSteps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["command"].as_str().map(str::to_string))
            .collect();
        let same = j.status.code() == t.status.code()
            && text_steps(&text)
                .into_iter()
                .map(|s| s.1)
                .collect::<Vec<_>>()
                == steps;
        if same || std::time::Instant::now() > deadline {
            return (j.status.code().unwrap(), doc, text);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The steps of the text: (what, command), the command's continuations
/// joined.
fn text_steps(text: &str) -> Vec<(String, Option<String>)> {
    let mut steps: Vec<(String, Option<String>)> = Vec::new();
    let mut in_command = false;
    // `next:` after the verdict, or `next, in full:` before it (the
    // verdict and the first step again close the text, SPEC 6 v1.3).
    for l in text
        .lines()
        .skip_while(|l| *l != "next:" && *l != "next, in full:")
        .skip(1)
        .take_while(|l| !l.is_empty())
    {
        let t = l.trim();
        let numbered = l.starts_with("  ")
            && !l.starts_with("     ")
            && t.split_once(". ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()));
        if numbered && !in_command {
            steps.push((t.split_once(". ").unwrap().1.to_string(), None));
            continue;
        }
        let Some(last) = steps.last_mut() else {
            continue;
        };
        let looks_like_command = [
            "nvke-cert-runbook ",
            "cd ",
            "tail ",
            "mkdir ",
            "ps ",
            "ls ",
            "cat ",
            "lslocks ",
            "journalctl ",
        ]
        .iter()
        .any(|p| t.starts_with(p))
            // crictl, by the absolute path the runbook called it by.
            || (t.starts_with('/') && t.contains("/crictl "));
        match &mut last.1 {
            Some(c) if in_command => {
                c.push_str(t.strip_suffix('\\').unwrap_or(t));
                in_command = t.ends_with('\\');
            }
            None if looks_like_command => {
                last.1 = Some(t.strip_suffix('\\').unwrap_or(t).to_string());
                in_command = t.ends_with('\\');
            }
            // The step's words, wrapped.
            None => {
                last.0.push(' ');
                last.0.push_str(t);
            }
            Some(_) => {}
        }
    }
    steps
}

/// What a step changes, compared before and after it: the view's findings
/// and every file under the root (with its size and content digest).
fn situation(node: &SimNode, doc: &Value) -> String {
    let mut files = Vec::new();
    for e in walkdir(&node.root) {
        files.push(e);
    }
    files.sort();
    // The live pods' containers: a stopped one changes them.
    let containers: Vec<String> = doc["live"]["pods"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{} {} {}",
                p["name"], p["container"]["id"], p["container"]["running"]
            )
        })
        .collect();
    format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n{}\n{:?}",
        doc["reasons"],
        doc["warnings"],
        doc["manifests"],
        doc["phaseFile"],
        doc["receipts"],
        doc["conflicts"],
        files.join("\n"),
        containers
    )
}

fn walkdir(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            out.push(format!("{}/", p.display()));
            out.extend(walkdir(&p));
        } else {
            let sum = std::fs::read(&p)
                .map(|b| support::hex::sha256_hex(&b))
                .unwrap_or_default();
            out.push(format!("{} {} {sum}", p.display(), m.len()));
        }
    }
    out
}

/// A step an operator reads rather than runs to change the node: a look
/// again, a listing, a process to find out about.
fn for_a_person(command: &str) -> bool {
    let t = command.trim();
    ["ps ", "ls ", "cat ", "lslocks ", "diff "]
        .iter()
        .any(|p| t.starts_with(p))
        || (t.starts_with("nvke-cert-runbook ")
            && t.ends_with(" --status-only")
            && !t.contains(" --evidence "))
}

/// Run `command` as printed, with the simulated node's tools.
fn sim_paste(node: &SimNode, now: &str, command: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_nvke-cert-runbook"));
    let tools = sim_tools(node, now).join(" ");
    let path = format!("{}:/usr/bin:/bin", bin.parent().unwrap().display());
    Command::new("/bin/sh")
        .arg("-c")
        .arg(command.replace(
            "nvke-cert-runbook ",
            &format!("{} {tools} --output json ", bin.display()),
        ))
        .env_clear()
        .env("PATH", path)
        .output()
        .unwrap()
}

/// The walk: returns the last view (code, JSON, text) and the commands run.
fn walk(node: &SimNode, now: &str, what: &str) -> (i32, Value, String, Vec<String>) {
    let mut ran: Vec<String> = Vec::new();
    for _ in 0..10 {
        let (code, doc, text) = sim_view(node, now);
        let steps = text_steps(&text);
        // The text prints exactly the JSON's steps.
        let json_steps: Vec<Option<String>> = doc["nextSteps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["command"].as_str().map(str::to_string))
            .collect();
        assert_eq!(
            steps.iter().map(|s| s.1.clone()).collect::<Vec<_>>(),
            json_steps,
            "{what}: text and JSON steps differ\n{text}"
        );
        for (w, _) in &steps {
            for word in ["restart_pending", "typed", "V2 operation"] {
                assert!(!w.contains(word), "{what}: {word:?} in step {w:?}");
            }
        }
        // The first step not run yet that is not an alternative to one
        // before it.
        let mut next = None;
        for (i, (w, c)) in steps.iter().enumerate() {
            let Some(c) = c else { continue };
            if ran.contains(c) {
                continue;
            }
            if w.starts_with("or ") && i > 0 {
                continue;
            }
            next = Some(c.clone());
            break;
        }
        // No command is printed twice (the second would be a replay).
        let mut seen: Vec<&String> = steps.iter().filter_map(|s| s.1.as_ref()).collect();
        let all = seen.len();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), all, "{what}: a command printed twice\n{text}");
        let Some(command) = next.filter(|c| !for_a_person(c)) else {
            return (code, doc, text, ran);
        };
        let before = situation(node, &doc);
        let out = sim_paste(node, now, &command);
        let c = out.status.code().unwrap_or(-1);
        assert_ne!(c, 5, "{what}: {command} replayed a spent operation\n{text}");
        // The evidence step answers with the view's code (the node is
        // not clean): it did its work when the bundle is written.
        let done = if command.contains(" --evidence ") {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            v["evidence"]["written"] == true
        } else {
            c == 0
        };
        assert!(
            done,
            "{what}: {command} failed ({c}): {}\n{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let (_, after_doc, _) = sim_view(node, now);
        assert_ne!(
            before,
            situation(node, &after_doc),
            "{what}: {command} changed nothing\n{text}"
        );
        ran.push(command);
    }
    panic!("{what}: the steps never settled: {ran:#?}");
}

/// The walk ends clean, every step run, and the node all active.
fn walks_to_clean(node: &SimNode, now: &str, what: &str) -> Vec<String> {
    let (code, doc, text, ran) = walk(node, now, what);
    assert_eq!(
        (code, doc["clean"].as_bool()),
        (0, Some(true)),
        "{what}:\n{text}"
    );
    assert!(
        doc["nextSteps"].as_array().unwrap().is_empty(),
        "{what}: steps left on a clean node\n{text}"
    );
    node.assert_all_active();
    ran
}

const KILLED_ID: &str = "renew-k8s-certs-2026-11-29T23-00-00Z-7f3e9c1a2b4d4e6f8a0b1c2d3e4f5a6b";

/// A renewal killed while restarting kube-apiserver: its phase file, its
/// manifest left staged (the pod down).
fn killed_mid_restart() -> SimNode {
    let node = sim_node(serde_json::json!({}));
    node.write_state(
        "phase",
        &node.v2_phase(KILLED_ID, "restart_pending", Some("kube-apiserver")),
    );
    std::fs::create_dir_all(node.staged("kube-apiserver").parent().unwrap()).unwrap();
    std::fs::rename(
        node.manifest("kube-apiserver"),
        node.staged("kube-apiserver"),
    )
    .unwrap();
    node
}

#[test]
fn walk_killed_mid_restart() {
    let node = killed_mid_restart();
    let (code, _, text) = sim_view(&node, support::node::NOW);
    assert_eq!(code, 4, "{text}");
    let steps = text_steps(&text);
    assert!(
        steps[0].0.starts_with("hand off the sanitized evidence"),
        "{text}"
    );
    assert!(
        steps[1]
            .0
            .contains("put kube-apiserver back and record it as finished"),
        "{text}"
    );
    let ran = walks_to_clean(&node, support::node::NOW, "killed mid-restart");
    // The evidence, the fence, then a renewal under a new ID.
    assert_eq!(ran.len(), 3, "{ran:#?}");
    assert!(ran[1].ends_with("--fence"), "{ran:#?}");
    assert!(ran[2].contains("--operation-id manual-"), "{ran:#?}");
    assert_eq!(node.receipt(KILLED_ID).unwrap()["outcome"], "abandoned");
}

#[test]
fn walk_after_a_fence() {
    let node = killed_mid_restart();
    node.fence(KILLED_ID);
    let (_, doc, text) = sim_view(&node, support::node::NOW);
    // Nothing offers that ID again.
    for s in doc["nextSteps"].as_array().unwrap() {
        assert!(
            !s["command"].as_str().unwrap_or("").contains(KILLED_ID),
            "{text}"
        );
    }
    let ran = walks_to_clean(&node, support::node::NOW, "after a fence");
    assert!(
        ran.iter().any(|c| c.contains("--operation-id manual-")),
        "{ran:#?}"
    );
}

#[test]
fn walk_a_pod_down() {
    let node = sim_node(serde_json::json!({}));
    std::fs::create_dir_all(node.staged("kube-scheduler").parent().unwrap()).unwrap();
    std::fs::rename(
        node.manifest("kube-scheduler"),
        node.staged("kube-scheduler"),
    )
    .unwrap();
    walks_to_clean(&node, support::node::NOW, "a pod down");
}

#[test]
fn walk_staging_conflicts() {
    for differ in [false, true] {
        let node = sim_node(serde_json::json!({}));
        std::fs::create_dir_all(node.staged("kube-scheduler").parent().unwrap()).unwrap();
        std::fs::copy(
            node.manifest("kube-scheduler"),
            node.staged("kube-scheduler"),
        )
        .unwrap();
        if differ {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(node.staged("kube-scheduler"))
                .unwrap();
            std::io::Write::write_all(&mut f, b"# edited\n").unwrap();
        }
        let (_, _, text) = sim_view(&node, support::node::NOW);
        assert!(
            text.starts_with(&format!(
                "NODE: STAGING CONFLICT: kube-scheduler.yaml in both directories ({})",
                if differ { "they differ" } else { "identical" }
            )),
            "{text}"
        );
        walks_to_clean(&node, support::node::NOW, "staging conflict");
    }
}

#[test]
fn walk_certificates_expired() {
    const ALL_EXPIRED: &str = "2027-07-01T00:00:00Z";
    let node = sim_node(serde_json::json!({ "tlsNow": ALL_EXPIRED }));
    let (code, _, text) = sim_view(&node, ALL_EXPIRED);
    assert_eq!(code, 4, "{text}");
    let ran = walks_to_clean(&node, ALL_EXPIRED, "certificates expired");
    assert!(
        ran.iter().any(|c| c.contains("--recover-expired")),
        "{ran:#?}"
    );
}

#[test]
fn walk_certificates_due() {
    // etcd-peer expires 2027-03-01: due within 30 days from here.
    const DUE: &str = "2027-02-10T00:00:00Z";
    let node = sim_node(serde_json::json!({ "tlsNow": DUE }));
    let (code, doc, text) = sim_view(&node, DUE);
    assert_eq!(
        (code, doc["severity"].as_str()),
        (0, Some("clean")),
        "{text}"
    );
    assert!(
        text.starts_with("NODE: RENEWAL DUE: etcd-peer in 19 days"),
        "{text}"
    );
    let (code, doc, text, ran) = walk(&node, DUE, "certificates due");
    // The renewal, then kube-vip's stop (it kept the old admin.conf).
    assert_eq!(ran.len(), 2, "{ran:#?}");
    assert!(ran[0].contains("--operation-id manual-"), "{ran:#?}");
    assert!(ran[1].contains("/crictl stop --timeout 30 "), "{ran:#?}");
    assert!(!text.contains("keeps the old credential"), "{text}");
    assert_eq!(
        (code, doc["severity"].as_str()),
        (0, Some("clean")),
        "{text}"
    );
    assert!(text.starts_with("NODE: CLEAN"), "{text}");
}

#[test]
fn walk_a_renewal_in_progress() {
    let mut node = sim_node(serde_json::json!({}));
    node.set_knobs(serde_json::json!({ "neverStop": ["kube-controller-manager"] }));
    node.write_state(
        "phase",
        &node.v2_phase(
            "op-busy",
            "restart_pending",
            Some("kube-controller-manager"),
        ),
    );
    let mut child = node
        .command(&["--operation-id", "op-busy", "--stop-timeout", "60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !node.staged("kube-controller-manager").exists() {
        assert!(t0.elapsed().as_secs() < 20, "never staged");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (code, doc, text, ran) = walk(&node, support::node::NOW, "a renewal in progress");
    let _ = child.kill();
    let _ = child.wait();
    // Nothing to run: look again when it ends.
    assert!(ran.is_empty(), "{ran:#?}");
    assert_eq!(doc["severity"], "in_progress", "{text}");
    let head = text
        .split("\nin progress: ")
        .next()
        .unwrap()
        .replace("\n ", "");
    // Its progress is not counted as problems.
    assert_eq!(
        head,
        "NODE: RENEWAL IN PROGRESS: restarting kube-controller-manager (3 of 4); do not touch",
        "{text}"
    );
    assert!(!text.contains("nvke-cert-runbo:"), "{text}");
    assert!(text.contains("\nprogress:\n"), "{text}");
    assert_ne!(code, 0);
}

#[test]
fn walk_the_lock_held_by_a_dead_holders_child() {
    let node = sim_node(serde_json::json!({}));
    let state = node.state();
    std::fs::create_dir_all(&state).unwrap();
    support::tree::chmod(&state, 0o700);
    let lock = state.join("lock");
    std::fs::write(&lock, "").unwrap();
    support::tree::chmod(&lock, 0o600);
    // A runbook took the lock and died; its child (a hung tool) keeps the
    // descriptor: `sh` exits at once, `sleep` holds the lock.
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 9>>'{}'; flock -x 9; (sleep 37.5 &) ; exit 0",
            lock.display()
        ))
        .spawn()
        .unwrap();
    holder.wait().unwrap();
    let (code, doc, text, ran) = walk(
        &node,
        support::node::NOW,
        "lock held by a dead holder's child",
    );
    assert!(ran.is_empty(), "{ran:#?}");
    assert_ne!(code, 0, "{text}");
    // What is left is for a person: find out what holds it, by its pid,
    // and its full command line is on screen.
    let steps = doc["nextSteps"].as_array().unwrap();
    let ps = steps[0]["command"].as_str().unwrap();
    let pid = ps.strip_prefix("ps -o pid,etime,args --pid ").expect(&text);
    assert!(text.contains("sleep 37.5"), "{text}");
    let _ = Command::new("kill").arg(pid).status();
}

/// A fenced renewal and a staging conflict of the manifest it had staged:
/// the conflict is settled first (a renewal refuses while it stands), then
/// the renewal under a new ID resumes the work.
#[test]
fn walk_a_fenced_renewal_behind_a_conflict() {
    let node = killed_mid_restart();
    node.fence(KILLED_ID);
    let staged = node.staged("kube-apiserver");
    std::fs::copy(node.manifest("kube-apiserver"), &staged).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&staged)
        .unwrap();
    std::io::Write::write_all(&mut f, b"# edited\n").unwrap();
    let ran = walks_to_clean(
        &node,
        support::node::NOW,
        "a fenced renewal behind a conflict",
    );
    let renew = ran
        .iter()
        .position(|c| c.contains("--operation-id manual-"));
    let settle = ran.iter().position(|c| c.contains("nvke-set-aside"));
    assert!(settle < renew && settle.is_some(), "{ran:#?}");
}

/// A copy set aside by an earlier settlement under the same name never
/// makes a later one a silent no-op (`mv -n` onto an existing name).
#[test]
fn walk_a_conflict_again_after_one_was_settled() {
    let node = sim_node(serde_json::json!({}));
    let aside = node.root.join("root/nvke-set-aside");
    std::fs::create_dir_all(&aside).unwrap();
    for name in ["kube-scheduler.yaml.staged", "kube-scheduler.yaml.active"] {
        std::fs::write(aside.join(name), b"an earlier copy\n").unwrap();
    }
    std::fs::create_dir_all(node.staged("kube-scheduler").parent().unwrap()).unwrap();
    std::fs::copy(
        node.manifest("kube-scheduler"),
        node.staged("kube-scheduler"),
    )
    .unwrap();
    walks_to_clean(&node, support::node::NOW, "a conflict again");
    assert_eq!(
        std::fs::read(aside.join("kube-scheduler.yaml.staged")).unwrap(),
        b"an earlier copy\n"
    );
}

/// A manifest staged in both staging directories: one kept, the other set
/// aside, the pod back.
#[test]
fn walk_a_pod_staged_in_both_directories() {
    let node = sim_node(serde_json::json!({}));
    let agent = node
        .root
        .join("etc/kubernetes/nvke-cert-renewal-manifests/kube-scheduler.yaml");
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    std::fs::create_dir_all(node.staged("kube-scheduler").parent().unwrap()).unwrap();
    std::fs::copy(node.manifest("kube-scheduler"), &agent).unwrap();
    std::fs::rename(
        node.manifest("kube-scheduler"),
        node.staged("kube-scheduler"),
    )
    .unwrap();
    let (code, _, text) = sim_view(&node, support::node::NOW);
    assert_eq!(code, 4, "{text}");
    walks_to_clean(&node, support::node::NOW, "staged in both directories");
}

/// Certificates expired and the unfinished work fenced: one recovery,
/// printed once, which the controller never takes (said so).
#[test]
fn walk_certificates_expired_with_fenced_work() {
    const ALL_EXPIRED: &str = "2027-07-01T00:00:00Z";
    let node = sim_node(serde_json::json!({ "tlsNow": ALL_EXPIRED }));
    node.write_state("phase", &node.v2_phase("op-old", "renewing", None));
    let (code, v, e) = node.run(&[
        "--status-only",
        "--operation-id",
        "op-old",
        "--fence",
        "--now",
        ALL_EXPIRED,
    ]);
    assert_eq!(code, 0, "{v:#}\n{e}");
    let (_, doc, text) = sim_view(&node, ALL_EXPIRED);
    let recoveries = doc["nextSteps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["command"]
                .as_str()
                .unwrap_or("")
                .contains("--recover-expired")
        })
        .count();
    assert_eq!(recoveries, 1, "{text}");
    assert!(!text.contains("the controller's next cycle does"), "{text}");
    walks_to_clean(&node, ALL_EXPIRED, "expired with fenced work");
}

/// A refused state directory (a symlink): no printed step moves a file
/// (its `flock` would follow the symlink).
#[test]
fn no_move_while_the_state_directory_is_refused() {
    let n = Node::new(
        r#"base rsa; stage kube-apiserver; mkdir -p "$ROOT/elsewhere"; mkdir -p "$(dirname "$STATE")"; ln -s "$ROOT/elsewhere" "$STATE""#,
    );
    let (_, doc, text) = n.status(&[]);
    let steps = doc["nextSteps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{text}");
    for s in steps {
        let c = s["command"].as_str().unwrap_or("");
        assert!(!c.contains(" mv ") && !c.contains("flock"), "{text}");
    }
    assert!(
        steps.iter().any(|s| s["what"]
            .as_str()
            .unwrap()
            .starts_with("repair the state directory")),
        "{text}"
    );
}

// ---------------------------------------------------------------------
// Refusals (SPEC 6 v1.3, "Every refusal prints a next step that does
// something when pasted"): a renewal or a recovery refused with nothing
// changed ends its message with the command to run next. Where that
// command would be the refused one again (its receipt now exists: pasted,
// it would only replay it), it carries a fresh operation ID. Each case
// runs the refusal as an operator types it, pastes the message's command
// as printed, and checks it did the work under a new ID, never a replay.

/// The runbook as an operator types it on the simulated node, JSON out.
fn sim_run(node: &SimNode, now: &str, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_nvke-cert-runbook"))
        .arg0("nvke-cert-runbook")
        .args(["--root", node.root.to_str().unwrap()])
        .args(sim_tools(node, now))
        .args(args)
        .args(["--output", "json"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code().unwrap(), doc)
}

/// A refusal's pasted step: the command its message ends with, run as
/// printed. Returns the refused document's ID, the command and what it
/// printed.
fn paste_refusals_step(node: &SimNode, now: &str, args: &[&str]) -> (String, Value) {
    let (code, refused) = sim_run(node, now, args);
    assert_eq!(
        (code, refused["outcome"].as_str(), refused["phase"].as_str()),
        (1, Some("failed"), Some("expiry")),
        "{refused:#}"
    );
    let message = refused["message"].as_str().unwrap();
    let at = message
        .rfind("nvke-cert-runbook ")
        .unwrap_or_else(|| panic!("no command in {message}"));
    let command = &message[at..];
    for placeholder in [" ID ", " PATH ", "SPEC "] {
        assert!(!message.contains(placeholder), "{message}");
    }
    let out = sim_paste(node, now, command);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{command}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(doc["replayed"], false, "{command} replayed: {doc:#}");
    assert_ne!(
        doc["operationID"], refused["operationID"],
        "{command}: the refused ID again"
    );
    assert_eq!(out.status.code(), Some(0), "{command}: {doc:#}");
    (command.to_string(), doc)
}

#[test]
fn every_refusals_step_works_when_pasted() {
    const ALL_EXPIRED: &str = "2027-07-01T00:00:00Z";
    // A renewal on an expired node: the recovery, under a fresh ID.
    let node = sim_node(serde_json::json!({ "tlsNow": ALL_EXPIRED }));
    let (command, doc) = paste_refusals_step(&node, ALL_EXPIRED, &["--operation-id", "op-plain"]);
    assert!(
        command.contains(" --operation-id recover-20270701T000000Z --recover-expired"),
        "{command}"
    );
    assert_eq!(
        (doc["outcome"].as_str(), &doc["recovery"]),
        (Some("renewed"), &Value::Bool(true)),
        "{doc:#}"
    );

    // A recovery on a healthy node: a renewal, under a fresh ID (the same
    // command without --recover-expired would replay the refused receipt).
    let node = sim_node(serde_json::json!({}));
    let now = support::node::NOW;
    let (command, doc) = paste_refusals_step(
        &node,
        now,
        &[
            "--operation-id",
            "op-rec",
            "--recover-expired",
            "--kubeadm-config",
            "/etc/kubernetes/kubeadm-config.yaml",
        ],
    );
    assert!(command.contains(" --operation-id manual-"), "{command}");
    assert!(
        command.ends_with(" --kubeadm-config /etc/kubernetes/kubeadm-config.yaml"),
        "{command}"
    );
    assert!(!command.contains("--recover-expired"), "{command}");
    assert!(
        matches!(doc["outcome"].as_str(), Some("unchanged" | "renewed")),
        "{doc:#}"
    );

    // A renewal over a recovery's unfinished work while a leaf is expired:
    // only a recovery resumes it, under a fresh ID.
    let node = sim_node(serde_json::json!({ "tlsNow": ALL_EXPIRED }));
    let mut phase: Value = serde_json::from_str(&node.v2_phase("op-r", "renewing", None)).unwrap();
    phase["recovery"] = Value::Bool(true);
    node.write_state(
        "phase",
        &(serde_json::to_string_pretty(&phase).unwrap() + "\n"),
    );
    let (command, doc) = paste_refusals_step(&node, ALL_EXPIRED, &["--operation-id", "op-plain"]);
    assert!(command.ends_with(" --recover-expired"), "{command}");
    assert_eq!(
        (doc["outcome"].as_str(), &doc["recovery"]),
        (Some("renewed"), &Value::Bool(true)),
        "{doc:#}"
    );
    assert_eq!(doc["resumedFrom"]["operationID"], "op-r", "{doc:#}");
}
