//! What must hold of a node whatever happened to a run (the oracle of
//! issue 5), and the controller's recovery after it (the fencing check, then
//! a new operation) with the checks after it. Shared by the crash sweep
//! (tests/crash.rs), the I/O-error sweep (tests/ioerrors.rs), the named
//! crash points (tests/failpoints.rs), the model (tests/model.rs) and the
//! symlink flipper (tests/hostile.rs).
//!
//! - [`places`]: where each manifest is (`active`, `staged`, `both`,
//!   `missing`).
//! - [`manifests_in_place`]: each manifest in exactly one place (manifests/
//!   or the staging dir), a regular file with its original bytes and mode,
//!   at most one out at once.
//! - [`observe`]: that, plus receipts written once and never changed (and
//!   naming their operation), the CA files and service-account keys
//!   unchanged, the phase file parses (`--check`).
//! - [`recovered`]: after the recovery: nothing staged, staging empty, the
//!   phase done, the operator view clean.
//! - [`fence`], [`new_operation`]: the recovery itself, as the controller
//!   runs it.

use super::hex::sha256_hex;
use super::node::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The files no run may change (bytes and mode): the CA certificates and
/// keys, and the service-account keys, under `etc/kubernetes/pki`.
pub const PROTECTED: [&str; 8] = [
    "ca.crt",
    "ca.key",
    "etcd/ca.crt",
    "etcd/ca.key",
    "front-proxy-ca.crt",
    "front-proxy-ca.key",
    "sa.key",
    "sa.pub",
];
/// No single runbook invocation the oracle makes may take longer.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------
// Running the runbook with a time limit.

pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Ran {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or(Value::Null)
    }
    pub fn describe(&self) -> String {
        let tail: String = {
            let lines: Vec<&str> = self.stderr.lines().collect();
            lines[lines.len().saturating_sub(6)..].join("\n    ")
        };
        format!(
            "status {:?}, stdout {}\n    {tail}",
            self.status,
            self.stdout.trim().chars().take(1500).collect::<String>()
        )
    }
}

/// Run `cmd` with stdout and stderr in files under `dir`, killed after `limit`.
pub fn run_timed(mut cmd: Command, dir: &Path, tag: &str, limit: Duration) -> Result<Ran, String> {
    let out = dir.join(format!("{tag}.stdout"));
    let err = dir.join(format!("{tag}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).map_err(|e| e.to_string())?)
        .stderr(std::fs::File::create(&err).map_err(|e| e.to_string())?);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{tag}: spawn: {e}"))?;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{tag}: still running after {limit:?}; killed"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(Ran {
        status,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        elapsed: start.elapsed(),
    })
}

/// The runbook on `node` with `args` ([`Node::command`]), within [`RUN_LIMIT`].
pub fn runbook(node: &Node, tag: &str, args: &[&str]) -> Result<Ran, String> {
    run_timed(node.command(args), &node.sim, tag, RUN_LIMIT)
}

/// Tools (crictl, kubeadm) a killed runbook left running: wait for them, so
/// the next step starts from a quiet node.
pub fn wait_orphans(node: &Node) -> Result<(), String> {
    let prefix = node.sim.join("bin").display().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut left = Vec::new();
        for e in std::fs::read_dir("/proc")
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
            if argv0.starts_with(prefix.as_bytes()) {
                left.push(pid.to_string());
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "tools the killed run started still run after 60s: pids {left:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------
// The oracle.

/// A regular file's bytes and permission bits.
pub type FileState = (Vec<u8>, u32);

/// What must never change: the four manifests (bytes, mode) and the
/// [`PROTECTED`] files.
pub struct Base {
    pub manifests: BTreeMap<&'static str, FileState>,
    pub protected: BTreeMap<&'static str, FileState>,
}

/// The bytes and mode of the regular file at `p` (lstat: a symlink is not
/// one); None for anything else or nothing.
pub fn file_and_mode(p: &Path) -> Option<FileState> {
    let md = std::fs::symlink_metadata(p).ok()?;
    if !md.file_type().is_file() {
        return None;
    }
    Some((std::fs::read(p).ok()?, md.mode() & 0o7777))
}

/// The node's [`Base`] now (before the run under test).
pub fn base_of(node: &Node) -> Base {
    let manifests = COMPONENTS
        .iter()
        .map(|c| (*c, file_and_mode(&node.manifest(c)).expect("manifest")))
        .collect();
    let pki = node.root.join(PKI);
    let protected = PROTECTED
        .iter()
        .filter_map(|rel| file_and_mode(&pki.join(rel)).map(|s| (*rel, s)))
        .collect();
    Base {
        manifests,
        protected,
    }
}

/// Where each of the four manifests is: `active`, `staged`, `both`, `missing`
/// (the runbook's staging directory; the places of SPEC section 3). Anything
/// at the path counts (lstat).
pub fn places(node: &Node) -> BTreeMap<&'static str, &'static str> {
    COMPONENTS
        .iter()
        .map(|c| {
            let a = std::fs::symlink_metadata(node.manifest(c)).is_ok();
            let s = std::fs::symlink_metadata(node.staged(c)).is_ok();
            let place = match (a, s) {
                (true, false) => "active",
                (false, true) => "staged",
                (true, true) => "both",
                (false, false) => "missing",
            };
            (*c, place)
        })
        .collect()
}

/// Each manifest in exactly one place (never zero copies, never two), a
/// regular file with its original bytes and mode ([`Base`]), and at most one
/// out of manifests/ at once. Returns the staged ones (in [`COMPONENTS`]
/// order) and every violation.
pub fn manifests_in_place(node: &Node, base: &Base) -> (Vec<&'static str>, Vec<String>) {
    let mut errs = Vec::new();
    let mut staged = Vec::new();
    let found = places(node);
    for c in COMPONENTS {
        let (want, mode) = &base.manifests[c];
        let p = match found[c] {
            "active" => node.manifest(c),
            "staged" => node.staged(c),
            "missing" => {
                errs.push(format!(
                    "{c}: no manifest at all (neither active nor staged)"
                ));
                continue;
            }
            _ => {
                errs.push(format!("{c}: two copies (active and staged)"));
                continue;
            }
        };
        match file_and_mode(&p) {
            Some((b, m)) if &b == want && m == *mode => {
                if found[c] == "staged" {
                    staged.push(c);
                }
            }
            Some((b, m)) => errs.push(format!(
                "{c}: {} changed: {} bytes mode {m:o} (was {} bytes mode {mode:o})",
                p.display(),
                b.len(),
                want.len()
            )),
            None => errs.push(format!("{c}: {} is not a regular file", p.display())),
        }
    }
    if staged.len() > 1 {
        errs.push(format!("more than one manifest out at once: {staged:?}"));
    }
    (staged, errs)
}

/// Receipts seen so far, by file name (sha256 of the bytes): never changed.
#[derive(Default)]
pub struct Seen {
    pub receipts: BTreeMap<String, String>,
}

/// What [`observe`] found.
pub struct Obs {
    pub staged: Vec<&'static str>,
    /// operation ID -> outcome
    pub receipts: BTreeMap<String, String>,
    /// `--check`'s `phaseFile.intent`
    pub intent: String,
}

/// Oracle 1, 3, 4, 5, 6 of issue 5, at any moment no runbook runs:
/// [`manifests_in_place`]; every receipt names its operation and never
/// changes once seen; the [`PROTECTED`] files unchanged; the phase file
/// parses (`--check`). `when` prefixes the violations.
pub fn observe(node: &Node, base: &Base, seen: &mut Seen, when: &str) -> Result<Obs, String> {
    let (staged, mut errs) = manifests_in_place(node, base);
    let completed = node.state().join("completed");
    let mut receipts = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(&completed) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            let h = sha256_hex(&bytes);
            match seen.receipts.get(&name) {
                Some(old) if *old != h => errs.push(format!("receipt {name} changed")),
                Some(_) => {}
                None => {
                    seen.receipts.insert(name.clone(), h);
                }
            }
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) if v["operationID"] == stem => {
                    receipts.insert(
                        stem.to_string(),
                        v["outcome"].as_str().unwrap_or("?").to_string(),
                    );
                }
                _ => errs.push(format!("receipt {name} is torn or names another operation")),
            }
        }
    }
    let pki = node.root.join(PKI);
    for (rel, (bytes, mode)) in &base.protected {
        match file_and_mode(&pki.join(rel)) {
            Some((b, m)) if &b == bytes && m == *mode => {}
            _ => errs.push(format!("pki/{rel} changed (bytes or mode)")),
        }
    }
    let check = runbook(node, "check", &["--check"])?;
    let cj = check.json();
    let status = cj["phaseFile"]["status"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    if status == "malformed" || status == "?" {
        errs.push(format!(
            "the phase file does not parse: {} ({})",
            cj["phaseFile"],
            check.describe()
        ));
    }
    let intent = cj["phaseFile"]["intent"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    if errs.is_empty() {
        Ok(Obs {
            staged,
            receipts,
            intent,
        })
    } else {
        Err(format!("{when}: {}", errs.join("; ")))
    }
}

/// Oracle 2: recovered. [`observe`], nothing staged, the staging dir empty,
/// the phase file `done` (or absent, when `phase_may_be_absent`), the
/// operator view clean (`--status-only` exits 0).
pub fn recovered(
    node: &Node,
    base: &Base,
    seen: &mut Seen,
    when: &str,
    phase_may_be_absent: bool,
) -> Result<Obs, String> {
    let o = observe(node, base, seen, when)?;
    if !o.staged.is_empty() {
        return Err(format!("{when}: still staged: {:?}", o.staged));
    }
    let staging = node.root.join(STAGING);
    if let Ok(rd) = std::fs::read_dir(&staging) {
        let left: Vec<_> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        if !left.is_empty() {
            return Err(format!("{when}: staging is not empty: {left:?}"));
        }
    }
    let absent_ok = phase_may_be_absent && o.intent == "absent";
    if o.intent != "done" && o.intent != "done-by-receipt" && !absent_ok {
        return Err(format!(
            "{when}: phase file intent {} (want done): {}",
            o.intent,
            node.phase()
        ));
    }
    let st = runbook(node, "status", &["--status-only"])?;
    if st.code() != Some(0) {
        return Err(format!(
            "{when}: the operator view says not clean: {}",
            st.json()["reasons"]
        ));
    }
    Ok(o)
}

// ---------------------------------------------------------------------------
// The controller's recovery.

/// What a plain renewal will do now: (outcome, components restarted).
pub fn expected_recovery(
    node: &Node,
    receipts: &BTreeMap<String, String>,
) -> (String, Vec<String>) {
    let unchanged = ("unchanged".to_string(), Vec::new());
    let phase = node.phase();
    if phase.is_empty() {
        return unchanged;
    }
    let v: Value = serde_json::from_str(&phase).unwrap_or(Value::Null);
    let op = v["operationID"].as_str().unwrap_or_default();
    let success = matches!(
        receipts.get(op).map(String::as_str),
        Some("renewed") | Some("unchanged")
    );
    let all = |from: usize| COMPONENTS[from..].iter().map(|c| c.to_string()).collect();
    match v["state"].as_str() {
        Some("done") => unchanged,
        _ if success => unchanged,
        Some("renewing") => ("renewed".into(), all(0)),
        Some("restart_pending") => match v["nextComponent"].as_str() {
            None => ("renewed".into(), Vec::new()),
            Some(c) => (
                "renewed".into(),
                all(COMPONENTS.iter().position(|x| *x == c).unwrap_or(0)),
            ),
        },
        _ => ("?".into(), Vec::new()),
    }
}

/// The controller's fencing check of `id`: confirmed (exit 0), then
/// [`observe`]: nothing left staged, and `id` has a receipt.
pub fn fence(
    node: &Node,
    id: &str,
    seen: &mut Seen,
    base: &Base,
    when: &str,
) -> Result<Obs, String> {
    let f = runbook(
        node,
        "fence",
        &["--status-only", "--operation-id", id, "--fence"],
    )?;
    if f.code() != Some(0) || f.json()["termination"] != "confirmed" {
        return Err(format!(
            "{when}: fencing {id} was not confirmed: {}",
            f.describe()
        ));
    }
    let o = observe(node, base, seen, when)?;
    if !o.staged.is_empty() {
        return Err(format!(
            "{when}: the fencing check left {:?} staged",
            o.staged
        ));
    }
    if !o.receipts.contains_key(id) {
        return Err(format!("{when}: {id} has no receipt after fencing"));
    }
    Ok(o)
}

/// What [`new_operation`] checks besides the run itself.
pub struct After<'a> {
    /// A fresh run that died before its first phase write leaves no phase
    /// file, and the (unforced) recovery finds nothing due: still none.
    pub phase_may_be_absent: bool,
    /// (operation, outcome): the receipt of the operation whose work was
    /// taken over (`op-prev`, `superseded`).
    pub taken_over: Option<(&'a str, &'a str)>,
    /// (operation, outcome): the fenced operation's receipt, which must not
    /// change or vanish.
    pub kept: (&'a str, &'a str),
}

/// The controller's next step after the fencing check: a new operation `id`
/// (a plain renewal), which must end as the phase file says (`receipts`:
/// what the fencing check left; [`expected_recovery`]): renewed from the
/// persisted component, or unchanged; then the node is [`recovered`] and
/// the receipts of `after` are as said. Returns the new operation's run.
pub fn new_operation(
    node: &Node,
    base: &Base,
    seen: &mut Seen,
    receipts: &BTreeMap<String, String>,
    id: &str,
    after: After,
) -> Result<Ran, String> {
    let (want_outcome, want_restarts) = expected_recovery(node, receipts);
    let r = runbook(node, "recover", &["--operation-id", id])?;
    let rv = r.json();
    if r.code() != Some(0) || rv["outcome"] != want_outcome.as_str() {
        return Err(format!(
            "the recovery {id} should be {want_outcome}: {}",
            r.describe()
        ));
    }
    if restarted(&rv) != want_restarts {
        return Err(format!(
            "the recovery {id} restarted {:?}, but the phase file said to resume with {:?}",
            restarted(&rv),
            want_restarts
        ));
    }
    let fin = recovered(
        node,
        base,
        seen,
        "after recovery",
        after.phase_may_be_absent,
    )?;
    if let Some((op, want)) = after.taken_over {
        if fin.receipts.get(op).map(String::as_str) != Some(want) {
            return Err(format!(
                "{op} (whose work was taken over) has receipt {:?}, want {want}",
                fin.receipts.get(op)
            ));
        }
    }
    let (op, outcome) = after.kept;
    if fin.receipts.get(op).map(String::as_str) != Some(outcome) {
        return Err(format!("the receipt of {op} changed or vanished"));
    }
    Ok(r)
}
