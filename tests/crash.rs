//! Issue 5, under strace on the simulated node (tests/simnode):
//!
//! - `persistence_order`: a forced V2 renewal under `strace -f -y`; the
//!   runbook's own calls (its pid and threads, not the tools it runs) must
//!   follow SPEC section 3: temp files fsynced before they are renamed,
//!   directories fsynced after every change and before the next commit
//!   (phase file, receipt, manifest move), receipts created no-clobber,
//!   nothing under the managed directories opened without O_NOFOLLOW.
//! - `crash_points`: record the runbook's mutating system calls (main
//!   thread), then for each (system call, occurrence k) rerun from the same
//!   starting tree with `strace -e trace=S -e inject=S:signal=KILL:when=k`
//!   (and a sample with SIGTERM, SIGINT and SIGHUP), recover as the
//!   controller does (`--status-only --operation-id ID --fence`, then a new
//!   operation; for a few points the recovery is killed too and recovered
//!   again), and check the oracle after every step: each manifest in exactly
//!   one place with its bytes and mode, at most one out, receipts never
//!   change, the phase file parses (`--check`), CA files unchanged; after
//!   recovery everything active, staging empty, the phase done, the
//!   operator view clean, the work resumed at the component the phase file
//!   named. Three starting trees: a V2 `restart_pending`/etcd phase file of
//!   another operation (no kubeadm), a forced fresh run and a fresh
//!   recovery (`--recover-expired`, SPEC 11) (smaller sets, kubeadm
//!   included). Prints `crash points: N recovered of N`.
//!
//! strace runs without `-f` for injection: its `when=` counters are per
//! traced thread, so with `-f` it would also kill crictl and kubeadm at
//! their own k-th call; without it only the runbook's main thread (where
//! every file mutation happens) is traced and counted.
//!
//! The setup is the I/O-error sweep's (tests/ioerrors.rs), in
//! tests/support/sweep.rs: the knobs and summary, the starting trees and
//! each one's run and recovery, the injection under strace, the recording,
//! the sampling of points and the side-by-side runner; the oracle and the
//! recovery in tests/support/oracle.rs. This file says what it injects (a
//! signal) and how it judges the run.
//!
//! Needs `strace` (CI: `.ci/run` installs it). Run with
//! `cargo test --features sim --test crash -- --nocapture`.
//! `NVKE_CRASH_JOBS` (default 2): simulated nodes running points side by
//! side; `NVKE_CRASH_SEED`: picks the compound points;
//! `NVKE_CRASH_VERBOSE=1`: one line per point; `NVKE_CRASH_ONLY=TEXT`: only
//! the points whose label contains TEXT (debugging; the N >= 100 check is
//! then off).
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::node::*;
use support::oracle::*;
use support::say;
use support::strace::{self, Call};
use support::sweep::*;

// ---------------------------------------------------------------------------
// Persistence order.

#[derive(Default, Debug)]
struct Persistence {
    violations: Vec<String>,
    phase_writes: usize,
    receipts: usize,
    moves: usize,
    temps: usize,
    dir_fsyncs: usize,
    opens_checked: usize,
    receipt_at: Option<usize>,
    last_phase_at: Option<usize>,
}

struct Managed {
    manifests: String,
    staging: String,
    state: String,
    completed: String,
    log: String,
    phase: String,
}

impl Managed {
    fn new(root: &Path) -> Managed {
        let r = root.display().to_string();
        Managed {
            manifests: format!("{r}/{MANIFESTS}"),
            staging: format!("{r}/{STAGING}"),
            state: format!("{r}/{STATE}"),
            completed: format!("{r}/{STATE}/completed"),
            log: format!("{r}/{STATE}/log"),
            phase: format!("{r}/{STATE}/phase"),
        }
    }
    fn roots(&self) -> [&str; 3] {
        [&self.manifests, &self.staging, &self.state]
    }
    /// Under a managed directory (O_NOFOLLOW is required).
    fn managed(&self, p: &str) -> bool {
        self.roots().iter().any(|r| under(p, r))
    }
    /// A directory whose entries must be made durable: the managed ones,
    /// except the per-operation log directory (diagnostics, not state: SPEC
    /// section 3 gives it no write discipline).
    fn tracked_dir(&self, d: &str) -> bool {
        self.managed(d) && !under(d, &self.log)
    }
    fn is_move(&self, from: &str, to: &str) -> bool {
        let m = |p: &str| parent(p) == self.manifests || parent(p) == self.staging;
        m(from) && m(to)
    }
}

fn check_persistence(calls: &[Call], root: &Path) -> Persistence {
    let m = Managed::new(root);
    let mut r = Persistence::default();
    // temp file -> fsynced since its last write
    let mut temps: BTreeMap<String, bool> = BTreeMap::new();
    // directory -> what made it dirty
    let mut dirty: BTreeMap<String, String> = BTreeMap::new();
    // directories a commit (move, receipt) must fsync before anything else
    let mut owed: Option<(String, BTreeSet<String>)> = None;
    let show = |c: &Call| format!("line {}: {}({})", c.line, c.name, c.args.join(", "));

    for (i, c) in calls.iter().enumerate() {
        let mutating = matches!(
            c.name.as_str(),
            "rename"
                | "renameat"
                | "renameat2"
                | "link"
                | "linkat"
                | "unlink"
                | "unlinkat"
                | "mkdir"
                | "mkdirat"
        ) || (c.name == "openat" && c.has_flag(2, "O_CREAT"));
        if mutating {
            if let Some((what, dirs)) = &owed {
                // The link(2) fallback removes its temp name before the fsync.
                let same_dir_unlink = c.name.starts_with("unlink")
                    && c.at_path(0, 1).is_some_and(|p| dirs.contains(&parent(&p)));
                if !same_dir_unlink {
                    r.violations.push(format!(
                        "{} came before the fsync of {:?} that {what} owes",
                        show(c),
                        dirs
                    ));
                    owed = None;
                }
            }
        }
        let commit_check = |r: &mut Persistence, dirty: &BTreeMap<String, String>, what: &str| {
            for (d, why) in dirty {
                r.violations.push(format!(
                    "{what} ({}) while {d} was not fsynced since {why}",
                    show(c)
                ));
            }
        };
        match c.name.as_str() {
            "openat" => {
                let Some(path) = c.at_path(0, 1) else {
                    continue;
                };
                if m.managed(&path) {
                    r.opens_checked += 1;
                    // "." re-opens the directory fd itself: nothing to follow.
                    if c.str_arg(1).as_deref() != Some(".") && !c.has_flag(2, "O_NOFOLLOW") {
                        r.violations
                            .push(format!("{} opens {path} without O_NOFOLLOW", show(c)));
                    }
                }
                if c.ok() && c.has_flag(2, "O_CREAT") {
                    let created = c.ret_path().unwrap_or(path);
                    if base_name(&created).starts_with('.') {
                        temps.insert(created, false);
                    } else if m.tracked_dir(&parent(&created)) {
                        dirty.insert(parent(&created), show(c));
                    }
                }
            }
            "write" => {
                if let Some(p) = c.fd_path(0) {
                    if let Some(s) = temps.get_mut(&p) {
                        *s = false;
                    }
                }
            }
            "fsync" | "fdatasync" => {
                if let Some(p) = c.fd_path(0) {
                    if let Some(s) = temps.get_mut(&p) {
                        *s = true;
                    }
                    if dirty.remove(&p).is_some() {
                        r.dir_fsyncs += 1;
                    }
                    if let Some((_, dirs)) = &mut owed {
                        dirs.remove(&p);
                        if dirs.is_empty() {
                            owed = None;
                        }
                    }
                }
            }
            "rename" | "renameat" | "renameat2" | "link" | "linkat" => {
                let (from, to) = if c.name == "rename" || c.name == "link" {
                    (c.str_arg(0), c.str_arg(1))
                } else {
                    (c.at_path(0, 1), c.at_path(2, 3))
                };
                let (Some(from), Some(to)) = (from, to) else {
                    continue;
                };
                if !c.ok() {
                    continue;
                }
                if let Some(synced) = temps.get(&from) {
                    r.temps += 1;
                    if !synced {
                        r.violations.push(format!(
                            "{} renames/links {from} before fsyncing it",
                            show(c)
                        ));
                    }
                    if !c.name.starts_with("link") {
                        temps.remove(&from);
                    }
                }
                let is_link = c.name.starts_with("link");
                let noreplace = c.name == "renameat2" && c.has_flag(4, "RENAME_NOREPLACE");
                if to == m.phase {
                    commit_check(&mut r, &dirty, "the phase file advanced");
                    r.phase_writes += 1;
                    r.last_phase_at = Some(i);
                } else if parent(&to) == m.completed && !base_name(&to).starts_with('.') {
                    commit_check(&mut r, &dirty, "a receipt was committed");
                    if !(noreplace || is_link) {
                        r.violations.push(format!(
                            "{} creates receipt {to} without RENAME_NOREPLACE or link(2)",
                            show(c)
                        ));
                    }
                    r.receipts += 1;
                    r.receipt_at = Some(i);
                    owed = Some((
                        format!("receipt {to}"),
                        BTreeSet::from([m.completed.clone()]),
                    ));
                } else if m.is_move(&from, &to) {
                    commit_check(&mut r, &dirty, "a manifest moved");
                    if !noreplace {
                        r.violations.push(format!(
                            "{} moves a manifest without RENAME_NOREPLACE",
                            show(c)
                        ));
                    }
                    r.moves += 1;
                    owed = Some((
                        format!("the move of {}", base_name(&to)),
                        BTreeSet::from([parent(&from), parent(&to)]),
                    ));
                }
                for d in [parent(&from), parent(&to)] {
                    if m.tracked_dir(&d) {
                        dirty.insert(d, show(c));
                    }
                }
            }
            "unlink" | "unlinkat" => {
                let path = if c.name == "unlink" {
                    c.str_arg(0)
                } else {
                    c.at_path(0, 1)
                };
                let Some(path) = path else { continue };
                if !c.ok() {
                    continue;
                }
                temps.remove(&path);
                if c.has_flag(2, "AT_REMOVEDIR") {
                    dirty.retain(|d, _| !under(d, &path));
                }
                if m.tracked_dir(&parent(&path)) {
                    dirty.insert(parent(&path), show(c));
                }
            }
            "mkdir" | "mkdirat" => {
                let path = if c.name == "mkdir" {
                    c.str_arg(0)
                } else {
                    c.at_path(0, 1)
                };
                let Some(path) = path else { continue };
                if !c.ok() {
                    continue;
                }
                // A managed directory's own creation must reach its parent.
                if m.tracked_dir(&parent(&path)) || m.roots().contains(&path.as_str()) {
                    dirty.insert(parent(&path), show(c));
                }
            }
            _ => {}
        }
    }
    for (d, why) in &dirty {
        r.violations
            .push(format!("{d} was never fsynced after {why}"));
    }
    for (t, _) in temps {
        r.violations
            .push(format!("temp file {t} was never renamed or removed"));
    }
    if let Some((what, dirs)) = owed {
        r.violations
            .push(format!("the run ended before {what} fsynced {dirs:?}"));
    }
    if let (Some(rc), Some(ph)) = (r.receipt_at, r.last_phase_at) {
        if rc > ph {
            r.violations.push(
                "the receipt was written after the last phase-file write (it is the commit point: receipt first, then done)".into(),
            );
        }
    }
    r
}

#[test]
fn persistence_order() {
    let strace = strace_bin();
    let node = Node::new(VARIANT, knobs());
    let log = node.sim.join("persistence.strace");
    let mut cmd = Command::new(strace);
    cmd.args([
        "-f",
        "-y",
        "-qq",
        "-e",
        "trace=openat,rename,renameat,renameat2,link,linkat,fsync,fdatasync,unlink,unlinkat,mkdir,mkdirat,write,execve",
        "-o",
    ])
    .arg(&log)
    .arg(RUNBOOK)
    .args(node.runbook_args(&["--operation-id", "op-persist", "--force"]))
    .env_clear()
    .env("PATH", "/usr/bin:/bin");
    let ran = run_timed(cmd, &node.sim, "persist", RUN_LIMIT).unwrap();
    let v = ran.json();
    assert_eq!(
        (ran.code(), v["outcome"].as_str()),
        (Some(0), Some("renewed")),
        "{}",
        ran.describe()
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let all = strace::parse(&text);
    let own = strace::own_calls(&all);
    let root = node.root.canonicalize().unwrap();
    let p = check_persistence(&own, &root);
    let threads = own.iter().map(|c| c.pid).collect::<BTreeSet<_>>().len();
    say(&format!(
        "persistence order: {} calls of the runbook's {threads} threads (of {} traced): {} phase writes, {} receipt(s), {} manifest moves, {} temp files fsynced before rename, {} directory fsyncs, {} opens under managed dirs; {} violation(s)",
        own.len(),
        all.len(),
        p.phase_writes,
        p.receipts,
        p.moves,
        p.temps,
        p.dir_fsyncs,
        p.opens_checked,
        p.violations.len()
    ));
    for v in &p.violations {
        say(&format!("  VIOLATION: {v}"));
    }
    assert!(
        p.violations.is_empty(),
        "persistence order violated ({} violations; strace log kept in the output above)",
        p.violations.len()
    );
    // Not vacuous: a forced run writes renewing, five restart_pending and
    // done; one receipt; eight moves (four out, four back).
    assert!(p.phase_writes >= 7, "{p:?}");
    assert_eq!(p.receipts, 1, "{p:?}");
    assert_eq!(p.moves, 8, "{p:?}");
    assert!(p.temps >= 20 && p.opens_checked > 20, "{p:?}");
}

#[test]
fn persistence_checker_catches_bad_orders() {
    let root = Path::new("/r");
    let s = "/r/var/lib/nvke/k8s-cert-renewal";
    let m = "/r/etc/kubernetes/manifests";
    let st = "/r/etc/kubernetes/nvke-cert-renewal-staging";
    let log = format!(
        r#"1 openat(4<{s}>, ".phase.tmp-1-0", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW, 0600) = 6<{s}/.phase.tmp-1-0>
1 write(6<{s}/.phase.tmp-1-0>, "x", 1) = 1
1 renameat(4<{s}>, ".phase.tmp-1-0", 4<{s}>, "phase") = 0
1 renameat2(8<{m}>, "etcd.yaml", 9<{st}>, "etcd.yaml", RENAME_NOREPLACE) = 0
1 fsync(9<{st}>) = 0
1 openat(4<{s}>, ".phase.tmp-1-0", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW, 0600) = 6<{s}/.phase.tmp-1-0>
1 fsync(6<{s}/.phase.tmp-1-0>) = 0
1 renameat(4<{s}>, ".phase.tmp-1-0", 4<{s}>, "phase") = 0
1 openat(4<{s}>, "phase", O_RDONLY) = 6<{s}/phase>
1 openat(4<{s}>, ".x.json.tmp-1-0", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW, 0600) = 7<{s}/completed/.x.json.tmp-1-0>
1 fsync(7<{s}/completed/.x.json.tmp-1-0>) = 0
1 renameat(7<{s}/completed>, ".x.json.tmp-1-0", 7<{s}/completed>, "x.json") = 0
"#
    );
    let p = check_persistence(&strace::parse(&log), root);
    let all = p.violations.join("\n");
    for want in [
        "before fsyncing it",
        "came before the fsync",
        "was not fsynced since",
        "without O_NOFOLLOW",
        "without RENAME_NOREPLACE or link(2)",
        "never fsynced",
    ] {
        assert!(all.contains(want), "missing {want:?} in:\n{all}");
    }
}

// ---------------------------------------------------------------------------
// Crash points.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sig {
    Kill,
    Term,
    Int,
    Hup,
}

impl Sig {
    fn name(self) -> &'static str {
        match self {
            Sig::Kill => "KILL",
            Sig::Term => "TERM",
            Sig::Int => "INT",
            Sig::Hup => "HUP",
        }
    }
}

/// A crash point: from which tree (resume, fresh or recover; never the
/// I/O-error sweep's fence tree), which signal at which call.
#[derive(Clone, Debug)]
struct Point {
    scn: Scn,
    sig: Sig,
    site: Site,
    /// The recovery renewal is itself killed at this call.
    compound: Option<Site>,
}

impl Point {
    fn label(&self) -> String {
        format!(
            "{}:{}:SIG{}{}",
            self.scn.name(),
            self.site.label(),
            self.sig.name(),
            self.compound
                .as_ref()
                .map(|c| format!(" +recovery killed at {}", c.label()))
                .unwrap_or_default()
        )
    }
}

/// The call the signal landed on, from the injected run's strace log.
fn landed(log: &str, sig: Sig) -> Option<String> {
    let marker = match sig {
        Sig::Kill => "+++ killed by SIGKILL".to_string(),
        s => format!("--- SIG{} ", s.name()),
    };
    let lines: Vec<&str> = log.lines().collect();
    let at = lines.iter().position(|l| l.starts_with(&marker))?;
    lines[..at]
        .iter()
        .rev()
        .find(|l| !l.starts_with("---") && !l.starts_with("+++"))
        .map(|l| l.chars().take(200).collect())
}

/// The runbook killed (or signalled) at a point.
struct Injected {
    ran: Ran,
    landed: Option<String>,
}

fn inject(node: &Node, sig: Sig, site: &Site, args: &[&str]) -> Result<Injected, String> {
    let (ran, text) = inject_at(node, site, &format!("signal={}", sig.name()), args)?;
    Ok(Injected {
        landed: landed(&text, sig),
        ran,
    })
}

/// A point's index, the point, what it showed or why it failed, how long it took.
type Outcome = Done<Point, Note>;

/// What one point showed (for the summary).
#[derive(Default)]
struct Note {
    hit: bool,
    landed_creat: Option<bool>,
    compound_hit: Option<bool>,
    crash_outcome: String,
    /// the injected run, and the recovery renewal
    t_crash: Duration,
    t_recover: Duration,
    /// A recovery point's follow-up, and whether a plain one was refused.
    follow_up: Option<(FollowUp, bool)>,
}

fn run_point(node: &Node, base: &Base, p: &Point, idx: usize) -> Result<Note, String> {
    let crash_id = format!("op-{idx}-crash");
    let rec_id = format!("op-{idx}-rec");
    let rec2_id = format!("op-{idx}-rec2");
    let mut seen = Seen::default();
    let mut note = Note::default();
    let inj = inject(node, p.sig, &p.site, &p.scn.args(&crash_id))?;
    note.hit = inj.landed.is_some();
    note.t_crash = inj.ran.elapsed;
    if p.site.path_filter {
        note.landed_creat = inj.landed.as_ref().map(|l| l.contains("O_CREAT"));
    }
    wait_orphans(node)?;
    let ran = &inj.ran;
    let obs = observe(node, base, &mut seen, "after the injected run")?;
    let v = ran.json();
    let outcome = v["outcome"].as_str().unwrap_or("");
    let finished = |code: i32, want: &str| ran.code() == Some(code) && outcome == want;
    match p.sig {
        Sig::Kill if note.hit => {
            if ran.status.signal() != Some(9) {
                return Err(format!(
                    "killed at {:?} but: {}",
                    inj.landed,
                    ran.describe()
                ));
            }
        }
        Sig::Term | Sig::Int if note.hit => {
            if ran.elapsed > Duration::from_secs(30) {
                return Err(format!(
                    "SIG{} took {:?} to end the run",
                    p.sig.name(),
                    ran.elapsed
                ));
            }
            let cancelled = finished(1, "cancelled")
                && obs.staged.is_empty()
                && obs.receipts.get(&crash_id).map(String::as_str) == Some("cancelled");
            // A signal that lands after the receipt cannot undo the commit.
            let committed = finished(0, "renewed")
                && obs.receipts.get(&crash_id).map(String::as_str) == Some("renewed");
            if !(cancelled || committed) {
                return Err(format!(
                    "SIG{} at {:?}: want cancelled (exit 1, all manifests active, cancelled receipt) or an already committed renewal: {}",
                    p.sig.name(),
                    inj.landed,
                    ran.describe()
                ));
            }
        }
        _ => {
            // SIGHUP, or a point past the last such call: the run finishes.
            if !finished(0, "renewed") {
                return Err(format!(
                    "SIG{} at {:?}: the run must finish renewed: {}",
                    p.sig.name(),
                    inj.landed,
                    ran.describe()
                ));
            }
        }
    }
    let obs = fence(
        node,
        &crash_id,
        &mut seen,
        base,
        "after fencing the crashed run",
    )?;
    note.crash_outcome = obs.receipts[&crash_id].clone();
    let allowed: &[&str] = match p.sig {
        Sig::Kill => &["abandoned", "renewed"],
        Sig::Term | Sig::Int => &["cancelled", "renewed"],
        Sig::Hup => &["renewed"],
    };
    if !allowed.contains(&note.crash_outcome.as_str()) {
        return Err(format!(
            "{crash_id} has a {} receipt (allowed: {allowed:?})",
            note.crash_outcome
        ));
    }
    let mut obs = obs;
    let mut last = rec_id.clone();
    if let Some(site2) = &p.compound {
        let inj2 = inject(node, Sig::Kill, site2, &Scn::Resume.args(&rec_id))?;
        note.compound_hit = Some(inj2.landed.is_some());
        wait_orphans(node)?;
        if inj2.landed.is_none() && inj2.ran.code() != Some(0) {
            return Err(format!(
                "the recovery {rec_id} failed: {}",
                inj2.ran.describe()
            ));
        }
        observe(node, base, &mut seen, "after the crashed recovery")?;
        obs = fence(
            node,
            &rec_id,
            &mut seen,
            base,
            "after fencing the crashed recovery",
        )?;
        let o = obs.receipts[&rec_id].as_str();
        if !["abandoned", "renewed", "unchanged"].contains(&o) {
            return Err(format!("{rec_id} has a {o} receipt"));
        }
        last = rec2_id;
    }
    let after = p.scn.after((&crash_id, &note.crash_outcome));
    let r = if p.scn == Scn::Recover {
        // SPEC 11 (v1.3): half the points are followed by a plain renewal
        // (the controller's), half by a second recovery (the operator's).
        let follow = if idx.is_multiple_of(2) {
            FollowUp::Plain
        } else {
            FollowUp::Recovery
        };
        let (r, refused) =
            follow_recovery(node, base, &mut seen, &obs.receipts, &last, follow, after)?;
        note.follow_up = Some((follow, refused));
        r
    } else {
        new_operation(node, base, &mut seen, &obs.receipts, &last, after)?
    };
    note.t_recover = r.elapsed;
    Ok(note)
}

/// What follows a crashed recovery (SPEC 11, v1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FollowUp {
    /// The controller's plain renewal: it never runs a recovery's steps;
    /// while a leaf is expired it refuses (nothing changed) and a recovery
    /// under a new ID finishes the work.
    Plain,
    /// A second recovery, under a new ID: it finishes the work, or refuses
    /// when no leaf expired and no recovery's work is left.
    Recovery,
}

/// Whether a leaf is still expired at the recovery's clock: the node's
/// etcd-peer (the one leaf expired at [`RECOVER_NOW`]) ends by then
/// (kubeadm never finished, or the rollback put it back).
fn still_expired(node: &Node) -> bool {
    let pem = std::fs::read(node.root.join("etc/kubernetes/pki/etcd/peer.crt")).unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let cert = pem.parse_x509().unwrap();
    let now =
        time::OffsetDateTime::parse(RECOVER_NOW, &time::format_description::well_known::Rfc3339)
            .unwrap();
    cert.validity().not_after.timestamp() <= now.unix_timestamp()
}

/// The follow-up of a crashed recovery under `id` (and `id` + `-2` for the
/// recovery after a refused plain renewal): each run as SPEC 11 v1.3 says,
/// then the oracle's `recovered`. Returns the run that finished the work
/// and whether a plain renewal was refused first.
fn follow_recovery(
    node: &Node,
    base: &Base,
    seen: &mut Seen,
    receipts: &BTreeMap<String, String>,
    id: &str,
    follow: FollowUp,
    after: After,
) -> Result<(Ran, bool), String> {
    let now = ["--now", RECOVER_NOW];
    let expired = still_expired(node);
    let (mut want, mut restarts) = expected_recovery(node, receipts);
    if expired && want == "unchanged" {
        // Nothing began, or the phase file is done with the leaves put
        // back: a recovery renews all four.
        want = "renewed".into();
        restarts = COMPONENTS.iter().map(|c| c.to_string()).collect();
    }
    let check = |r: &Ran, tag: &str, want: &str, restarts: &[String]| -> Result<(), String> {
        let v = r.json();
        if r.code() != Some(if want == "failed" { 1 } else { 0 }) || v["outcome"] != want {
            return Err(format!("{tag} {id} should be {want}: {}", r.describe()));
        }
        if want != "failed" && restarted(&v) != restarts {
            return Err(format!(
                "{tag} {id} restarted {:?}, but the phase file said {restarts:?}",
                restarted(&v)
            ));
        }
        Ok(())
    };
    let mut refused = false;
    let r = match follow {
        FollowUp::Plain => {
            let phase = node.phase();
            let r = runbook(node, "plain", &[&["--operation-id", id][..], &now].concat())?;
            if expired {
                check(&r, "the plain renewal", "failed", &[])?;
                let v = r.json();
                if v["phase"] != "expiry" || v["recovery"] != Value::Null {
                    return Err(format!(
                        "the plain renewal {id} must refuse in phase expiry: {}",
                        r.describe()
                    ));
                }
                if node.phase() != phase {
                    return Err(format!(
                        "the refused plain renewal {id} changed the phase file"
                    ));
                }
                observe(node, base, seen, "after the refused plain renewal")?;
                refused = true;
                let id2 = format!("{id}-2");
                let r = runbook(
                    node,
                    "recover",
                    &[
                        &["--operation-id", id2.as_str(), "--recover-expired"][..],
                        &now,
                    ]
                    .concat(),
                )?;
                check(&r, "the recovery after the refusal", &want, &restarts)?;
                r
            } else {
                check(&r, "the plain renewal", &want, &restarts)?;
                if r.json()["recovery"] != Value::Null {
                    return Err(format!(
                        "the plain renewal {id} ran as a recovery: {}",
                        r.describe()
                    ));
                }
                r
            }
        }
        FollowUp::Recovery => {
            let r = runbook(
                node,
                "recover",
                &[&["--operation-id", id, "--recover-expired"][..], &now].concat(),
            )?;
            if !expired && want == "unchanged" {
                // No leaf expired and no recovery's work left: refused.
                check(&r, "the second recovery", "failed", &[])?;
            } else {
                check(&r, "the second recovery", &want, &restarts)?;
            }
            r
        }
    };
    let fin = recovered(
        node,
        base,
        seen,
        "after the follow-up",
        after.phase_may_be_absent,
    )?;
    let (op, outcome) = after.kept;
    if fin.receipts.get(op).map(String::as_str) != Some(outcome) {
        return Err(format!("the receipt of {op} changed or vanished"));
    }
    Ok((r, refused))
}

fn kill(scn: Scn, site: &Site) -> Point {
    Point {
        scn,
        sig: Sig::Kill,
        site: site.clone(),
        compound: None,
    }
}

fn resume_points(rec: &Recording, rng: &mut Rng, skipped: &mut Vec<String>) -> Vec<Point> {
    let sampled = every_site(rec);
    let mut v: Vec<Point> = sampled
        .sites
        .iter()
        .map(|st| kill(Scn::Resume, st))
        .collect();
    skipped.push(format!(
        "{} openat calls without O_CREAT (read-only: no state to interrupt; openat points count only the {} opens in the state directories, {} of them creating)",
        rec.count("openat") - rec.creat_filtered.len(),
        rec.filtered_openat,
        rec.creat_filtered.len()
    ));
    let (writes, step, tried) = (sampled.writes, sampled.write_step, sampled.writes_tried);
    skipped.push(format!(
        "{} of {writes} writes (every {step}th tried: they are log, stdout and temp-file writes; a temp file's contents are covered by the fsync points, which kill after its write and before its rename)",
        writes - tried
    ));
    skipped.push(format!(
        "execve ({} in the main thread): the runbook's own start, which strace never injects into; the tools' execve run in child processes",
        rec.count("execve")
    ));
    // SIGTERM, SIGINT, SIGHUP at a sample of the same calls.
    let n2 = rec.count("renameat2");
    let n1 = rec.count("renameat");
    let nf = rec.count("fsync");
    for sig in [Sig::Term, Sig::Int, Sig::Hup] {
        for (sc, k) in [
            ("renameat2", 2),
            ("renameat2", n2 / 2 + 1),
            ("renameat2", n2),
            ("renameat", 2),
            ("renameat", n1.saturating_sub(1).max(1)),
            ("fsync", nf / 2),
            ("write", writes / 3),
        ] {
            if k >= 1 && k <= rec.count(sc) {
                v.push(Point {
                    sig,
                    ..kill(Scn::Resume, &site(sc, k))
                });
            }
        }
    }
    // Compound: a few SIGKILL points whose recovery is killed too.
    let kill_idx: Vec<usize> = (0..v.len()).filter(|&i| v[i].sig == Sig::Kill).collect();
    for _ in 0..4 {
        let i = kill_idx[rng.next(kill_idx.len())];
        let sc = ["renameat", "renameat2", "fsync", "write"][rng.next(4)];
        let k = 1 + rng.next(rec.count(sc));
        v[i].compound = Some(site(sc, k));
    }
    v
}

fn fresh_points(scn: Scn, rec: &Recording, id: &str, root: &Path) -> Vec<Point> {
    let fresh = fresh_sites(rec, id, root);
    let mut v: Vec<Point> = fresh.sites.iter().map(|st| kill(scn, st)).collect();
    if let Some(st) = &fresh.kubeadm_wait {
        v.push(Point {
            sig: Sig::Term,
            ..kill(scn, st)
        });
    }
    v
}

#[test]
fn crash_points() {
    let sweep = Sweep::from_env("CRASH");
    let seed: u64 = std::env::var("NVKE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c0de);
    let mut rng = Rng(seed | 1);

    // Record both starting points side by side.
    let Starts {
        node: resume_node,
        resume: rec_resume,
        fresh: rec_fresh,
        fresh_root,
        recover: rec_recover,
        recover_root,
        ..
    } = record_starts(|_, _| ());
    let mut skipped = Vec::new();
    let mut points = fresh_points(Scn::Fresh, &rec_fresh, "op-rec-fresh", &fresh_root);
    points.extend(fresh_points(
        Scn::Recover,
        &rec_recover,
        "op-rec-recover",
        &recover_root,
    ));
    points.extend(resume_points(&rec_resume, &mut rng, &mut skipped));
    sweep.select(&mut points, Point::label);
    let count = |scn: Scn| points.iter().filter(|p| p.scn == scn).count();
    say(&format!(
        "crash-points setup: recorded (main thread) resume run {:?}; fresh run {:?}; recovery {:?}; {} points ({} fresh, {} recovery, {} resume), {} node(s) side by side, compound seed {seed}",
        rec_resume.counts,
        rec_fresh.counts,
        rec_recover.counts,
        points.len(),
        count(Scn::Fresh),
        count(Scn::Recover),
        count(Scn::Resume),
        sweep.jobs
    ));
    let setup = sweep.started.elapsed();

    let results: Vec<Outcome> = sweep.run(
        &points,
        resume_node,
        |p: &Point| p.scn.start(),
        run_point,
        |idx, p, result, t| {
            format!(
                "  #{idx} {} {:?}: {}",
                p.label(),
                t,
                match result {
                    Ok(n) => format!(
                        "ok (crash run {:?}, recovery {:?}, {} receipt)",
                        n.t_crash, n.t_recover, n.crash_outcome
                    ),
                    Err(e) => format!("FAILED: {e}"),
                }
            )
        },
    );

    let n = results.len();
    let ok = results.iter().filter(|r| r.2.is_ok()).count();
    let mut by_kind: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let (mut creat_landed, mut creat_points) = (0, 0);
    let (mut compound_ok, mut compound_n, mut compound_hit) = (0, 0, 0);
    for (_, p, r, _) in &results {
        let key = format!("{} {} SIG{}", p.scn.name(), p.site.sc, p.sig.name());
        let e = by_kind.entry(key).or_default();
        e.0 += 1;
        if let Ok(note) = r {
            e.1 += 1;
            if note.hit {
                e.2 += 1;
            }
            *outcomes.entry(note.crash_outcome.clone()).or_default() += 1;
            if let Some(c) = note.landed_creat {
                creat_points += 1;
                if c {
                    creat_landed += 1;
                }
            }
            if let Some(h) = note.compound_hit {
                compound_ok += 1;
                if h {
                    compound_hit += 1;
                }
            }
        }
        if p.compound.is_some() {
            compound_n += 1;
        }
    }
    for (i, p, r, t) in &results {
        if let Err(e) = r {
            say(&format!("  FAILED #{i} {} ({t:?}): {e}", p.label()));
        }
    }
    for (k, (tried, rec, hit)) in &by_kind {
        say(&format!(
            "  {k}: {rec} recovered of {tried} ({hit} landed on the call, the rest ran past the last one)"
        ));
    }
    let follow = |f: FollowUp, refused: bool| {
        results
            .iter()
            .filter(|r| matches!(&r.2, Ok(n) if n.follow_up.is_some_and(|(x, rf)| x == f && (rf || !refused))))
            .count()
    };
    say(&format!(
        "  recovery points' follow-up: {} plain renewals ({} refused while a leaf was expired, then finished by a recovery; the rest finished as renewals, gate and all), {} second recoveries",
        follow(FollowUp::Plain, false),
        follow(FollowUp::Plain, true),
        follow(FollowUp::Recovery, false)
    ));
    say(&format!(
        "  crashed operations' receipts: {outcomes:?}; openat points that landed on an O_CREAT open: {creat_landed} of {creat_points}; compound (recovery killed too, then recovered): {compound_ok} of {compound_n} ({compound_hit} landed)"
    ));
    for s in &skipped {
        say(&format!("  skipped: {s}"));
    }
    say("  skipped: syscalls of the runbook's threads and of the tools it runs: strace without -f injects into the main thread only (with -f its per-process counters would also kill crictl and kubeadm); every runbook file mutation happens on the main thread");
    for scn in [Scn::Fresh, Scn::Recover, Scn::Resume] {
        let ts: Vec<(Duration, Duration, Duration)> = results
            .iter()
            .filter(|r| r.1.scn == scn)
            .filter_map(|r| r.2.as_ref().ok().map(|n| (r.3, n.t_crash, n.t_recover)))
            .collect();
        if ts.is_empty() {
            continue;
        }
        let avg = |f: &dyn Fn(&(Duration, Duration, Duration)) -> Duration| {
            ts.iter().map(f).sum::<Duration>() / ts.len() as u32
        };
        say(&format!(
            "  time per {} point: {:?} on average (injected run {:?}, recovery renewal {:?})",
            scn.name(),
            avg(&|t| t.0),
            avg(&|t| t.1),
            avg(&|t| t.2)
        ));
    }
    sweep.finish(setup, "crash points", "recovered", ok, n);
    assert_eq!(ok, n, "crash points failed (listed above)");
}

/// The strace log parser (tests/support/strace.rs) the sweeps read their
/// recordings with.
#[test]
fn strace_parser_parses_calls_unfinished_and_fd_paths() {
    let log = r#"10 openat(4</r/state>, ".phase.tmp-1-0", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = 6</r/state/.phase.tmp-1-0>
11 write(2<pipe:[77]>, "a, \"b\" (c) <d>"..., 94 <unfinished ...>
10 renameat(4</r/state>, ".phase.tmp-1-0", 4</r/state>, "phase") = 0
11 <... write resumed>) = 94
10 --- SIGCHLD {si_signo=SIGCHLD} ---
12 execve("/bin/tool", ["tool"], 0x0 /* 1 var */) = 0
10 renameat2(9</r/s>, "etcd.yaml", 8</r/m>, "etcd.yaml", RENAME_NOREPLACE) = ?
"#;
    let c = strace::parse(log);
    assert_eq!(c.len(), 5);
    assert_eq!(c[0].name, "openat");
    assert!(c[0].has_flag(2, "O_NOFOLLOW"));
    assert_eq!(c[0].at_path(0, 1).unwrap(), "/r/state/.phase.tmp-1-0");
    assert_eq!(c[0].ret_path().unwrap(), "/r/state/.phase.tmp-1-0");
    assert_eq!(c[1].name, "renameat");
    assert_eq!(c[1].at_path(2, 3).unwrap(), "/r/state/phase");
    assert_eq!(c[2].name, "write");
    assert_eq!(c[2].ret, "94");
    assert_eq!(c[2].args.len(), 3);
    assert!(!c[4].ok());
    assert_eq!(strace::own_calls(&c).len(), 4);
}
