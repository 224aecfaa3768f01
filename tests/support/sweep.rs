//! What the crash sweep (tests/crash.rs) and the I/O-error sweep
//! (tests/ioerrors.rs) share besides the oracle and the recovery
//! (oracle.rs): their knobs and summary ([`Sweep`]), the starting trees and
//! the run each starts ([`Scn`]), running the runbook under strace and
//! injecting at one call ([`inject_at`]), recording a run's mutating system
//! calls, sampling the points to inject at, and running the points side by
//! side on simulated nodes. A sweep says only what it injects and how it
//! judges the run.

use super::node::*;
use super::oracle::*;
use super::say;
use super::strace::{self, Call};
use super::tree::chmod;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The fixture node: ECDSA keys keep the TLS probes and kubeadm's key
/// generation cheap in a debug build (the order of writes is the same).
pub const VARIANT: &str = "ecdsa";

/// The node's sim knobs for these tests: short kubelet latencies.
pub fn knobs() -> Value {
    json!({ "stopLatencyMs": 20, "startLatencyMs": 20 })
}

/// What the recordings trace (the mutating calls, plus wait4 to find the
/// kubeadm wait of a fresh run).
pub const RECORDED: &str = "openat,rename,renameat,renameat2,link,linkat,fsync,fdatasync,unlink,unlinkat,mkdir,mkdirat,write,flock,execve,wait4";

pub fn strace_bin() -> PathBuf {
    for dir in ["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin"] {
        let p = Path::new(dir).join("strace");
        if p.is_file() {
            return p;
        }
    }
    panic!("strace is not installed: these tests need it (CI installs it in .ci/run: apt-get install strace)");
}

pub fn under(path: &str, base: &str) -> bool {
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

pub fn parent(path: &str) -> String {
    match path.rsplit_once('/') {
        Some(("", _)) => "/".to_string(),
        Some((p, _)) => p.to_string(),
        None => ".".to_string(),
    }
}

pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

// ---------------------------------------------------------------------------
// Running the runbook under strace.

/// The runbook under strace with `pre` as strace's options.
pub fn straced(node: &Node, pre: &[OsString], args: &[&str]) -> Command {
    let mut c = Command::new(strace_bin());
    c.args(pre)
        .arg(RUNBOOK)
        .args(node.runbook_args(args))
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    c
}

/// The state directories `-P` selects for openat points.
pub fn filter_dirs(node: &Node) -> Vec<PathBuf> {
    let s = node.root.canonicalize().unwrap().join(STATE);
    vec![s.clone(), s.join("completed"), s.join("log")]
}

// ---------------------------------------------------------------------------
// The sweep's knobs and its end.

/// One sweep's knobs, read from `NVKE_<NAME>_JOBS` (simulated nodes running
/// points side by side, default 2), `NVKE_<NAME>_VERBOSE` (one line per
/// point) and `NVKE_<NAME>_ONLY=TEXT` (only the points whose label contains
/// TEXT; debugging: the N >= 100 check is then off); and its clock.
pub struct Sweep {
    pub started: Instant,
    pub jobs: usize,
    pub verbose: bool,
    pub only: Option<String>,
}

impl Sweep {
    /// The knobs of `NVKE_<name>_...`; strace must be installed.
    pub fn from_env(name: &str) -> Sweep {
        let started = Instant::now();
        let _ = strace_bin();
        Sweep {
            started,
            jobs: env_jobs(&format!("NVKE_{name}_JOBS")),
            verbose: std::env::var_os(format!("NVKE_{name}_VERBOSE")).is_some(),
            only: std::env::var(format!("NVKE_{name}_ONLY")).ok(),
        }
    }

    /// Keep only the points `NVKE_<name>_ONLY` names (all without it).
    pub fn select<P>(&self, points: &mut Vec<P>, label: impl Fn(&P) -> String) {
        if let Some(only) = &self.only {
            points.retain(|p| label(p).contains(only.as_str()));
        }
    }

    /// [`run_points`] on the sweep's jobs, `first` the recorded node; with
    /// `VERBOSE`, `line` says each point as it ends.
    pub fn run<P, R>(
        &self,
        points: &[P],
        first: Node,
        start: impl Fn(&P) -> Start + Sync,
        run: impl Fn(&Node, &Base, &P, usize) -> Result<R, String> + Sync,
        line: impl Fn(usize, &P, &Result<R, String>, Duration) -> String + Sync,
    ) -> Vec<Done<P, R>>
    where
        P: Clone + Send,
        R: Send,
    {
        run_points(
            points,
            self.jobs,
            Some(first),
            start,
            run,
            |idx, p, r, t| {
                if self.verbose {
                    say(&line(idx, p, r, t));
                }
            },
        )
    }

    /// The sweep's last lines: its time (`recording` of it before the
    /// points ran) and `{what}: {ok} {verdict} of {n}`; then at least 100
    /// points unless `ONLY` narrowed them.
    pub fn finish(&self, recording: Duration, what: &str, verdict: &str, ok: usize, n: usize) {
        say(&format!(
            "  time: {:?} (recording {recording:?})",
            self.started.elapsed()
        ));
        say(&format!("{what}: {ok} {verdict} of {n}"));
        if self.only.is_none() {
            assert!(n >= 100, "only {n} {what}");
        }
    }
}

// ---------------------------------------------------------------------------
// The starting trees.

/// Where a point starts, and so which run of the runbook it injects into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scn {
    /// Resume a V2 `restart_pending`/etcd phase file of another operation
    /// (`op-prev`, on a shared node: [`reset_resume`]).
    Resume,
    /// A forced fresh run (kubeadm included), on a node of its own.
    Fresh,
    /// A fresh recovery (`--recover-expired`, SPEC 11, kubeadm included), on
    /// a node of its own: the next plain operation resumes its phase file as
    /// a recovery.
    Recover,
    /// The fencing check over a dead run's staged etcd manifest ([`DEAD`],
    /// on a shared node: [`reset_fence`]).
    Fence,
}

impl Scn {
    pub fn name(self) -> &'static str {
        match self {
            Scn::Resume => "resume",
            Scn::Fresh => "fresh",
            Scn::Recover => "recover",
            Scn::Fence => "fence",
        }
    }

    /// The run from this tree under operation `id`.
    pub fn args(self, id: &str) -> Vec<&str> {
        match self {
            Scn::Resume => vec!["--operation-id", id],
            Scn::Fresh => vec!["--operation-id", id, "--force"],
            Scn::Recover => recover_args(id),
            Scn::Fence => fence_args(id),
        }
    }

    /// Where a point from this tree runs.
    pub fn start(self) -> Start {
        match self {
            Scn::Fresh | Scn::Recover => Start::New,
            Scn::Resume => Start::Reused(reset_resume),
            Scn::Fence => Start::Reused(reset_fence),
        }
    }

    /// What the controller's new operation must find after a point from
    /// this tree (`kept`: the fenced operation and its receipt's outcome):
    /// the work it took over (`op-prev` superseded, the dead run
    /// abandoned), and whether a phase file may be absent (a fresh run that
    /// died before its first phase write).
    pub fn after<'a>(self, kept: (&'a str, &'a str)) -> After<'a> {
        After {
            phase_may_be_absent: matches!(self, Scn::Fresh | Scn::Recover),
            taken_over: match self {
                Scn::Resume => Some(("op-prev", "superseded")),
                Scn::Fence => Some((DEAD, "abandoned")),
                Scn::Fresh | Scn::Recover => None,
            },
            kept,
        }
    }
}

/// The dead run of the fence tree.
pub const DEAD: &str = "op-dead";

/// The fencing check of operation `id`.
pub fn fence_args(id: &str) -> Vec<&str> {
    vec!["--status-only", "--operation-id", id, "--fence"]
}

/// Reset a resume node to the starting tree: the four manifests active (as
/// the previous point's recovery left them), no staging dir, a state dir
/// holding only op-prev's unfinished `restart_pending`/etcd phase file.
pub fn reset_resume(node: &Node, base: &Base) -> Result<(), String> {
    for c in COMPONENTS {
        if file_and_mode(&node.manifest(c)).as_ref() != Some(&base.manifests[c]) {
            return Err(format!("{c} manifest not active with its original bytes"));
        }
    }
    let _ = std::fs::remove_dir_all(node.root.join(STAGING));
    let _ = std::fs::remove_dir_all(node.state());
    node.write_state(
        "phase",
        &node.v2_phase("op-prev", "restart_pending", Some("etcd")),
    );
    node.wait_all_running();
    Ok(())
}

/// The fence tree: the resume tree's cleanup, then a dead run's V2
/// `restart_pending`/etcd phase file with etcd's manifest in staging, the
/// lock free, no receipt.
pub fn reset_fence(node: &Node, base: &Base) -> Result<(), String> {
    reset_resume(node, base)?;
    node.write_state(
        "phase",
        &node.v2_phase(DEAD, "restart_pending", Some("etcd")),
    );
    let staging = node.root.join(STAGING);
    std::fs::create_dir_all(&staging).map_err(|e| e.to_string())?;
    chmod(&staging, 0o700);
    std::fs::rename(node.manifest("etcd"), node.staged("etcd")).map_err(|e| e.to_string())?;
    Ok(())
}

/// The runbook run with `args` under strace acting at `site` (`action`:
/// `signal=KILL`, `error=EIO`, ...: strace's `inject=` after the call's
/// name), fd paths decoded (`-y`): the run and strace's log.
pub fn inject_at(
    node: &Node,
    site: &Site,
    action: &str,
    args: &[&str],
) -> Result<(Ran, String), String> {
    let log = node.sim.join("inject.strace");
    let mut pre: Vec<OsString> = vec!["-y".into(), "-o".into(), log.clone().into()];
    if site.path_filter {
        for d in filter_dirs(node) {
            pre.push("-P".into());
            pre.push(d.into());
        }
    }
    pre.push("-e".into());
    pre.push(format!("trace={}", site.sc).into());
    pre.push("-e".into());
    pre.push(format!("inject={}:{action}:when={}", site.sc, site.k).into());
    let ran = run_timed(straced(node, &pre, args), &node.sim, "inject", RUN_LIMIT)?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    Ok((ran, text))
}

/// The mutating calls of one run, main thread only (strace without -f: the
/// same thread injection reaches).
pub struct Recording {
    pub calls: Vec<Call>,
    pub counts: BTreeMap<String, usize>,
    /// occurrences (1-based, among openat calls `-P` selects) that create
    pub creat_filtered: Vec<usize>,
    pub filtered_openat: usize,
}

impl Recording {
    pub fn count(&self, sc: &str) -> usize {
        self.counts.get(sc).copied().unwrap_or(0)
    }
    /// occurrence number (1-based) of call index `i` among calls named like it
    pub fn occurrence(&self, i: usize) -> usize {
        let name = &self.calls[i].name;
        self.calls[..=i].iter().filter(|c| &c.name == name).count()
    }
}

/// A renewal's recording: it must finish `renewed`.
pub fn record(node: &Node, args: &[&str]) -> Recording {
    let (ran, rec) = record_run(node, args);
    assert_eq!(
        (ran.code(), ran.json()["outcome"].as_str()),
        (Some(0), Some("renewed")),
        "the recorded run: {}",
        ran.describe()
    );
    rec
}

/// The starting points both sweeps record, side by side: a fresh renewal
/// (`--force`, operation `op-rec-fresh`) on a node of its own, and a
/// resumed one (`op-rec-resume`, after [`reset_resume`]) on the node the
/// sweep goes on with; `more` records what else the sweep needs on that
/// node afterwards (its [`Base`] given).
pub struct Starts<T> {
    pub node: Node,
    pub resume: Recording,
    pub fresh: Recording,
    /// The fresh node's root, canonical (the recording's paths are).
    pub fresh_root: PathBuf,
    /// A recovery (`--recover-expired` at [`RECOVER_NOW`], SPEC 11) on a
    /// node of its own, and its root.
    pub recover: Recording,
    pub recover_root: PathBuf,
    pub more: T,
}

/// The recovery's clock (SPEC 11): the fixture's etcd-peer expired two days
/// before, every other leaf is still valid.
pub const RECOVER_NOW: &str = "2027-03-03T00:00:00Z";

/// The arguments of a recovery under `id`.
pub fn recover_args(id: &str) -> Vec<&str> {
    vec![
        "--operation-id",
        id,
        "--recover-expired",
        "--now",
        RECOVER_NOW,
    ]
}

pub fn record_starts<T>(more: impl FnOnce(&Node, &Base) -> T) -> Starts<T> {
    std::thread::scope(|s| {
        let fresh = s.spawn(|| {
            let node = Node::new(VARIANT, knobs());
            let rec = record(&node, &["--operation-id", "op-rec-fresh", "--force"]);
            (rec, node.root.canonicalize().unwrap())
        });
        let recover = s.spawn(|| {
            let node = Node::new(VARIANT, knobs());
            let rec = record(&node, &recover_args("op-rec-recover"));
            (rec, node.root.canonicalize().unwrap())
        });
        let node = Node::new(VARIANT, knobs());
        let base = base_of(&node);
        reset_resume(&node, &base).unwrap();
        let resume = record(&node, &["--operation-id", "op-rec-resume"]);
        let more = more(&node, &base);
        let (fresh, fresh_root) = fresh.join().unwrap();
        let (recover, recover_root) = recover.join().unwrap();
        Starts {
            node,
            resume,
            fresh,
            fresh_root,
            recover,
            recover_root,
            more,
        }
    })
}

/// Record one run of the runbook with `args` (strace without -f: the main
/// thread), whatever it ends with; the caller judges the run.
pub fn record_run(node: &Node, args: &[&str]) -> (Ran, Recording) {
    let log = node.sim.join("record.strace");
    let pre: Vec<OsString> = vec![
        "-y".into(),
        "-qq".into(),
        "-e".into(),
        format!("trace={RECORDED}").into(),
        "-o".into(),
        log.clone().into(),
    ];
    let ran = run_timed(straced(node, &pre, args), &node.sim, "record", RUN_LIMIT).unwrap();
    let calls = strace::parse(&std::fs::read_to_string(&log).unwrap());
    let mut counts = BTreeMap::new();
    for c in &calls {
        *counts.entry(c.name.clone()).or_insert(0) += 1;
    }
    let dirs: Vec<String> = filter_dirs(node)
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let mut creat_filtered = Vec::new();
    let mut filtered_openat = 0;
    for c in calls.iter().filter(|c| c.name == "openat") {
        let by_fd = c.fd_path(0).is_some_and(|p| dirs.contains(&p));
        let by_path = c.str_arg(1).is_some_and(|p| dirs.contains(&p));
        if by_fd || by_path {
            filtered_openat += 1;
            if c.has_flag(2, "O_CREAT") {
                creat_filtered.push(filtered_openat);
            }
        }
    }
    (
        ran,
        Recording {
            calls,
            counts,
            creat_filtered,
            filtered_openat,
        },
    )
}

/// Small deterministic generator for the compound points.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

// ---------------------------------------------------------------------------
// Sampling: where to inject.

/// Every occurrence of these on the resume run.
pub const EVERY: [&str; 12] = [
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "fsync",
    "fdatasync",
    "unlink",
    "unlinkat",
    "mkdir",
    "mkdirat",
    "flock",
];
/// Resume points one simulated node runs before it is replaced.
pub const NODE_POINTS: usize = 20;
/// Write points tried on the resume run (every k-th write).
pub const WRITE_POINTS: usize = 16;

/// One place to inject at: the `k`-th call of `sc` in the main thread
/// (among the openat calls in the state directories, `strace -P`, when
/// `path_filter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub sc: String,
    pub k: usize,
    pub path_filter: bool,
}

impl Site {
    /// `sc#k`, and `(state dirs)` for an openat counted there.
    pub fn label(&self) -> String {
        format!(
            "{}#{}{}",
            self.sc,
            self.k,
            if self.path_filter { "(state dirs)" } else { "" }
        )
    }
}

pub fn site(sc: &str, k: usize) -> Site {
    Site {
        sc: sc.to_string(),
        k,
        path_filter: false,
    }
}

/// The sampling of a whole run ([`every_site`]).
pub struct Sampling {
    /// In order: every occurrence of each of [`EVERY`], every creating
    /// openat in the state directories, every `write_step`-th write.
    pub sites: Vec<Site>,
    /// writes the recording made, how far apart the sampled ones are, and
    /// how many were sampled
    pub writes: usize,
    pub write_step: usize,
    pub writes_tried: usize,
}

/// Every occurrence of [`EVERY`], every creating openat in the state
/// directories (counted among the openat calls `-P` selects), and
/// [`WRITE_POINTS`] writes evenly spread.
pub fn every_site(rec: &Recording) -> Sampling {
    let mut sites = Vec::new();
    for sc in EVERY {
        for k in 1..=rec.count(sc) {
            sites.push(site(sc, k));
        }
    }
    for &k in &rec.creat_filtered {
        sites.push(Site {
            path_filter: true,
            ..site("openat", k)
        });
    }
    let writes = rec.count("write");
    let write_step = writes.div_ceil(WRITE_POINTS).max(1);
    let mut writes_tried = 0;
    for k in (write_step..=writes).step_by(write_step) {
        sites.push(site("write", k));
        writes_tried += 1;
    }
    Sampling {
        sites,
        writes,
        write_step,
        writes_tried,
    }
}

/// The points of a forced fresh run (kubeadm included), found in its
/// recording by what they do.
pub struct FreshSites {
    /// In order: the mkdirat of the backup's `.partial` dir and of the
    /// staging dir, the first two phase writes (renewing, and
    /// restart_pending after kubeadm), the first renameat2, the one that
    /// completes the backup and the fsync after it, the first manifest move,
    /// the receipt, and two of the main thread's wait4 polls while kubeadm
    /// runs (the first and the middle one).
    pub sites: Vec<Site>,
    /// The middle wait4 poll while kubeadm runs.
    pub kubeadm_wait: Option<Site>,
}

pub fn fresh_sites(rec: &Recording, id: &str, root: &Path) -> FreshSites {
    let root = root.display().to_string();
    let state = format!("{root}/{STATE}");
    let mut sites = Vec::new();
    let find = |pred: &dyn Fn(&Call) -> bool| rec.calls.iter().position(pred);
    let at = |i: usize| site(&rec.calls[i].name, rec.occurrence(i));
    let mut push = |i: Option<usize>| {
        if let Some(i) = i {
            sites.push(at(i));
        }
    };
    let partial = format!("{state}/backup/{id}.partial");
    push(find(&|c| {
        c.name == "mkdirat" && c.at_path(0, 1).as_deref() == Some(partial.as_str())
    }));
    let staging = format!("{root}/{STAGING}");
    push(find(&|c| {
        c.name == "mkdirat" && c.at_path(0, 1).as_deref() == Some(staging.as_str())
    }));
    let phase = format!("{state}/phase");
    let phase_writes: Vec<usize> = (0..rec.calls.len())
        .filter(|&i| {
            rec.calls[i].name == "renameat"
                && rec.calls[i].at_path(2, 3).as_deref() == Some(phase.as_str())
        })
        .collect();
    // renewing, and restart_pending/etcd after kubeadm
    push(phase_writes.first().copied());
    push(phase_writes.get(1).copied());
    let r2: Vec<usize> = (0..rec.calls.len())
        .filter(|&i| rec.calls[i].name == "renameat2")
        .collect();
    push(r2.first().copied());
    let done_backup = r2.iter().copied().find(|&i| {
        rec.calls[i].at_path(2, 3).as_deref() == Some(format!("{state}/backup/{id}").as_str())
    });
    push(done_backup);
    push(
        done_backup.and_then(|b| (b + 1..rec.calls.len()).find(|&i| rec.calls[i].name == "fsync")),
    );
    let manifests = format!("{root}/{MANIFESTS}");
    push(r2.iter().copied().find(|&i| {
        rec.calls[i]
            .at_path(0, 1)
            .is_some_and(|p| parent(&p) == manifests)
    }));
    push(r2.iter().copied().find(|&i| {
        rec.calls[i]
            .at_path(2, 3)
            .is_some_and(|p| parent(&p) == format!("{state}/completed"))
    }));
    // While kubeadm runs: the main thread polls it with wait4 between the
    // backup and the restart_pending phase write.
    let mut kubeadm_wait = None;
    if let (Some(b), Some(&ph)) = (done_backup, phase_writes.get(1)) {
        let polls: Vec<usize> = (b..ph).filter(|&i| rec.calls[i].name == "wait4").collect();
        push(polls.first().copied());
        push(polls.get(polls.len() / 2).copied());
        kubeadm_wait = polls.get(polls.len() / 2).map(|&i| at(i));
    }
    FreshSites {
        sites,
        kubeadm_wait,
    }
}

// ---------------------------------------------------------------------------
// Running the points side by side.

/// Where a point runs.
#[derive(Clone, Copy)]
pub enum Start {
    /// On a new simulated node of its own.
    New,
    /// On a node shared with other points (replaced after [`NODE_POINTS`]
    /// points, or when a point failed), brought to the point's starting
    /// tree by this function first.
    Reused(fn(&Node, &Base) -> Result<(), String>),
}

/// A point's index, the point, what it showed or why it failed, how long it took.
pub type Done<P, R> = (usize, P, Result<R, String>, Duration);

/// `NVKE_..._JOBS`-style knob: simulated nodes running points side by side
/// (default 2, at most 8).
pub fn env_jobs(var: &str) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Run every point on `jobs` workers. `first` (a node whose recording is
/// done) is reused by the first worker that takes a shared node. `each` is
/// called as each point ends; the results come back in the points' order.
/// A panic in `run` fails that point only.
pub fn run_points<P, R>(
    points: &[P],
    jobs: usize,
    first: Option<Node>,
    start: impl Fn(&P) -> Start + Sync,
    run: impl Fn(&Node, &Base, &P, usize) -> Result<R, String> + Sync,
    each: impl Fn(usize, &P, &Result<R, String>, Duration) + Sync,
) -> Vec<Done<P, R>>
where
    P: Clone + Send,
    R: Send,
{
    let queue: Mutex<VecDeque<(usize, P)>> =
        Mutex::new(points.iter().cloned().enumerate().collect());
    let results: Mutex<Vec<Done<P, R>>> = Mutex::new(Vec::new());
    let first_node = Mutex::new(first);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut used = 0usize;
                let mut shared: Option<(Node, Base)> = first_node.lock().unwrap().take().map(|n| {
                    let b = base_of(&n);
                    (n, b)
                });
                loop {
                    let Some((idx, p)) = queue.lock().unwrap().pop_front() else {
                        break;
                    };
                    let t = Instant::now();
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        match start(&p) {
                            Start::New => {
                                let node = Node::new(VARIANT, knobs());
                                let base = base_of(&node);
                                run(&node, &base, &p, idx)
                            }
                            Start::Reused(reset) => {
                                // The kubelet keeps every exited container: a node
                                // that ran many points makes each crictl call slower.
                                if used >= NODE_POINTS {
                                    shared = None;
                                }
                                let ready = match shared.as_ref() {
                                    Some((n, b)) => reset(n, b).is_ok(),
                                    None => false,
                                };
                                if !ready {
                                    // A new node (the last point may have left this one broken).
                                    used = 0;
                                    let n = Node::new(VARIANT, knobs());
                                    let b = base_of(&n);
                                    reset(&n, &b).unwrap();
                                    shared = Some((n, b));
                                }
                                used += 1;
                                let (n, b) = shared.as_ref().unwrap();
                                run(n, b, &p, idx)
                            }
                        }
                    }))
                    .unwrap_or_else(|e| {
                        Err(format!(
                            "panicked: {}",
                            e.downcast_ref::<String>()
                                .cloned()
                                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default()
                        ))
                    });
                    if result.is_err() {
                        shared = None;
                    }
                    each(idx, &p, &result, t.elapsed());
                    results.lock().unwrap().push((idx, p, result, t.elapsed()));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    results
}
