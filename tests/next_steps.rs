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
    let after: Vec<&str> = text.lines().skip_while(|l| *l != "next:").skip(1).collect();
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
    let fence = commands(&doc, "fence it");
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
    for what in ["fence it", "finish it now"] {
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
