//! The evidence bundle of `--status-only --evidence PATH` (SPEC 6, v1.1),
//! against the built binary on fixture node trees with hostile things
//! planted: the archive is listed with the real `tar -tzvf` and extracted
//! with the real `tar -xzf`, and fails on any private key, kubeconfig, node
//! secret or path outside the allowed directories; created 0600, never over
//! an existing file or through a symlink, never into a directory it reads;
//! nothing else on the node changes.

// Tests plant fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::hex::sha256_hex;
use support::tree::{diff, snapshot};

const RUNBOOK: &str = env!("CARGO_BIN_EXE_nvke-cert-runbook");
const NOW: &str = "2026-11-30T00:00:00Z";
const K: &str = "etc/kubernetes";
const STATE: &str = "var/lib/nvke/k8s-cert-renewal";
/// An operation ID of 150 characters: its receipt's member name needs the pax header.
fn long_id() -> String {
    format!("op-{}", "x".repeat(147))
}

/// A node root built by `setup` (bash, with tests/golden/prelude.sh's helpers).
fn node(setup: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("nvke-evidence-")
        .tempdir()
        .unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new("/bin/bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; umask 022; source {:?}; base rsa; mkdir -p \"$ROOT/tmp\"; {setup}",
            dir.join("tests/golden/prelude.sh").display().to_string()
        ))
        .env("ROOT", &root)
        .env("FIX", dir.join("fixtures"))
        .status()
        .unwrap();
    assert!(status.success(), "setup failed");
    (tmp, root)
}

struct Ran {
    code: i32,
    stdout: String,
}

fn run(root: &Path, extra: &[&str]) -> Ran {
    let out = support::netns::hermetic(&mut Command::new(RUNBOOK))
        .args([
            "--root",
            root.to_str().unwrap(),
            "--now",
            NOW,
            "--status-only",
        ])
        .args(extra)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

fn json(r: &Ran) -> Value {
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// The member names the bundle may hold: a fixed name, or a name under one
/// of the allowed directories, one level deep.
fn allowed(name: &str) -> bool {
    const FIXED: [&str; 4] = [
        "nvke-evidence/evidence.json",
        "nvke-evidence/status.json",
        "nvke-evidence/state/phase",
        "nvke-evidence/state/owner",
    ];
    const DIRS: [&str; 5] = [
        "nvke-evidence/state/completed/",
        "nvke-evidence/state/log/",
        "nvke-evidence/staging/",
        "nvke-evidence/agent-staging/",
        "nvke-evidence/manifests/",
    ];
    FIXED.contains(&name)
        || DIRS.iter().any(|d| {
            name.strip_prefix(d)
                .is_some_and(|rest| !rest.is_empty() && !rest.contains('/') && rest != "..")
        })
}

/// sha256 of every regular file under `dir` that must never leave the node:
/// the PKI (keys and certificates alike: nothing of pki/ belongs in the
/// bundle) and the kubeconfigs.
fn secrets(root: &Path) -> BTreeSet<String> {
    let mut v = BTreeSet::new();
    for (rel, e) in snapshot(&root.join(K), false) {
        let s = rel.display().to_string();
        if e.kind == 'f' && (s.starts_with("pki/") || s.ends_with(".conf")) {
            v.insert(e.sha256);
        }
    }
    v
}

/// `tar -tzvf`: (type and mode, owner, name) of each member, in order.
fn listing(archive: &Path) -> Vec<(String, String, String)> {
    let out = Command::new("tar")
        .arg("-tzvf")
        .arg(archive)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tar -tzvf: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(f.len() >= 6, "odd listing line {l:?}");
            (f[0].to_string(), f[1].to_string(), f[5..].join(" "))
        })
        .collect()
}

/// Extract with the real tar into a fresh directory; every file found, by
/// its path under that directory.
fn extract(archive: &Path) -> (tempfile::TempDir, Vec<(String, Vec<u8>)>) {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success(), "tar -xzf failed");
    let mut files = Vec::new();
    for (rel, e) in snapshot(dir.path(), false) {
        let name = rel.display().to_string();
        match e.kind {
            'd' => {}
            'f' => files.push((name.clone(), std::fs::read(dir.path().join(&rel)).unwrap())),
            k => panic!("extracted {name} is a {k}, not a regular file"),
        }
    }
    (dir, files)
}

/// The hostile node: a renewal dead mid-restart (phase file, kube-apiserver
/// staged, owner record, its log), receipts (one with a 150-character ID),
/// and planted: a private key in the staging directory, a kubeconfig copy
/// and a symlink to the CA key and a hard link to a file outside in
/// manifests/, a FIFO, a device, a directory, a name with a newline.
fn hostile() -> (tempfile::TempDir, PathBuf) {
    let long = long_id();
    node(&format!(
        r#"
phase_v2 op-1 restart_pending kube-apiserver
stage kube-apiserver
owner_file 4242 op-1 renew
receipt op-0 renewed
receipt {long} abandoned cancelled
mkdir -p "$STATE/log"; chmod 0700 "$STATE/log"
echo 'renewal starting (lock held) op-1' | put "$STATE/log/op-1.log"
# A power loss after an unsynced append leaves NULs at a log's end: still evidence.
printf '\0\0\0\0' >> "$STATE/log/op-1.log"
echo 'an old run' | put "$STATE/log/op-0.log"
echo 'never named' | put "$STATE/log/op-unnamed.log"
cp "$K/pki/ca.key" "$K/nvke-cert-renewal-staging/ca.key.yaml"
openssl pkey -in "$K/pki/ca.key" -outform DER -out "$K/nvke-cert-renewal-staging/ca.der"
gzip -nc "$K/pki/ca.key" > "$K/manifests/ca.yaml.gz"
cp "$K/admin.conf" "$K/manifests/admin.yaml"
ln -s /etc/kubernetes/pki/ca.key "$K/manifests/ca-key.yaml"
ln -s "$K/pki/apiserver.key" "$K/manifests/apiserver-key.yaml"
echo 'outside' > "$ROOT/outside.txt"
ln "$ROOT/outside.txt" "$K/manifests/linked.yaml"
mkfifo "$K/manifests/fifo.yaml"
mknod "$K/manifests/null.yaml" c 1 3 || true
mkdir "$K/manifests/sub"; cp "$K/admin.conf" "$K/manifests/sub/x.yaml"
printf 'x' > "$K/manifests/$(printf 'new\nline.yaml')"
printf 'x' > "$K/manifests/-----BEGIN PRIVATE KEY-----"
agent_staging_dir; cp "$K/manifests/kube-scheduler.yaml" "$K/nvke-cert-renewal-manifests/kube-scheduler.yaml"
"#
    ))
}

#[test]
fn the_bundle_holds_what_the_guide_asks_and_never_a_secret() {
    let (_t, root) = hostile();
    let secrets = secrets(&root);
    let before = snapshot(&root, false);
    let r = run(&root, &["--output", "json", "--evidence", "/tmp/x.tgz"]);
    let archive = root.join("tmp/x.tgz");
    assert_eq!(
        r.code, 4,
        "kube-apiserver staged: a pod is down: {}",
        r.stdout
    );
    let doc = json(&r);
    let ev = &doc["evidence"];
    assert_eq!(ev["written"], true, "{ev}");
    assert_eq!(ev["path"], "/tmp/x.tgz");

    // Created 0600; nothing else on the node changed.
    let mode = std::fs::symlink_metadata(&archive)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o600);
    let after = snapshot(&root, false);
    assert_eq!(
        diff(&before, &after),
        vec![("tmp/x.tgz".to_string(), "added".to_string())]
    );
    let bytes = std::fs::read(&archive).unwrap();
    assert_eq!(ev["sha256"], sha256_hex(&bytes));
    assert_eq!(ev["bytes"], bytes.len() as u64);

    // The real tar's listing: regular files only, 0600, root/root, allowed names.
    let list = listing(&archive);
    assert_eq!(ev["members"], list.len() as u64);
    for (perm, owner, name) in &list {
        assert_eq!(perm, "-rw-------", "{name}");
        assert_eq!(owner, "root/root", "{name}");
        assert!(
            allowed(name),
            "member outside the allowed directories: {name:?}"
        );
    }
    let names: Vec<&str> = list.iter().map(|(_, _, n)| n.as_str()).collect();
    let long_receipt = format!("nvke-evidence/state/completed/{}.json", long_id());
    // Receipts newest first (v1.2): the long ID's was written last.
    let want = [
        "nvke-evidence/evidence.json",
        "nvke-evidence/status.json",
        "nvke-evidence/state/phase",
        "nvke-evidence/state/owner",
        long_receipt.as_str(),
        "nvke-evidence/state/completed/op-0.json",
        "nvke-evidence/state/log/op-0.log",
        "nvke-evidence/state/log/op-1.log",
        "nvke-evidence/staging/kube-apiserver.yaml",
        "nvke-evidence/agent-staging/kube-scheduler.yaml",
        "nvke-evidence/manifests/etcd.yaml",
        "nvke-evidence/manifests/kube-controller-manager.yaml",
        "nvke-evidence/manifests/kube-scheduler.yaml",
        "nvke-evidence/manifests/kube-vip.yaml",
    ];
    assert_eq!(names, want, "members, in order");

    // Extracted with the real tar: no key, no kubeconfig, no byte-copy of
    // a PKI file or kubeconfig, whatever the sanitizer says.
    let (_x, files) = extract(&archive);
    assert_eq!(files.len(), list.len());
    for (name, content) in &files {
        let text = String::from_utf8_lossy(content);
        for bad in ["PRIVATE KEY", "client-key-data", "kind: Config", "users:"] {
            assert!(!text.contains(bad), "{name} holds {bad:?}");
        }
        assert!(
            !secrets.contains(&sha256_hex(content)),
            "{name} is a copy of a PKI file or kubeconfig"
        );
    }

    // The manifest: every member with its size and sha256, the binary's
    // sha256, and every planted thing skipped with its reason.
    let get = |n: &str| &files.iter().find(|(f, _)| f == n).unwrap().1;
    let m: Value = serde_json::from_slice(get("nvke-evidence/evidence.json")).unwrap();
    assert_eq!(m["format"], "nvke-cert-runbook/evidence/v1");
    assert_eq!(m["runbookVersion"], doc["runbookVersion"]);
    assert_eq!(
        m["binarySHA256"],
        sha256_hex(&std::fs::read(RUNBOOK).unwrap()),
        "the running binary's sha256"
    );
    let members = m["members"].as_array().unwrap();
    assert_eq!(members.len() + 1, list.len());
    for mem in members {
        let name = mem["name"].as_str().unwrap();
        let content = get(name);
        assert_eq!(mem["sha256"], sha256_hex(content), "{name}");
        assert_eq!(mem["bytes"], content.len() as u64, "{name}");
    }
    let skipped: Vec<(String, String)> = m["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        m["skipped"], ev["skipped"],
        "the document lists the same skips"
    );
    let reason = |p: &str| {
        skipped
            .iter()
            .find(|(path, _)| path == p)
            .map(|(_, r)| r.as_str())
            .unwrap_or_else(|| panic!("{p} not in the skips: {skipped:?}"))
    };
    let km = "/etc/kubernetes/manifests";
    assert_eq!(
        reason("/etc/kubernetes/nvke-cert-renewal-staging/ca.key.yaml"),
        "looks like a private key"
    );
    // A key in DER or gzip carries no PEM marker: refused as not text.
    for p in [
        "/etc/kubernetes/nvke-cert-renewal-staging/ca.der".to_string(),
        format!("{km}/ca.yaml.gz"),
    ] {
        assert!(reason(&p).starts_with("not text"), "{p}: {}", reason(&p));
    }
    assert_eq!(
        reason(&format!("{km}/admin.yaml")),
        "looks like a kubeconfig"
    );
    assert_eq!(
        reason(&format!("{km}/ca-key.yaml")),
        "a symlink (never followed)"
    );
    assert_eq!(
        reason(&format!("{km}/apiserver-key.yaml")),
        "a symlink (never followed)"
    );
    assert!(reason(&format!("{km}/linked.yaml")).starts_with("has 2 hard links"));
    assert_eq!(
        reason(&format!("{km}/fifo.yaml")),
        "a FIFO (only regular files)"
    );
    if root.join(K).join("manifests/null.yaml").exists() {
        assert_eq!(
            reason(&format!("{km}/null.yaml")),
            "a device (only regular files)"
        );
    }
    assert_eq!(
        reason(&format!("{km}/sub")),
        "a directory (only regular files)"
    );
    assert!(reason(&format!("{km}/new\\nline.yaml")).starts_with("a name outside"));
    assert!(
        reason(&format!("{km}/(a name that looks like a private key)"))
            .starts_with("a name outside")
    );
    // The logs named: op-1's (phase file, owner) and op-0's (a receipt
    // listed) are in; the long ID's (a receipt listed) is absent, and not
    // worth a skip; one that no one names is not looked at.
    assert!(
        !skipped.iter().any(|(p, _)| p.contains(&long_id())),
        "{skipped:?}"
    );
    assert!(!names.iter().any(|n| n.contains("op-unnamed")));

    // status.json is the document as printed, before its evidence field.
    let mut printed = doc.clone();
    printed.as_object_mut().unwrap().remove("evidence");
    let inner: Value = serde_json::from_slice(get("nvke-evidence/status.json")).unwrap();
    assert_eq!(inner, printed);
}

#[test]
fn the_logs_of_every_operation_named_are_in_the_bundle() {
    // No phase file, no owner: the receipt listed and the ID asked name the logs.
    let (_t, root) = node(
        r#"
receipt op-0 renewed
mkdir -p "$STATE/log"; chmod 0700 "$STATE/log"
echo 'an old run' | put "$STATE/log/op-0.log"
echo 'asked' | put "$STATE/log/op-asked.log"
echo 'never named' | put "$STATE/log/op-unnamed.log"
"#,
    );
    let r = run(
        &root,
        &["--operation-id", "op-asked", "--evidence", "/tmp/x.tgz"],
    );
    assert!(r.stdout.contains("EVIDENCE: /tmp/x.tgz"), "{}", r.stdout);
    let names: Vec<String> = listing(&root.join("tmp/x.tgz"))
        .into_iter()
        .map(|(_, _, n)| n)
        .collect();
    assert!(
        names.contains(&"nvke-evidence/state/log/op-0.log".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"nvke-evidence/state/log/op-asked.log".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("op-unnamed")), "{names:?}");
    // The log of the operation asked about, absent: a skip says so.
    let r = run(
        &root,
        &[
            "--operation-id",
            "op-missing",
            "--output",
            "json",
            "--evidence",
            "/tmp/y.tgz",
        ],
    );
    let skipped = &json(&r)["evidence"]["skipped"];
    assert_eq!(
        skipped,
        &serde_json::json!([{"path": format!("/{STATE}/log/op-missing.log"), "reason": "absent"}]),
    );
}

#[test]
fn the_same_node_gives_the_same_bytes() {
    let (_t, root) = hostile();
    assert_eq!(run(&root, &["--evidence", "/tmp/a.tgz"]).code, 4);
    assert_eq!(run(&root, &["--evidence", "/tmp/b.tgz"]).code, 4);
    // Member for member, byte for byte; the status document's live
    // observation (SPEC 10) says when it was made and how long it took,
    // which two runs never share: those two fields aside.
    let a = root.join("tmp/a.tgz");
    let b = root.join("tmp/b.tgz");
    assert_eq!(listing(&a), listing(&b));
    let ((_da, fa), (_db, fb)) = (extract(&a), extract(&b));
    assert_eq!(fa.len(), fb.len());
    for ((na, ba), (nb, bb)) in fa.iter().zip(&fb) {
        assert_eq!(na, nb);
        if na.ends_with("evidence.json") {
            // Its index names status.json's size and digest: those aside.
            let unhashed = |b: &[u8]| {
                let mut v: Value = serde_json::from_slice(b).unwrap();
                for m in v["members"].as_array_mut().unwrap() {
                    if m["name"] == "nvke-evidence/status.json" {
                        m["sha256"] = Value::Null;
                        m["bytes"] = Value::Null;
                    }
                }
                v
            };
            assert_eq!(unhashed(ba), unhashed(bb), "{na}");
        } else if na.ends_with("status.json") {
            let unclocked = |b: &[u8]| {
                let mut v: Value = serde_json::from_slice(b).unwrap();
                let live = v["live"].as_object_mut().expect("a live observation");
                live.remove("observedAt").expect("when it was observed");
                live.remove("tookMs").expect("how long it took");
                v
            };
            assert_eq!(unclocked(ba), unclocked(bb), "{na}");
        } else {
            assert!(ba == bb, "{na} differs");
        }
    }
}

/// Each refused PATH: the view still reports the node, says why, exits 1,
/// and changes nothing at all. (These nodes have no runtime, so they are
/// never clean (SPEC 10); that a clean node's refused bundle exits 1 where
/// it would exit 0 is tests/live.rs's, on a live simulated node.)
fn refused(root: &Path, path: &str, why: &str) {
    let before = snapshot(root, true);
    // --wide: the reason on one line, as the JSON has it.
    let text = run(root, &["--wide", "--evidence", path]);
    assert_eq!(text.code, 1, "{}", text.stdout);
    assert!(
        text.stdout.starts_with("NODE: NOT CLEAN"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains(&format!("EVIDENCE NOT WRITTEN: {why}")),
        "{}",
        text.stdout
    );
    let j = run(root, &["--output", "json", "--evidence", path]);
    assert_eq!(j.code, 1);
    let doc = json(&j);
    assert_eq!(
        doc["live"]["runtime"]
            .as_str()
            .map(|r| r.starts_with("not checked")),
        Some(true)
    );
    assert_eq!(doc["evidence"]["written"], false);
    assert_eq!(doc["evidence"]["path"], path);
    assert!(doc["evidence"]["error"].as_str().unwrap().starts_with(why));
    let after = snapshot(root, true);
    assert_eq!(
        diff(&before, &after),
        Vec::<(String, String)>::new(),
        "{path}"
    );
}

#[test]
fn an_existing_file_or_symlink_at_path_is_never_replaced() {
    let (_t, root) = node(
        r#"
echo keep | put "$ROOT/tmp/x.tgz" 0644
ln -s "$ROOT/tmp/target.tgz" "$ROOT/tmp/dangling.tgz"
echo other | put "$ROOT/tmp/other"
ln -s other "$ROOT/tmp/link.tgz"
"#,
    );
    // Without --evidence: not clean only for want of a runtime.
    let plain = json(&run(&root, &["--output", "json"]));
    assert_eq!(plain["exitCode"], 1);
    assert!(
        plain["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.as_str().unwrap().contains(" not checked")),
        "{plain:#}"
    );
    refused(&root, "/tmp/x.tgz", "/tmp/x.tgz already exists");
    assert_eq!(std::fs::read(root.join("tmp/x.tgz")).unwrap(), b"keep\n");
    refused(
        &root,
        "/tmp/dangling.tgz",
        "/tmp/dangling.tgz already exists",
    );
    assert!(
        !root.join("tmp/target.tgz").exists(),
        "never through the symlink"
    );
    refused(&root, "/tmp/link.tgz", "/tmp/link.tgz already exists");
    assert_eq!(std::fs::read(root.join("tmp/other")).unwrap(), b"other\n");
}

#[test]
fn a_missing_or_symlinked_parent_and_the_read_directories_are_refused() {
    let (_t, root) = node(
        r#"
state_dir
ln -s "$ROOT/tmp" "$ROOT/tmplink"
"#,
    );
    refused(
        &root,
        "/nope/x.tgz",
        "the directory of /nope/x.tgz does not exist",
    );
    refused(&root, "/tmplink/x.tgz", "/tmplink is a symlink");
    for dir in [
        "/etc/kubernetes/manifests",
        "/var/lib/nvke/k8s-cert-renewal",
    ] {
        refused(
            &root,
            &format!("{dir}/x.tgz"),
            &format!("{dir} is a directory the bundle reads"),
        );
    }
    assert!(!root.join(STATE).join("x.tgz").exists());
}

#[test]
fn the_lock_holders_command_line_stays_out_of_the_bundle() {
    // An unrelated holder whose arguments carry a secret.
    let (_t, root) = node("");
    let lock = root.join("var/lib/nvke/k8s-cert-renewal/lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        lock.parent().unwrap(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    std::fs::write(&lock, "").unwrap();
    let mut holder = Command::new("flock")
        .args([
            "-x",
            lock.to_str().unwrap(),
            "sh",
            "-c",
            "sleep 30",
            "--token=SECRET-TOKEN-123",
        ])
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
    let r = run(&root, &["--output", "json", "--evidence", "/tmp/x.tgz"]);
    let _ = holder.kill();
    let _ = holder.wait();
    // The operator sees who holds the lock, on screen...
    assert!(r.stdout.contains("SECRET-TOKEN-123"), "{}", r.stdout);
    // ...the bundle handed off keeps its pid and name only.
    let (_d, files) = extract(&root.join("tmp/x.tgz"));
    for (name, bytes) in &files {
        assert!(
            !String::from_utf8_lossy(bytes).contains("SECRET-TOKEN-123"),
            "{name} carries the holder's command line"
        );
    }
}

/// The credentials planted by [`secret_node`], as they must never appear
/// in a bundle: each with the member it is in, what its mark must follow
/// there, and the value its mark is of (the credential itself, or the
/// whole scalar it is part of).
const PLANTED: [(&str, &str, &str, &str); 15] = [
    (
        "EtcdPass-456",
        "manifests/kube-apiserver.yaml",
        "--etcd-password=",
        "EtcdPass-456",
    ),
    (
        "EtcdPass-457",
        "agent-staging/kube-apiserver.yaml",
        "--etcd-password=",
        "EtcdPass-457",
    ),
    (
        "SepToken-789",
        "manifests/kube-apiserver.yaml",
        "    - ",
        "SepToken-789",
    ),
    (
        "PeerPass-123",
        "manifests/kube-vip.yaml",
        "- name: bgp_peerpass\n      value: ",
        "PeerPass-123",
    ),
    (
        "PeerCont-904b",
        "manifests/kube-vip.yaml",
        "- name: BGP_PASSWORD\n      value: ",
        "PeerCont-904a PeerCont-904b",
    ),
    (
        "VipToken-234",
        "manifests/kube-vip.yaml",
        "value: ",
        "VipToken-234",
    ),
    (
        "ApiSecret-345",
        "manifests/kube-vip.yaml",
        "value: ",
        "ApiSecret-345",
    ),
    (
        "StagedSecret-567",
        "staging/kube-scheduler.yaml",
        "--client-secret=",
        "StagedSecret-567",
    ),
    (
        "k8stok.q7w8e9r0t1y2u3i4",
        "manifests/extra.yaml",
        "- --bootstrap-token\n    - ",
        "k8stok.q7w8e9r0t1y2u3i4",
    ),
    (
        "x-planted-password",
        "manifests/extra.yaml",
        "password: ",
        "x-planted-password",
    ),
    (
        "JsonToken-901",
        "manifests/json-pod.json",
        "- --token\n    - ",
        "JsonToken-901",
    ),
    (
        "FlowPass-902",
        "manifests/flow.yaml",
        "- --password\n    - ",
        "FlowPass-902",
    ),
    (
        "Probe-905",
        "manifests/flow.yaml",
        "- name: Authorization\n          value: ",
        "Bearer Probe-905",
    ),
    (
        "BasicPass-906",
        "manifests/flow.yaml",
        "- name: X-Upstream\n          value: ",
        "Basic BasicPass-906",
    ),
    (
        "UrlPass-907",
        "manifests/flow.yaml",
        "https://root:",
        "UrlPass-907",
    ),
];

/// Planted in files the bundle must leave out (a duplicate key, not YAML).
const LEFT_OUT: [(&str, &str, &str); 2] = [
    (
        "DupToken-908",
        "/etc/kubernetes/manifests/dup.json",
        "not redacted, so left out: does not parse as YAML: a duplicate mapping key at line 4, column 4",
    ),
    (
        "Broken-909",
        "/etc/kubernetes/manifests/broken.yaml",
        "not redacted, so left out: does not parse as YAML at line",
    ),
];

/// A JWT, as a kubeconfig's `token:` carries it.
const JWT: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik5vdFJlYWwxMjMifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwic3ViIjoic3lzdGVtOnNlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlMDEyMzQ1Njc4OWFiY2RlZkFCQ0RFRg";

/// Every secret shape of SPEC 6 v1.2 and v1.3 planted in manifests/ and
/// the staging directories: kube-vip's `bgp_peerpass` with its value on
/// the next line, a `BGP_PASSWORD` whose plain value goes on over two
/// lines, env vars named `*_TOKEN`, `*_SECRET`; `--etcd-password=`, a
/// separate-arg `--token`, a staged copy's `--client-secret=`, the
/// agent's copy of kube-apiserver with another password (a staging
/// conflict: the status document quotes both in its diff); a stray with a
/// base64 DER key without PEM armour, a kubeconfig-looking `token:` (a
/// JWT), a flow-style `--bootstrap-token`, a `password:` in a block
/// scalar; a JSON static pod with one argument a line (`"--token",` then
/// its value); a flow list over two lines (`--password,` then its value),
/// an `Authorization: Bearer` and a `Basic` probe header and a URL's
/// password; one with a PEM private key; and two the bundle cannot read:
/// a JSON manifest with two `command` keys (the first holding a token)
/// and one that is not YAML.
fn secret_node() -> (tempfile::TempDir, PathBuf) {
    node(&format!(
        r#"
sed -i 's|^    - kube-apiserver$|&\n    - --etcd-password=EtcdPass-456\n    - --token\n    - SepToken-789|' "$K/manifests/kube-apiserver.yaml"
sed -i 's|^    - name: address$|    - name: bgp_peerpass\n      value:\n        "PeerPass-123"\n    - name: BGP_PASSWORD\n      value: PeerCont-904a\n        PeerCont-904b\n    - name: VIP_TOKEN\n      value: VipToken-234\n    - name: API_SECRET\n      value: ApiSecret-345\n&|' "$K/manifests/kube-vip.yaml"
sed -i 's|^    - kube-scheduler$|&\n    - --client-secret=StagedSecret-567|' "$K/manifests/kube-scheduler.yaml"
stage kube-scheduler
agent_staging_dir
sed 's/EtcdPass-456/EtcdPass-457/' "$K/manifests/kube-apiserver.yaml" | put "$K/nvke-cert-renewal-manifests/kube-apiserver.yaml"
DER=$(openssl pkey -in "$K/pki/sa.key" -outform DER | base64 -w0)
put "$K/manifests/extra.yaml" 0600 <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: extra
  annotations:
    example.com/blob: $DER
    example.com/user: '{{"token": "{JWT}"}}'
spec:
  containers:
  - name: extra
    image: registry.k8s.io/pause:3.9@sha256:{digest}
    args: ["--bootstrap-token", "k8stok.q7w8e9r0t1y2u3i4"]
    env:
    - name: KUBE_TOKEN
      value: {JWT}
    - name: DB
      value: x-plain-value
    - name: CONFIG
      value: |
        password: x-planted-password
YAML
put "$K/manifests/json-pod.json" 0600 <<'JSON'
{{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {{"name": "json-pod"}},
  "spec": {{
    "containers": [
      {{
        "name": "json-pod",
        "image": "registry.k8s.io/pause:3.9",
        "command": [
          "json-pod",
          "--token",
          "JsonToken-901",
          "--v=2"
        ]
      }}
    ]
  }}
}}
JSON
put "$K/manifests/flow.yaml" 0600 <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: flow
spec:
  containers:
  - name: flow
    image: registry.k8s.io/pause:3.9
    args: [--v=2, --password,
      FlowPass-902, "--upstream=https://root:UrlPass-907@10.0.0.1:2379"]
    livenessProbe:
      httpGet:
        path: /healthz
        port: 8080
        httpHeaders: [{{name: Authorization, value: "Bearer Probe-905"}},
          {{name: X-Upstream, value: Basic BasicPass-906}}]
YAML
put "$K/manifests/dup.json" 0600 <<'JSON'
{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "dup"}},
 "spec": {{"containers": [{{"name": "dup", "image": "registry.k8s.io/pause:3.9",
   "command": ["dup", "--token=DupToken-908"],
   "command": ["dup"]}}]}}}}
JSON
printf 'apiVersion: v1\nkind: Pod\nspec: [--token=Broken-909\n' | put "$K/manifests/broken.yaml"
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n    k: |\n' | put "$K/manifests/pem.yaml"
sed 's/^/      /' "$K/pki/sa.key" >> "$K/manifests/pem.yaml"
"#,
        digest = "ab12".repeat(16),
    ))
}

/// SPEC 6 v1.2 and v1.3 (issue 25 item 2, issue 40 item 3): no credential
/// leaves the node in the bundle, wherever it stood in its manifest; each
/// is `<redacted sha256:HEX>` of its bytes, where it was; paths, booleans
/// and digests an operator needs stay; a manifest the bundle cannot read
/// is left out and listed with why.
#[test]
fn credentials_in_manifests_are_redacted_and_paths_stay() {
    let (_t, root) = secret_node();
    let r = run(&root, &["--output", "json", "--evidence", "/tmp/x.tgz"]);
    let doc = json(&r);
    let ev = &doc["evidence"];
    assert_eq!(ev["written"], true, "{ev}");
    let (_x, files) = extract(&root.join("tmp/x.tgz"));
    let get = |n: &str| {
        let name = format!("nvke-evidence/{n}");
        let bytes = &files
            .iter()
            .find(|(f, _)| *f == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .1;
        String::from_utf8(bytes.clone()).unwrap()
    };
    let der = {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "openssl pkey -in {:?} -outform DER | base64 -w0",
                root.join(K).join("pki/sa.key")
            ))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(der.len() > 1000, "{der}");
    let mark = |v: &str| format!("<redacted sha256:{}>", sha256_hex(v.as_bytes()));
    for (name, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        for (secret, _, _, _) in PLANTED {
            assert!(!text.contains(secret), "{name} holds {secret:?}");
        }
        for (secret, _, _) in LEFT_OUT {
            assert!(!text.contains(secret), "{name} holds {secret:?}");
        }
        assert!(!text.contains(&der[..64]), "{name} holds the DER key");
        assert!(!text.contains(&JWT[40..]), "{name} holds the JWT");
    }
    for (secret, member, before, value) in PLANTED {
        let text = get(member);
        assert!(
            text.contains(&format!("{before}{}", mark(value))),
            "{member}: {secret:?} not redacted in place:\n{text}"
        );
    }
    // The conflict's diff in the bundle's status.json is made from the
    // copies as the bundle holds them: marks, not values (the printed
    // document keeps them, for the operator's screen).
    let status = get("status.json");
    for secret in ["EtcdPass-456", "EtcdPass-457", "SepToken-789"] {
        assert!(status.contains(&mark(secret)), "{secret}: {status}");
    }
    assert!(r.stdout.contains("EtcdPass-457"), "{}", r.stdout);
    let extra = get("manifests/extra.yaml");
    assert!(
        extra.contains(&format!("example.com/blob: {}", mark(&der))),
        "{extra}"
    );
    assert!(extra.contains(&format!("value: {}", mark(JWT))), "{extra}");
    // Kept: paths, booleans, plain values, a digest, flags without a secret.
    let api = get("manifests/kube-apiserver.yaml");
    for kept in [
        "    - --service-account-key-file=/etc/kubernetes/pki/sa.pub\n",
        "    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n",
        "    - --enable-bootstrap-token-auth=true\n",
        "    - --token\n",
    ] {
        assert!(api.contains(kept), "{kept:?} lost:\n{api}");
    }
    assert!(extra.contains(&format!("@sha256:{}\n", "ab12".repeat(16))));
    assert!(extra.contains("      value: x-plain-value\n"), "{extra}");
    assert!(get("manifests/kube-vip.yaml").contains("      value: 10.0.0.10\n"));
    let flow = get("manifests/flow.yaml");
    assert!(flow.contains("    - --v=2\n    - --password\n"), "{flow}");
    assert!(
        flow.contains("--upstream=https://root:<redacted sha256:"),
        "{flow}"
    );
    assert!(flow.contains("@10.0.0.1:2379\n"), "{flow}");
    assert!(get("manifests/json-pod.json").contains("    - --v=2\n"));
    // A kubeadm manifest with no secret comes out as it went in.
    let etcd = std::fs::read_to_string(root.join(K).join("manifests/etcd.yaml")).unwrap();
    assert_eq!(get("manifests/etcd.yaml"), etcd);
    // The PEM key is refused whole, as before; the files that do not read
    // are left out, listed with why.
    let skipped = ev["skipped"].to_string();
    assert!(
        skipped
            .contains("/etc/kubernetes/manifests/pem.yaml\",\"reason\":\"looks like a private key"),
        "{skipped}"
    );
    for (_, path, why) in LEFT_OUT {
        assert!(
            ev["skipped"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["path"] == path && s["reason"].as_str().unwrap().starts_with(why)),
            "{path}: {skipped}"
        );
        let member = format!("nvke-evidence{}", path.replace("/etc/kubernetes", ""));
        assert!(!files.iter().any(|(f, _)| *f == member), "{member}");
    }
    // Counted in the document, the bundle's manifest and the text:
    // kube-apiserver 2, the agent's copy 2, kube-vip 4, the staged
    // scheduler 1, extra.yaml 5 (the DER, the JWT twice, the bootstrap
    // token, the password in a block), json-pod.json 1, flow.yaml 4.
    let m: Value = serde_json::from_str(&get("evidence.json")).unwrap();
    assert_eq!(ev["redacted"], 19, "{ev}");
    assert_eq!(m["redacted"], ev["redacted"]);
    std::fs::remove_file(root.join("tmp/x.tgz")).unwrap();
    let text = run(&root, &["--evidence", "/tmp/x.tgz"]).stdout;
    assert!(text.contains("19 credential values redacted"), "{text}");
    assert!(text.contains("duplicate mapping key"), "{text}");
    // Two bundles of the same node still compare.
    let again = get("manifests/kube-apiserver.yaml");
    assert_eq!(again, api);
}

/// SPEC 6 v1.3: a staging conflict whose staged copy the bundle cannot
/// read (a duplicate key) carries no diff in the bundle, only why; its
/// credential is nowhere in the bundle (the printed document keeps the
/// node's diff, for the operator's screen).
#[test]
fn a_conflict_with_a_copy_left_out_has_no_diff_in_the_bundle() {
    let (_t, root) = node(
        r#"
agent_staging_dir
sed 's|^kind: Pod$|&\nkind: Pod|; s|^    - kube-apiserver$|&\n    - --etcd-password=Conflict-Pass-1|' "$K/manifests/kube-apiserver.yaml" | put "$K/nvke-cert-renewal-manifests/kube-apiserver.yaml"
"#,
    );
    let r = run(&root, &["--output", "json", "--evidence", "/tmp/x.tgz"]);
    let doc = json(&r);
    assert_eq!(doc["evidence"]["written"], true, "{doc}");
    assert!(r.stdout.contains("Conflict-Pass-1"), "{}", r.stdout);
    let (_x, files) = extract(&root.join("tmp/x.tgz"));
    for (name, bytes) in &files {
        assert!(
            !String::from_utf8_lossy(bytes).contains("Conflict-Pass-1"),
            "{name} holds the staged copy's password"
        );
    }
    let status = &files
        .iter()
        .find(|(f, _)| f == "nvke-evidence/status.json")
        .unwrap()
        .1;
    let status: Value = serde_json::from_slice(status).unwrap();
    let staged = "/etc/kubernetes/nvke-cert-renewal-manifests/kube-apiserver.yaml";
    assert_eq!(
        status["conflicts"][0]["diff"],
        serde_json::json!([format!(
            "(not compared in the bundle: {staged}: not redacted, so left out: does not parse as YAML: a duplicate mapping key at line 3, column 1)"
        )]),
        "{status}"
    );
}

/// SPEC 6 v1.2 (issue 25 item 3): 1,100 receipts whose IDs and times
/// agree: the bundle holds the asked (old) operation's receipt, then the
/// newest, 1,000 in all, and says it left 100 out.
#[test]
fn receipts_go_in_newest_first_the_asked_ones_always() {
    let (_t, root) = node("receipt op-template renewed");
    let completed = root.join(STATE).join("completed");
    let template = std::fs::read_to_string(completed.join("op-template.json")).unwrap();
    std::fs::remove_file(completed.join("op-template.json")).unwrap();
    let id = |i: u64| format!("op-2025{:06}", i);
    let base = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_735_689_600);
    for i in 0..1100u64 {
        let p = completed.join(format!("{}.json", id(i)));
        std::fs::write(&p, template.replace("op-template", &id(i))).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(base + std::time::Duration::from_secs(43_200 * i))
            .unwrap();
    }
    let asked = id(3);
    let r = run(
        &root,
        &[
            "--output",
            "json",
            "--operation-id",
            &asked,
            "--evidence",
            "/tmp/x.tgz",
        ],
    );
    let doc = json(&r);
    let ev = &doc["evidence"];
    assert_eq!(ev["written"], true, "{ev}");
    let names: Vec<String> = listing(&root.join("tmp/x.tgz"))
        .into_iter()
        .filter_map(|(_, _, n)| {
            n.strip_prefix("nvke-evidence/state/completed/")
                .and_then(|n| n.strip_suffix(".json"))
                .map(str::to_string)
        })
        .collect();
    let mut want = vec![asked.clone()];
    want.extend((100..1100).rev().map(id).take(999));
    assert_eq!(names.len(), 1000);
    assert_eq!(names[..25], want[..25], "the asked one, then the newest");
    assert_eq!(names, want);
    assert_eq!(ev["receipts"], 1000, "{ev}");
    assert_eq!(ev["receiptsLeftOut"], 100, "{ev}");
    let (_x, files) = extract(&root.join("tmp/x.tgz"));
    let m: Value = serde_json::from_slice(
        &files
            .iter()
            .find(|(f, _)| f == "nvke-evidence/evidence.json")
            .unwrap()
            .1,
    )
    .unwrap();
    assert_eq!(m["receipts"], 1000);
    assert_eq!(m["receiptsLeftOut"], 100);
    assert!(
        ev["skipped"]
            .to_string()
            .contains("100 older entries left out"),
        "{ev}"
    );
    std::fs::remove_file(root.join("tmp/x.tgz")).unwrap();
    let text = run(
        &root,
        &["--operation-id", &asked, "--evidence", "/tmp/x.tgz"],
    )
    .stdout;
    assert!(text.contains("receipts 1000 (100 left out)"), "{text}");
}

/// SPEC 6 v1.2 (issue 25 item 4): SIGTERM, SIGINT or SIGHUP while the
/// bundle is being written (its temp file is there, beside PATH, held by
/// the failpoint `evidence-before-link`) leaves no file at PATH and no temp
/// file, and the view still prints exactly one JSON document that says so.
#[cfg(feature = "failpoints")]
#[test]
fn a_signal_while_writing_evidence_leaves_no_file_and_one_document() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        let (_t, root) = node("");
        let tmp = root.join("tmp");
        let child = support::netns::hermetic(&mut Command::new(RUNBOOK))
            .args([
                "--root",
                root.to_str().unwrap(),
                "--now",
                NOW,
                "--status-only",
            ])
            .args(["--output", "json", "--evidence", "/tmp/x.tgz"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("FAILPOINTS", "evidence-before-link=sleep(1500)")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let entries = || -> Vec<String> {
            std::fs::read_dir(&tmp)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        let start = Instant::now();
        while !entries().iter().any(|n| n.starts_with(".x.tgz.tmp-")) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{sig}: no temp file beside PATH: {:?}",
                entries()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        kill(Pid::from_raw(child.id() as i32), sig).unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{sig}: {:?} {stdout}",
            out.status
        );
        assert_eq!(stdout.lines().count(), 1, "{sig}: {stdout}");
        let doc: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(doc["evidence"]["written"], false, "{sig}: {doc}");
        assert!(
            doc["evidence"]["error"]
                .as_str()
                .unwrap()
                .starts_with("interrupted by a signal"),
            "{sig}: {doc}"
        );
        assert_eq!(doc["exitCode"], 1);
        assert!(entries().is_empty(), "{sig}: left behind: {:?}", entries());
    }
}

// ---------------------------------------------------------------- property

/// A generated manifest, written by the test in one of three syntaxes.
#[derive(Clone, Debug)]
enum G {
    /// A scalar of characters no syntax escapes.
    S(String),
    /// A plain scalar folded over two lines (`a` then `b` deeper: `a b`).
    Fold(String, String),
    /// `&name value`.
    Anchor(String, String),
    /// `*name` (its anchor's value, for JSON).
    Alias(String, String),
    L(Vec<G>),
    M(Vec<(String, G)>),
}

/// How a generated manifest is written.
#[derive(Clone, Copy, Debug)]
enum Syntax {
    Block,
    Flow,
    Json,
}

/// Layout choices: indent width, whether a block sequence is indented
/// under its key, and a stream of coin flips (value on the next line,
/// quotes, line breaks inside flow collections).
#[derive(Clone, Debug)]
struct Layout {
    indent: usize,
    seq_indented: bool,
    flips: Vec<u8>,
    at: std::cell::Cell<usize>,
}

impl Layout {
    fn flip(&self) -> u8 {
        let i = self.at.get();
        self.at.set(i + 1);
        self.flips[i % self.flips.len()]
    }
}

fn pad(out: &mut String, n: usize) {
    out.push_str(&" ".repeat(n));
}

/// A scalar in YAML: plain, single- or double-quoted (no escape needed).
fn yaml_scalar(g: &G, l: &Layout, cont: usize, out: &mut String) {
    match g {
        G::S(s) => match l.flip() % 3 {
            0 if !s.starts_with(['-', '*', '&', '{', '[']) => out.push_str(s),
            1 => out.push_str(&format!("'{s}'")),
            _ => out.push_str(&format!("\"{s}\"")),
        },
        G::Fold(a, b) => {
            out.push_str(a);
            out.push('\n');
            pad(out, cont);
            out.push_str(b);
        }
        G::Anchor(n, v) => out.push_str(&format!("&{n} {v}")),
        G::Alias(n, _) => out.push_str(&format!("*{n}")),
        _ => unreachable!(),
    }
}

fn block(g: &G, l: &Layout, ind: usize, inline: bool, out: &mut String) {
    match g {
        G::L(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 || !inline {
                    pad(out, ind);
                }
                out.push_str("- ");
                block(item, l, ind + 2, true, out);
            }
        }
        G::M(pairs) if !pairs.is_empty() => {
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 || !inline {
                    pad(out, ind);
                }
                out.push_str(k);
                out.push(':');
                match v {
                    G::L(items) if !items.is_empty() => {
                        out.push('\n');
                        let deeper = if l.seq_indented { l.indent } else { 0 };
                        block(v, l, ind + deeper, false, out);
                    }
                    G::M(p) if !p.is_empty() => {
                        out.push('\n');
                        block(v, l, ind + l.indent, false, out);
                    }
                    G::L(_) => out.push_str(" []\n"),
                    G::M(_) => out.push_str(" {}\n"),
                    scalar => {
                        // The value on the key's line, or on the next one.
                        if l.flip().is_multiple_of(2) {
                            out.push(' ');
                        } else {
                            out.push('\n');
                            pad(out, ind + l.indent);
                        }
                        yaml_scalar(scalar, l, ind + l.indent + 1, out);
                        out.push('\n');
                    }
                }
            }
        }
        G::L(_) => out.push_str("[]\n"),
        G::M(_) => out.push_str("{}\n"),
        scalar => {
            yaml_scalar(scalar, l, ind + 1, out);
            out.push('\n');
        }
    }
}

/// Flow style, a line break (deeper than `base`) after some commas and
/// openings.
fn flow(g: &G, l: &Layout, base: usize, out: &mut String) {
    let brk = |out: &mut String| {
        if l.flip().is_multiple_of(3) {
            out.push('\n');
            pad(out, base + 1 + (l.flip() % 5) as usize);
        }
    };
    match g {
        G::L(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                brk(out);
                flow(item, l, base, out);
            }
            out.push(']');
        }
        G::M(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                brk(out);
                out.push_str(k);
                out.push_str(": ");
                flow(v, l, base, out);
            }
            out.push('}');
        }
        scalar => yaml_scalar(scalar, l, base + 2, out),
    }
}

fn to_json(g: &G) -> Value {
    match g {
        G::S(s) | G::Anchor(_, s) | G::Alias(_, s) => Value::String(s.clone()),
        G::Fold(a, b) => Value::String(format!("{a} {b}")),
        G::L(items) => Value::Array(items.iter().map(to_json).collect()),
        G::M(pairs) => Value::Object(pairs.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

fn write_manifest(g: &G, syntax: Syntax, l: &Layout) -> String {
    let mut out = String::new();
    match syntax {
        Syntax::Block => block(g, l, 0, false, &mut out),
        Syntax::Flow => {
            // A block mapping at the top, each value a flow collection.
            let G::M(pairs) = g else { unreachable!() };
            for (k, v) in pairs {
                out.push_str(k);
                out.push_str(": ");
                flow(v, l, 0, &mut out);
                out.push('\n');
            }
        }
        Syntax::Json => {
            let v = to_json(g);
            let indent = [&b" "[..], b"  ", b"    ", b"\t"][(l.flip() % 4) as usize];
            let mut buf = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(indent);
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
            serde::Serialize::serialize(&v, &mut ser).unwrap();
            out = String::from_utf8(buf).unwrap();
            out.push('\n');
        }
    }
    out
}

/// The credential shapes of SPEC 6 v1.2 and v1.3, as the generator plants them.
const SHAPES: [&str; 12] = [
    "--NAME=V",
    "--NAME then V",
    "a shell command's --NAME=V",
    "env {name, value}",
    "env value folded over two lines",
    "a credential key",
    "an Authorization header",
    "a Basic header",
    "a URL's password",
    "long base64",
    "an anchor aliased into a credential's place",
    "kube-vip bgp_peerpass",
];

/// The values every generated manifest holds that must stay.
fn kept_values() -> Vec<String> {
    vec![
        "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key".into(),
        "--enable-bootstrap-token-auth=true".into(),
        "--service-account-max-token-expiration=48h".into(),
        format!(
            "registry.k8s.io/etcd:3.5.15-0@sha256:{}",
            "0123456789abcdef".repeat(4)
        ),
        "plain-value-1".into(),
    ]
}

/// A manifest with `plants` credentials (shape index, value) and the
/// byte strings that must not be in any bundle.
fn manifest_of(plants: &[(usize, String)]) -> (G, Vec<String>) {
    let s = |v: &str| G::S(v.to_string());
    let kept = kept_values();
    let mut command = vec![
        s("kube-gen"),
        s(&kept[0]),
        s("--v=2"),
        s(&kept[1]),
        s(&kept[2]),
    ];
    let mut env = vec![G::M(vec![
        ("name".into(), s("PLAIN")),
        ("value".into(), s(&kept[4])),
    ])];
    let mut headers = vec![G::M(vec![
        ("name".into(), s("Accept")),
        ("value".into(), s("json")),
    ])];
    let mut annotations = vec![("example.com/plain".to_string(), s("x"))];
    let mut config = vec![("user".to_string(), s("admin"))];
    let mut secrets = Vec::new();
    let names = [
        "etcd-password",
        "token",
        "client-secret",
        "api-key",
        "bgp-passwd",
    ];
    let envs = [
        "DB_PASSWORD",
        "API_TOKEN",
        "CLIENT_SECRET",
        "SSH_KEY",
        "X_PASSWD",
    ];
    for (i, (shape, v)) in plants.iter().enumerate() {
        let name = names[i % names.len()];
        let env_name = envs[i % envs.len()];
        secrets.push(v.clone());
        match shape {
            0 => command.push(s(&format!("--{name}={v}"))),
            1 => command.extend([s(&format!("--{name}")), s(v)]),
            2 => command.push(s(&format!("exec kube-gen --{name}={v} --v=2"))),
            3 => env.push(if i % 2 == 0 {
                G::M(vec![("name".into(), s(env_name)), ("value".into(), s(v))])
            } else {
                G::M(vec![("value".into(), s(v)), ("name".into(), s(env_name))])
            }),
            4 => {
                let (a, b) = v.split_at(v.len() / 2);
                env.push(G::M(vec![
                    ("name".into(), s(env_name)),
                    ("value".into(), G::Fold(a.to_string(), b.to_string())),
                ]));
                secrets.pop();
                secrets.extend([a.to_string(), b.to_string()]);
            }
            5 => config.push((
                format!("{}-{i}", ["password", "token", "bgp_peerpass"][i % 3]),
                s(v),
            )),
            6 => headers.push(G::M(vec![
                ("name".into(), s(["Authorization", "authorization"][i % 2])),
                ("value".into(), s(&format!("Bearer {v}"))),
            ])),
            7 => headers.push(G::M(vec![
                ("name".into(), s("X-Upstream")),
                ("value".into(), s(&format!("Basic {v}"))),
            ])),
            8 => command.push(s(&format!("--etcd-servers=https://root:{v}@10.0.0.1:2379"))),
            9 => annotations.push((format!("example.com/blob-{i}"), s(v))),
            10 => {
                let anchor = format!("a{i}");
                annotations.push((
                    format!("example.com/note-{i}"),
                    G::Anchor(anchor.clone(), v.clone()),
                ));
                env.push(G::M(vec![
                    ("name".into(), s(env_name)),
                    ("value".into(), G::Alias(anchor, v.clone())),
                ]));
            }
            _ => env.push(G::M(vec![
                ("name".into(), s("bgp_peerpass")),
                ("value".into(), s(v)),
            ])),
        }
    }
    let container = G::M(vec![
        ("name".into(), s("gen")),
        ("image".into(), s(&kept[3])),
        ("command".into(), G::L(command)),
        ("env".into(), G::L(env)),
        ("x-config".into(), G::M(config)),
        (
            "livenessProbe".into(),
            G::M(vec![(
                "httpGet".into(),
                G::M(vec![
                    ("path".into(), s("/healthz")),
                    ("httpHeaders".into(), G::L(headers)),
                ]),
            )]),
        ),
    ]);
    let pod = G::M(vec![
        ("apiVersion".into(), s("v1")),
        ("kind".into(), s("Pod")),
        (
            "metadata".into(),
            G::M(vec![
                ("name".into(), s("gen")),
                ("annotations".into(), G::M(annotations)),
            ]),
        ),
        (
            "spec".into(),
            G::M(vec![("containers".into(), G::L(vec![container]))]),
        ),
    ]);
    (pod, secrets)
}

/// A credential of shape `shape`, unique by `i`: characters no syntax
/// escapes, never a path, a boolean or a duration.
fn arb_plants() -> impl proptest::strategy::Strategy<Value = Vec<(usize, String)>> {
    use proptest::prelude::*;
    proptest::collection::vec(
        (
            0..SHAPES.len(),
            "[A-Za-z0-9._-]{6,20}",
            "[A-Za-z0-9+/]{70,90}",
        ),
        1..12,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (shape, word, b64))| {
                let value = if shape == 9 {
                    // Long base64: mixed case and a digit, whatever was drawn.
                    format!("Zq{i}{b64}")
                } else {
                    format!("Cr{i}d{word}")
                };
                (shape, value)
            })
            .collect()
    })
}

fn arb_layout() -> impl proptest::strategy::Strategy<Value = (Syntax, Layout)> {
    use proptest::prelude::*;
    (
        prop_oneof![Just(Syntax::Block), Just(Syntax::Flow), Just(Syntax::Json)],
        2usize..=4,
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 1..64),
    )
        .prop_map(|(syntax, indent, seq_indented, flips)| {
            (
                syntax,
                Layout {
                    indent,
                    seq_indented,
                    flips,
                    at: std::cell::Cell::new(0),
                },
            )
        })
}

/// SPEC 6 v1.3 (issue 40 item 3): for generated manifests (YAML block,
/// YAML flow, JSON; random indentation, values on the next line, flow
/// collections broken over lines, plain scalars folded) with random
/// credentials in every shape, the redactor's output holds no credential
/// byte string and keeps every path, digest and plain value; it is the
/// same bytes twice; then one bundle of such manifests, end to end.
#[test]
fn generated_manifests_leak_no_credential() {
    use nvke_cert_runbook::rules::redact::redact;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, TestRunner};
    let cases = 256;
    let mut runner = TestRunner::new(Config::with_cases(cases));
    let generated = std::cell::Cell::new(0u32);
    let shapes = std::cell::RefCell::new(BTreeSet::new());
    let strategy = (arb_plants(), arb_layout());
    runner
        .run(&strategy, |(plants, (syntax, layout))| {
            let (pod, secrets) = manifest_of(&plants);
            let text = write_manifest(&pod, syntax, &layout);
            let out = redact(text.as_bytes())
                .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e}:\n{text}")))?;
            for s in &secrets {
                proptest::prop_assert!(
                    !out.text.contains(s.as_str()),
                    "{s:?} leaked from\n{text}\nas\n{}",
                    out.text
                );
            }
            for k in kept_values() {
                proptest::prop_assert!(
                    out.text.contains(&k),
                    "{k:?} lost from\n{text}\nas\n{}",
                    out.text
                );
            }
            let again = redact(text.as_bytes()).unwrap();
            proptest::prop_assert_eq!(&again, &out);
            generated.set(generated.get() + 1);
            shapes.borrow_mut().extend(plants.iter().map(|(s, _)| *s));
            Ok(())
        })
        .unwrap();
    assert_eq!(shapes.borrow().len(), SHAPES.len(), "every shape generated");

    // One bundle, end to end: a manifest of every shape in each syntax.
    let all: Vec<(usize, String)> = (0..SHAPES.len())
        .map(|s| {
            (
                s,
                format!(
                    "Cr{s}dEndToEnd{s}x{}",
                    "Ab1".repeat(if s == 9 { 30 } else { 1 })
                ),
            )
        })
        .collect();
    let (pod, secrets) = manifest_of(&all);
    let (_t, root) = node("");
    let mut layout = arb_layout().new_tree(&mut runner).unwrap().current().1;
    for (i, (syntax, name)) in [
        (Syntax::Block, "gen-block.yaml"),
        (Syntax::Flow, "gen-flow.yaml"),
        (Syntax::Json, "gen.json"),
    ]
    .into_iter()
    .enumerate()
    {
        layout.indent = 2 + i;
        let p = root.join(K).join("manifests").join(name);
        std::fs::write(&p, write_manifest(&pod, syntax, &layout)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let r = run(&root, &["--output", "json", "--evidence", "/tmp/x.tgz"]);
    let ev = &json(&r)["evidence"];
    assert_eq!(ev["written"], true, "{ev}");
    assert_eq!(ev["skipped"], serde_json::json!([]), "{ev}");
    let (_x, files) = extract(&root.join("tmp/x.tgz"));
    for (name, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "{name} holds {s:?}");
        }
    }
    for name in ["gen-block.yaml", "gen-flow.yaml", "gen.json"] {
        let member = format!("nvke-evidence/manifests/{name}");
        let (_, bytes) = files.iter().find(|(f, _)| *f == member).unwrap();
        let text = String::from_utf8_lossy(bytes);
        for k in kept_values() {
            assert!(text.contains(&k), "{member} lost {k:?}:\n{text}");
        }
    }
    support::say(&format!(
        "evidence: {} generated manifests, {} credential shapes, 0 leaked (and one bundle of 3, end to end)",
        generated.get(),
        SHAPES.len()
    ));
}
