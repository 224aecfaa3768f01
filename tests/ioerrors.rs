//! Issue 10 ("Truthful under faults"), the I/O-error sweep beside the crash
//! sweep (tests/crash.rs), under strace on the simulated node (tests/simnode):
//!
//! Record a renewal's mutating system calls (main thread), and the fencing
//! check's, then rerun each from the same starting tree with one error
//! injected at one call (`strace -e trace=S -e inject=S:error=E:when=k`):
//! EIO at every sampled point, ENOSPC too at the writes and the creates
//! (creating `openat`, `mkdirat`, `linkat`). The points are sampled as the
//! crash sweep samples them (tests/support/sweep.rs): every occurrence of
//! the renames, links, fsyncs, unlinks, mkdirs and flocks, every creating
//! openat in the state directories, 16 writes spread over the run, and the
//! chosen calls of a forced fresh run (kubeadm included). The main thread's
//! writes are mostly log lines, so the resume run's writes to temp files
//! (owner, phase, receipts) are also aimed at one by one: by their count in
//! the recording, aimed again (at most 3 runs) where a run made the write at
//! another count. (stdout is written by a thread of its own, which strace
//! without -f does not reach.) Four starting
//! trees: a V2 `restart_pending`/etcd phase file of another operation (the
//! crash sweep's resume tree), a forced fresh run, a fresh recovery
//! (`--recover-expired`, SPEC 11: the same chosen calls), and a fencing check over
//! a dead run's tree (its phase file `restart_pending`/etcd, etcd's manifest
//! staged, no receipt).
//!
//! The oracle, after every point, on the node as found:
//!
//! - what the run printed is true: exactly one JSON document (unless the
//!   injected call was the write of it to stdout); exit 4 iff one of the four
//!   manifests is not in `manifests/`; exit 0 only with outcome `renewed` or
//!   `unchanged` and that receipt on disk, and a reported success always has
//!   its receipt; `receiptWritten` (required) true iff the operation's
//!   receipt exists (none existed before the run); a receipt's outcome is the
//!   printed one; every place in `manifests` (the run's and the receipt's) is
//!   where the manifest is; the phase file is never `done` for the operation
//!   without its receipt. For the fencing check: exit 0 iff `confirmed`, and
//!   `confirmed` only with the receipt on disk; `manifests` and `restored`
//!   true of the node.
//! - nothing lost: each manifest in exactly one place with its bytes and
//!   mode, at most one out, receipts written once and never changed, the
//!   phase file parses, the CA files unchanged (the crash sweep's oracle).
//! - one error is one failed call: a renewal never ends with a manifest
//!   staged (its failure path puts it back, SPEC 4); a fencing check that
//!   took the lock puts the dead run's manifest back unless the put-back
//!   itself was the call that failed (SPEC 6, v1.1).
//! - then the controller's recovery (`--status-only --operation-id ID
//!   --fence`, then a new operation) confirms, leaves nothing staged, and
//!   the new operation ends as the phase file says (renewed from the
//!   persisted component, or unchanged) with the node clean.
//!
//! Prints `io errors: N truthful of N` (N >= 100) past the harness's
//! capture; the failure message lists every point that failed the oracle,
//! each finding tagged: `[untrue]` (what it printed), `[left staged]`,
//! `[tree]` (lost or changed files), `[recovery]`.
//!
//! The setup is the crash sweep's (tests/crash.rs), in
//! tests/support/sweep.rs: the knobs and summary, the starting trees and
//! each one's run and recovery, the injection under strace, the recording,
//! the sampling and the side-by-side runner. This file says what it injects
//! (an errno) and how it judges what the run printed.
//!
//! Needs `strace`. Run with
//! `cargo test --features sim --test ioerrors -- --nocapture`.
//! `NVKE_IOERR_JOBS` (default 2): simulated nodes running points side by
//! side; `NVKE_IOERR_VERBOSE=1`: one line per point; `NVKE_IOERR_ONLY=TEXT`:
//! only the points whose label contains TEXT (debugging; the N >= 100 check
//! is then off).
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use support::node::*;
use support::oracle::*;
use support::say;
use support::strace::{self, Call};
use support::sweep::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Errno {
    Eio,
    Enospc,
}

impl Errno {
    fn name(self) -> &'static str {
        match self {
            Errno::Eio => "EIO",
            Errno::Enospc => "ENOSPC",
        }
    }
}

/// The calls that can run out of space: writes and creates.
fn can_enospc(site: &Site) -> bool {
    matches!(
        site.sc.as_str(),
        "write" | "mkdir" | "mkdirat" | "link" | "linkat"
    ) || (site.sc == "openat" && site.path_filter)
}

#[derive(Clone, Debug)]
struct Point {
    scn: Scn,
    errno: Errno,
    site: Site,
    /// A write aimed at by what it writes (`site.k` is where the recording
    /// made it; the run may make it a few writes later or earlier).
    target: Option<Target>,
}

/// The `nth` write to a temp file of `class` (`.phase.tmp-...` is `phase`,
/// the operation's own receipt `ID.json`), or to stdout (`stdout`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Target {
    class: String,
    nth: usize,
}

/// What a write writes to: a temp file's class or `stdout` (None: a log
/// line or anything else). `id` is the run's operation ID.
fn write_class(c: &Call, id: &str) -> Option<String> {
    if c.name != "write" {
        return None;
    }
    let p = c.fd_path(0)?;
    if p.ends_with("/inject.stdout") || p.ends_with("/record.stdout") {
        return Some("stdout".into());
    }
    let base = p.rsplit('/').next()?;
    let (name, _) = base.strip_prefix('.')?.split_once(".tmp-")?;
    Some(name.replace(id, "ID"))
}

/// Every write to a temp file or to stdout in a run's calls, with its
/// occurrence among the writes (1-based).
fn targets(calls: &[Call], id: &str) -> Vec<(Target, usize)> {
    let mut v = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (k, c) in calls.iter().filter(|c| c.name == "write").enumerate() {
        if let Some(class) = write_class(c, id) {
            let nth = seen.entry(class.clone()).or_default();
            *nth += 1;
            v.push((Target { class, nth: *nth }, k + 1));
        }
    }
    v
}

impl Point {
    fn label(&self) -> String {
        format!(
            "{}:{}{}:{}",
            self.scn.name(),
            self.site.label(),
            self.target
                .as_ref()
                .map(|t| format!("({}#{})", t.class, t.nth))
                .unwrap_or_default(),
            self.errno.name()
        )
    }
}

/// The run with one error injected, and the call it landed on (the log line
/// strace marks `(INJECTED)`; None: the run made fewer such calls).
fn inject(
    node: &Node,
    errno: Errno,
    site: &Site,
    args: &[&str],
) -> Result<(Ran, Option<Call>, String), String> {
    let (ran, text) = inject_at(node, site, &format!("error={}", errno.name()), args)?;
    let landed = text
        .lines()
        .find(|l| l.trim_end().ends_with("(INJECTED)"))
        .and_then(|l| strace::parse(l).into_iter().next());
    Ok((ran, landed, text))
}

fn show(c: &Call) -> String {
    format!("{}({}) = {}", c.name, c.args.join(", "), c.ret)
        .chars()
        .take(240)
        .collect()
}

/// A place as a document prints it: a string, or an object with `location`.
fn printed_place(v: &Value) -> Option<&str> {
    v.as_str().or_else(|| v["location"].as_str())
}

/// `manifests` of a document or receipt against the node; `what` names it.
fn check_places(
    what: &str,
    m: &Value,
    found: &BTreeMap<&'static str, &'static str>,
    errs: &mut Vec<String>,
) {
    let Some(obj) = m.as_object() else {
        errs.push(format!("{what}: `manifests` is not an object: {m}"));
        return;
    };
    if obj.is_empty() {
        return;
    }
    for c in COMPONENTS {
        match obj.get(c).map(printed_place) {
            None => errs.push(format!("{what}: `manifests` does not say where {c} is")),
            Some(None) => errs.push(format!("{what}: `manifests.{c}` is {}", obj[c])),
            Some(Some(p)) if p != found[c] => errs.push(format!(
                "{what}: says {c} is {p}, but it is {} on the node",
                found[c]
            )),
            Some(Some(_)) => {}
        }
    }
}

fn receipt_at(node: &Node, id: &str) -> Option<Value> {
    let p = node.state().join("completed").join(format!("{id}.json"));
    let b = std::fs::read(p).ok()?;
    Some(serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// The document the run printed: None when it printed nothing (excused only
/// when the failed call was that very write); errors for anything else.
fn document(ran: &Ran, landed: Option<&Call>, errs: &mut Vec<String>) -> Option<Value> {
    let out = ran.stdout.trim();
    let stdout_write = landed.is_some_and(|c| {
        c.name == "write" && c.fd_path(0).is_some_and(|p| p.ends_with("/inject.stdout"))
    });
    if out.is_empty() {
        if !stdout_write {
            errs.push("printed no JSON document".into());
        }
        return None;
    }
    if out.lines().count() != 1 {
        errs.push(format!(
            "printed {} lines on stdout, not one JSON object",
            out.lines().count()
        ));
    }
    match serde_json::from_str::<Value>(out.lines().last().unwrap_or("")) {
        Ok(v) if v.is_object() => Some(v),
        _ => {
            errs.push(format!(
                "stdout is not a JSON object: {}",
                out.chars().take(300).collect::<String>()
            ));
            None
        }
    }
}

/// The process's exit code; an error for a signal or a code no run may end with.
fn exit_code(ran: &Ran, allowed: &[i32], errs: &mut Vec<String>) -> Option<i32> {
    match ran.code() {
        None => {
            errs.push(format!("ended by a signal: {:?}", ran.status));
            None
        }
        Some(c) if !allowed.contains(&c) => {
            errs.push(format!(
                "exit {c} (a renewal or fencing check ends with one of {allowed:?})"
            ));
            Some(c)
        }
        Some(c) => Some(c),
    }
}

/// Is what an injected renewal printed true of the node as found?
fn judge_renewal(
    node: &Node,
    id: &str,
    ran: &Ran,
    landed: Option<&Call>,
    note: &mut Note,
) -> Vec<String> {
    let mut errs = Vec::new();
    let found = places(node);
    let receipt = receipt_at(node, id);
    let code = exit_code(ran, &[0, 1, 3, 4], &mut errs);
    let doc = document(ran, landed, &mut errs);
    let not_active: Vec<&str> = COMPONENTS
        .iter()
        .copied()
        .filter(|c| found[c] == "staged" || found[c] == "missing")
        .collect();
    if let Some(code) = code {
        if (code == 4) == not_active.is_empty() {
            errs.push(format!(
                "exit {code}, but the manifests not active on the node are {not_active:?} (exit 4 iff one is not active)"
            ));
        }
    }
    let outcome = doc
        .as_ref()
        .and_then(|d| d["outcome"].as_str())
        .map(str::to_string);
    note.outcome = outcome.clone().unwrap_or_else(|| "-".into());
    let success = |o: &str| o == "renewed" || o == "unchanged";
    let on_disk = receipt
        .as_ref()
        .map(|r| r["outcome"].as_str().unwrap_or("?"));
    if code == Some(0) && !outcome.as_deref().is_some_and(success) {
        errs.push(format!("exit 0 with outcome {outcome:?}"));
    }
    if code == Some(0) || outcome.as_deref().is_some_and(success) {
        let claimed = outcome.as_deref().unwrap_or("success");
        if on_disk != Some(claimed) {
            errs.push(format!(
                "reported {claimed} (exit {code:?}) but the receipt on disk is {}",
                on_disk.map_or("absent".to_string(), |o| format!("{o:?}"))
            ));
        }
        if code != Some(0) {
            errs.push(format!("outcome {claimed} with exit {code:?}"));
        }
    }
    if let Some(d) = &doc {
        match d.get("receiptWritten") {
            Some(Value::Bool(w)) => {
                if *w != receipt.is_some() {
                    errs.push(format!(
                        "receiptWritten {w}, but the receipt {} on disk",
                        if receipt.is_some() { "is" } else { "is not" }
                    ));
                }
            }
            None => errs.push("no `receiptWritten` in the document".into()),
            Some(v) => errs.push(format!("`receiptWritten` is {v}, not a bool")),
        }
        if let (Some(o), Some(r)) = (&outcome, on_disk) {
            if o != r {
                errs.push(format!("printed outcome {o}, but the receipt says {r}"));
            }
        }
        match d.get("manifests") {
            Some(m) => {
                if m.as_object().is_some_and(|o| o.is_empty()) {
                    note.no_manifests = true;
                    note.outcome = format!(
                        "{} at phase {}, empty manifests",
                        note.outcome,
                        d["phase"].as_str().unwrap_or("?")
                    );
                }
                check_places("the document", m, &found, &mut errs);
            }
            None => errs.push("no `manifests` in the document".into()),
        }
    }
    if let Some(r) = &receipt {
        check_places("the receipt", &r["manifests"], &found, &mut errs);
    }
    let phase: Value = serde_json::from_str(&node.phase()).unwrap_or(Value::Null);
    if phase["operationID"] == id && phase["state"] == "done" && receipt.is_none() {
        errs.push("the phase file says done but the operation has no receipt".into());
    }
    if !not_active.is_empty() {
        errs.push(format!(
            "{PUT_BACK}the run ended with {not_active:?} not active: one call failed, and the failure path did not put it back (SPEC 4)"
        ));
    }
    errs
}

/// Is what an injected fencing check printed true of the node as found?
fn judge_fence(
    node: &Node,
    ran: &Ran,
    landed: Option<&Call>,
    held_lock: bool,
    note: &mut Note,
) -> Vec<String> {
    let mut errs = Vec::new();
    let found = places(node);
    let receipt = receipt_at(node, DEAD);
    let code = exit_code(ran, &[0, 1, 3], &mut errs);
    let doc = document(ran, landed, &mut errs);
    let on_disk = receipt
        .as_ref()
        .map(|r| r["outcome"].as_str().unwrap_or("?"));
    if let Some(d) = &doc {
        let term = d["termination"].as_str().unwrap_or("?");
        note.outcome = format!("{term}/{}", d["outcome"].as_str().unwrap_or("-"));
        if let Some(code) = code {
            if (code == 0) != (term == "confirmed") {
                errs.push(format!("exit {code} with termination {term}"));
            }
        }
        if term == "confirmed" {
            match on_disk {
                None => errs.push("confirmed, but there is no receipt on disk".into()),
                Some(r) if d["outcome"].as_str() != Some(r) => errs.push(format!(
                    "confirmed with outcome {}, but the receipt says {r}",
                    d["outcome"]
                )),
                Some(_) => {}
            }
        }
        check_places("the fence document", &d["manifests"], &found, &mut errs);
        for c in d["restored"].as_array().into_iter().flatten() {
            let c = c.as_str().unwrap_or("?");
            if found.get(c).copied() != Some("active") {
                errs.push(format!(
                    "says it put {c} back, but {c} is {} on the node",
                    found.get(c).copied().unwrap_or("unknown")
                ));
            }
        }
    } else if code == Some(0) && receipt.is_none() {
        errs.push("exit 0 (confirmed), but there is no receipt on disk".into());
    }
    if let Some(r) = &receipt {
        check_places("the receipt", &r["manifests"], &found, &mut errs);
    }
    let put_back_failed = landed.is_some_and(|c| {
        c.name == "renameat2"
            && c.at_path(0, 1)
                .is_some_and(|p| p.ends_with(&format!("{STAGING}/etcd.yaml")))
    });
    if held_lock && !put_back_failed && found["etcd"] == "staged" {
        errs.push(format!(
            "{PUT_BACK}took the lock but left the dead run's etcd manifest staged, and the failed call was not the put-back (SPEC 6 v1.1: put back in every outcome)"
        ));
    }
    errs
}

/// Tags of a point's findings that are not about what it printed.
const UNTRUE: &str = "[untrue] ";
const PUT_BACK: &str = "[left staged] ";
const LOST: &str = "[tree] ";
const RECOVERY: &str = "[recovery] ";

/// What one point showed (for the summary).
#[derive(Default)]
struct Note {
    hit: bool,
    /// the call the error landed on, as strace showed it
    landed: String,
    /// a targeted write: whether the error landed on it, and after how many runs
    target_hit: Option<(bool, usize)>,
    outcome: String,
    no_manifests: bool,
    t_injected: Duration,
    t_recover: Duration,
}

/// A point's failure: the untruthful claims and the failed recovery steps.
fn failure(landed: &Option<Call>, truth: &[String], recovery: Option<String>) -> String {
    let mut s = format!(
        "landed on {}",
        landed
            .as_ref()
            .map(show)
            .unwrap_or_else(|| "nothing (the run made fewer such calls)".into())
    );
    for t in truth {
        let tag = if t.starts_with('[') { "" } else { UNTRUE };
        s.push_str(&format!("\n      - {tag}{t}"));
    }
    if let Some(r) = recovery {
        s.push_str(&format!("\n      - {RECOVERY}{r}"));
    }
    s
}

/// Fencing ID, then a new operation, checked as the crash sweep checks them.
fn recover(
    node: &Node,
    base: &Base,
    seen: &mut Seen,
    p: &Point,
    id: &str,
    idx: usize,
    note: &mut Note,
) -> Result<(), String> {
    wait_orphans(node)?;
    let obs = fence(node, id, seen, base, "after fencing the injected run")?;
    let id_outcome = obs.receipts[id].clone();
    let r = new_operation(
        node,
        base,
        seen,
        &obs.receipts,
        &format!("op-{idx}-rec"),
        p.scn.after((id, &id_outcome)),
    )?;
    note.t_recover = r.elapsed;
    Ok(())
}

/// Did the fencing check hold the lock when the injected call failed? From
/// the fence recording (`dirs`: its node's [`filter_dirs`]): the failed call
/// came after its first flock.
fn fence_held_lock(rec: &Recording, dirs: &[String], site: &Site) -> bool {
    let Some(lock_at) = rec.calls.iter().position(|c| c.name == "flock") else {
        return false;
    };
    let mut n = 0;
    for (i, c) in rec.calls.iter().enumerate() {
        if c.name != site.sc {
            continue;
        }
        if site.path_filter {
            let by_fd = c.fd_path(0).is_some_and(|p| dirs.contains(&p));
            let by_path = c.str_arg(1).is_some_and(|p| dirs.contains(&p));
            if !(by_fd || by_path) {
                continue;
            }
        }
        n += 1;
        if n == site.k {
            return i > lock_at;
        }
    }
    false
}

/// Runs of a targeted write before the sweep gives up aiming.
const AIMS: usize = 3;

fn run_point(
    node: &Node,
    base: &Base,
    p: &Point,
    idx: usize,
    fence_held: &[Site],
) -> Result<Note, String> {
    let id = match p.scn {
        Scn::Fence => DEAD.to_string(),
        _ => format!("op-{idx}-io"),
    };
    let mut site = p.site.clone();
    let mut missed = Vec::new();
    for run in 1..=AIMS {
        let (result, log) = run_once(node, base, p, &site, &id, idx, fence_held)?;
        let Some(t) = &p.target else {
            return result;
        };
        // Where this run made the targeted write: the next run aims there.
        let calls = strace::parse(&log);
        let at = targets(&calls, &id)
            .into_iter()
            .find(|(x, _)| x == t)
            .map(|(_, k)| k);
        let hit = at == Some(site.k);
        let result = result.map(|mut n| {
            n.target_hit = Some((hit, run));
            n
        });
        match (&result, at) {
            (Ok(_), Some(k)) if !hit && run < AIMS => {
                // A miss is a point of its own, and it passed: aim again.
                missed.push(format!("write#{}", site.k));
                if let Start::Reused(reset) = p.scn.start() {
                    reset(node, base)?;
                }
                site.k = k;
            }
            _ => {
                return result.map_err(|e| {
                    if missed.is_empty() {
                        e
                    } else {
                        format!(
                            "(aimed at write#{} after missing at {missed:?}) {e}",
                            site.k
                        )
                    }
                })
            }
        }
    }
    unreachable!("the last aim returns")
}

/// One injected run at `site`, judged, then recovered; and its strace log.
fn run_once(
    node: &Node,
    base: &Base,
    p: &Point,
    site: &Site,
    id: &str,
    idx: usize,
    fence_held: &[Site],
) -> Result<(Result<Note, String>, String), String> {
    let mut seen = Seen::default();
    let mut note = Note::default();
    let (ran, landed, log) = inject(node, p.errno, site, &p.scn.args(id))?;
    note.hit = landed.is_some();
    note.landed = landed.as_ref().map(show).unwrap_or_default();
    note.t_injected = ran.elapsed;
    wait_orphans(node)?;
    let mut truth = match p.scn {
        Scn::Fence => {
            let held = fence_held.contains(site);
            judge_fence(node, &ran, landed.as_ref(), held, &mut note)
        }
        _ => judge_renewal(node, id, &ran, landed.as_ref(), &mut note),
    };
    if let Err(e) = observe(node, base, &mut seen, "after the injected run") {
        truth.push(format!("{LOST}{e}"));
    }
    let recovery = recover(node, base, &mut seen, p, id, idx, &mut note).err();
    let result = if truth.is_empty() && recovery.is_none() {
        Ok(note)
    } else {
        let mut msg = failure(&landed, &truth, recovery);
        msg.push_str(&format!(
            "\n      printed (exit {:?}): {}",
            ran.code(),
            ran.stdout.trim().chars().take(700).collect::<String>()
        ));
        Err(msg)
    };
    Ok((result, log))
}

#[test]
fn io_errors() {
    let sweep = Sweep::from_env("IOERR");

    // Record the three starting points (the resume run and the fencing
    // check on one node, the fresh run on another, side by side).
    let Starts {
        node,
        resume: rec_resume,
        fresh: rec_fresh,
        fresh_root,
        recover: rec_recover,
        recover_root,
        more: rec_fence,
    } = record_starts(|node, base| {
        reset_fence(node, base).unwrap();
        let (ran, rec_fence) = record_run(node, &fence_args(DEAD));
        assert!(
            ran.code() == Some(0) && ran.json()["termination"] == "confirmed",
            "the recorded fencing check: {}",
            ran.describe()
        );
        rec_fence
    });
    let fence_dirs: Vec<String> = filter_dirs(&node)
        .iter()
        .map(|d| d.display().to_string())
        .collect();

    let mut points = Vec::new();
    let mut add = |scn: Scn, sites: &[Site]| {
        for st in sites {
            // wait4 is the fresh run's wait for kubeadm: not an I/O call.
            if st.sc == "wait4" {
                continue;
            }
            for errno in [Errno::Eio, Errno::Enospc] {
                if errno == Errno::Eio || can_enospc(st) {
                    points.push(Point {
                        scn,
                        errno,
                        site: st.clone(),
                        target: None,
                    });
                }
            }
        }
    };
    let fresh = fresh_sites(&rec_fresh, "op-rec-fresh", &fresh_root);
    add(Scn::Fresh, &fresh.sites);
    let recover = fresh_sites(&rec_recover, "op-rec-recover", &recover_root);
    add(Scn::Recover, &recover.sites);
    let resume = every_site(&rec_resume);
    add(Scn::Resume, &resume.sites);
    let fence_sites = every_site(&rec_fence);
    // The fence points whose call comes after the check took the lock.
    let fence_held: Vec<Site> = fence_sites
        .sites
        .iter()
        .filter(|st| fence_held_lock(&rec_fence, &fence_dirs, st))
        .cloned()
        .collect();
    add(Scn::Fence, &fence_sites.sites);
    // The writes the sampling leaves to chance (they are mostly log lines):
    // every write of a temp file (owner, phase, receipts) and of stdout.
    let aimed = targets(&rec_resume.calls, "op-rec-resume");
    for (t, k) in &aimed {
        for errno in [Errno::Eio, Errno::Enospc] {
            points.push(Point {
                scn: Scn::Resume,
                errno,
                site: site("write", *k),
                target: Some(t.clone()),
            });
        }
    }
    sweep.select(&mut points, Point::label);
    let count = |scn: Scn| points.iter().filter(|p| p.scn == scn).count();
    let aimed_list: Vec<String> = aimed
        .iter()
        .map(|(t, k)| format!("{}#{} at write#{k}", t.class, t.nth))
        .collect();
    say(&format!(
        "io-errors setup: recorded (main thread) resume run {:?}; fresh run {:?}; recovery {:?}; fencing check {:?}; {} points ({} resume, {} fresh, {} recovery, {} fence; EIO at each, ENOSPC too at writes and creates; writes every {}th of {} on the resume run, every {}th of {} in the fencing check, and aimed at {aimed_list:?}), {} node(s) side by side",
        rec_resume.counts,
        rec_fresh.counts,
        rec_recover.counts,
        rec_fence.counts,
        points.len(),
        count(Scn::Resume),
        count(Scn::Fresh),
        count(Scn::Recover),
        count(Scn::Fence),
        resume.write_step,
        resume.writes,
        fence_sites.write_step,
        fence_sites.writes,
        sweep.jobs,
    ));
    let setup = sweep.started.elapsed();

    let results = sweep.run(
        &points,
        node,
        |p: &Point| p.scn.start(),
        |n: &Node, b: &Base, p: &Point, idx: usize| run_point(n, b, p, idx, &fence_held),
        |idx, p, result, t| {
            format!(
                "  #{idx} {} {t:?}: {}",
                p.label(),
                match result {
                    Ok(n) => format!(
                        "truthful ({}; injected run {:?}, recovery {:?}; {})",
                        n.outcome,
                        n.t_injected,
                        n.t_recover,
                        if n.hit {
                            format!("landed on {}", n.landed)
                        } else {
                            "ran past the last call".to_string()
                        }
                    ),
                    Err(e) => format!("FAILED: {e}"),
                }
            )
        },
    );

    let n = results.len();
    let ok = results.iter().filter(|r| r.2.is_ok()).count();
    let mut by_kind: BTreeMap<(Scn, String, Errno), (usize, usize, usize)> = BTreeMap::new();
    let mut outcomes: BTreeMap<(Scn, String), usize> = BTreeMap::new();
    let mut no_manifests = 0;
    let (mut creat_landed, mut creat_points) = (0, 0);
    let (mut aimed_hit, mut aimed_n, mut aimed_again) = (0, 0, 0);
    let mut absorbed: BTreeMap<String, usize> = BTreeMap::new();
    for (_, p, r, _) in &results {
        let e = by_kind
            .entry((p.scn, p.site.sc.clone(), p.errno))
            .or_default();
        e.0 += 1;
        if let Ok(note) = r {
            e.1 += 1;
            if note.hit {
                e.2 += 1;
            }
            *outcomes.entry((p.scn, note.outcome.clone())).or_default() += 1;
            no_manifests += usize::from(note.no_manifests);
            if let Some((hit, runs)) = note.target_hit {
                aimed_n += 1;
                aimed_hit += usize::from(hit);
                aimed_again += usize::from(runs > 1);
            }
            if p.site.path_filter {
                creat_points += 1;
                creat_landed += usize::from(note.landed.contains("O_CREAT"));
            }
            if note.hit && (note.outcome == "renewed" || note.outcome == "unchanged") {
                *absorbed
                    .entry(format!("{} {} {}", p.scn.name(), p.site.sc, p.errno.name()))
                    .or_default() += 1;
            }
        }
    }
    let mut failures = String::new();
    for (i, p, r, t) in &results {
        if let Err(e) = r {
            failures.push_str(&format!("  FAILED #{i} {} ({t:?}): {e}\n", p.label()));
        }
    }
    for line in failures.lines() {
        say(line);
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, _, r, _) in &results {
        if let Err(e) = r {
            for tag in [UNTRUE, PUT_BACK, LOST, RECOVERY] {
                if e.contains(tag) {
                    *kinds.entry(tag.trim()).or_default() += 1;
                }
            }
        }
    }
    if !kinds.is_empty() {
        say(&format!(
            "  failed points by finding (a point may have several): {kinds:?}"
        ));
    }
    for ((scn, sc, errno), (tried, good, hit)) in &by_kind {
        say(&format!(
            "  {} {sc} {}: {good} truthful of {tried} ({hit} landed on the call, the rest ran past the last one)",
            scn.name(),
            errno.name()
        ));
    }
    say(&format!(
        "  what the truthful points printed (outcome, fence: termination/outcome): {:?}; documents with an empty `manifests`: {no_manifests}",
        outcomes
            .iter()
            .map(|((s, o), k)| format!("{} {o}: {k}", s.name()))
            .collect::<Vec<_>>()
    ));
    say(&format!(
        "  openat points that landed on an O_CREAT open: {creat_landed} of {creat_points}; writes aimed at a temp file or stdout that landed on it: {aimed_hit} of {aimed_n} ({aimed_again} aimed again after the first run made it at another count); errors the run absorbed and still succeeded: {absorbed:?}"
    ));
    say("  skipped: openat calls without O_CREAT and outside the state directories, execve, the tools' own calls and the runbook's other threads (strace without -f injects into the main thread only); EIO on the fresh run's wait4 (not an I/O call); ENOSPC on renames, unlinks, fsyncs and flock");
    sweep.finish(setup, "io errors", "truthful", ok, n);
    assert!(
        ok == n,
        "{} of {n} io-error points failed the oracle:\n{failures}",
        n - ok
    );
}

/// The oracle is not vacuous: false reports about a node are caught.
#[test]
fn oracle_catches_false_reports() {
    use std::os::unix::process::ExitStatusExt;
    let node = Node::new(VARIANT, knobs());
    let ran = |code: i32, doc: &str| Ran {
        status: std::process::ExitStatus::from_raw(code << 8),
        stdout: format!("{doc}\n"),
        stderr: String::new(),
        elapsed: Duration::ZERO,
    };
    let all = |etcd: &str| {
        format!(
            r#"{{"etcd":"{etcd}","kube-apiserver":"active","kube-controller-manager":"active","kube-scheduler":"active"}}"#
        )
    };
    let judge = |r: &Ran| judge_renewal(&node, "op-x", r, None, &mut Note::default()).join("\n");
    // The node as it is: all four active, no receipt for op-x.
    let truthful = ran(
        1,
        &format!(
            r#"{{"outcome":"failed","receiptWritten":false,"manifests":{}}}"#,
            all("active")
        ),
    );
    assert_eq!(judge(&truthful), "");
    for (r, want) in [
        (
            ran(
                0,
                &format!(
                    r#"{{"outcome":"renewed","receiptWritten":true,"manifests":{}}}"#,
                    all("active")
                ),
            ),
            "but the receipt on disk is absent",
        ),
        (
            ran(
                4,
                &format!(
                    r#"{{"outcome":"failed_not_restored","receiptWritten":false,"manifests":{}}}"#,
                    all("staged")
                ),
            ),
            "says etcd is staged, but it is active",
        ),
        (
            ran(
                1,
                &format!(r#"{{"outcome":"failed","manifests":{}}}"#, all("active")),
            ),
            "no `receiptWritten`",
        ),
        (ran(101, ""), "printed no JSON document"),
    ] {
        let got = judge(&r);
        assert!(got.contains(want), "want {want:?} in {got:?}");
    }
    // etcd staged by hand: exit 1 claims all four active.
    let staging = node.root.join(STAGING);
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::rename(node.manifest("etcd"), node.staged("etcd")).unwrap();
    let got = judge(&truthful);
    for want in [
        "exit 1, but the manifests not active on the node are [\"etcd\"]",
        "says etcd is active, but it is staged",
        "[left staged]",
    ] {
        assert!(got.contains(want), "want {want:?} in {got:?}");
    }
    std::fs::rename(node.staged("etcd"), node.manifest("etcd")).unwrap();
}
