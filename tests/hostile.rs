//! The hostile-input table and the symlink flipper.
//!
//! `hostile_inputs`: a generated table of hostile inputs, each run against a
//! fresh copy of a node: a plain fixture copy (`fixtures/nodes/rsa`) for the
//! cases refused before the runbook needs its tools, the simulated node
//! (tests/support/node.rs: kubelet, crictl, kubeadm, TLS stand-ins) for the
//! rest. Every case must be refused with the exit code SPEC section 7 gives,
//! exactly one JSON object on stdout whose `message` (at most 512 bytes, no
//! control characters) or stderr names the offending path or value, within a
//! bounded time, and change nothing:
//!
//! - the whole node root is snapshotted before and after (every path, its
//!   type, mode, owner, group, sha256 of its bytes, symlink target) and must
//!   be identical, except for the files SPEC requires a refused run to
//!   write, named per case at the end of its row (`SPEC writes: ...`, see
//!   `Allow`): the lock owner record and the operation log (section 4 step
//!   1, section 8), the failure receipt of a V2 run that got past its
//!   own-receipt check (section 3, "every V2 run that got past step 2 ends
//!   with exactly one receipt"; checked to exist, with the expected phase),
//!   for a refusal after kubeadm ran the `renewing` phase file and the
//!   backup of step 8 (the PKI itself is rolled back: its bytes, modes and
//!   owners are compared like everything else), and for the fencing check
//!   the lock owner record (and the `abandoned` receipt where SPEC 6
//!   confirms termination). Nothing may disappear;
//! - a sentinel directory outside the root (copies of a state dir, the PKI,
//!   the manifests, a valid phase file and receipt for the case's own
//!   operation ID, fake tools) is what every planted symlink and hard link
//!   points at. It is snapshotted with mtimes and inodes before and after
//!   (tests/support/tree.rs), and watched
//!   with inotify during the run: any event at all (open, read, listing,
//!   create, write, delete, attribute change) is a failure, so "followed a
//!   symlink to read" is caught as well as "wrote through it";
//! - the plain cases get tripwire tools (`--crictl`/`--kubeadm` point at
//!   scripts that record that they ran): none of them may run;
//! - the `evidence` rows (`evidence_cases`) plant a secret where the
//!   evidence bundle reads and ask for the bundle: the bundle is the one
//!   file they may write, and it is extracted with the real `tar` and must
//!   hold none of the secret (its `<redacted sha256:...>` mark instead, or
//!   the file refused whole).
//!
//! A NUL byte cannot be passed in argv (execve takes C strings; std refuses
//! to spawn such a command), and the runbook has no other way to take an
//! operation ID. The test checks that the spawn is refused and approximates
//! NUL with other control characters (0x01, ESC, newline) and non-UTF-8
//! bytes; see the `opid-*` rows.
//!
//! Prints one row per case and `hostile inputs: N refused of N, nothing
//! changed` (on stdout, past cargo's capture, like tests/crash.rs).
//! `NVKE_HOSTILE_JOBS` (default 3): cases side by side;
//! `NVKE_HOSTILE_ONLY=TEXT`: only the cases whose id contains TEXT;
//! `NVKE_HOSTILE_VERBOSE=1`: each case's whole message too.
//!
//! Not in the table, because the runbook accepts them by design and they are
//! harmless: a hard link planted as the lock (never written), as a manifest
//! (only ever renamed) or as a CA (only read). A CA certificate or key not
//! owned by root or writable by others is in the table: a renewal refuses it
//! at the CA check (`--check` and `--status-only` read PKI files vetted for
//! type only, `Trust::TypeOnly` in src/node/fsx/mod.rs).
//!
//! `symlink_flipper`: while a full renewal runs on the simulated node (100 ms
//! kubelet latencies), a thread swaps a directory under the root with a
//! symlink to an outside sentinel directory holding a copy of it, and back,
//! in a tight loop (renameat2 RENAME_EXCHANGE, so the real directory never
//! disappears, only changes name). The run may fail; it must never create,
//! modify or delete anything in the sentinel (inotify for changes, plus a
//! snapshot with mtimes and inodes), and after the flipper stops and the
//! tree is restored, the controller's recovery (fencing check, then a new
//! operation; tests/support/oracle.rs) must confirm, resume as the phase file
//! says, put all four manifests back with their original bytes and modes,
//! keep the CAs, leave the phase done, no temp file and the node clean
//! (`--status-only` exits 0). Reads
//! through a swapped-in symlink are not told apart here: the stand-in kubelet
//! and TLS servers (not the runbook) legitimately read the swapped paths.
//! `NVKE_FLIP_ONLY=TEXT`: only the rounds whose name contains TEXT. Prints
//! `symlink flipper: N rounds recovered of N, ...`.
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// They also make the system calls the runbook makes, to plant and provoke
// (signals, pre_exec, raw fds): unsafe as the tests need it.
#![allow(unsafe_code)]

mod support;

use nix::libc;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::node::*;
use support::oracle::{base_of, fence, new_operation, After, Seen};
use support::tree::{all_dirs, chmod, copy_exact, copy_tree, diff, snapshot, write_executable};
use support::{say, tail};

/// The operation ID every renewal case runs under.
const ID: &str = "op-hostile";
const AGENT_STAGING: &str = "etc/kubernetes/nvke-cert-renewal-manifests";
const NOBODY: u32 = 65534;
/// A "due" clock: etcd-peer (2027-03-01) is within 30 days.
const DUE: &str = "2027-02-15T00:00:00Z";
/// Hard bound for one runbook process; a case that needs it has hung.
const RUN_LIMIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- inotify

/// An inotify watch on every directory of a tree (nix's inotify needs a
/// feature this crate does not enable; its libc re-export is enough).
struct Watch {
    fd: OwnedFd,
    dirs: HashMap<i32, PathBuf>,
}

const CHANGE_EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

impl Watch {
    fn new(top: &Path, mask: u32) -> Watch {
        // SAFETY: plain syscalls; the fd is owned right away.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            raw >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut dirs = HashMap::new();
        for d in all_dirs(top) {
            let c = CString::new(d.as_os_str().as_bytes()).unwrap();
            let wd = unsafe {
                libc::inotify_add_watch(
                    fd.as_raw_fd(),
                    c.as_ptr(),
                    mask | libc::IN_DONT_FOLLOW | libc::IN_ONLYDIR,
                )
            };
            assert!(
                wd >= 0,
                "inotify_add_watch {}: {}",
                d.display(),
                std::io::Error::last_os_error()
            );
            dirs.insert(wd, d);
        }
        Watch { fd, dirs }
    }

    /// Everything seen so far, as `EVENT path` lines.
    fn events(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reading into a buffer we own, of its length.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            if n <= 0 {
                break;
            }
            let n = n as usize;
            let mut off = 0usize;
            while off + 16 <= n {
                let word =
                    |i: usize| u32::from_ne_bytes(buf[off + i..off + i + 4].try_into().unwrap());
                let wd = word(0) as i32;
                let mask = word(4);
                let len = word(12) as usize;
                let name_bytes = &buf[off + 16..(off + 16 + len).min(n)];
                let name: Vec<u8> = name_bytes.iter().copied().take_while(|b| *b != 0).collect();
                off += 16 + len;
                // A close alone says nothing: every open is an IN_OPEN and
                // every write an IN_MODIFY of their own. And a close can come
                // from a child of another test thread, forked while the
                // sentinel was being written, closing its inherited copy of
                // the fd at exec.
                let close = libc::IN_CLOSE_WRITE | libc::IN_CLOSE_NOWRITE;
                if mask & libc::IN_IGNORED != 0 || mask & !(close | libc::IN_ISDIR) == 0 {
                    continue;
                }
                let dir = self
                    .dirs
                    .get(&wd)
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|| "?".into());
                out.push(format!(
                    "{} {dir}/{}",
                    event_names(mask),
                    String::from_utf8_lossy(&name)
                ));
            }
        }
        out
    }
}

fn event_names(mask: u32) -> String {
    let names = [
        (libc::IN_ACCESS, "ACCESS"),
        (libc::IN_MODIFY, "MODIFY"),
        (libc::IN_ATTRIB, "ATTRIB"),
        (libc::IN_CLOSE_WRITE, "CLOSE_WRITE"),
        (libc::IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"),
        (libc::IN_OPEN, "OPEN"),
        (libc::IN_MOVED_FROM, "MOVED_FROM"),
        (libc::IN_MOVED_TO, "MOVED_TO"),
        (libc::IN_CREATE, "CREATE"),
        (libc::IN_DELETE, "DELETE"),
        (libc::IN_DELETE_SELF, "DELETE_SELF"),
        (libc::IN_MOVE_SELF, "MOVE_SELF"),
        (libc::IN_Q_OVERFLOW, "OVERFLOW"),
    ];
    let v: Vec<&str> = names
        .iter()
        .filter(|(m, _)| mask & m != 0)
        .map(|(_, n)| *n)
        .collect();
    v.join("|")
}

// ---------------------------------------------------------------- node content

fn receipt_json(root: &Path, id: &str, outcome: &str) -> String {
    serde_json::to_string_pretty(&json!({
        "format": "nvke-cert-runbook/receipt/v1",
        "operationID": id,
        "outcome": outcome,
        "phase": "done",
        "message": "fixture receipt",
        "failedComponent": null,
        "manifests": {
            "etcd": "active",
            "kube-apiserver": "active",
            "kube-controller-manager": "active",
            "kube-scheduler": "active",
        },
        "finishedAt": "2026-11-29T23:30:00Z",
        "runbookVersion": "0.1.0",
        "caSHA256": {
            "ca.crt": ca_sha_at(root, "ca.crt"),
            "etcd/ca.crt": ca_sha_at(root, "etcd/ca.crt"),
            "front-proxy-ca.crt": ca_sha_at(root, "front-proxy-ca.crt"),
        },
    }))
    .unwrap()
        + "\n"
}

fn write_mode(p: &Path, bytes: &[u8], mode: u32) {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(p, bytes).unwrap();
    chmod(p, mode);
}

fn script(p: &Path, body: &str) -> PathBuf {
    write_executable(p, &format!("#!/bin/sh\n{body}\n"));
    p.to_path_buf()
}

// ---------------------------------------------------------------- one case's world

/// One case's node: a plain fixture copy or the simulated node, the
/// sentinel directory outside the root, and a work directory (scripts,
/// stdout/stderr files, the tripwire record).
struct Env {
    node: Option<Node>,
    root: PathBuf,
    outside: PathBuf,
    work: PathBuf,
    mounts: Mutex<Vec<PathBuf>>,
    held: Mutex<Vec<std::fs::File>>,
    // Last: removed after the node is dropped and the mounts are gone.
    _tmp: tempfile::TempDir,
}

impl Env {
    fn new(variant: &str, sim: Option<&Value>) -> Env {
        let tmp = tempfile::Builder::new()
            .prefix("nvke-hostile-")
            .tempdir()
            .unwrap();
        let (node, root) = match sim {
            Some(knobs) => {
                let n = Node::new(variant, knobs.clone());
                let r = n.root.clone();
                (Some(n), r)
            }
            None => {
                let r = tmp.path().join("root");
                copy_tree(
                    &Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("fixtures/nodes")
                        .join(variant),
                    &r,
                );
                (None, r)
            }
        };
        let work = tmp.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let e = Env {
            node,
            root,
            outside: tmp.path().join("outside"),
            work,
            mounts: Mutex::new(Vec::new()),
            held: Mutex::new(Vec::new()),
            _tmp: tmp,
        };
        // A node that renewed before: the state directory and the lock file.
        for d in ["var", "var/lib", "var/lib/nvke"] {
            std::fs::create_dir_all(e.p(d)).unwrap();
            chmod(&e.p(d), 0o755);
        }
        std::fs::create_dir_all(e.p(STATE)).unwrap();
        chmod(&e.p(STATE), 0o700);
        write_mode(&e.p(&format!("{STATE}/lock")), b"", 0o600);
        e.make_outside();
        let ran = e.work.join("tool-ran");
        for tool in ["crictl", "kubeadm"] {
            script(
                &e.work.join(format!("tripwire-{tool}")),
                &format!("echo \"$0 $*\" >> '{}'\nexit 1", ran.display()),
            );
        }
        e
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn o(&self, name: &str) -> PathBuf {
        self.outside.join(name)
    }

    /// The sentinel: plausible targets for every planted link.
    fn make_outside(&self) {
        let o = &self.outside;
        std::fs::create_dir_all(o).unwrap();
        chmod(o, 0o755);
        write_mode(
            &o.join("secret"),
            b"sentinel: never read, written or followed into\n",
            0o600,
        );
        write_mode(
            &o.join("garbage"),
            b"\xff\xfe not a phase file \x00\x1b[31m\x07\n",
            0o600,
        );
        write_mode(
            &o.join("hardlink-me"),
            b"\xff\xfe hard-linked garbage\n",
            0o600,
        );
        write_mode(
            &o.join("phase-v2"),
            v2_phase_at(&self.root, ID, "restart_pending", Some("etcd")).as_bytes(),
            0o600,
        );
        write_mode(
            &o.join("receipt.json"),
            receipt_json(&self.root, ID, "renewed").as_bytes(),
            0o600,
        );
        std::fs::create_dir_all(o.join("dir")).unwrap();
        chmod(&o.join("dir"), 0o700);
        write_mode(&o.join("dir/x"), b"x\n", 0o600);
        copy_exact(&self.p(MANIFESTS), &o.join("manifests"));
        copy_exact(&self.p(PKI), &o.join("pki"));
        for d in ["state", "nvke", "nvke/k8s-cert-renewal"] {
            std::fs::create_dir_all(o.join(d)).unwrap();
            chmod(&o.join(d), 0o700);
        }
        write_mode(&o.join("state/lock"), b"", 0o600);
        write_mode(&o.join("nvke/k8s-cert-renewal/lock"), b"", 0o600);
        let pwned = o.join("pwned");
        for tool in ["kubeadm", "crictl"] {
            script(
                &o.join("bin").join(tool),
                &format!("echo \"$0 $*\" > '{}'\nexit 0", pwned.display()),
            );
        }
    }

    fn crictl(&self) -> PathBuf {
        match &self.node {
            Some(n) => n.sim.join("bin/crictl"),
            None => self.work.join("tripwire-crictl"),
        }
    }

    fn kubeadm(&self) -> PathBuf {
        match &self.node {
            Some(n) => n.sim.join("bin/kubeadm"),
            None => self.work.join("tripwire-kubeadm"),
        }
    }

    fn sim_crictl(&self) -> PathBuf {
        self.node
            .as_ref()
            .expect("a simulated node")
            .sim
            .join("bin/crictl")
    }

    fn script(&self, name: &str, body: &str) -> PathBuf {
        script(&self.work.join(name), body)
    }

    fn mount_tmpfs(&self, rel: &str) -> Result<(), String> {
        let p = self.p(rel);
        std::fs::create_dir_all(&p).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "mode=0700,size=1m", "tmpfs"])
            .arg(&p)
            .output()
            .map_err(|e| format!("SKIP: cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "SKIP: mount -t tmpfs failed (not root, or no mount privilege): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        self.mounts.lock().unwrap().push(p);
        Ok(())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for m in self.mounts.lock().unwrap().drain(..) {
            let ok = Command::new("umount")
                .arg(&m)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&m).status();
            }
        }
    }
}

// ---------------------------------------------------------------- planting

fn clear(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).unwrap(),
        Ok(_) => std::fs::remove_file(p).unwrap(),
        Err(_) => {}
    }
}

fn parent_dir(p: &Path) {
    if let Some(parent) = p.parent() {
        if !parent.exists() {
            std::fs::create_dir_all(parent).unwrap();
            chmod(parent, 0o700);
        }
    }
}

fn plant_symlink(e: &Env, rel: &str, target: &Path) {
    let p = e.p(rel);
    clear(&p);
    parent_dir(&p);
    std::os::unix::fs::symlink(target, &p).unwrap();
}

fn plant_fifo(e: &Env, rel: &str) {
    let p = e.p(rel);
    clear(&p);
    parent_dir(&p);
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

fn plant_dir(e: &Env, rel: &str) {
    let p = e.p(rel);
    clear(&p);
    parent_dir(&p);
    std::fs::create_dir(&p).unwrap();
    chmod(&p, 0o700);
}

fn plant_hardlink(e: &Env, rel: &str, outside_name: &str) {
    let p = e.p(rel);
    clear(&p);
    parent_dir(&p);
    std::fs::hard_link(e.o(outside_name), &p).unwrap();
}

fn plant_file(e: &Env, rel: &str, bytes: &[u8], mode: u32) {
    let p = e.p(rel);
    clear(&p);
    parent_dir(&p);
    write_mode(&p, bytes, mode);
}

fn chown_nobody(e: &Env, rel: &str) {
    std::os::unix::fs::lchown(e.p(rel), Some(NOBODY), Some(NOBODY)).unwrap();
}

fn chmod_rel(e: &Env, rel: &str, mode: u32) {
    chmod(&e.p(rel), mode);
}

fn st(name: &str) -> String {
    format!("{STATE}/{name}")
}

fn receipt_rel() -> String {
    st(&format!("completed/{ID}.json"))
}

fn completed_dir(e: &Env) {
    let p = e.p(&st("completed"));
    std::fs::create_dir_all(&p).unwrap();
    chmod(&p, 0o700);
}

fn write_phase(e: &Env, content: &str) {
    plant_file(e, &st("phase"), content.as_bytes(), 0o600);
}

fn write_receipt(e: &Env) {
    completed_dir(e);
    plant_file(
        e,
        &receipt_rel(),
        receipt_json(&e.root, ID, "failed").as_bytes(),
        0o600,
    );
}

fn extra(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pki-extra")
        .join(name)
}

/// A kubeadm stand-in that copies `crt`/`key` from fixtures/pki-extra over
/// pki/apiserver.{crt,key} under its `--rootfs`, and exits 0.
/// A kubeadm that renews every leaf (the simulated one), then writes
/// `crt` and `key` over the apiserver's: one bad leaf among renewed ones
/// (SPEC 4 step 8: the proof leaf by leaf passes, the check named fails).
fn kubeadm_writing(crt: &'static str, key: &'static str) -> EnvPath {
    Arc::new(move |e: &Env| {
        e.script(
            "kubeadm-writes",
            &format!(
                "'{}' \"$@\" >/dev/null || exit $?\n\
                 R=''\nwhile [ $# -gt 0 ]; do [ \"$1\" = --rootfs ] && R=\"$2\"; shift; done\n\
                 [ -n \"$R\" ] || exit 3\n\
                 cp '{}' \"$R/etc/kubernetes/pki/apiserver.crt\"\n\
                 cp '{}' \"$R/etc/kubernetes/pki/apiserver.key\"\nexit 0",
                e.kubeadm().display(),
                extra(crt).display(),
                extra(key).display()
            ),
        )
    })
}

/// A crictl that answers etcdctl subcommands matching `pattern` (a shell
/// case pattern over all arguments) with `stdout` and exit 0, and passes
/// everything else to the simulated crictl.
fn crictl_answering(pattern: &str, stdout: &str) -> EnvPath {
    let (pattern, stdout) = (pattern.to_string(), stdout.to_string());
    Arc::new(move |e: &Env| {
        e.script(
            "crictl-wrapper",
            &format!(
                "case \"$*\" in\n  {pattern}) printf '%s\\n' '{stdout}'; exit 0;;\nesac\nexec '{}' \"$@\"",
                e.sim_crictl().display()
            ),
        )
    })
}

// ---------------------------------------------------------------- cases

/// Files SPEC requires a refused run to write (see the module doc). Each
/// may appear or change; nothing may disappear; everything else must be
/// byte-for-byte, mode, owner and type identical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allow {
    Nothing,
    /// A fencing check that ends unconfirmed took the lock and wrote
    /// nothing else (SPEC 6: "nothing written"; the owner record is written
    /// only before a fencing check's first change): at most the lock file.
    LockOnly,
    /// A renewal got the lock: `state/owner` and its log `log/<ID>.log`
    /// (SPEC 4 step 1, SPEC 8).
    Owner,
    /// ... and got past step 2: its failure receipt (SPEC 3).
    Receipt,
    /// ... and kubeadm ran: the `renewing` phase file and the backup of step
    /// 8; the PKI itself is rolled back and compared like everything else.
    Renew,
    /// A fencing check abandoned the operation: `state/owner` and the
    /// `abandoned` receipt (SPEC 6).
    Abandon,
    /// The operator view wrote the evidence bundle it was asked for
    /// (`--evidence /tmp/evidence.tgz`, SPEC 6), and nothing else.
    Evidence,
}

impl Allow {
    fn permits(self, rel: &str) -> bool {
        let owner = [st("owner")];
        let log = [st("log"), st(&format!("log/{ID}.log"))];
        let receipt = [st("completed"), receipt_rel()];
        let renew = rel == st("phase") || rel == st("backup") || rel.starts_with(&st("backup/"));
        let any = |sets: &[&[String]]| sets.iter().any(|set| set.iter().any(|p| p == rel));
        match self {
            Allow::Nothing => false,
            Allow::LockOnly => rel == st("lock"),
            Allow::Owner => any(&[&owner, &log]),
            Allow::Receipt => any(&[&owner, &log, &receipt]),
            Allow::Renew => any(&[&owner, &log, &receipt]) || renew,
            Allow::Abandon => any(&[&owner, &receipt]),
            Allow::Evidence => rel == EVIDENCE_BUNDLE,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Allow::Nothing => "",
            Allow::LockOnly => " (SPEC writes: the lock file, if absent)",
            Allow::Owner => " (SPEC writes: lock owner, log)",
            Allow::Receipt => " (SPEC writes: lock owner, log, failure receipt)",
            Allow::Renew => {
                " (SPEC writes: lock owner, log, failure receipt, phase=renewing, backup; PKI rolled back)"
            }
            Allow::Abandon => " (SPEC writes: lock owner, abandoned receipt)",
            Allow::Evidence => " (SPEC writes: the evidence bundle, holding none of it)",
        }
    }
}

type SetupFn = Box<dyn Fn(&Env) -> Result<(), String> + Send + Sync>;
type PathFn = Box<dyn Fn(&Env) -> String + Send + Sync>;
/// The planted secrets an evidence bundle must not hold, each with whether
/// its `<redacted sha256:...>` mark must be there instead (false: the file
/// is refused whole).
type BundleFn = Box<dyn Fn(&Env) -> Vec<(String, bool)> + Send + Sync>;
/// Where the `evidence` rows ask for the bundle (a node path under the root).
const EVIDENCE_BUNDLE: &str = "tmp/evidence.tgz";

struct Case {
    id: &'static str,
    cat: &'static str,
    planted: String,
    /// sim.json knobs when the simulated node is needed.
    sim: Option<Value>,
    /// The fixture node (`rsa`; `ecdsa` where the simulated kubeadm renews
    /// everything: its RSA key generation is slow in a debug build).
    variant: &'static str,
    setup: SetupFn,
    args: Args,
    /// Add `--root`, `--output json`, `--now` and the short timeouts.
    defaults: bool,
    /// `--crictl` and `--kubeadm`: the node's (tripwires on a plain copy),
    /// the row's own, or none (see `full_args`).
    crictl: ToolArg,
    kubeadm: ToolArg,
    /// The caller's PATH (default `/usr/bin:/bin`).
    path: Option<PathFn>,
    code: i32,
    phase: Option<&'static str>,
    /// Each must appear in the message or on stderr (`a|b`: either).
    needles: Vec<&'static str>,
    allow: Allow,
    /// A V2 run past step 2: its receipt must exist, with one of these
    /// outcomes.
    receipt: bool,
    receipt_outcomes: &'static [&'static str],
    /// Host conditions under which the case cannot be built.
    skip_if: Option<fn() -> Option<String>>,
    /// An `evidence` row: what the bundle must not hold.
    bundle: Option<BundleFn>,
}

/// A row's argument list, said by what the row runs: `Args::renew()` is a
/// forced renewal under the table's operation ID (the default of every
/// row), `Args::renew_unforced()` the same without `--force`,
/// `Args::check()`, `Args::status()`, `Args::live()` (the operator view
/// with a one-second probe budget), `Args::evidence(PATH)` and
/// `Args::fence()` (the fencing check of the table's operation) the other
/// modes; `.with(flag, value)` and `.flag(flag)` add to it. A literal
/// list converts too (`.args(&["--root", ...])`), for rows whose point is
/// the argv itself. A row's own tool is not an argument here but
/// `Case::kubeadm`/`Case::crictl`; `full_args` adds the defaults (`--root`,
/// `--output json`, short timeouts, the tools) that a row does not name.
#[derive(Clone)]
struct Args(Vec<OsString>);

/// A path of the case's own world (a scripted tool in its work directory),
/// made when the case runs.
type EnvPath = Arc<dyn Fn(&Env) -> PathBuf + Send + Sync>;

impl Args {
    fn of(v: &[&str]) -> Args {
        Args(v.iter().map(OsString::from).collect())
    }
    fn renew() -> Args {
        Args::of(&["--operation-id", ID, "--force"])
    }
    fn renew_unforced() -> Args {
        Args::of(&["--operation-id", ID])
    }
    fn check() -> Args {
        Args::of(&["--check"])
    }
    fn status() -> Args {
        Args::of(&["--status-only"])
    }
    fn live() -> Args {
        Args::status().with("--probe-timeout", "1")
    }
    fn evidence(path: &str) -> Args {
        Args::status().with("--evidence", path)
    }
    fn fence() -> Args {
        Args::status().with("--operation-id", ID).flag("--fence")
    }
    fn with(self, flag: &str, value: impl Into<OsString>) -> Args {
        self.with_raw(flag).with_raw(value)
    }
    fn flag(self, flag: &str) -> Args {
        self.with_raw(flag)
    }
    fn with_raw(mut self, arg: impl Into<OsString>) -> Args {
        self.0.push(arg.into());
        self
    }
}

impl<const N: usize> From<&[&str; N]> for Args {
    fn from(v: &[&str; N]) -> Args {
        Args::of(v)
    }
}

/// A row's `--crictl` or `--kubeadm`.
#[derive(Clone)]
enum ToolArg {
    /// The node's: the simulated tool, or a tripwire on a plain copy.
    Node,
    /// The row's own (a script in its work directory, a missing file).
    Own(EnvPath),
    /// Not passed: the runbook looks on its fixed PATH.
    Absent,
}

/// A tool the row writes into its work directory: `name` running `body`.
fn script_tool(name: &'static str, body: impl Into<String>) -> EnvPath {
    let body = body.into();
    Arc::new(move |e: &Env| e.script(name, &body))
}

/// A tool path in the row's work directory with nothing there.
fn missing_tool(name: &'static str) -> EnvPath {
    Arc::new(move |e: &Env| e.work.join(name))
}

fn case(cat: &'static str, id: &'static str, planted: impl Into<String>) -> Case {
    Case {
        id,
        cat,
        planted: planted.into(),
        sim: None,
        variant: "rsa",
        setup: Box::new(|_| Ok(())),
        args: Args::renew(),
        defaults: true,
        crictl: ToolArg::Node,
        kubeadm: ToolArg::Node,
        path: None,
        code: 1,
        phase: None,
        needles: Vec::new(),
        allow: Allow::Nothing,
        receipt: false,
        receipt_outcomes: &["failed", "failed_not_restored"],
        skip_if: None,
        bundle: None,
    }
}

impl Case {
    fn sim(mut self, knobs: Value) -> Case {
        self.sim = Some(knobs);
        self
    }
    fn ecdsa(mut self) -> Case {
        self.variant = "ecdsa";
        self
    }
    fn setup(mut self, f: impl Fn(&Env) + Send + Sync + 'static) -> Case {
        self.setup = Box::new(move |e| {
            f(e);
            Ok(())
        });
        self
    }
    fn try_setup(mut self, f: impl Fn(&Env) -> Result<(), String> + Send + Sync + 'static) -> Case {
        self.setup = Box::new(f);
        self
    }
    /// What the row runs: `Args::status()`, `Args::renew().with(..)`, or a
    /// literal list for rows whose point is the exact argv.
    fn args(mut self, a: impl Into<Args>) -> Case {
        self.args = a.into();
        self
    }
    /// No defaults at all: the argv is the row's.
    fn raw(mut self) -> Case {
        self.defaults = false;
        self.no_tools()
    }
    fn no_tools(mut self) -> Case {
        self.crictl = ToolArg::Absent;
        self.kubeadm = ToolArg::Absent;
        self
    }
    /// The node's `--crictl` only (none of `--kubeadm`).
    fn no_tools_but_crictl(mut self) -> Case {
        self.kubeadm = ToolArg::Absent;
        self
    }
    /// The node's `--kubeadm` only (none of `--crictl`).
    fn no_tools_but_kubeadm(mut self) -> Case {
        self.crictl = ToolArg::Absent;
        self
    }
    /// The row's own `--kubeadm`, beside the node's `--crictl`.
    fn kubeadm(mut self, tool: EnvPath) -> Case {
        self.kubeadm = ToolArg::Own(tool);
        self
    }
    /// The row's own `--crictl`, beside the node's `--kubeadm`.
    fn crictl(mut self, tool: EnvPath) -> Case {
        self.crictl = ToolArg::Own(tool);
        self
    }
    fn path(mut self, f: impl Fn(&Env) -> String + Send + Sync + 'static) -> Case {
        self.path = Some(Box::new(f));
        self
    }
    fn expect(mut self, code: i32, phase: &'static str, needles: &[&'static str]) -> Case {
        self.code = code;
        self.phase = Some(phase);
        self.needles = needles.to_vec();
        self
    }
    fn allow(mut self, a: Allow) -> Case {
        self.allow = a;
        self.receipt = matches!(a, Allow::Receipt | Allow::Renew | Allow::Abandon);
        self
    }
    fn receipt_outcomes(mut self, o: &'static [&'static str]) -> Case {
        self.receipt_outcomes = o;
        self
    }
    fn skip_if(mut self, f: fn() -> Option<String>) -> Case {
        self.skip_if = Some(f);
        self
    }
    fn bundle_lacks(
        mut self,
        f: impl Fn(&Env) -> Vec<(String, bool)> + Send + Sync + 'static,
    ) -> Case {
        self.bundle = Some(Box::new(f));
        self
    }
}

/// An operation ID case: a usage error (exit 2), nothing written anywhere.
fn opid(id: &'static str, planted: &str, value: OsString, needles: &[&'static str]) -> Case {
    // `--operation-id=VALUE`, one argument, so a leading '-' reaches the runbook.
    let mut arg = OsString::from("--operation-id=");
    arg.push(&value);
    case("opid", id, planted)
        .args(Args::of(&[]).with_raw(arg).flag("--force"))
        .expect(2, "arguments", needles)
}

fn host_has(tool: &str) -> Option<String> {
    let found = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.exists());
    found.map(|p| {
        format!(
            "SKIP: this host has {} on the fixed PATH, so the case would not be refused",
            p.display()
        )
    })
}

fn not_root() -> Option<String> {
    (!nix::unistd::geteuid().is_root()).then(|| {
        "SKIP: needs root (chown to uid 65534; the owner check applies to root runs)".into()
    })
}

/// The `evidence` rows (SPEC 6 v1.2, issue 25 item 2): each secret shape
/// planted in `manifests/` or a staging directory of a plain copy of the
/// node, then `--status-only --evidence /tmp/evidence.tgz`. The secret is
/// the hostile input and the bundle its refusal: the view writes the
/// bundle (and nothing else), which must not hold the secret but its
/// `<redacted sha256:...>` mark (or, for a PEM key, not the file at all);
/// stderr names the file. v1.3 (issue 40 item 3), redaction by structure:
/// 10,000 items in one flow sequence (read within the bounds, the token
/// among them redacted), a JSON manifest with a duplicate key (left out
/// whole, the reason naming the duplicate key), a credential in an anchor
/// that an alias puts in `bgp_peerpass`. The view exits 1 (a plain copy has no runtime:
/// the live node is not checked), 4 with a manifest staged. Then the
/// bundle's own refusals of PATH: a file already there, a symlink to the
/// outside sentinel, a directory the bundle reads. tests/evidence.rs checks
/// every shape again in one bundle, member by member.
fn evidence_cases() -> Vec<Case> {
    const M: &str = "etc/kubernetes/manifests";
    fn edit(e: &Env, rel: &str, from: &str, to: &str) {
        let p = e.p(rel);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(from), "{rel} has no {from:?}");
        write_mode(&p, text.replacen(from, to, 1).as_bytes(), 0o600);
    }
    fn tmp_dir(e: &Env) {
        std::fs::create_dir_all(e.p("tmp")).unwrap();
        chmod(&e.p("tmp"), 0o755);
    }
    /// The service-account key in DER, in base64 without PEM armour.
    fn der_b64(e: &Env) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg("openssl pkey -in \"$1\" -outform DER | base64 -w0")
            .arg("sh")
            .arg(e.p("etc/kubernetes/pki/sa.key"))
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout.len() > 600);
        String::from_utf8(out.stdout).unwrap()
    }
    const JWT: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik5vdFJlYWwxMjMifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlMDEyMzQ1Njc4OWFiY2RlZkFCQ0RFRg";
    let mut v = Vec::new();
    // (id, what, file, text replaced, by, the secret)
    let planted: [(&'static str, &'static str, &'static str, &'static str, &'static str, &'static str); 7] = [
        (
            "evidence-bgp-peerpass",
            "kube-vip env bgp_peerpass: \"Peer-Pass-1\"",
            "kube-vip.yaml",
            "    - name: address\n",
            "    - name: bgp_peerpass\n      value: \"Peer-Pass-1\"\n    - name: address\n",
            "Peer-Pass-1",
        ),
        (
            "evidence-etcd-password-flag",
            "kube-apiserver - --etcd-password=Etcd-Pass-2",
            "kube-apiserver.yaml",
            "    - kube-apiserver\n",
            "    - kube-apiserver\n    - --etcd-password=Etcd-Pass-2\n",
            "Etcd-Pass-2",
        ),
        (
            "evidence-token-separate-arg",
            "kube-apiserver - --token then - Sep-Token-3",
            "kube-apiserver.yaml",
            "    - kube-apiserver\n",
            "    - kube-apiserver\n    - --token\n    - Sep-Token-3\n",
            "Sep-Token-3",
        ),
        (
            "evidence-env-secret",
            "kube-vip env CLIENT_SECRET",
            "kube-vip.yaml",
            "    - name: address\n",
            "    - name: CLIENT_SECRET\n      value: Env-Secret-4\n    - name: address\n",
            "Env-Secret-4",
        ),
        (
            "evidence-env-token",
            "kube-vip env API_TOKEN, value before name",
            "kube-vip.yaml",
            "    - name: address\n",
            "    - value: 'Env-Token-5'\n      name: API_TOKEN\n    - name: address\n",
            "Env-Token-5",
        ),
        (
            "evidence-flow-password-arg",
            "kube-scheduler args: [\"--password\", \"Flow-Pass-6\"]",
            "kube-scheduler.yaml",
            "  - command:\n",
            "  - args: [\"--password\", \"Flow-Pass-6\"]\n    command:\n",
            "Flow-Pass-6",
        ),
        (
            "evidence-kubeconfig-token",
            "kube-vip annotation user: {token: <a JWT>} (a kubeconfig's user)",
            "kube-vip.yaml",
            "  name: kube-vip\n",
            concat!(
                "  annotations:\n    example.com/user: |\n      user:\n        token: ",
                "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik5vdFJlYWwxMjMifQ.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlMDEyMzQ1Njc4OWFiY2RlZkFCQ0RFRg",
                "\n  name: kube-vip\n"
            ),
            JWT,
        ),
    ];
    for (id, what, file, from, to, secret) in planted {
        v.push(
            case("evidence", id, what)
                .setup(move |e| {
                    tmp_dir(e);
                    edit(e, &format!("{M}/{file}"), from, to);
                })
                .args(Args::evidence("/tmp/evidence.tgz"))
                .no_tools()
                .expect(1, "", &[file, "redacted"])
                .allow(Allow::Evidence)
                .bundle_lacks(move |_| vec![(secret.to_string(), true)]),
        );
    }
    v.push(
        case(
            "evidence",
            "evidence-der-base64",
            "kube-vip annotation: the sa key in DER, base64, no PEM armour",
        )
        .setup(|e| {
            tmp_dir(e);
            let to = format!(
                "  annotations:\n    example.com/blob: {}\n  name: kube-vip\n",
                der_b64(e)
            );
            edit(e, &format!("{M}/kube-vip.yaml"), "  name: kube-vip\n", &to);
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["kube-vip.yaml", "redacted"])
        .allow(Allow::Evidence)
        .bundle_lacks(|e| vec![(der_b64(e), true)]),
    );
    v.push(
        case(
            "evidence",
            "evidence-staged-client-secret",
            "staging/kube-scheduler.yaml - --client-secret=Staged-Secret-8",
        )
        .setup(|e| {
            tmp_dir(e);
            edit(
                e,
                &format!("{M}/kube-scheduler.yaml"),
                "    - kube-scheduler\n",
                "    - kube-scheduler\n    - --client-secret=Staged-Secret-8\n",
            );
            let staging = e.p("etc/kubernetes/nvke-cert-renewal-staging");
            std::fs::create_dir_all(&staging).unwrap();
            chmod(&staging, 0o700);
            std::fs::rename(
                e.p(&format!("{M}/kube-scheduler.yaml")),
                staging.join("kube-scheduler.yaml"),
            )
            .unwrap();
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(
            4,
            "",
            &["nvke-cert-renewal-staging/kube-scheduler.yaml", "redacted"],
        )
        .allow(Allow::Evidence)
        .bundle_lacks(|_| vec![("Staged-Secret-8".to_string(), true)]),
    );
    v.push(
        case(
            "evidence",
            "evidence-pem-in-manifest",
            "kube-vip annotation: the sa key as PEM",
        )
        .setup(|e| {
            tmp_dir(e);
            let pem = std::fs::read_to_string(e.p("etc/kubernetes/pki/sa.key")).unwrap();
            let block: String = pem.lines().map(|l| format!("      {l}\n")).collect();
            let to = format!("  annotations:\n    example.com/key: |\n{block}  name: kube-vip\n");
            edit(e, &format!("{M}/kube-vip.yaml"), "  name: kube-vip\n", &to);
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["kube-vip.yaml", "looks like a private key"])
        .allow(Allow::Evidence)
        .bundle_lacks(|e| {
            let pem = std::fs::read_to_string(e.p("etc/kubernetes/pki/sa.key")).unwrap();
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .map(|l| (l.to_string(), false))
                .collect()
        }),
    );
    // SPEC 6 v1.3 (issue 40 item 3): redaction by structure. A manifest
    // that is valid YAML with 10,000 items in one flow sequence (within
    // the reader's bounds: read, and the token in it redacted); a JSON
    // manifest with two `command` keys, the first holding a token (left
    // out whole, listed with why: never copied as it is); a credential in
    // an anchor that an alias puts in kube-vip's `bgp_peerpass`.
    v.push(
        case(
            "evidence",
            "evidence-flow-10000-items",
            "kube-scheduler args: [10,000 flow items, --token, Many-Items-10]",
        )
        .setup(|e| {
            tmp_dir(e);
            let items: Vec<String> = (0..10_000).map(|i| format!("--x{i}=y")).collect();
            let to = format!(
                "  - args: [{}, --token, Many-Items-10]\n    command:\n",
                items.join(", ")
            );
            edit(
                e,
                &format!("{M}/kube-scheduler.yaml"),
                "  - command:\n",
                &to,
            );
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["kube-scheduler.yaml", "redacted"])
        .allow(Allow::Evidence)
        .bundle_lacks(|_| vec![("Many-Items-10".to_string(), true)]),
    );
    v.push(
        case(
            "evidence",
            "evidence-json-duplicate-keys",
            "manifests/dup.json: two \"command\" keys, the first with --token=Dup-Token-11",
        )
        .setup(|e| {
            tmp_dir(e);
            let json = concat!(
                "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"dup\"},\n",
                " \"spec\": {\"containers\": [{\"name\": \"dup\", \"image\": \"x\",\n",
                "   \"command\": [\"dup\", \"--token=Dup-Token-11\"],\n",
                "   \"command\": [\"dup\"]}]}}\n"
            );
            plant_file(e, &format!("{M}/dup.json"), json.as_bytes(), 0o600);
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["manifests/dup.json", "duplicate mapping key"])
        .allow(Allow::Evidence)
        .bundle_lacks(|_| vec![("Dup-Token-11".to_string(), false)]),
    );
    v.push(
        case(
            "evidence",
            "evidence-anchor-alias",
            "kube-vip annotation &pp Anchor-Pass-12; env bgp_peerpass: *pp",
        )
        .setup(|e| {
            tmp_dir(e);
            let f = format!("{M}/kube-vip.yaml");
            edit(
                e,
                &f,
                "  name: kube-vip\n",
                "  annotations:\n    example.com/note: &pp Anchor-Pass-12\n  name: kube-vip\n",
            );
            edit(
                e,
                &f,
                "    - name: address\n",
                "    - name: bgp_peerpass\n      value: *pp\n    - name: address\n",
            );
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["kube-vip.yaml", "redacted"])
        .allow(Allow::Evidence)
        .bundle_lacks(|_| vec![("Anchor-Pass-12".to_string(), true)]),
    );
    // PATH itself: never replaced, never followed, never where the bundle reads.
    v.push(
        case(
            "evidence",
            "evidence-path-exists",
            "/tmp/evidence.tgz is a file already",
        )
        .setup(|e| {
            tmp_dir(e);
            plant_file(e, EVIDENCE_BUNDLE, b"an operator's own file\n", 0o644);
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["/tmp/evidence.tgz", "already exists"]),
    );
    v.push(
        case(
            "evidence",
            "evidence-path-symlink-out",
            "/tmp/evidence.tgz -> the outside sentinel",
        )
        .setup(|e| {
            tmp_dir(e);
            plant_symlink(e, EVIDENCE_BUNDLE, &e.o("secret"));
        })
        .args(Args::evidence("/tmp/evidence.tgz"))
        .no_tools()
        .expect(1, "", &["/tmp/evidence.tgz", "already exists"]),
    );
    v.push(
        case(
            "evidence",
            "evidence-path-in-manifests",
            "--evidence /etc/kubernetes/manifests/evidence.tgz",
        )
        .args(Args::evidence("/etc/kubernetes/manifests/evidence.tgz"))
        .no_tools()
        .expect(
            1,
            "",
            &["/etc/kubernetes/manifests", "a directory the bundle reads"],
        ),
    );
    v
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(evidence_cases());

    // ------------------------------------------------------------ operation IDs
    let bad_char = "not allowed";
    v.push(opid(
        "opid-traversal",
        "../../../../tmp/pwned",
        "../../../../tmp/pwned".into(),
        &["--operation-id", "'/'"],
    ));
    v.push(opid(
        "opid-absolute",
        "/etc/kubernetes/pki/ca",
        "/etc/kubernetes/pki/ca".into(),
        &["--operation-id", "'/'"],
    ));
    v.push(opid(
        "opid-dot",
        ".",
        ".".into(),
        &["--operation-id", "must not start with '.'"],
    ));
    v.push(opid(
        "opid-dotdot",
        "..",
        "..".into(),
        &["--operation-id", "must not start with '.'"],
    ));
    v.push(opid(
        "opid-dot-name",
        ".op-hidden",
        ".op-hidden".into(),
        &["--operation-id", "must not start with '.'"],
    ));
    v.push(opid(
        "opid-inner-dotdot",
        "op..1",
        "op..1".into(),
        &["--operation-id", "'..'"],
    ));
    v.push(opid(
        "opid-empty",
        "\"\"",
        "".into(),
        &["--operation-id", "empty"],
    ));
    v.push(opid(
        "opid-201-chars",
        "201 x 'a'",
        "a".repeat(201).into(),
        &["--operation-id", "201 characters"],
    ));
    v.push(opid(
        "opid-newline",
        "op-1\\nSTATE=done",
        "op-1\nSTATE=done".into(),
        &["--operation-id", "'\\n'"],
    ));
    v.push(opid(
        "opid-ctrl-0x01",
        "op-\\x01 (NUL stand-in)",
        "op-\u{1}".into(),
        &["--operation-id", bad_char],
    ));
    v.push(opid(
        "opid-ansi-escape",
        "op-\\e[2J",
        "op-\u{1b}[2J".into(),
        &["--operation-id", bad_char],
    ));
    v.push(opid(
        "opid-non-utf8",
        "op-\\xff\\xfe (argv bytes)",
        OsString::from_vec(b"op-\xff\xfe".to_vec()),
        &["--operation-id", "UTF-8"],
    ));
    v.push(opid(
        "opid-fullwidth-digit",
        "op-\u{ff11} (U+FF11)",
        "op-\u{ff11}".into(),
        &["--operation-id", "u{ff11}"],
    ));
    v.push(opid(
        "opid-cyrillic-o",
        "\u{43e}p-1 (U+043E)",
        "\u{43e}p-1".into(),
        &["--operation-id", "u{43e}"],
    ));
    v.push(opid(
        "opid-zero-width",
        "op\\u200b-1",
        "op\u{200b}-1".into(),
        &["--operation-id", "u{200b}"],
    ));
    v.push(opid(
        "opid-leading-dash",
        "--operation-id=-rf",
        "-rf".into(),
        &["--operation-id", "must not start with"],
    ));
    v.push(
        case("opid", "opid-traversal-fence", "--fence with ../op-1")
            .args(&["--status-only", "--operation-id", "../op-1", "--fence"])
            .expect(2, "arguments", &["--operation-id", "'/'"]),
    );

    // ------------------------------------------------------------ other arguments
    v.push(
        case(
            "args",
            "args-kubeadm-config-dotdot",
            "--kubeadm-config /etc/../../etc/shadow",
        )
        .args(Args::renew().with("--kubeadm-config", "/etc/../../etc/shadow"))
        .expect(2, "arguments", &["--kubeadm-config", "'..'"]),
    );
    v.push(
        case(
            "args",
            "args-kubeadm-relative",
            "--kubeadm kubeadm (relative)",
        )
        .no_tools()
        .args(Args::renew().with("--kubeadm", "kubeadm"))
        .expect(2, "arguments", &["--kubeadm", "absolute"]),
    );
    v.push(
        case(
            "args",
            "args-root-relative",
            "--root var/../root (relative)",
        )
        .raw()
        .args(&[
            "--root",
            "var/../root",
            "--output",
            "json",
            "--operation-id",
            ID,
        ])
        .expect(2, "arguments", &["--root", "absolute"]),
    );
    v.push(
        case(
            "args",
            "args-expect-ca-key",
            "--expect-ca-sha256 ca.key=<hex>",
        )
        .args(
            Args::renew_unforced().with("--expect-ca-sha256", format!("ca.key={}", "0".repeat(64))),
        )
        .expect(2, "arguments", &["ca.key"]),
    );

    // ------------------------------------------------------------ the state directory
    v.push(
        case("state", "state-dir-symlink", "state dir -> outside/state")
            .setup(|e| plant_symlink(e, STATE, &e.o("state")))
            .expect(1, "lock", &["/var/lib/nvke/k8s-cert-renewal is a symlink"]),
    );
    v.push(
        case(
            "state",
            "state-parent-symlink",
            "var/lib/nvke -> outside/nvke",
        )
        .setup(|e| plant_symlink(e, "var/lib/nvke", &e.o("nvke")))
        .expect(1, "lock", &["/var/lib/nvke is a symlink"]),
    );
    v.push(
        case(
            "state",
            "state-dir-regular-file",
            "state dir is a regular file",
        )
        .setup(|e| plant_file(e, STATE, b"x\n", 0o600))
        .expect(
            1,
            "lock",
            &["/var/lib/nvke/k8s-cert-renewal is a regular file"],
        ),
    );
    v.push(
        case(
            "state",
            "state-dir-not-root",
            "state dir owned by uid 65534",
        )
        .setup(|e| chown_nobody(e, STATE))
        .expect(
            1,
            "lock",
            &["/var/lib/nvke/k8s-cert-renewal is owned by uid 65534"],
        ),
    );
    v.push(
        case("state", "state-dir-world-writable", "state dir mode 0777")
            .setup(|e| chmod_rel(e, STATE, 0o777))
            .expect(
                1,
                "lock",
                &["/var/lib/nvke/k8s-cert-renewal is writable by group or others"],
            ),
    );

    // ------------------------------------------------------------ the lock
    let lock = || st("lock");
    v.push(
        case("lock", "lock-symlink", "lock -> outside/secret")
            .setup(move |e| plant_symlink(e, &lock(), &e.o("secret")))
            .expect(
                1,
                "lock",
                &["/var/lib/nvke/k8s-cert-renewal/lock is a symlink"],
            ),
    );
    v.push(
        case("lock", "lock-fifo", "lock is a FIFO")
            .setup(move |e| plant_fifo(e, &lock()))
            .expect(
                1,
                "lock",
                &["/var/lib/nvke/k8s-cert-renewal/lock is a FIFO"],
            ),
    );
    v.push(
        case("lock", "lock-dir", "lock is a directory")
            .setup(move |e| plant_dir(e, &lock()))
            .expect(1, "lock", &["/var/lib/nvke/k8s-cert-renewal/lock"]),
    );
    v.push(
        case("lock", "lock-not-root", "lock owned by uid 65534")
            .setup(move |e| chown_nobody(e, &lock()))
            .expect(1, "lock", &["lock is owned by uid 65534"]),
    );
    v.push(
        case("lock", "lock-world-writable", "lock mode 0666")
            .setup(move |e| chmod_rel(e, &lock(), 0o666))
            .expect(1, "lock", &["lock is writable by group or others"]),
    );
    v.push(
        case(
            "lock",
            "lock-held-owner-escapes",
            "lock held; owner = ESC/BEL garbage",
        )
        .setup(|e| {
            plant_file(e, &st("owner"), b"\x1b]0;pwned\x07\x1b[2J pid 1\r\n", 0o600);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(e.p(&st("lock")))
                .unwrap();
            f.lock().unwrap();
            e.held.lock().unwrap().push(f);
        })
        .expect(3, "lock", &["still held", "owner file says"]),
    );

    // ------------------------------------------------------------ the lock owner record
    let owner = || st("owner");
    v.push(
        case("owner", "owner-symlink", "owner -> outside/secret")
            .setup(move |e| plant_symlink(e, &owner(), &e.o("secret")))
            .expect(
                1,
                "lock",
                &["/var/lib/nvke/k8s-cert-renewal/owner is a symlink"],
            ),
    );
    v.push(
        case("owner", "owner-fifo", "owner is a FIFO")
            .setup(move |e| plant_fifo(e, &owner()))
            .expect(
                1,
                "lock",
                &["/var/lib/nvke/k8s-cert-renewal/owner is a FIFO"],
            ),
    );
    v.push(
        case("owner", "owner-dir", "owner is a directory")
            .setup(move |e| plant_dir(e, &owner()))
            .expect(
                1,
                "lock",
                &["/var/lib/nvke/k8s-cert-renewal/owner is a directory"],
            ),
    );
    v.push(
        case("owner", "owner-not-root", "owner owned by uid 65534")
            .setup(move |e| {
                plant_file(e, &owner(), b"{}\n", 0o600);
                chown_nobody(e, &owner());
            })
            .expect(1, "lock", &["owner is owned by uid 65534"]),
    );

    // ------------------------------------------------------------ the phase file
    let phase = || st("phase");
    v.push(
        case(
            "phase",
            "phase-symlink",
            "phase -> outside/phase-v2 (valid, own ID)",
        )
        .setup(move |e| plant_symlink(e, &phase(), &e.o("phase-v2")))
        .expect(
            1,
            "phase-file",
            &["/var/lib/nvke/k8s-cert-renewal/phase is a symlink"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case("phase", "phase-fifo", "phase is a FIFO")
            .setup(move |e| plant_fifo(e, &phase()))
            .expect(
                1,
                "phase-file",
                &["/var/lib/nvke/k8s-cert-renewal/phase is a FIFO"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("phase", "phase-dir", "phase is a directory")
            .setup(move |e| plant_dir(e, &phase()))
            .expect(
                1,
                "phase-file",
                &["/var/lib/nvke/k8s-cert-renewal/phase is a directory"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "phase",
            "phase-hardlink",
            "phase = hard link to outside/hardlink-me",
        )
        .setup(move |e| plant_hardlink(e, &phase(), "hardlink-me"))
        .expect(1, "phase-file", &["/var/lib/nvke/k8s-cert-renewal/phase"])
        .allow(Allow::Receipt),
    );
    v.push(
        case("phase", "phase-not-root", "valid phase owned by uid 65534")
            .setup(move |e| {
                write_phase(
                    e,
                    &v2_phase_at(&e.root, "op-old", "restart_pending", Some("etcd")),
                );
                chown_nobody(e, &phase());
            })
            .expect(1, "phase-file", &["phase is owned by uid 65534"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("phase", "phase-world-writable", "valid phase, mode 0666")
            .setup(move |e| {
                write_phase(
                    e,
                    &v2_phase_at(&e.root, "op-old", "restart_pending", Some("etcd")),
                );
                chmod_rel(e, &phase(), 0o666);
            })
            .expect(1, "phase-file", &["phase is writable by group or others"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("phase", "phase-huge", "phase of 100 KiB")
            .setup(move |e| plant_file(e, &phase(), &vec![b'{'; 100 * 1024], 0o600))
            .expect(1, "phase-file", &["phase is larger than 65536 bytes"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("phase", "phase-non-utf8", "phase with a 0xff byte")
            .setup(move |e| plant_file(e, &phase(), b"STATE=renewing\xff\nCOMPONENT=none\n", 0o600))
            .expect(
                1,
                "phase-file",
                &["/var/lib/nvke/k8s-cert-renewal/phase", "UTF-8"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "phase",
            "phase-id-escapes",
            "V2 phase, operationID with ESC/BEL",
        )
        .setup(move |e| {
            let p = v2_phase_at(&e.root, "op-old", "restart_pending", Some("etcd"))
                .replace("\"op-old\"", "\"op\\u001b]0;pwned\\u0007\"");
            write_phase(e, &p);
        })
        .expect(1, "phase-file", &["/var/lib/nvke/k8s-cert-renewal/phase"])
        .allow(Allow::Receipt),
    );

    // ------------------------------------------------------------ this operation's receipt
    v.push(
        case(
            "receipt",
            "receipt-symlink",
            "own receipt -> outside/receipt.json (renewed)",
        )
        .setup(|e| {
            completed_dir(e);
            plant_symlink(e, &receipt_rel(), &e.o("receipt.json"));
        })
        .expect(1, "receipt", &["completed/op-hostile.json is a symlink"])
        .allow(Allow::Owner),
    );
    v.push(
        case("receipt", "receipt-fifo", "own receipt is a FIFO")
            .setup(|e| {
                completed_dir(e);
                plant_fifo(e, &receipt_rel());
            })
            .expect(1, "receipt", &["completed/op-hostile.json is a FIFO"])
            .allow(Allow::Owner),
    );
    v.push(
        case("receipt", "receipt-dir", "own receipt is a directory")
            .setup(|e| {
                completed_dir(e);
                plant_dir(e, &receipt_rel());
            })
            .expect(1, "receipt", &["completed/op-hostile.json is a directory"])
            .allow(Allow::Owner),
    );
    v.push(
        case(
            "receipt",
            "receipt-hardlink",
            "own receipt = hard link to outside garbage",
        )
        .setup(|e| {
            completed_dir(e);
            plant_hardlink(e, &receipt_rel(), "hardlink-me");
        })
        .expect(1, "receipt", &["completed/op-hostile.json"])
        .allow(Allow::Owner),
    );
    v.push(
        case(
            "receipt",
            "receipt-not-root",
            "own receipt owned by uid 65534",
        )
        .setup(|e| {
            write_receipt(e);
            chown_nobody(e, &receipt_rel());
        })
        .expect(1, "receipt", &["op-hostile.json is owned by uid 65534"])
        .allow(Allow::Owner),
    );
    v.push(
        case("receipt", "receipt-world-writable", "own receipt mode 0666")
            .setup(|e| {
                write_receipt(e);
                chmod_rel(e, &receipt_rel(), 0o666);
            })
            .expect(
                1,
                "receipt",
                &["op-hostile.json is writable by group or others"],
            )
            .allow(Allow::Owner),
    );
    v.push(
        case("receipt", "receipt-huge", "own receipt of 100 KiB")
            .setup(|e| {
                completed_dir(e);
                plant_file(e, &receipt_rel(), &vec![b' '; 100 * 1024], 0o600);
            })
            .expect(
                1,
                "receipt",
                &["op-hostile.json is larger than 65536 bytes"],
            )
            .allow(Allow::Owner),
    );
    v.push(
        case(
            "receipt",
            "receipt-other-id",
            "own receipt file holds op-other's receipt",
        )
        .setup(|e| {
            completed_dir(e);
            plant_file(
                e,
                &receipt_rel(),
                receipt_json(&e.root, "op-other", "renewed").as_bytes(),
                0o600,
            );
        })
        .expect(1, "receipt", &["completed/op-hostile.json", "op-other"])
        .allow(Allow::Owner),
    );
    v.push(
        case(
            "receipt",
            "receipts-dir-symlink",
            "completed/ -> outside/dir",
        )
        .setup(|e| plant_symlink(e, &st("completed"), &e.o("dir")))
        .expect(
            1,
            "receipt",
            &["/var/lib/nvke/k8s-cert-renewal/completed is a symlink"],
        )
        .allow(Allow::Owner),
    );
    v.push(
        case(
            "receipt",
            "receipts-dir-not-root",
            "completed/ owned by uid 65534",
        )
        .setup(|e| {
            completed_dir(e);
            chown_nobody(e, &st("completed"));
        })
        .expect(1, "receipt", &["completed is owned by uid 65534"])
        .allow(Allow::Owner),
    );

    // ------------------------------------------------------------ the staging directory
    v.push(
        case("staging", "staging-symlink", "staging dir -> outside/dir")
            .setup(|e| plant_symlink(e, STAGING, &e.o("dir")))
            .expect(
                1,
                "staging-conflict",
                &["/etc/kubernetes/nvke-cert-renewal-staging is a symlink"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "staging",
            "staging-regular-file",
            "staging dir is a regular file",
        )
        .setup(|e| plant_file(e, STAGING, b"x\n", 0o600))
        .expect(
            1,
            "staging-conflict",
            &["nvke-cert-renewal-staging is a regular file"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case("staging", "staging-fifo", "staging dir is a FIFO")
            .setup(|e| plant_fifo(e, STAGING))
            .expect(
                1,
                "staging-conflict",
                &["nvke-cert-renewal-staging is a FIFO"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "staging",
            "staging-not-root",
            "staging dir owned by uid 65534",
        )
        .setup(|e| {
            plant_dir(e, STAGING);
            chown_nobody(e, STAGING);
        })
        .expect(
            1,
            "staging-conflict",
            &["nvke-cert-renewal-staging is owned by uid 65534"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case("staging", "staging-world-writable", "staging dir mode 0777")
            .setup(|e| {
                plant_dir(e, STAGING);
                chmod_rel(e, STAGING, 0o777);
            })
            .expect(
                1,
                "staging-conflict",
                &["nvke-cert-renewal-staging is writable by group or others"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("staging", "staging-unexpected-entry", "staging/evil.yaml")
            .setup(|e| {
                plant_dir(e, STAGING);
                plant_file(e, &format!("{STAGING}/evil.yaml"), b"kind: Pod\n", 0o600);
            })
            .expect(
                1,
                "staging-conflict",
                &["nvke-cert-renewal-staging/evil.yaml"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "staging",
            "staging-entry-symlink",
            "staging/etcd.yaml -> outside copy",
        )
        .setup(|e| {
            plant_dir(e, STAGING);
            plant_symlink(
                e,
                &format!("{STAGING}/etcd.yaml"),
                &e.o("manifests/etcd.yaml"),
            );
        })
        .expect(
            4,
            "staging-conflict",
            &["nvke-cert-renewal-staging/etcd.yaml is a symlink"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "staging",
            "staging-other-filesystem",
            "tmpfs mounted on the staging dir",
        )
        .try_setup(|e| e.mount_tmpfs(STAGING))
        .expect(
            1,
            "staging-conflict",
            &["nvke-cert-renewal-staging", "filesystem"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "staging",
            "agent-staging-copy",
            "etcd.yaml also in the agent's staging",
        )
        .setup(|e| {
            plant_dir(e, AGENT_STAGING);
            chmod_rel(e, AGENT_STAGING, 0o755);
            let bytes = std::fs::read(e.p(&format!("{MANIFESTS}/etcd.yaml"))).unwrap();
            plant_file(e, &format!("{AGENT_STAGING}/etcd.yaml"), &bytes, 0o600);
        })
        .expect(1, "staging-conflict", &["node agent's staging directory"])
        .allow(Allow::Receipt),
    );

    v.push(
        case(
            "staging",
            "staging-bind-mount",
            "bind mount (same fs) on the staging dir",
        )
        .try_setup(|e| {
            let src = e.work.join("bind-src");
            std::fs::create_dir_all(&src).unwrap();
            chmod(&src, 0o700);
            plant_dir(e, STAGING);
            let out = Command::new("mount")
                .arg("--bind")
                .arg(&src)
                .arg(e.p(STAGING))
                .output()
                .map_err(|err| format!("SKIP: cannot run mount: {err}"))?;
            if !out.status.success() {
                return Err(format!(
                    "SKIP: mount --bind failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            e.mounts.lock().unwrap().push(e.p(STAGING));
            Ok(())
        })
        .expect(
            1,
            "staging-conflict",
            &["nvke-cert-renewal-staging", "same filesystem"],
        )
        .allow(Allow::Receipt),
    );

    // ------------------------------------------------------------ the operation log
    // Not a refusal by itself (a log that cannot be opened is a warning);
    // the phase FIFO makes the run refuse, the log must not be written
    // through.
    v.push(
        case(
            "log",
            "log-hardlink",
            "log = hard link to outside file; phase FIFO",
        )
        .setup(|e| {
            plant_fifo(e, &st("phase"));
            plant_hardlink(e, &st(&format!("log/{ID}.log")), "hardlink-me");
        })
        .expect(
            1,
            "phase-file",
            &["phase is a FIFO", "op-hostile.log has 2 hard links"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case("log", "log-symlink", "log -> outside/secret; phase FIFO")
            .setup(|e| {
                plant_fifo(e, &st("phase"));
                plant_symlink(e, &st(&format!("log/{ID}.log")), &e.o("secret"));
            })
            .expect(
                1,
                "phase-file",
                &["phase is a FIFO", "op-hostile.log is a symlink"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("log", "log-dir-symlink", "log/ -> outside/dir; phase FIFO")
            .setup(|e| {
                plant_fifo(e, &st("phase"));
                plant_symlink(e, &st("log"), &e.o("dir"));
            })
            .expect(
                1,
                "phase-file",
                &[
                    "phase is a FIFO",
                    "/var/lib/nvke/k8s-cert-renewal/log is a symlink",
                ],
            )
            .allow(Allow::Receipt),
    );

    // ------------------------------------------------------------ manifests
    let man = |c: &str| format!("{MANIFESTS}/{c}.yaml");
    v.push(
        case(
            "manifest",
            "manifest-symlink",
            "kube-apiserver.yaml -> outside copy",
        )
        .setup(move |e| {
            plant_symlink(
                e,
                &man("kube-apiserver"),
                &e.o("manifests/kube-apiserver.yaml"),
            )
        })
        .expect(
            4,
            "staging-conflict",
            &["/etc/kubernetes/manifests/kube-apiserver.yaml is a symlink"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case("manifest", "manifest-fifo", "kube-scheduler.yaml is a FIFO")
            .setup(move |e| plant_fifo(e, &man("kube-scheduler")))
            .expect(4, "staging-conflict", &["kube-scheduler.yaml is a FIFO"])
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "manifest",
            "manifest-dir",
            "kube-controller-manager.yaml is a dir",
        )
        .setup(move |e| plant_dir(e, &man("kube-controller-manager")))
        .expect(
            4,
            "staging-conflict",
            &["kube-controller-manager.yaml is a directory"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "manifest",
            "manifest-not-root",
            "etcd.yaml owned by uid 65534",
        )
        .setup(move |e| chown_nobody(e, &man("etcd")))
        .expect(4, "staging-conflict", &["etcd.yaml is owned by uid 65534"])
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "manifest",
            "manifest-world-writable",
            "kube-apiserver.yaml mode 0666",
        )
        .setup(move |e| chmod_rel(e, &man("kube-apiserver"), 0o666))
        .expect(
            4,
            "staging-conflict",
            &["kube-apiserver.yaml is writable by group or others"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "manifest",
            "manifests-dir-symlink",
            "manifests/ -> outside/manifests",
        )
        .setup(|e| plant_symlink(e, MANIFESTS, &e.o("manifests")))
        .expect(4, "topology", &["/etc/kubernetes/manifests is a symlink"])
        .allow(Allow::Receipt),
    );

    // ------------------------------------------------------------ CAs and the PKI
    v.push(
        case("ca", "ca-symlink", "pki/ca.crt -> outside copy")
            .setup(|e| plant_symlink(e, &format!("{PKI}/ca.crt"), &e.o("pki/ca.crt")))
            .expect(1, "ca-check", &["/etc/kubernetes/pki/ca.crt is a symlink"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-fifo", "pki/etcd/ca.crt is a FIFO")
            .setup(|e| plant_fifo(e, &format!("{PKI}/etcd/ca.crt")))
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/etcd/ca.crt is a FIFO"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-dir", "pki/front-proxy-ca.crt is a directory")
            .setup(|e| plant_dir(e, &format!("{PKI}/front-proxy-ca.crt")))
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/front-proxy-ca.crt is a directory"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-huge", "pki/ca.crt of 2 MiB")
            .setup(|e| {
                let mut b = std::fs::read(e.p(&format!("{PKI}/ca.crt"))).unwrap();
                b.resize(2 << 20, b'\n');
                plant_file(e, &format!("{PKI}/ca.crt"), &b, 0o644);
            })
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/ca.crt is larger than 1048576 bytes"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-non-utf8", "pki/ca.crt = binary garbage")
            .setup(|e| {
                plant_file(
                    e,
                    &format!("{PKI}/ca.crt"),
                    b"\xff\xfe\x00\x1b[31m-----BEGIN",
                    0o644,
                )
            })
            .expect(1, "ca-check", &["/etc/kubernetes/pki/ca.crt"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-missing", "pki/etcd/ca.crt removed")
            .setup(|e| clear(&e.p(&format!("{PKI}/etcd/ca.crt"))))
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/etcd/ca.crt does not exist"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "pki-dir-symlink", "pki/ -> outside/pki")
            .setup(|e| plant_symlink(e, PKI, &e.o("pki")))
            .expect(1, "ca-check", &["/etc/kubernetes/pki is a symlink"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-expired", "clock 2035-02-01: every CA expired")
            .args(Args::renew_unforced().with("--now", "2035-02-01T00:00:00Z"))
            .expect(1, "ca-check", &["ca.crt", "expired"])
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "ca",
            "ca-not-yet-valid",
            "clock 2024-12-15: no CA valid yet",
        )
        .args(Args::renew().with("--now", "2024-12-15T00:00:00Z"))
        .expect(1, "ca-check", &["ca.crt", "not valid until"])
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "ca",
            "ca-changed-since-resume",
            "resumed phase recorded another ca.crt",
        )
        .setup(|e| {
            let p = v2_phase_at(&e.root, "op-old", "restart_pending", Some("etcd"))
                .replace(&ca_sha_at(&e.root, "ca.crt"), &"ab".repeat(32));
            write_phase(e, &p);
        })
        .expect(
            1,
            "ca-check",
            &["CA ca.crt changed since the resumed work began"],
        )
        .allow(Allow::Receipt),
    );

    // A CA that someone other than root can replace: refused before kubeadm
    // signs anything with it (renewal only; check and status read it).
    v.push(
        case("ca", "ca-not-root", "pki/ca.crt owned by uid 65534")
            .setup(|e| chown_nobody(e, &format!("{PKI}/ca.crt")))
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/ca.crt is owned by uid 65534"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-world-writable", "pki/etcd/ca.crt mode 0666")
            .setup(|e| chmod_rel(e, &format!("{PKI}/etcd/ca.crt"), 0o666))
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/etcd/ca.crt is writable by group or others"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "ca",
            "ca-key-not-root",
            "pki/front-proxy-ca.key owned by uid 65534",
        )
        .setup(|e| chown_nobody(e, &format!("{PKI}/front-proxy-ca.key")))
        .expect(
            1,
            "ca-check",
            &["/etc/kubernetes/pki/front-proxy-ca.key is owned by uid 65534"],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case("ca", "ca-key-group-writable", "pki/ca.key mode 0620")
            .setup(|e| chmod_rel(e, &format!("{PKI}/ca.key"), 0o620))
            .expect(
                1,
                "ca-check",
                &["/etc/kubernetes/pki/ca.key is writable by group or others"],
            )
            .allow(Allow::Receipt),
    );

    // ------------------------------------------------------------ leaves on the node
    v.push(
        case(
            "cert",
            "leaf-garbage",
            "pki/apiserver.crt = garbage (not forced)",
        )
        .args(Args::renew_unforced())
        .setup(|e| {
            plant_file(
                e,
                &format!("{PKI}/apiserver.crt"),
                b"-----BEGIN CERTIFICATE-----\n!!\n",
                0o644,
            )
        })
        .expect(1, "expiry", &["/etc/kubernetes/pki/apiserver.crt"])
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "cert",
            "kubeconfig-symlink",
            "admin.conf -> outside/secret (not forced)",
        )
        .args(Args::renew_unforced())
        .setup(|e| plant_symlink(e, "etc/kubernetes/admin.conf", &e.o("secret")))
        .expect(1, "expiry", &["/etc/kubernetes/admin.conf is a symlink"])
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "cert",
            "leaf-not-yet-valid",
            "apiserver.crt valid from 2030; kubeadm no-op",
        )
        .sim(json!({}))
        .setup(|e| {
            for ext in ["crt", "key"] {
                std::fs::copy(
                    extra(&format!("apiserver-not-yet-valid.{ext}")),
                    e.p(&format!("{PKI}/apiserver.{ext}")),
                )
                .unwrap();
            }
        })
        .kubeadm(script_tool("kubeadm-noop", "exit 0"))
        // SPEC 11 (v1.2): refused before the gate, a clock problem.
        .expect(1, "expiry", &["apiserver", "notBefore", "clock problem"])
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "cert",
            "leaf-renewed-not-yet-valid",
            "kubeadm's clock a day ahead: every renewed leaf valid from tomorrow",
        )
        .sim(json!({ "kubeadm": { "notBeforeAheadSecs": 86400 } }))
        .args(Args::renew().with("--command-timeout", "60"))
        .expect(1, "renew-certs", &["is not valid until", "after kubeadm"])
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "cert",
            "leaf-foreign-ca",
            "apiserver.crt signed by a foreign CA; kubeadm no-op",
        )
        .sim(json!({}))
        .setup(|e| {
            for ext in ["crt", "key"] {
                std::fs::copy(
                    extra(&format!("apiserver-foreign.{ext}")),
                    e.p(&format!("{PKI}/apiserver.{ext}")),
                )
                .unwrap();
            }
        })
        .args(Args::renew_unforced().with("--now", DUE))
        .kubeadm(script_tool("kubeadm-noop", "exit 0"))
        // v1.3: a kubeadm that renewed nothing is caught leaf by leaf
        // first; a foreign leaf kubeadm writes: kubeadm-writes-foreign-leaf.
        .expect(1, "renew-certs", &["apiserver was not renewed: its serial"])
        .allow(Allow::Renew),
    );

    // ------------------------------------------------------------ the live node (SPEC 10)
    // The operator view with a one-second --probe-timeout: each fault is
    // named, never healthy, never a hang past the budget.
    for (id, planted, knobs, code, needles) in [
        (
            "live-port-silent",
            "etcd's /health accepts and never answers",
            json!({"health": {"etcd": "slow"}}),
            1,
            &["etcd not checked", "no answer within the probe's time"][..],
        ),
        (
            "live-port-garbage",
            "kube-controller-manager's /healthz answers bytes that are not HTTP",
            json!({"health": {"kube-controller-manager": "garbage"}}),
            1,
            &["kube-controller-manager not checked", "did not answer HTTP"][..],
        ),
        (
            "live-port-10mb",
            "kube-apiserver's /readyz answers 200 with a 10 MB body",
            json!({"health": {"kube-apiserver": "huge"}}),
            1,
            &["kube-apiserver not checked", "answered more than 64 KiB"][..],
        ),
        (
            "live-port-closed",
            "kube-scheduler runs and never listens on its --secure-port (within its probe's start allowance: starting, SPEC 12)",
            json!({"health": {"kube-scheduler": "closed"}}),
            1,
            &["kube-scheduler starting", "Connection refused"][..],
        ),
    ] {
        v.push(
            case("live", id, planted)
                .sim(knobs)
                .args(Args::live())
                .no_tools_but_crictl()
                .expect(code, "", needles),
        );
    }
    v.push(
        case(
            "live",
            "live-served-foreign",
            "apiserver.crt/.key replaced by a pair from another CA",
        )
        .sim(json!({}))
        .setup(|e| {
            for (from, to) in [
                ("apiserver-foreign.crt", "apiserver.crt"),
                ("apiserver-foreign.key", "apiserver.key"),
            ] {
                std::fs::copy(extra(from), e.p(&format!("etc/kubernetes/pki/{to}"))).unwrap();
            }
        })
        .args(Args::live())
        .no_tools_but_crictl()
        .expect(1, "", &["kube-apiserver"]),
    );
    // The kubelet's certificates (SPEC 10): listed, never renewed; one that
    // cannot be read is a named problem (exit 1), never clean, never read
    // through a symlink that leaves its directory.
    const KUBELET_CONF: &str = "apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem\n    client-key: /var/lib/kubelet/pki/kubelet-client-current.pem\n";
    fn kubelet_pki(e: &Env) -> PathBuf {
        let d = e.p("var/lib/kubelet/pki");
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    v.push(
        case(
            "live",
            "kubelet-conf-no-client-cert",
            "kubelet.conf whose user has no client certificate",
        )
        .setup(|e| {
            write_mode(
                &e.p("etc/kubernetes/kubelet.conf"),
                b"apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user: {}\n",
                0o600,
            )
        })
        .args(Args::status())
        .no_tools()
        .expect(1, "", &["kubelet.conf"]),
    );
    v.push(
        case(
            "live",
            "kubelet-client-symlink-out",
            "kubelet-client-current.pem -> /etc/kubernetes/pki/ca.key",
        )
        .setup(|e| {
            write_mode(
                &e.p("etc/kubernetes/kubelet.conf"),
                KUBELET_CONF.as_bytes(),
                0o600,
            );
            std::os::unix::fs::symlink(
                "/etc/kubernetes/pki/ca.key",
                kubelet_pki(e).join("kubelet-client-current.pem"),
            )
            .unwrap();
        })
        .args(Args::status())
        .no_tools()
        .expect(
            1,
            "",
            &["kubelet-client-current.pem", "outside its directory"],
        ),
    );
    v.push(
        case(
            "live",
            "kubelet-client-huge",
            "kubelet-client-current.pem of 100 KiB",
        )
        .setup(|e| {
            write_mode(
                &e.p("etc/kubernetes/kubelet.conf"),
                KUBELET_CONF.as_bytes(),
                0o600,
            );
            write_mode(
                &kubelet_pki(e).join("kubelet-client-current.pem"),
                &vec![b'A'; 100 * 1024],
                0o600,
            );
        })
        .args(Args::status())
        .no_tools()
        .expect(1, "", &["kubelet-client-current.pem"]),
    );
    v.push(
        case("live", "live-crictl-hangs", "crictl = sleep 60")
            .sim(json!({}))
            .args(Args::live())
            .crictl(script_tool("crictl-hang", "exec sleep 60"))
            .expect(1, "", &["containers not checked", "timed out"]),
    );
    v.push(
        case(
            "live",
            "live-crictl-garbage",
            "crictl prints garbage, exits 0",
        )
        .sim(json!({}))
        .args(Args::live())
        .crictl(script_tool(
            "crictl-garbage",
            "printf '\\377{\"containers\": [garbage\\n'; exit 0",
        ))
        .expect(1, "", &["containers not checked", "not the expected JSON"]),
    );

    // ------------------------------------------------------------ tools
    v.push(
        case("tool", "crictl-hangs", "crictl = sleep 60")
            .sim(json!({}))
            .args(Args::renew().with("--command-timeout", "1"))
            .crictl(script_tool("crictl-hang", "exec sleep 60"))
            .expect(1, "health", &["timed out"])
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "tool",
            "crictl-garbage-exit-0",
            "crictl prints garbage, exits 0",
        )
        .sim(json!({}))
        .crictl(script_tool(
            "crictl-garbage",
            "printf '\\377{\"containers\": [garbage\\n'; exit 0",
        ))
        .expect(1, "health", &["crictl ps output is not the expected JSON"])
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "tool",
            "crictl-endless-output",
            "crictl = yes (endless stdout)",
        )
        .sim(json!({}))
        .args(Args::renew().with("--command-timeout", "60"))
        .crictl(script_tool("crictl-yes", "exec yes"))
        .expect(1, "health", &["printed more than 4194304 bytes"])
        .allow(Allow::Receipt),
    );
    v.push(
        case("tool", "crictl-missing", "--crictl names a missing file")
            .crictl(missing_tool("no-such-crictl"))
            .expect(1, "health", &["crictl not found at", "no-such-crictl"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("tool", "kubeadm-missing", "--kubeadm names a missing file")
            .kubeadm(missing_tool("no-such-kubeadm"))
            .expect(
                1,
                "renew-certs",
                &["kubeadm not found at", "no-such-kubeadm"],
            )
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "tool",
            "path-fake-kubeadm",
            "caller PATH=outside/bin (fake kubeadm)",
        )
        .no_tools_but_crictl()
        .path(|e| format!("{}:/usr/bin:/bin", e.o("bin").display()))
        .expect(1, "renew-certs", &["kubeadm not found on the fixed PATH"])
        .allow(Allow::Receipt)
        .skip_if(|| host_has("kubeadm")),
    );
    v.push(
        case(
            "tool",
            "path-fake-crictl",
            "caller PATH=outside/bin (fake crictl)",
        )
        .no_tools_but_kubeadm()
        .path(|e| format!("{}:/usr/bin:/bin", e.o("bin").display()))
        .expect(1, "health", &["crictl not found on the fixed PATH"])
        .allow(Allow::Receipt)
        .skip_if(|| host_has("crictl")),
    );
    v.push(
        case("tool", "kubeadm-hangs", "kubeadm sleeps 60 s (hangSecs)")
            .sim(json!({ "kubeadm": { "hangSecs": 60 } }))
            .args(Args::renew().with("--command-timeout", "1"))
            .expect(1, "renew-certs", &["kubeadm", "timed out"])
            .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-garbage-exit-0",
            "kubeadm prints garbage, exits 0, renews nothing",
        )
        .sim(json!({}))
        .args(Args::renew_unforced().with("--now", DUE))
        .kubeadm(script_tool(
            "kubeadm-garbage",
            "printf '\\377\\033[2J[certs] renewed everything\\n'; exit 0",
        ))
        .expect(
            1,
            "renew-certs",
            &[
                "apiserver was not renewed: its serial",
                "etcd-peer was not renewed",
            ],
        )
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-3gb-output",
            "kubeadm prints 3 GB to stdout",
        )
        .sim(json!({}))
        .args(Args::renew().with("--command-timeout", "60"))
        .kubeadm(script_tool(
            "kubeadm-3gb",
            "head -c 3000000000 /dev/zero\nexit 0",
        ))
        .expect(1, "renew-certs", &["printed more than 4194304 bytes"])
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-stderr-escapes",
            "kubeadm exits 1, ESC/BEL/CR on stderr",
        )
        .sim(json!({}))
        .kubeadm(script_tool(
            "kubeadm-esc",
            "printf '\\033]0;pwned\\007\\033[2J\\rboom\\n' >&2; exit 1",
        ))
        .expect(
            1,
            "renew-certs",
            &["kubeadm certs renew all failed (exit 1)", "boom"],
        )
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-writes-foreign-leaf",
            "kubeadm writes a leaf of a foreign CA",
        )
        .sim(json!({}))
        .args(Args::renew().with("--command-timeout", "60"))
        .kubeadm(kubeadm_writing(
            "apiserver-foreign.crt",
            "apiserver-foreign.key",
        ))
        .expect(1, "renew-certs", &["apiserver is not signed by its CA"])
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-writes-future-leaf",
            "kubeadm writes a leaf valid from 2030",
        )
        .sim(json!({}))
        .args(Args::renew().with("--command-timeout", "60"))
        .kubeadm(kubeadm_writing(
            "apiserver-not-yet-valid.crt",
            "apiserver-not-yet-valid.key",
        ))
        .expect(1, "renew-certs", &["apiserver", "not valid until"])
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-changes-ca",
            "kubeadm rewrites ca.crt (changeCA)",
        )
        .sim(json!({ "kubeadm": { "changeCA": true } }))
        .ecdsa()
        .args(Args::renew().with("--command-timeout", "60"))
        .expect(1, "renew-certs", &["CA"])
        .allow(Allow::Renew),
    );
    v.push(
        case(
            "tool",
            "kubeadm-key-mismatch",
            "kubeadm writes a key of another cert",
        )
        .sim(json!({ "kubeadm": { "keyMismatch": true } }))
        .ecdsa()
        .args(Args::renew().with("--command-timeout", "60"))
        .expect(1, "renew-certs", &["does not match its certificate"])
        .allow(Allow::Renew),
    );

    // ------------------------------------------------------------ etcd
    v.push(
        case("etcd", "etcd-learner", "3 voters + 1 learner")
            .sim(json!({ "etcd": { "voters": 3, "learners": 1 } }))
            .expect(1, "health", &["learner"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("etcd", "etcd-self-learner", "this member is a learner")
            .sim(json!({ "etcd": { "voters": 3, "selfIsLearner": true, "learners": 1 } }))
            .expect(1, "health", &["this etcd member is a learner"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("etcd", "etcd-two-voters", "2 voters")
            .sim(json!({ "etcd": { "voters": 2 } }))
            .expect(1, "two-control-plane-voters", &["exactly two voters"])
            .allow(Allow::Receipt),
    );
    v.push(
        case(
            "etcd",
            "etcd-exec-fails",
            "gateway off; crictl exec into etcd fails",
        )
        .sim(json!({ "etcd": { "execFails": true, "gateway": false } }))
        .expect(1, "health", &["etcdctl"])
        .allow(Allow::Receipt),
    );
    v.push(
        case("etcd", "etcd-no-leader-exit-0", "gateway off; endpoint health: no leader, exit 0")
            .sim(json!({ "etcd": { "gateway": false } }))
            .crictl(crictl_answering(
                    "*etcdctl*\"endpoint health\"*",
                    "[{\"endpoint\":\"https://127.0.0.1:2379\",\"health\":false,\"took\":\"5s\",\"error\":\"etcdserver: no leader\"}]",
            ))
            .expect(1, "health", &["no leader"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("etcd", "etcd-id-f64-collision", "gateway off; member ID = own ID - 1 (same f64)")
            .sim(json!({ "etcd": { "gateway": false } }))
            .crictl(crictl_answering(
                    "*etcdctl*\"member list\"*",
                    "{\"header\":{\"cluster_id\":14841639068965178418,\"member_id\":10276657743932975437,\"raft_term\":2},\"members\":[{\"ID\":10276657743932975436,\"name\":\"cp-1\",\"peerURLs\":[\"https://10.0.0.11:2380\"],\"clientURLs\":[\"https://10.0.0.11:2379\"]}]}",
            ))
            .expect(1, "health", &["is not in the member list"])
            .allow(Allow::Receipt),
    );
    v.push(
        case("etcd", "etcd-id-above-u64", "gateway off; member ID 2^64 (overflows u64)")
            .sim(json!({ "etcd": { "gateway": false } }))
            .crictl(crictl_answering(
                    "*etcdctl*\"member list\"*",
                    "{\"header\":{\"cluster_id\":1,\"member_id\":18446744073709551616,\"raft_term\":2},\"members\":[{\"ID\":18446744073709551616,\"name\":\"cp-1\",\"clientURLs\":[\"https://10.0.0.11:2379\"]}]}",
            ))
            .expect(1, "health", &["member list output is not the expected JSON"])
            .allow(Allow::Receipt),
    );
    let one = "{\"endpoint\":\"https://10.0.0.11:2379\",\"health\":true,\"took\":\"1ms\"}";
    v.push(
        case(
            "etcd",
            "etcd-health-duplicates",
            "gateway off; 3 voters; cluster health lists member 1 thrice",
        )
        .sim(json!({ "etcd": { "voters": 3, "gateway": false } }))
        .crictl(crictl_answering(
            "*etcdctl*\"endpoint health --cluster\"*",
            &format!("[{one},{one},{one}]"),
        ))
        .expect(1, "health", &["only 1 of 3 etcd voters are healthy"])
        .allow(Allow::Receipt),
    );

    // etcd asked directly (SPEC 4 step 7, v1.2): the gateway's hostile answers.
    for (name, what, answer, needle) in [
        (
            "etcd-gateway-id-f64-collision",
            "gateway: member ID = own ID - 1 (same f64)",
            "{\"header\":{\"cluster_id\":\"1\",\"member_id\":\"10276657743932975437\",\"raft_term\":\"2\"},\"members\":[{\"ID\":\"10276657743932975436\",\"name\":\"cp-1\",\"clientURLs\":[\"https://10.0.0.11:2379\"]}]}",
            "is not in the member list",
        ),
        (
            "etcd-gateway-id-above-u64",
            "gateway: member ID 2^64 as a string",
            "{\"header\":{\"member_id\":\"18446744073709551616\"},\"members\":[{\"ID\":\"18446744073709551616\"}]}",
            "not a 64-bit ID",
        ),
        (
            "etcd-gateway-not-json",
            "gateway: 200 with a terminal escape, not JSON",
            "\u{1b}[2J<html>upgrade</html>",
            "member list (JSON gateway) is not the expected JSON",
        ),
        (
            "etcd-gateway-two-voters",
            "gateway: this member and one other (two voters)",
            "{\"header\":{\"member_id\":\"7\"},\"members\":[{\"ID\":\"7\",\"clientURLs\":[\"https://10.0.0.11:2379\"]},{\"ID\":\"8\",\"clientURLs\":[\"https://10.0.0.12:2379\"]}]}",
            "exactly two voters",
        ),
    ] {
        v.push(
            case("etcd", name, what)
                .sim(json!({ "etcd": { "gatewayAnswer": answer } }))
                .args(Args::renew().with("--health-timeout", "2"))
                .expect(1, if name.contains("two-voters") { "two-control-plane-voters" } else { "health" }, &[needle])
                .allow(Allow::Receipt),
        );
    }

    // ------------------------------------------------------------ fencing check
    v.push(
        case(
            "fence",
            "fence-phase-symlink",
            "fence; phase -> outside/phase-v2",
        )
        .args(Args::fence())
        .setup(|e| plant_symlink(e, &st("phase"), &e.o("phase-v2")))
        .expect(
            1,
            "",
            &["/var/lib/nvke/k8s-cert-renewal/phase is a symlink"],
        )
        .allow(Allow::LockOnly),
    );
    v.push(
        case(
            "fence",
            "fence-receipt-fifo",
            "fence; own receipt is a FIFO",
        )
        .args(Args::fence())
        .setup(|e| {
            completed_dir(e);
            plant_fifo(e, &receipt_rel());
        })
        .expect(1, "", &["completed/op-hostile.json is a FIFO"])
        .allow(Allow::LockOnly),
    );
    // SPEC 6: the dead operation is fenced all the same (confirmed, exit 0,
    // an `abandoned` receipt); the staging directory is refused and named,
    // nothing is put back from it, the missing manifest is named.
    v.push(
        case(
            "fence",
            "fence-staging-symlink",
            "fence; etcd staged, staging -> outside copy",
        )
        .args(Args::fence())
        .setup(|e| {
            write_phase(
                e,
                &v2_phase_at(&e.root, ID, "restart_pending", Some("etcd")),
            );
            plant_symlink(e, STAGING, &e.o("manifests"));
            clear(&e.p(&format!("{MANIFESTS}/etcd.yaml")));
        })
        .expect(
            0,
            "",
            &[
                "nvke-cert-renewal-staging is a symlink",
                "etcd manifest is missing",
            ],
        )
        .allow(Allow::Abandon)
        .receipt_outcomes(&["abandoned"]),
    );
    v.extend(yaml_cases());
    for c in &mut v {
        if c.id.ends_with("-not-root") {
            c.skip_if = Some(not_root);
        }
    }
    v
}

// ---------------------------------------------------------------- running one case

struct Outcome {
    id: &'static str,
    cat: &'static str,
    planted: String,
    want: String,
    got_code: Option<i32>,
    got_phase: String,
    ms: u128,
    msg: String,
    allow: Allow,
    failures: Vec<String>,
    skipped: Option<String>,
}

/// The row's argv with what it does not name: `--root`, `--output json`,
/// `--now` and the short timeouts (unless `raw`), then the tools: both the
/// node's ahead of the row's own arguments, or, for a row that departs from
/// them, after its arguments its own tool and then the node's other one.
fn full_args(e: &Env, c: &Case) -> Vec<OsString> {
    let case_args = &c.args.0;
    let has = |flag: &str| case_args.iter().any(|a| a == flag);
    let mut v: Vec<OsString> = Vec::new();
    if c.defaults {
        v.push("--root".into());
        v.push(e.root.clone().into());
        v.push("--output".into());
        v.push("json".into());
        for (flag, default) in [
            ("--now", NOW),
            ("--health-timeout", "1"),
            ("--stop-timeout", "2"),
            ("--lock-timeout", "0"),
            ("--command-timeout", "2"),
            ("--settle", "0"),
        ] {
            if !has(flag) {
                v.push(flag.into());
                v.push(default.into());
            }
        }
    }
    let tools = [
        ("--crictl", &c.crictl, e.crictl()),
        ("--kubeadm", &c.kubeadm, e.kubeadm()),
    ];
    let node_tools = |v: &mut Vec<OsString>, has: &dyn Fn(&str) -> bool| {
        for (flag, t, node) in &tools {
            if matches!(t, ToolArg::Node) && !has(flag) {
                v.push(flag.into());
                v.push(node.clone().into());
            }
        }
    };
    let both_node = tools.iter().all(|t| matches!(t.1, ToolArg::Node));
    if both_node {
        node_tools(&mut v, &has);
    }
    v.extend(case_args.iter().cloned());
    if !both_node {
        let mut own = Vec::new();
        for (flag, t, _) in &tools {
            if let ToolArg::Own(f) = t {
                own.push(OsString::from(flag));
                own.push(f(e).into());
            }
        }
        let has_own = |flag: &str| has(flag) || own.iter().any(|a| a == flag);
        v.extend(own.iter().cloned());
        node_tools(&mut v, &has_own);
    }
    v
}

/// Run the runbook with stdout and stderr in files, bounded by `limit`.
fn run_bounded(
    args: &[OsString],
    path: &str,
    work: &Path,
    limit: Duration,
) -> (Option<i32>, String, String, Duration, bool) {
    let out_path = work.join("stdout");
    let err_path = work.join("stderr");
    let start = Instant::now();
    let mut child = Command::new(RUNBOOK)
        .args(args)
        .env_clear()
        .env("PATH", path)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let mut hung = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            hung = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).to_string();
    (
        status.and_then(|s| s.code()),
        read(&out_path),
        read(&err_path),
        elapsed,
        hung,
    )
}

fn run_case(c: &Case) -> Outcome {
    let mut o = Outcome {
        id: c.id,
        cat: c.cat,
        planted: c.planted.clone(),
        want: format!("{} {}", c.code, c.phase.unwrap_or("-")),
        got_code: None,
        got_phase: String::new(),
        ms: 0,
        msg: String::new(),
        allow: c.allow,
        failures: Vec::new(),
        skipped: None,
    };
    if let Some(reason) = c.skip_if.and_then(|f| f()) {
        o.skipped = Some(reason);
        return o;
    }
    let e = Env::new(c.variant, c.sim.as_ref());
    if let Err(why) = (c.setup)(&e) {
        if why.starts_with("SKIP") {
            o.skipped = Some(why);
            return o;
        }
        o.failures.push(format!("setup: {why}"));
        return o;
    }
    let args = full_args(&e, c);
    let path = c
        .path
        .as_ref()
        .map(|f| f(&e))
        .unwrap_or_else(|| "/usr/bin:/bin".to_string());
    let root_before = snapshot(&e.root, false);
    let out_before = snapshot(&e.outside, true);
    let watch = Watch::new(&e.outside, libc::IN_ALL_EVENTS);

    let (code, stdout, stderr, elapsed, hung) = run_bounded(&args, &path, &e.work, RUN_LIMIT);
    o.ms = elapsed.as_millis();
    o.got_code = code;

    let events = watch.events();
    drop(watch);
    let root_after = snapshot(&e.root, false);
    let out_after = snapshot(&e.outside, true);
    let f = &mut o.failures;

    if hung {
        f.push(format!("hung: killed after {}s", RUN_LIMIT.as_secs()));
    }
    // Output: exactly one JSON object on one line.
    let lines: Vec<&str> = stdout.lines().collect();
    let doc: Value = if lines.len() == 1 && stdout.ends_with('\n') {
        serde_json::from_str(lines[0]).unwrap_or_else(|err| {
            f.push(format!("stdout is not JSON ({err}): {stdout}"));
            Value::Null
        })
    } else {
        f.push(format!("stdout is not exactly one JSON line: {stdout:?}"));
        Value::Null
    };
    let msg = doc["message"].as_str().unwrap_or("").to_string();
    o.got_phase = doc["phase"].as_str().unwrap_or("-").to_string();
    o.msg = msg.clone();
    if code != Some(c.code) {
        f.push(format!("exit {code:?}, expected {}", c.code));
    }
    if let Some(p) = c.phase {
        if !p.is_empty() && doc["phase"].as_str() != Some(p) {
            f.push(format!("phase {:?}, expected {p:?}", doc["phase"]));
        }
    }
    let termination = if c.code == 0 {
        "confirmed"
    } else {
        "unconfirmed"
    };
    if c.cat == "fence" && doc["termination"] != termination {
        f.push(format!(
            "termination {:?}, expected {termination}",
            doc["termination"]
        ));
    }
    if msg.is_empty() {
        f.push("no message".into());
    }
    if msg.len() > 512 {
        f.push(format!("message is {} bytes (at most 512)", msg.len()));
    }
    if let Some(ch) = msg.chars().find(|ch| ch.is_control()) {
        f.push(format!("message has a control character {ch:?}"));
    }
    for needle in &c.needles {
        if !needle
            .split('|')
            .any(|n| msg.contains(n) || stderr.contains(n))
        {
            f.push(format!("neither the message nor stderr names {needle:?}"));
        }
    }
    // Nothing changed in the root but what SPEC makes the run write.
    for (path, what) in diff(&root_before, &root_after) {
        let permitted = what != "removed" && c.allow.permits(&path);
        if !permitted {
            f.push(format!("root changed: {path}: {what}"));
        }
    }
    if c.receipt {
        match std::fs::read(e.p(&receipt_rel())) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(r) => {
                    if !c
                        .receipt_outcomes
                        .contains(&r["outcome"].as_str().unwrap_or(""))
                    {
                        f.push(format!("receipt outcome {:?}", r["outcome"]));
                    }
                    if let Some(p) = c.phase.filter(|p| !p.is_empty()) {
                        if r["phase"].as_str() != Some(p) {
                            f.push(format!("receipt phase {:?}, expected {p:?}", r["phase"]));
                        }
                    }
                }
                Err(err) => f.push(format!("receipt does not parse: {err}")),
            },
            Err(err) => f.push(format!("no failure receipt for {ID}: {err}")),
        }
    }
    if c.allow == Allow::Renew {
        let phase = std::fs::read_to_string(e.p(&st("phase"))).unwrap_or_default();
        if !phase.is_empty() && !phase.contains("\"state\": \"renewing\"") {
            f.push(format!("phase file is not `renewing`: {phase}"));
        }
    }
    // An evidence row: the bundle is there, and holds none of the secret.
    if let Some(lacks) = &c.bundle {
        let out = Command::new("tar")
            .arg("-xzOf")
            .arg(e.p(EVIDENCE_BUNDLE))
            .output()
            .unwrap();
        if out.status.success() {
            let has = |n: &[u8]| out.stdout.windows(n.len()).any(|w| w == n);
            for (secret, marked) in lacks(&e) {
                let shown = clip(&secret, 12);
                if has(secret.as_bytes()) {
                    f.push(format!("the evidence bundle holds the planted {shown}"));
                }
                let mark = format!(
                    "<redacted sha256:{}>",
                    support::hex::sha256_hex(secret.as_bytes())
                );
                if marked && !has(mark.as_bytes()) {
                    f.push(format!("no {mark} in the bundle for {shown}"));
                }
            }
        } else {
            f.push(format!(
                "no evidence bundle at {EVIDENCE_BUNDLE}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    // The sentinel: not touched, not even read or listed.
    for ev in &events {
        f.push(format!("outside sentinel touched: {ev}"));
    }
    for (path, what) in diff(&out_before, &out_after) {
        f.push(format!("outside sentinel changed: {path}: {what}"));
    }
    if e.node.is_none() && e.work.join("tool-ran").exists() {
        let ran = std::fs::read_to_string(e.work.join("tool-ran")).unwrap_or_default();
        f.push(format!("a tool ran: {}", ran.trim()));
    }
    if !f.is_empty() {
        f.push(format!("args: {args:?}"));
        f.push(format!("stderr tail: {}", tail(&stderr, 1500)));
    }
    o
}

fn clip(s: &str, n: usize) -> String {
    let v: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        format!("{v}…")
    } else {
        v
    }
}

#[test]
fn hostile_inputs() {
    let only = std::env::var("NVKE_HOSTILE_ONLY").ok();
    let verbose = std::env::var_os("NVKE_HOSTILE_VERBOSE").is_some();
    let jobs: usize = std::env::var("NVKE_HOSTILE_JOBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);

    // NUL cannot be delivered through execve: the closest we can test.
    let nul = Command::new(RUNBOOK)
        .arg("--operation-id")
        .arg("op\0x")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Err(nul_error) = nul else {
        panic!("a NUL byte in argv was accepted by spawn; add an opid-nul case");
    };
    say(&format!(
        "note: an operation ID with a NUL byte cannot reach the runbook (argv strings end at NUL; \
         spawn refuses it: {nul_error}); nearest cases: opid-ctrl-0x01, opid-newline, \
         opid-ansi-escape, opid-non-utf8"
    ));

    let all = cases();
    let mut seen = std::collections::HashSet::new();
    for c in &all {
        assert!(seen.insert(c.id), "duplicate case id {}", c.id);
    }
    let selected: Vec<(usize, Case)> = all
        .into_iter()
        .filter(|c| only.as_deref().is_none_or(|o| c.id.contains(o)))
        .enumerate()
        .collect();
    let n = selected.len();
    assert!(n > 0, "no case selected");
    let queue = Mutex::new(VecDeque::from(selected));
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let Some((i, c)) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(&c)));
                let o = r.unwrap_or_else(|p| {
                    let why = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Outcome {
                        id: c.id,
                        cat: c.cat,
                        planted: c.planted.clone(),
                        want: format!("{}", c.code),
                        got_code: None,
                        got_phase: String::new(),
                        ms: 0,
                        msg: String::new(),
                        allow: c.allow,
                        failures: vec![format!("panicked: {why}")],
                        skipped: None,
                    }
                });
                results.lock().unwrap().push((i, o));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);

    say(&format!(
        "{:<3} {:<28} {:<8} {:<46} {:<26} {:<5} {:>6}  {:<62} unchanged",
        "#", "case", "category", "planted", "expected", "got", "ms", "error (first 60 chars)"
    ));
    let mut refused = 0;
    let mut skipped = Vec::new();
    let mut failed = Vec::new();
    let mut per_cat: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, o) in &results {
        if let Some(why) = &o.skipped {
            say(&format!(
                "{:<3} {:<28} {:<8} {:<46} {why}",
                i + 1,
                o.id,
                o.cat,
                clip(&o.planted, 46)
            ));
            skipped.push(o.id);
            continue;
        }
        let ok = o.failures.is_empty();
        if ok {
            refused += 1;
            *per_cat.entry(o.cat).or_default() += 1;
        } else {
            failed.push(o.id);
        }
        let got = o
            .got_code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none".into());
        say(&format!(
            "{:<3} {:<28} {:<8} {:<46} {:<26} {:<5} {:>6}  {:<62} {}{}",
            i + 1,
            o.id,
            o.cat,
            clip(&o.planted, 46),
            o.want,
            got,
            o.ms,
            clip(&o.msg, 60),
            if ok { "yes" } else { "NO" },
            o.allow.label()
        ));
        for why in &o.failures {
            say(&format!("      FAILED {}: {why}", o.id));
        }
        if verbose {
            say(&format!("      message: {}", o.msg));
        }
    }
    let cats: Vec<String> = per_cat.iter().map(|(k, v)| format!("{k} {v}")).collect();
    say(&format!(
        "per category: {}; {} skipped{}; {:.1}s with {jobs} jobs",
        cats.join(", "),
        skipped.len(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(" ({})", skipped.join(", "))
        },
        started.elapsed().as_secs_f64()
    ));
    let run = n - skipped.len();
    if failed.is_empty() {
        say(&format!(
            "hostile inputs: {refused} refused of {run}, nothing changed"
        ));
    } else {
        say(&format!(
            "hostile inputs: {refused} refused of {run}; FAILED: {}",
            failed.join(", ")
        ));
    }
    assert!(
        failed.is_empty(),
        "hostile cases failed (listed above): {failed:?}"
    );
    if only.is_none() {
        assert!(run >= 40, "only {run} hostile cases ran");
    }
}

// ---------------------------------------------------------------- the symlink flipper

#[derive(Clone, Copy, Debug)]
enum Trigger {
    /// Flip from the start.
    Start,
    /// Once the phase file contains this text.
    Phase(&'static str),
    /// Once a manifest is in the runbook's staging directory.
    Staged,
}

struct Round {
    name: &'static str,
    /// The directory swapped with a symlink (relative to the root).
    target: &'static str,
    trigger: Trigger,
    /// Create the staging directory before the run (it is normally made on
    /// the first restart).
    pre_create_staging: bool,
    /// Start from another operation's `restart_pending` phase file (no
    /// kubeadm: it would follow a swapped-in symlink, as the real one would).
    resume: bool,
    /// kubeadm fails (exit 1, writes nothing): the PKI is put back from the
    /// backup through the runbook's own no-follow writes.
    kubeadm_fails: bool,
}

/// renameat2(RENAME_EXCHANGE) of two paths.
fn exchange(a: &Path, b: &Path) -> nix::Result<()> {
    nix::fcntl::renameat2(
        nix::fcntl::AT_FDCWD,
        a,
        nix::fcntl::AT_FDCWD,
        b,
        nix::fcntl::RenameFlags::RENAME_EXCHANGE,
    )
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// Swap `target` with a symlink to `outside` until `stop`, then leave the
/// real directory at `target`. A missing target (staging before the first
/// restart) is flipped by creating and removing the symlink until the
/// runbook creates the real directory. Returns the number of swaps.
fn flip(target: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>, seed: u64) -> u64 {
    let link = target.with_file_name(format!(
        ".{}.flip",
        target.file_name().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut swaps = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let on = Duration::from_micros(200 + next() % 1800);
        let off = Duration::from_micros(2000 + next() % 8000);
        match std::fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => {
                if exchange(&target, &link).is_ok() {
                    swaps += 1;
                    std::thread::sleep(on);
                    exchange(&target, &link).expect("swap back");
                }
            }
            Err(_) => {
                // Missing: a symlink appears for a moment (rename, so that a
                // mkdir by the runbook in between wins cleanly).
                let tmp = target.with_file_name(".flip-appear");
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(&outside, &tmp).unwrap();
                let placed = nix::fcntl::renameat2(
                    nix::fcntl::AT_FDCWD,
                    &tmp,
                    nix::fcntl::AT_FDCWD,
                    &target,
                    nix::fcntl::RenameFlags::RENAME_NOREPLACE,
                )
                .is_ok();
                let _ = std::fs::remove_file(&tmp);
                if placed {
                    swaps += 1;
                    std::thread::sleep(on);
                    if is_symlink(&target) {
                        std::fs::remove_file(&target).unwrap();
                    }
                }
            }
            Ok(_) => panic!(
                "flipper: {} is neither a directory nor missing",
                target.display()
            ),
        }
        std::thread::sleep(off);
    }
    if is_symlink(&target) {
        if std::fs::symlink_metadata(&link).is_ok_and(|m| m.is_dir()) {
            exchange(&target, &link).unwrap();
        } else {
            std::fs::remove_file(&target).unwrap();
        }
    }
    let _ = std::fs::remove_file(&link);
    swaps
}

fn flip_args(node: &Node, kubeadm: &Path, id: &str, extra: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![
        "--root".into(),
        node.root.clone().into(),
        "--crictl".into(),
        node.sim.join("bin/crictl").into(),
        "--kubeadm".into(),
        kubeadm.into(),
        "--output".into(),
        "json".into(),
        "--now".into(),
        NOW.into(),
        "--operation-id".into(),
        id.into(),
        "--stop-timeout".into(),
        "5".into(),
        "--health-timeout".into(),
        "10".into(),
        "--lock-timeout".into(),
        "5".into(),
    ];
    v.extend(extra.iter().map(OsString::from));
    v
}

struct RoundResult {
    name: &'static str,
    run: String,
    swaps: u64,
    failures: Vec<String>,
}

fn flipper_round(i: usize, r: &Round) -> RoundResult {
    let mut res = RoundResult {
        name: r.name,
        run: String::new(),
        swaps: 0,
        failures: Vec::new(),
    };
    let node = Node::new(
        "ecdsa",
        json!({ "stopLatencyMs": 100, "startLatencyMs": 100 }),
    );
    let outside_tmp = tempfile::Builder::new()
        .prefix("nvke-flip-outside-")
        .tempdir()
        .unwrap();
    let id = format!("op-flip-{i}");
    std::fs::create_dir_all(node.state()).unwrap();
    chmod(&node.state(), 0o700);
    if r.pre_create_staging {
        std::fs::create_dir_all(node.root.join(STAGING)).unwrap();
        chmod(&node.root.join(STAGING), 0o700);
    }
    if r.resume {
        node.write_state(
            "phase",
            &node.v2_phase("op-before", "restart_pending", Some("etcd")),
        );
    }
    // What the recovery must give back: the manifests' bytes and modes, the CAs.
    let base = base_of(&node);
    // The sentinel: a copy of what the symlink stands in for.
    let outside = outside_tmp.path().join(r.name);
    let target = node.root.join(r.target);
    if target.is_dir() {
        copy_exact(&target, &outside);
    } else {
        std::fs::create_dir_all(&outside).unwrap();
        chmod(&outside, 0o700);
    }
    let before = snapshot(outside_tmp.path(), true);
    let watch = Watch::new(outside_tmp.path(), CHANGE_EVENTS);

    let kubeadm = if r.kubeadm_fails {
        script(&node.sim.join("kubeadm-fails"), "sleep 0.2\nexit 1")
    } else {
        node.sim.join("bin/kubeadm")
    };
    let args = flip_args(
        &node,
        &kubeadm,
        &id,
        if r.resume { &[] } else { &["--force"] },
    );
    let work = node.sim.join("flip-run");
    std::fs::create_dir_all(&work).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let (code, stdout, stderr) = std::thread::scope(|s| {
        let runner = s.spawn(|| {
            let r = run_bounded(&args, "/usr/bin:/bin", &work, Duration::from_secs(120));
            stop.store(true, Ordering::SeqCst);
            r
        });
        // Wait for the trigger, then flip until the run ends.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if stop.load(Ordering::SeqCst) || Instant::now() > deadline {
                break;
            }
            let fire = match r.trigger {
                Trigger::Start => true,
                Trigger::Phase(text) => node.phase().contains(text),
                Trigger::Staged => COMPONENTS.iter().any(|c| node.staged(c).exists()),
            };
            if fire {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if !stop.load(Ordering::SeqCst) {
            let n = flip(
                target.clone(),
                outside.clone(),
                stop.clone(),
                0x9e37_79b9_7f4a_7c15 ^ i as u64,
            );
            swaps.store(n, Ordering::SeqCst);
        }
        let (code, out, err, _, hung) = runner.join().unwrap();
        if hung {
            res.failures.push("the flipped run hung".into());
        }
        (code, out, err)
    });
    res.swaps = swaps.load(Ordering::SeqCst);
    let v: Value = serde_json::from_str(stdout.lines().next().unwrap_or("")).unwrap_or(Value::Null);
    res.run = format!(
        "exit {} {} {}",
        code.map(|c| c.to_string()).unwrap_or_else(|| "none".into()),
        v["outcome"].as_str().unwrap_or("?"),
        v["phase"].as_str().unwrap_or("?")
    );
    if stdout.lines().count() != 1 {
        res.failures.push(format!(
            "flipped run: not one JSON line: {stdout:?}; {}",
            tail(&stderr, 800)
        ));
    }
    if let Some(ch) = v["message"]
        .as_str()
        .and_then(|m| m.chars().find(|c| c.is_control()))
    {
        res.failures.push(format!(
            "flipped run: control character {ch:?} in the message"
        ));
    }
    // The sentinel: nothing created, written, removed or re-timed.
    for ev in watch.events() {
        res.failures.push(format!("sentinel changed: {ev}"));
    }
    drop(watch);
    for (path, what) in diff(&before, &snapshot(outside_tmp.path(), true)) {
        res.failures
            .push(format!("sentinel changed: {path}: {what}"));
    }
    // The tree is restored (the flipper leaves the real directory in place).
    if !std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) && r.target != STAGING {
        res.failures
            .push(format!("{} is not a directory after the flipper", r.target));
    }
    // Recovery as the controller does it: the fencing check, then a new
    // operation, which ends as the phase file says with the node recovered
    // (every manifest active with its bytes and mode, staging empty, the
    // phase done, the operator view clean).
    let mut seen = Seen::default();
    match fence(&node, &id, &mut seen, &base, "after the flipper") {
        Ok(obs) => {
            let outcome = obs.receipts[&id].clone();
            let after = After {
                // A run refused before its first phase write leaves none.
                phase_may_be_absent: !r.resume,
                taken_over: r.resume.then_some(("op-before", "superseded")),
                kept: (&id, &outcome),
            };
            let next = format!("op-flip-{i}-next");
            if let Err(e) = new_operation(&node, &base, &mut seen, &obs.receipts, &next, after) {
                res.failures.push(e);
            }
        }
        Err(e) => res.failures.push(e),
    }
    for (path, e) in snapshot(&node.root, false) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if (name.starts_with('.') && name.contains(".tmp-")) || name.contains(".flip") {
            res.failures
                .push(format!("leftover {} ({})", path.display(), e.kind));
        }
    }
    res
}

#[test]
fn symlink_flipper() {
    let rounds = [
        Round {
            name: "manifests",
            target: MANIFESTS,
            trigger: Trigger::Staged,
            pre_create_staging: false,
            resume: false,
            kubeadm_fails: false,
        },
        Round {
            name: "staging",
            target: STAGING,
            trigger: Trigger::Phase("restart_pending"),
            pre_create_staging: true,
            resume: false,
            kubeadm_fails: false,
        },
        Round {
            name: "staging-missing",
            target: STAGING,
            trigger: Trigger::Start,
            pre_create_staging: false,
            resume: true,
            kubeadm_fails: false,
        },
        Round {
            name: "state",
            target: STATE,
            trigger: Trigger::Phase("renewing"),
            pre_create_staging: false,
            resume: false,
            kubeadm_fails: false,
        },
        Round {
            name: "pki",
            target: PKI,
            trigger: Trigger::Phase("renewing"),
            pre_create_staging: false,
            resume: false,
            kubeadm_fails: true,
        },
        Round {
            name: "etc-kubernetes",
            target: "etc/kubernetes",
            trigger: Trigger::Staged,
            pre_create_staging: false,
            resume: true,
            kubeadm_fails: false,
        },
        Round {
            name: "var-lib-nvke",
            target: "var/lib/nvke",
            trigger: Trigger::Start,
            pre_create_staging: false,
            resume: false,
            kubeadm_fails: false,
        },
    ];
    let only = std::env::var("NVKE_FLIP_ONLY").ok();
    let started = Instant::now();
    let results: Vec<RoundResult> = std::thread::scope(|s| {
        let handles: Vec<_> = rounds
            .iter()
            .enumerate()
            .filter(|(_, r)| only.as_deref().is_none_or(|o| r.name.contains(o)))
            .map(|(i, r)| s.spawn(move || flipper_round(i, r)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut ok = 0;
    let mut swaps = 0;
    for r in &results {
        swaps += r.swaps;
        let good = r.failures.is_empty();
        ok += usize::from(good);
        say(&format!(
            "flip {:<16} swaps {:>5}  flipped run: {:<48} recovered: {}",
            r.name,
            r.swaps,
            r.run,
            if good { "yes" } else { "NO" }
        ));
        for f in &r.failures {
            say(&format!("      FAILED {}: {f}", r.name));
        }
    }
    say(&format!(
        "symlink flipper: {ok} rounds recovered of {}, {swaps} swaps, sentinels untouched ({:.1}s)",
        results.len(),
        started.elapsed().as_secs_f64()
    ));
    assert_eq!(ok, results.len(), "flipper rounds failed (listed above)");
}

// ---------------------------------------------------------------- YAML (SPEC 10, "Bounded reads")

/// One anchor of 16,000 scalars and 6,000 aliases of it in a pod
/// manifest's annotations: the 56 KB file of issue 25, which serde_yaml
/// expanded to about 10^8 nodes (the binary before aborted at a 2 GiB
/// address-space limit after 7 s, no JSON, in --check and the fencing
/// check alike).
fn alias_bomb(name: &str) -> Vec<u8> {
    let mut s = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: kube-system\n  annotations:\n    a: &a [{}]\n    b: [",
        ["x"; 16_000].join(",")
    );
    s.push_str(&["*a"; 6000].join(", "));
    s.push_str("]\nspec:\n  containers:\n  - name: x\n    image: x\n");
    s.into_bytes()
}

/// Nine levels of ten aliases of the level before: 10^9 scalars from
/// 800 bytes, with only 90 aliases.
fn laughs() -> Vec<u8> {
    let mut s = String::from("apiVersion: v1\nkind: Pod\nmetadata:\n  name: laughs\n  annotations:\n    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = format!("*l{}", i - 1);
        s.push_str(&format!(
            "    l{i}: &l{i} [{}]\n",
            [p.as_str(); 10].join(", ")
        ));
    }
    s.into_bytes()
}

/// The hostile YAML rows (issue 25 item 1): every one over a bound of the
/// YAML reader or the size cap, refused with the file named in every mode
/// that reads it, before anything is changed. On the code before (serde_yaml,
/// no bound) the alias bombs aborted the run (SIGABRT, no JSON) and the
/// rest were read or skipped silently, never refused.
fn yaml_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let stray = format!("{MANIFESTS}/bomb.yaml");
    let kubelet_config = "var/lib/kubelet/config.yaml";
    let named = "/etc/kubernetes/manifests/bomb.yaml is hostile YAML";
    // A stray alias bomb: renew, check, the operator view.
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-alias-bomb",
                "manifests/bomb.yaml: 6,000 aliases; renew",
            )
            .setup(move |e| plant_file(e, &stray, &alias_bomb("bomb"), 0o600))
            .expect(1, "staging-conflict", &[named, "more than 100000 nodes"])
            .allow(Allow::Receipt),
        );
    }
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-alias-bomb-check",
                "manifests/bomb.yaml: 6,000 aliases; --check",
            )
            .setup(move |e| plant_file(e, &stray, &alias_bomb("bomb"), 0o600))
            .args(Args::check())
            .no_tools()
            .expect(1, "", &[named, "more than 100000 nodes"]),
        );
    }
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-alias-bomb-status",
                "manifests/bomb.yaml: 6,000 aliases; --status-only",
            )
            .setup(move |e| plant_file(e, &stray, &alias_bomb("bomb"), 0o600))
            .args(Args::live())
            .no_tools()
            .expect(1, "", &[named, "more than 100000 nodes"]),
        );
    }
    // In a component's own manifest (the fixture's, with the bomb added).
    v.push(
        case(
            "yaml",
            "yaml-component-alias-bomb",
            "kube-apiserver.yaml + 6,000 aliases; renew",
        )
        .setup(|e| {
            let rel = format!("{MANIFESTS}/kube-apiserver.yaml");
            let mut b = std::fs::read(e.p(&rel)).unwrap();
            b.extend_from_slice(b"x-bomb: &a [");
            b.extend_from_slice(["x"; 16_000].join(",").as_bytes());
            b.extend_from_slice(b"]\nx-use: [");
            b.extend_from_slice(["*a"; 6000].join(", ").as_bytes());
            b.extend_from_slice(b"]\n");
            plant_file(e, &rel, &b, 0o600);
        })
        .expect(
            1,
            "staging-conflict",
            &[
                "/etc/kubernetes/manifests/kube-apiserver.yaml is hostile YAML",
                "more than 100000 nodes",
            ],
        )
        .allow(Allow::Receipt),
    );
    // In the kubelet's configuration: renew and check.
    v.push(
        case(
            "yaml",
            "yaml-kubelet-config-alias-bomb",
            "kubelet config.yaml: 6,000 aliases; renew",
        )
        .setup(move |e| plant_file(e, kubelet_config, &alias_bomb("kubelet"), 0o600))
        .expect(
            1,
            "staging-conflict",
            &[
                "/var/lib/kubelet/config.yaml is hostile YAML",
                "more than 100000 nodes",
            ],
        )
        .allow(Allow::Receipt),
    );
    v.push(
        case(
            "yaml",
            "yaml-kubelet-config-alias-bomb-check",
            "kubelet config.yaml: 6,000 aliases; --check",
        )
        .setup(move |e| plant_file(e, kubelet_config, &alias_bomb("kubelet"), 0o600))
        .args(Args::check())
        .no_tools()
        .expect(
            1,
            "",
            &[
                "/var/lib/kubelet/config.yaml is hostile YAML",
                "more than 100000 nodes",
            ],
        ),
    );
    // Billion laughs: few aliases, each replaying the last.
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-laughs",
                "manifests/bomb.yaml: 9 levels of 10 aliases; --check",
            )
            .setup(move |e| plant_file(e, &stray, &laughs(), 0o600))
            .args(Args::check())
            .no_tools()
            .expect(1, "", &[named, "events copied for anchors|replay"]),
        );
    }
    // Deep nesting, far past the bound.
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-deep",
                "manifests/bomb.yaml: 100,000 nested lists; renew",
            )
            .setup(move |e| {
                let deep = format!("{}x{}\n", "[".repeat(100_000), "]".repeat(100_000));
                plant_file(e, &stray, deep.as_bytes(), 0o600)
            })
            .expect(
                1,
                "staging-conflict",
                &[named, "more than 64 levels of nesting"],
            )
            .allow(Allow::Receipt),
        );
    }
    // A huge scalar: over the size cap; and one within it that aliases replay.
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-huge-scalar",
                "manifests/bomb.yaml: a 2 MiB scalar; --check",
            )
            .setup(move |e| {
                let mut b =
                    b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  annotations:\n    a: "
                        .to_vec();
                b.resize(2 << 20, b'x');
                b.push(b'\n');
                plant_file(e, &stray, &b, 0o600)
            })
            .args(Args::check())
            .no_tools()
            .expect(
                1,
                "",
                &[
                    "/etc/kubernetes/manifests/bomb.yaml is larger than 1048576 bytes",
                    "hostile input",
                ],
            ),
        );
    }
    {
        let stray = stray.clone();
        v.push(
            case("yaml", "yaml-stray-aliased-scalar", "manifests/bomb.yaml: a 700 KB scalar aliased 4 times; renew")
                .setup(move |e| {
                    let s = format!(
                        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  annotations:\n    a: &a {}\n    b: [*a, *a, *a, *a]\n",
                        "x".repeat(700_000)
                    );
                    plant_file(e, &stray, s.as_bytes(), 0o600)
                })
                .expect(1, "staging-conflict", &[named, "more than 2097152 bytes of scalars"])
                .allow(Allow::Receipt),
        );
    }
    // Many documents, many anchors.
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-many-documents",
                "manifests/bomb.yaml: 100,000 documents; --check",
            )
            .setup(move |e| plant_file(e, &stray, "---\na: 1\n".repeat(100_000).as_bytes(), 0o600))
            .args(Args::check())
            .no_tools()
            .expect(1, "", &[named, "more than 16 documents"]),
        );
    }
    {
        let stray = stray.clone();
        v.push(
            case(
                "yaml",
                "yaml-stray-many-anchors",
                "manifests/bomb.yaml: 5,000 anchors; renew",
            )
            .setup(move |e| {
                let s: String = (0..5000).map(|i| format!("k{i}: &a{i} v\n")).collect();
                plant_file(e, &stray, s.as_bytes(), 0o600)
            })
            .expect(1, "staging-conflict", &[named, "more than 256 anchors"])
            .allow(Allow::Receipt),
        );
    }
    // The fencing check reads no stray: with the bomb beside the manifests
    // it fences the dead operation as always (confirmed, `abandoned`), and
    // prints its JSON (before: SIGABRT, no JSON, the operation unfenced).
    // Putting a staged etcd back past a bomb is
    // modes::fence::tests::a_hostile_stray_never_keeps_a_staged_manifest_from_going_back
    // (the table compares the root before and after: a move back is a change).
    v.push(
        case(
            "yaml",
            "yaml-fence-stray-alias-bomb",
            "fence; manifests/bomb.yaml: 6,000 aliases",
        )
        .args(Args::fence())
        .setup(move |e| {
            write_phase(
                e,
                &v2_phase_at(&e.root, ID, "restart_pending", Some("etcd")),
            );
            plant_file(e, &stray, &alias_bomb("bomb"), 0o600);
        })
        .expect(0, "", &["abandoned by the fencing status check"])
        .allow(Allow::Abandon)
        .receipt_outcomes(&["abandoned"]),
    );
    v
}
