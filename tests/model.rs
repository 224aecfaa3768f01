//! Model-based test of the runbook's state machine: random sequences of
//! renewals, crashes, resumptions, status checks, corruption and hostile
//! changes, run by the real binary on the simulated node (tests/simnode),
//! each checked against a reference model written from SPEC.md.
//! `proptest-state-machine` generates the sequences from the model and
//! shrinks a failing one; failures are kept in `tests/model.proptest-regressions`
//! (committed) and replayed first on every run.
//!
//! Run with `cargo test --all-features --test model`. `PROPTEST_CASES`
//! (default 12) sets the number of cases, `NVKE_MODEL_TRANSITIONS` (default
//! 8) the most transitions per case (at least 3), `PROPTEST_MAX_SHRINK_ITERS`
//! (default 64) the shrinking effort, `NVKE_MODEL_VERBOSE=1` prints every
//! transition and run as it happens. Each case gets a fresh simulated node
//! (ECDSA fixture: cheap TLS and key generation; 20 ms kubelet latencies)
//! whose initial phase file is absent, or another operation's unfinished
//! V2 work (`renewing`, or `restart_pending` at any component or at
//! postflight). One line `model: N cases, M transitions (+K recovery), R runs
//! of the binary, all invariants held (S s)` is written to the real stdout
//! (not the captured one, so CI shows it), like tests/crash.rs. Five plain
//! tests replay fixed sequences through the same model and oracle.
//!
//! # Transitions
//!
//! Every transition is defined in every state (shrinking may delete any
//! transition), and each is self-contained except the phase file
//! corruption, which persists until `RepairPhaseFile`. Weights depend on the
//! state: with a manifest left staged the hostile transitions are four times
//! likelier (they must refuse without losing it, or put it back first), and
//! a third of the crashes land on the three points that leave a manifest
//! staged.
//!
//! - `Step`: a forced renewal (`--force`) under a fresh operation ID.
//! - `Crash(k)`: a forced renewal under a fresh ID with the failpoint
//!   `failpoints::ALL[k]` armed: the process SIGKILLs itself the first time
//!   it reaches that point (possibly leaving a staged manifest and an
//!   unfinished phase), or, when the point is not on its path, runs to its
//!   normal end. `fence-after-restore-before-receipt` is not on a renewal's
//!   path: for it the fencing check of the last ID runs with the failpoint.
//! - `Resume(id)`: an unforced renewal under the last ID (its own unfinished
//!   work, or a replay of its receipt), a fresh ID (takes the work over), or
//!   an older ID (a delayed attempt: replayed, never acts).
//! - `StatusOnly { fence, id }`: the fencing check
//!   (`--status-only --operation-id ID --fence`, ID picked like `Resume`'s,
//!   default the last), or the operator view, with or without
//!   `--operation-id ID` (its `fencing` forecast must be what the fencing
//!   check would do).
//! - `CorruptPhaseFile(kind)`: garbage, an empty file, a torn (truncated)
//!   file, or a well-formed V2 file with an invalid state/component pair is
//!   written over the phase file (the operator's copy of the valid bytes is
//!   kept), then a renewal runs. Until `RepairPhaseFile` restores the valid
//!   bytes, every renewal fails with phase `phase-file`, touching nothing
//!   but its own receipt, and the fencing check is `unconfirmed` (exit 1)
//!   unless the ID already has a receipt.
//! - `RepairPhaseFile`: the operator puts the valid phase file back (a
//!   no-op when it is not corrupt), then the operator view runs.
//! - `PlantSymlink(target)`: the state dir, lock, phase file, receipts dir,
//!   one receipt, the staging dir or the backup dir is replaced by a symlink
//!   into a sentinel directory outside `--root` holding decoys (a valid V2
//!   phase of another operation, valid `renewed` receipts for the IDs about
//!   to run, ...); a renewal, the fencing check and the operator view run;
//!   everything must be refused as SPEC section 3 says (a followed decoy
//!   shows as a wrong outcome, and as a change outside the root); then the
//!   symlink is removed and the real entry put back. A refused staging dir
//!   hides a staged manifest: the renewal fails (`topology`, exit 4), and
//!   the fencing check still confirms (it abandons the operation; nothing
//!   can be put back from a directory it refuses, and its receipt records
//!   the manifest `missing`), which is what the binary does and what SPEC
//!   section 6 allows; the manifest is put back by the next renewal.
//! - `ChangeCA { on_disk }`: kubeadm's `changeCA` knob during a forced
//!   renewal (renew-certs fails, the backup is put back, CA bytes unchanged;
//!   a run that only restarts never calls kubeadm and succeeds); or
//!   `pki/front-proxy-ca.crt` differs on disk: an unforced renewal fails
//!   `ca-check` when it resumes work (fingerprints recorded in the phase
//!   file), a forced one with `--expect-ca-sha256` for the three original
//!   CAs fails `ca-check` always; then the CA bytes are put back.
//! - `StagedDiffers(c)`: a staged copy of an active manifest with different
//!   bytes: a renewal fails `staging-conflict` with exit 1 (all four are active: SPEC 7, v1.1), the fencing
//!   check leaves that pair alone; then the operator removes the copy.
//! - `ToolMissing { crictl }`: `--crictl`/`--kubeadm` names a missing path.
//! - `ToolHangs`: kubeadm hangs (`hangSecs` 30), `--command-timeout 4`.
//! - `EtcdHealth(voters, unhealthy, learners)`: the etcd membership knobs
//!   for a forced renewal (`--health-timeout 1` when the gate must time out:
//!   a learner, or too few healthy voters to lose this one; two voters are
//!   refused at once as `two-control-plane-voters`).
//!
//! # The model
//!
//! It tracks which manifest is staged (at most one), the phase file
//! (absent, or V2 with its operation ID and `renewing`, `restart_pending`
//! with the next component, or `done`; or corrupt), every receipt (outcome, and
//! whether it recorded all four manifests active), the IDs used, and for
//! each transition the runs it makes with what each must show (killed, or
//! exit code, `outcome`, `phase`, `replayed`, `termination`, `clean`). The
//! renewal follows SPEC section 4 step by step: lock, own receipt first
//! (replay exits 0 for success, 5 for abandoned/superseded, 1/4 for
//! failed), phase file (fresh / own resume / takeover with a `superseded`
//! receipt at the first phase write / done-by-receipt), staging preflight
//! (a leftover staged manifest is put back), CA check, expiry (unforced and
//! nothing to resume: `unchanged`), tools, local health gate (quorum rules
//! of step 7), renew (phase `renewing`, backup, kubeadm, verify; failure
//! rolls back), restarts from the persisted component, receipt, `done`.
//! Every failure after step 2 writes a `failed` receipt; exit 1 when all
//! four manifests are active at the end, 4 otherwise (SPEC section 7, also
//! for runs refused before they could write a receipt). The fencing check
//! follows SPEC section 6.
//!
//! # The oracle (`Sut::oracle`, after every transition)
//!
//! 1. Each of the four manifests is in exactly one of `manifests/` and the
//!    staging dir, with its original bytes and mode (never zero copies,
//!    never two, never empty or torn), where the model says; the staging
//!    dir holds nothing else; kube-vip's manifest never moves.
//! 2. A renewal that exits normally (not replayed) with a manifest not
//!    active exits 4, and the receipt it wrote records where the manifests
//!    were; after the final recovery (operator repairs the phase file,
//!    fencing check, a new operation) all four are active with their
//!    original bytes, staging is empty, all four containers run, and the
//!    operator view is clean.
//! 3. At most one manifest is out of `manifests/` at any moment: a watcher
//!    thread lists the directories every 2 ms while the binary runs.
//! 4. Every receipt exists exactly when the model says, with its outcome,
//!    and never changes once written (bytes, inode, mtime).
//! 5. The phase file is valid and says what the model says, or it is the
//!    corrupt bytes the test wrote (recognised as corrupt by the runs).
//! 6. Nothing outside `--root` changes (the sentinel directory's tree:
//!    names, types, bytes, modes, mtimes), and the CA certificates, CA keys
//!    and service-account keys keep their bytes and modes.
#![cfg(all(feature = "sim", feature = "failpoints"))]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]

mod support;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::hex::sha256_hex;
use support::node::*;
use support::oracle::{base_of, manifests_in_place, Base};
use support::tree::{chmod, diff, mode_of, snapshot, Snapshot};
use support::{say, tail};

const VARIANT: &str = "ecdsa";
const FAILPOINTS: &[&str] = nvke_cert_runbook::failpoints::ALL;
const FENCE_POINT: &str = "fence-after-restore-before-receipt";
/// A run that takes longer than this is a hang (killed, test fails).
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// Counters for the summary line, per test thread (the deterministic
/// replays run beside the generated cases).
#[derive(Default, Clone, Copy)]
struct Counts {
    cases: usize,
    transitions: usize,
    /// Transitions of the final recovery, apart from the generated ones.
    recovery: usize,
    runs: usize,
}

thread_local! {
    static COUNTS: std::cell::Cell<Counts> = std::cell::Cell::new(Counts::default());
}

fn count(f: impl FnOnce(&mut Counts)) {
    COUNTS.with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
    });
}

// ---------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------

/// Where V2 work stands (`state` / `nextComponent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Renewing,
    /// Index into COMPONENTS; None: all restarted, postflight to pass.
    Restart(Option<usize>),
    Done,
}

impl St {
    /// `state` and `nextComponent` as the phase file spells them.
    fn names(self) -> (&'static str, Option<&'static str>) {
        match self {
            St::Renewing => ("renewing", None),
            St::Restart(n) => ("restart_pending", n.map(|i| COMPONENTS[i])),
            St::Done => ("done", None),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ph {
    Absent,
    V2 {
        id: String,
        st: St,
    },
    /// The legacy five-line format (no operation ID): a V2 run resuming it
    /// keeps writing it until `done` (SPEC section 3).
    Legacy {
        st: St,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Renewed,
    Unchanged,
    Failed,
    Abandoned,
    Superseded,
}

impl Out {
    fn as_str(self) -> &'static str {
        match self {
            Out::Renewed => "renewed",
            Out::Unchanged => "unchanged",
            Out::Failed => "failed",
            Out::Abandoned => "abandoned",
            Out::Superseded => "superseded",
        }
    }
    fn success(self) -> bool {
        matches!(self, Out::Renewed | Out::Unchanged)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rcpt {
    out: Out,
    /// The receipt recorded all four manifests active.
    all_active: bool,
}

impl Rcpt {
    /// SPEC section 7: the exit code of this outcome (and of its replay).
    fn code(self) -> i32 {
        match self.out {
            Out::Renewed | Out::Unchanged => 0,
            Out::Abandoned | Out::Superseded => 5,
            Out::Failed if self.all_active => 1,
            Out::Failed => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Corruption {
    Garbage,
    Empty,
    Truncated,
    BadPair,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    StateDir,
    LockFile,
    PhaseFile,
    CompletedDir,
    Receipt,
    StagingDir,
    BackupDir,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdPick {
    Last,
    Fresh,
    Old(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Transition {
    Step,
    Crash(usize),
    Resume(IdPick),
    StatusOnly { fence: bool, id: Option<IdPick> },
    CorruptPhaseFile(Corruption),
    RepairPhaseFile,
    PlantSymlink(Link),
    ChangeCA { on_disk: bool },
    StagedDiffers(usize),
    ToolMissing { crictl: bool },
    ToolHangs,
    EtcdHealth(u32, u32, u32),
}

/// The hostile conditions in force during one transition's runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Env {
    link: Option<Link>,
    /// With `Link::Receipt`: whose receipt is the symlink.
    link_receipt: Option<String>,
    /// A differing staged copy of this (active) component.
    staged_differs: Option<usize>,
    crictl_missing: bool,
    kubeadm_missing: bool,
    kubeadm_hangs: bool,
    kubeadm_changes_ca: bool,
    ca_on_disk_changed: bool,
    etcd: Option<(u32, u32, u32)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Cmd {
    Renew {
        id: String,
        force: bool,
        expect_ca: bool,
        failpoint: Option<&'static str>,
    },
    Fence {
        id: String,
        failpoint: Option<&'static str>,
    },
    View {
        id: Option<String>,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Expect {
    /// None: killed by its failpoint (SIGKILL).
    code: Option<i32>,
    outcome: Option<&'static str>,
    phase: Option<&'static str>,
    replayed: Option<bool>,
    termination: Option<&'static str>,
    clean: Option<bool>,
    /// View with an ID: what it must say a fencing check would do.
    fencing: Option<&'static str>,
}

impl Expect {
    fn killed() -> Expect {
        Expect::default()
    }
    fn renew(code: i32, outcome: &'static str, phase: &'static str) -> Expect {
        Expect {
            code: Some(code),
            outcome: Some(outcome),
            phase: Some(phase),
            replayed: Some(false),
            ..Expect::default()
        }
    }
    fn fence(code: i32, termination: &'static str) -> Expect {
        Expect {
            code: Some(code),
            termination: Some(termination),
            ..Expect::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Planned {
    cmd: Cmd,
    expect: Expect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    Fresh,
    Renewing,
    Restart(Option<usize>),
}

#[derive(Clone, Debug)]
struct Model {
    /// The one manifest out of manifests/ (in the runbook's staging dir).
    staged: Option<usize>,
    /// The valid phase file (what the operator restores while corrupt).
    phase: Ph,
    /// The phase file currently holds these corrupt bytes (kind).
    corrupt: Option<Corruption>,
    receipts: BTreeMap<String, Rcpt>,
    /// Operation IDs of renewals, in order of first use.
    ids: Vec<String>,
    last_id: Option<String>,
    seq: u32,
    /// The last transition's environment and runs.
    env: Env,
    plan: Vec<Planned>,
}

impl Model {
    fn new(phase: Ph) -> Model {
        // The seeded operation is an older ID a delayed attempt may use.
        let ids = match &phase {
            Ph::V2 { id, .. } => vec![id.clone()],
            _ => Vec::new(),
        };
        Model {
            staged: None,
            phase,
            corrupt: None,
            receipts: BTreeMap::new(),
            ids,
            last_id: None,
            seq: 0,
            env: Env::default(),
            plan: Vec::new(),
        }
    }

    fn fresh_id(&mut self) -> String {
        self.seq += 1;
        format!("op-m{}", self.seq)
    }

    fn last_or_fresh(&mut self) -> String {
        match &self.last_id {
            Some(id) => id.clone(),
            None => self.fresh_id(),
        }
    }

    /// All four manifests active (as the binary sees them) in `env`.
    /// SPEC 7 (v1.1): active means present in `manifests/`; a differing
    /// staged copy beside an active one is a conflict, not a pod down.
    fn all_active(&self, _env: &Env) -> bool {
        self.staged.is_none()
    }

    /// SPEC section 7 for a failure: 1 with all four active, else 4.
    fn fail_code(&self, env: &Env) -> i32 {
        if self.all_active(env) {
            1
        } else {
            4
        }
    }

    /// Refused before a receipt could be written (lock/state, receipts).
    fn refused(&self, env: &Env, phase: &'static str) -> Expect {
        Expect::renew(self.fail_code(env), "failed", phase)
    }

    /// Failed after step 2: a `failed` receipt for `id`.
    fn fail(&mut self, id: &str, env: &Env, phase: &'static str) -> Expect {
        let r = Rcpt {
            out: Out::Failed,
            all_active: self.all_active(env),
        };
        self.receipts.insert(id.to_string(), r);
        Expect::renew(r.code(), "failed", phase)
    }

    /// The runbook's judgement of the phase file's intent (status view).
    fn intent_unclean(&self, env: &Env) -> bool {
        if self.corrupt.is_some() || env.link == Some(Link::PhaseFile) {
            return true;
        }
        match &self.phase {
            Ph::V2 { st: St::Done, .. } | Ph::Legacy { st: St::Done } | Ph::Absent => false,
            Ph::Legacy { .. } => true,
            Ph::V2 { id, .. } => {
                if env.link_receipt.as_deref() == Some(id.as_str()) {
                    return true;
                }
                !self.receipts.get(id).is_some_and(|r| r.out.success())
            }
        }
    }

    /// SPEC section 4: one V2 renewal; updates the model, returns what the
    /// run must show.
    fn renew(
        &mut self,
        id: &str,
        force: bool,
        expect_ca: bool,
        fp: Option<&'static str>,
        env: &Env,
    ) -> Expect {
        if !self.ids.iter().any(|i| i == id) {
            self.ids.push(id.to_string());
        }
        self.last_id = Some(id.to_string());
        let at = |p: &str| fp == Some(p);
        // 1. state dir, lock.
        if matches!(env.link, Some(Link::StateDir) | Some(Link::LockFile)) {
            return self.refused(env, "lock");
        }
        if at("renew-after-lock") {
            return Expect::killed();
        }
        // 2. own receipt first.
        if env.link == Some(Link::CompletedDir) || env.link_receipt.as_deref() == Some(id) {
            return self.refused(env, "receipt");
        }
        if let Some(r) = self.receipts.get(id) {
            return Expect {
                code: Some(r.code()),
                outcome: Some(r.out.as_str()),
                replayed: Some(true),
                ..Expect::default()
            };
        }
        // 3. phase file.
        if self.corrupt.is_some() || env.link == Some(Link::PhaseFile) {
            return self.fail(id, env, "phase-file");
        }
        let start_of = |st: St| match st {
            St::Renewing => Start::Renewing,
            St::Restart(n) => Start::Restart(n),
            St::Done => unreachable!(),
        };
        let legacy = matches!(self.phase, Ph::Legacy { st } if st != St::Done);
        let (start, mut takeover) = match self.phase.clone() {
            Ph::Absent | Ph::V2 { st: St::Done, .. } | Ph::Legacy { st: St::Done } => {
                (Start::Fresh, None)
            }
            Ph::Legacy { st } => (start_of(st), None),
            Ph::V2 { id: pid, st } => {
                let s = start_of(st);
                if pid == id {
                    (s, None)
                } else if env.link_receipt.as_deref() == Some(pid.as_str()) {
                    return self.fail(id, env, "receipt");
                } else {
                    match self.receipts.get(&pid) {
                        Some(r) if r.out.success() => (Start::Fresh, None),
                        Some(_) => (s, None),
                        None => (s, Some(pid)),
                    }
                }
            }
        };
        let resuming = start != Start::Fresh;
        // 4. staging preflight.
        if env.link == Some(Link::StagingDir) {
            let phase = if self.staged.is_some() {
                "topology"
            } else {
                "staging-conflict"
            };
            return self.fail(id, env, phase);
        }
        if env.staged_differs.is_some() {
            return self.fail(id, env, "staging-conflict");
        }
        self.staged = None;
        // 5. CA check (a legacy phase file records only ca.crt's
        // fingerprint; the test changes front-proxy-ca.crt).
        if env.ca_on_disk_changed && (expect_ca || (resuming && !legacy)) {
            return self.fail(id, env, "ca-check");
        }
        // 6. expiry (the fixture's leaves are not due at NOW).
        if start == Start::Fresh && !force {
            self.receipts.insert(
                id.to_string(),
                Rcpt {
                    out: Out::Unchanged,
                    all_active: true,
                },
            );
            return Expect::renew(0, "unchanged", "done");
        }
        // Tools, then the local health gate.
        if env.crictl_missing {
            return self.fail(id, env, "health");
        }
        if env.kubeadm_missing && matches!(start, Start::Fresh | Start::Renewing) {
            return self.fail(id, env, "renew-certs");
        }
        if at("gate-in-wait") {
            return Expect::killed();
        }
        if let Some((v, u, l)) = env.etcd {
            if let Err(phase) = etcd_gate(v, u, l) {
                return self.fail(id, env, phase);
            }
        }
        // The first phase write records the superseded receipt.
        let mut record = |m: &mut Model, st: St| {
            if let Some(other) = takeover.take() {
                m.receipts.insert(
                    other,
                    Rcpt {
                        out: Out::Superseded,
                        all_active: m.staged.is_none(),
                    },
                );
            }
            m.phase = if legacy {
                Ph::Legacy { st }
            } else {
                Ph::V2 {
                    id: id.to_string(),
                    st,
                }
            };
        };
        // 8. renew.
        let first = match start {
            Start::Fresh | Start::Renewing => {
                record(self, St::Renewing);
                if at("renew-after-phase-renewing") {
                    return Expect::killed();
                }
                if env.link == Some(Link::BackupDir) {
                    return self.fail(id, env, "backup");
                }
                if at("renew-after-backup") {
                    return Expect::killed();
                }
                if env.kubeadm_hangs || env.kubeadm_changes_ca {
                    return self.fail(id, env, "renew-certs");
                }
                if at("renew-after-kubeadm") || at("renew-after-verify") {
                    return Expect::killed();
                }
                Some(0)
            }
            Start::Restart(n) => n,
        };
        // 9. restarts from the persisted component.
        record(self, St::Restart(first));
        if let Some(first) = first {
            for c in first..4 {
                if at("restart-after-stage")
                    || at("restart-in-wait-stop")
                    || at("restart-after-stop")
                {
                    self.staged = Some(c);
                    return Expect::killed();
                }
                if at("restart-after-unstage")
                    || at("restart-in-wait-start")
                    || at("restart-before-record")
                {
                    return Expect::killed();
                }
                let next = if c < 3 { Some(c + 1) } else { None };
                record(self, St::Restart(next));
            }
        }
        // 10, 11. postflight, receipt, done.
        if at("renew-before-receipt") {
            return Expect::killed();
        }
        self.receipts.insert(
            id.to_string(),
            Rcpt {
                out: Out::Renewed,
                all_active: true,
            },
        );
        if at("renew-after-receipt-before-done") {
            return Expect::killed();
        }
        record(self, St::Done);
        Expect::renew(0, "renewed", "done")
    }

    /// What the fencing check would conclude (no change).
    fn fence_forecast(&self, id: &str, env: &Env) -> (i32, &'static str) {
        if matches!(env.link, Some(Link::StateDir) | Some(Link::LockFile)) {
            return (1, "unconfirmed");
        }
        if env.link == Some(Link::CompletedDir) || env.link_receipt.as_deref() == Some(id) {
            return (1, "unconfirmed");
        }
        if self.receipts.contains_key(id) {
            return (0, "confirmed");
        }
        if self.corrupt.is_some() || env.link == Some(Link::PhaseFile) {
            return (1, "unconfirmed");
        }
        if matches!(self.phase, Ph::Legacy { st } if st != St::Done) {
            return (1, "unconfirmed"); // never abandoned: no operation ID
        }
        (0, "confirmed")
    }

    /// SPEC section 6: the fencing check.
    fn fence(&mut self, id: &str, fp: Option<&'static str>, env: &Env) -> Expect {
        let (code, termination) = self.fence_forecast(id, env);
        // SPEC 6 (v1.1): once the lock is held, every outcome (confirmed,
        // abandoned or unconfirmed) first puts back a staged, not active
        // manifest; never from a refused staging directory.
        let locked = !matches!(env.link, Some(Link::StateDir) | Some(Link::LockFile));
        if locked && env.link != Some(Link::StagingDir) {
            self.staged = None;
        }
        if self.receipts.contains_key(id) || code != 0 {
            return Expect::fence(code, termination);
        }
        // Abandon: the staged manifest is back; then the receipt.
        if fp == Some(FENCE_POINT) {
            return Expect::killed();
        }
        self.receipts.insert(
            id.to_string(),
            Rcpt {
                out: Out::Abandoned,
                all_active: self.all_active(env),
            },
        );
        Expect::fence(0, "confirmed")
    }

    /// SPEC section 6: the operator view (exit 0, 1, or 4 from v1.1).
    fn view(&self, id: Option<&str>, env: &Env) -> Expect {
        let unclean = matches!(
            env.link,
            Some(Link::StateDir) | Some(Link::LockFile) | Some(Link::CompletedDir)
        ) || env.link == Some(Link::StagingDir)
            || !self.all_active(env)
            || env.staged_differs.is_some()
            || self.intent_unclean(env);
        let fencing = id.map(|id| self.fence_forecast(id, env).1);
        // v1.1: 4 when one of the four is not in manifests/ (a pod is down
        // on this node), 1 for any other unclean state.
        let code = match (unclean, self.all_active(env)) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 4,
        };
        Expect {
            code: Some(code),
            clean: Some(!unclean),
            fencing,
            ..Expect::default()
        }
    }

    fn plan_renew(
        &mut self,
        id: String,
        force: bool,
        expect_ca: bool,
        fp: Option<&'static str>,
        env: &Env,
    ) {
        let expect = self.renew(&id, force, expect_ca, fp, env);
        self.plan.push(Planned {
            cmd: Cmd::Renew {
                id,
                force,
                expect_ca,
                failpoint: fp,
            },
            expect,
        });
    }

    fn plan_fence(&mut self, id: String, fp: Option<&'static str>, env: &Env) {
        let expect = self.fence(&id, fp, env);
        self.plan.push(Planned {
            cmd: Cmd::Fence { id, failpoint: fp },
            expect,
        });
    }

    fn plan_view(&mut self, id: Option<String>, env: &Env) {
        let expect = self.view(id.as_deref(), env);
        self.plan.push(Planned {
            cmd: Cmd::View { id },
            expect,
        });
    }

    fn pick(&mut self, pick: IdPick) -> String {
        match pick {
            IdPick::Last => self.last_or_fresh(),
            IdPick::Fresh => self.fresh_id(),
            IdPick::Old(n) if !self.ids.is_empty() => self.ids[n as usize % self.ids.len()].clone(),
            IdPick::Old(_) => self.fresh_id(),
        }
    }

    /// The newest ID that has a receipt.
    fn newest_with_receipt(&self) -> Option<String> {
        self.ids
            .iter()
            .rev()
            .find(|i| self.receipts.contains_key(*i))
            .cloned()
    }

    fn step(mut self, t: &Transition) -> Model {
        self.plan.clear();
        let mut env = Env::default();
        match t {
            Transition::Step => {
                let id = self.fresh_id();
                self.plan_renew(id, true, false, None, &env);
            }
            Transition::Crash(k) => {
                let fp = FAILPOINTS[*k % FAILPOINTS.len()];
                if fp == FENCE_POINT {
                    let id = self.last_or_fresh();
                    self.plan_fence(id, Some(fp), &env);
                } else {
                    let id = self.fresh_id();
                    self.plan_renew(id, true, false, Some(fp), &env);
                }
            }
            Transition::Resume(pick) => {
                let id = self.pick(*pick);
                self.plan_renew(id, false, false, None, &env);
            }
            Transition::StatusOnly { fence, id } => {
                if *fence {
                    let id = self.pick(id.unwrap_or(IdPick::Last));
                    self.plan_fence(id, None, &env);
                } else {
                    let id = id.map(|p| self.pick(p));
                    self.plan_view(id, &env);
                }
            }
            Transition::CorruptPhaseFile(kind) => {
                self.corrupt = Some(*kind);
                let id = self.fresh_id();
                self.plan_renew(id, false, false, None, &env);
            }
            Transition::RepairPhaseFile => {
                self.corrupt = None;
                self.plan_view(None, &env);
            }
            Transition::PlantSymlink(link) => {
                env.link = Some(*link);
                let before = self.last_or_fresh();
                if *link == Link::Receipt {
                    let x = self
                        .newest_with_receipt()
                        .unwrap_or_else(|| self.fresh_id());
                    env.link_receipt = Some(x.clone());
                    self.plan_renew(x.clone(), false, false, None, &env);
                    let id = self.fresh_id();
                    self.plan_renew(id, false, false, None, &env);
                    self.plan_fence(x.clone(), None, &env);
                    self.plan_view(Some(x), &env);
                } else {
                    let id = self.fresh_id();
                    self.plan_renew(id, *link == Link::BackupDir, false, None, &env);
                    self.plan_fence(before.clone(), None, &env);
                    self.plan_view(Some(before), &env);
                }
            }
            Transition::ChangeCA { on_disk } => {
                if *on_disk {
                    env.ca_on_disk_changed = true;
                    let id = self.fresh_id();
                    self.plan_renew(id, false, false, None, &env);
                    let id = self.fresh_id();
                    self.plan_renew(id, true, true, None, &env);
                } else {
                    env.kubeadm_changes_ca = true;
                    let id = self.fresh_id();
                    self.plan_renew(id, true, false, None, &env);
                }
            }
            Transition::StagedDiffers(c) => {
                let c = c % 4;
                let c = if self.staged == Some(c) {
                    (c + 1) % 4
                } else {
                    c
                };
                env.staged_differs = Some(c);
                let before = self.last_or_fresh();
                let id = self.fresh_id();
                self.plan_renew(id, true, false, None, &env);
                self.plan_fence(before, None, &env);
                self.plan_view(None, &env);
            }
            Transition::ToolMissing { crictl } => {
                env.crictl_missing = *crictl;
                env.kubeadm_missing = !*crictl;
                let id = self.fresh_id();
                self.plan_renew(id, true, false, None, &env);
            }
            Transition::ToolHangs => {
                env.kubeadm_hangs = true;
                let id = self.fresh_id();
                self.plan_renew(id, true, false, None, &env);
            }
            Transition::EtcdHealth(v, u, l) => {
                env.etcd = Some((*v, *u, *l));
                let id = self.fresh_id();
                self.plan_renew(id, true, false, None, &env);
            }
        }
        self.env = env;
        self
    }
}

/// SPEC step 7 on the simulated membership (this node is member 1; the last
/// `unhealthy` members are unhealthy, learners listed after the voters).
fn etcd_gate(voters: u32, unhealthy: u32, learners: u32) -> Result<(), &'static str> {
    if learners > 0 {
        return Err("health");
    }
    if voters == 2 {
        return Err("two-control-plane-voters");
    }
    let healthy = voters.saturating_sub(unhealthy);
    if healthy == 0 || unhealthy >= voters {
        return Err("health"); // this member itself is unhealthy
    }
    if voters == 1 || healthy >= voters / 2 + 2 {
        Ok(())
    } else {
        Err("health")
    }
}

fn id_pick() -> impl Strategy<Value = IdPick> {
    prop_oneof![
        2 => Just(IdPick::Last),
        1 => Just(IdPick::Fresh),
        1 => any::<u8>().prop_map(IdPick::Old)
    ]
}

struct RefModel;

impl ReferenceStateMachine for RefModel {
    type State = Model;
    type Transition = Transition;

    fn init_state() -> BoxedStrategy<Model> {
        // Start clean, or in the middle of another operation's work (as a
        // crashed shell runbook or an earlier cycle would leave it).
        prop_oneof![
            3 => Just(Ph::Absent),
            1 => Just(Ph::V2 { id: "op-seed".into(), st: St::Renewing }),
            2 => (0..4usize).prop_map(|c| Ph::V2 { id: "op-seed".into(), st: St::Restart(Some(c)) }),
            1 => Just(Ph::V2 { id: "op-seed".into(), st: St::Restart(None) }),
            1 => prop_oneof![
                Just(St::Renewing),
                (0..4usize).prop_map(|c| St::Restart(Some(c))),
                Just(St::Restart(None)),
                Just(St::Done)
            ]
            .prop_map(|st| Ph::Legacy { st }),
        ]
        .prop_map(Model::new)
        .boxed()
    }

    /// Weighted by state: with a manifest left staged, the hostile
    /// transitions (which must refuse without putting it back, or put it
    /// back first) are likelier; a corrupt phase file is likelier repaired.
    fn transitions(state: &Model) -> BoxedStrategy<Transition> {
        let repair = if state.corrupt.is_some() { 6 } else { 1 };
        let hostile = if state.staged.is_some() { 4 } else { 1 };
        let staging_points: Vec<usize> = [
            "restart-after-stage",
            "restart-in-wait-stop",
            "restart-after-stop",
        ]
        .iter()
        .map(|p| FAILPOINTS.iter().position(|f| f == p).unwrap())
        .collect();
        prop_oneof![
            3 => Just(Transition::Step),
            5 => (0..FAILPOINTS.len()).prop_map(Transition::Crash),
            2 => proptest::sample::select(staging_points).prop_map(Transition::Crash),
            4 => id_pick().prop_map(Transition::Resume),
            3 => (any::<bool>(), proptest::option::of(id_pick()))
                .prop_map(|(fence, id)| Transition::StatusOnly { fence, id }),
            hostile => prop_oneof![
                Just(Corruption::Garbage),
                Just(Corruption::Empty),
                Just(Corruption::Truncated),
                Just(Corruption::BadPair)
            ]
            .prop_map(Transition::CorruptPhaseFile),
            repair => Just(Transition::RepairPhaseFile),
            3 * hostile => prop_oneof![
                Just(Link::StateDir),
                Just(Link::LockFile),
                Just(Link::PhaseFile),
                Just(Link::CompletedDir),
                Just(Link::Receipt),
                Just(Link::StagingDir),
                Just(Link::BackupDir)
            ]
            .prop_map(Transition::PlantSymlink),
            hostile => any::<bool>().prop_map(|on_disk| Transition::ChangeCA { on_disk }),
            hostile => (0..4usize).prop_map(Transition::StagedDiffers),
            hostile => any::<bool>().prop_map(|crictl| Transition::ToolMissing { crictl }),
            1 => Just(Transition::ToolHangs),
            1 => (1..=5u32, 0..=2u32, prop_oneof![3 => Just(0u32), 1 => Just(1u32)])
                .prop_map(|(v, u, l)| Transition::EtcdHealth(v, u.min(v), l)),
        ]
        .boxed()
    }

    fn apply(state: Model, t: &Transition) -> Model {
        state.step(t)
    }
}

// ---------------------------------------------------------------------------
// The system under test: the binary on a simulated node
// ---------------------------------------------------------------------------

#[derive(Debug)]
struct RunResult {
    code: Option<i32>,
    signal: Option<i32>,
    json: Value,
    stdout: String,
    stderr: String,
    /// Watcher: most manifests out of manifests/ at one time.
    max_out: usize,
    /// Watcher: a manifest seen in neither place (consistent samples).
    zero_copies: Option<String>,
}

/// Lists manifests/ (one getdents: a consistent view) every 2 ms while a
/// process runs.
struct Watcher {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(usize, Option<String>)>,
}

impl Watcher {
    /// `staging`: where the real staging directory is (moved aside while a
    /// symlink stands in for it).
    fn start(root: &Path, staging: PathBuf) -> Watcher {
        let manifests = root.join("etc/kubernetes/manifests");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let list = |d: &Path| -> BTreeSet<String> {
                std::fs::read_dir(d)
                    .map(|rd| {
                        rd.flatten()
                            .map(|e| e.file_name().to_string_lossy().to_string())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut max_out = 0;
            let mut zero = None;
            loop {
                let done = flag.load(Ordering::SeqCst);
                let a1 = list(&manifests);
                let s = list(&staging);
                let a2 = list(&manifests);
                for m in [&a1, &a2] {
                    let present = COMPONENTS
                        .iter()
                        .filter(|c| m.contains(&format!("{c}.yaml")))
                        .count();
                    max_out = max_out.max(4 - present);
                }
                if a1 == a2 && zero.is_none() {
                    for c in COMPONENTS {
                        let f = format!("{c}.yaml");
                        if !a1.contains(&f) && !s.contains(&f) {
                            zero = Some(format!("{c} in neither manifests/ nor staging"));
                        }
                    }
                }
                if done {
                    return (max_out, zero);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Watcher { stop, handle }
    }

    fn finish(self) -> (usize, Option<String>) {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().unwrap()
    }
}

/// A receipt as first seen: bytes, inode, mtime.
type Seen = (Vec<u8>, u64, (i64, i64));

struct Sut {
    node: Node,
    /// The sentinel directory outside --root that symlinks point into.
    outside: PathBuf,
    outside_snap: Snapshot,
    /// Original (bytes, mode) of the four manifests, and the CA certificates
    /// and keys and the service-account keys: never changed.
    base: Base,
    /// kube-vip's manifest: it never moves.
    vip: Vec<u8>,
    /// First-seen receipts: bytes, inode, mtime.
    receipts: BTreeMap<String, Seen>,
    /// While the phase file is corrupt: the valid bytes (None: absent) and
    /// the corrupt bytes written.
    saved_phase: Option<Option<Vec<u8>>>,
    corrupt_bytes: Vec<u8>,
    /// Everything run so far in this case (for failure messages).
    transcript: Vec<String>,
    /// Where the real staging dir is now (aside while a symlink replaces it).
    staging_now: PathBuf,
}

/// A status document whose four manifests are all active and whose live
/// judgement (SPEC 10) has a finding an operator must act on.
fn live_action_needed(doc: &Value) -> bool {
    let all_active = doc["manifests"]
        .as_object()
        .is_some_and(|m| m.values().all(|v| v["active"] == true));
    let live = doc["live"]["pods"].as_array().is_some_and(|pods| {
        pods.iter().any(|p| {
            p["findings"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x["weight"] == "action_needed"))
        })
    });
    all_active && live
}

impl Sut {
    fn new(model: &Model) -> Sut {
        let node = Node::new(
            VARIANT,
            json!({ "stopLatencyMs": 20, "startLatencyMs": 20 }),
        );
        match &model.phase {
            Ph::Absent => {}
            Ph::V2 { id, st } => {
                let (state, next) = st.names();
                node.write_state("phase", &node.v2_phase(id, state, next));
            }
            Ph::Legacy { st } => {
                let (state, next) = st.names();
                node.write_state("phase", &node.legacy_phase(state, next.unwrap_or("none")));
            }
        }
        let outside = node.root.parent().unwrap().join("outside");
        let base = base_of(&node);
        let vip = std::fs::read(node.manifest("kube-vip")).unwrap();
        let staging_now = node.root.join(STAGING);
        let mut sut = Sut {
            staging_now,
            node,
            outside,
            outside_snap: Snapshot::new(),
            base,
            vip,
            receipts: BTreeMap::new(),
            saved_phase: None,
            corrupt_bytes: Vec::new(),
            transcript: Vec::new(),
        };
        sut.build_outside();
        sut
    }

    fn staging_dir(&self) -> PathBuf {
        self.node.root.join(STAGING)
    }

    fn completed(&self) -> PathBuf {
        self.node.state().join("completed")
    }

    /// The sentinel: decoys a followed symlink would act on.
    fn build_outside(&mut self) {
        let o = &self.outside;
        for d in [
            "state/completed",
            "completed",
            "receipts",
            "staging",
            "backup",
        ] {
            std::fs::create_dir_all(o.join(d)).unwrap();
        }
        let decoy_phase = self
            .node
            .v2_phase("op-decoy", "restart_pending", Some("kube-scheduler"));
        std::fs::write(o.join("phase"), &decoy_phase).unwrap();
        std::fs::write(o.join("state/phase"), &decoy_phase).unwrap();
        std::fs::write(o.join("lock"), b"").unwrap();
        std::fs::write(o.join("state/lock"), b"").unwrap();
        std::fs::write(o.join("staging/README"), b"not the staging dir\n").unwrap();
        for p in [
            "phase",
            "state/phase",
            "lock",
            "state/lock",
            "staging/README",
        ] {
            chmod(&o.join(p), 0o600);
        }
        for d in [
            ".",
            "state",
            "state/completed",
            "completed",
            "receipts",
            "staging",
            "backup",
        ] {
            chmod(&o.join(d), 0o700);
        }
        self.outside_snap = snapshot(&self.outside, true);
    }

    /// A valid `renewed` receipt for `id` (the decoy a followed symlink would
    /// replay with exit 0).
    fn decoy_receipt(&self, id: &str) -> Vec<u8> {
        let r = json!({
            "format": "nvke-cert-runbook/receipt/v1",
            "operationID": id,
            "outcome": "renewed",
            "phase": "done",
            "message": "decoy outside the root",
            "failedComponent": null,
            "manifests": {
                "etcd": "active",
                "kube-apiserver": "active",
                "kube-controller-manager": "active",
                "kube-scheduler": "active"
            },
            "finishedAt": "2026-11-29T00:00:00Z",
            "runbookVersion": "decoy",
            "caSHA256": {
                "ca.crt": self.node.ca_sha("ca.crt"),
                "etcd/ca.crt": self.node.ca_sha("etcd/ca.crt"),
                "front-proxy-ca.crt": self.node.ca_sha("front-proxy-ca.crt"),
            },
        });
        let bytes = (serde_json::to_string_pretty(&r).unwrap() + "\n").into_bytes();
        let oid = nvke_cert_runbook::rules::opid::OperationId::parse(id).unwrap();
        nvke_cert_runbook::rules::receipt::parse_receipt(&bytes, &oid)
            .unwrap_or_else(|e| panic!("the decoy receipt must be valid: {e}"));
        bytes
    }

    /// Decoy receipts for every ID the transition runs, in every decoy
    /// receipts directory; then the sentinel snapshot is taken again.
    fn plant_decoy_receipts(&mut self, model: &Model) {
        for p in &model.plan {
            let id = match &p.cmd {
                Cmd::Renew { id, .. } | Cmd::Fence { id, .. } => id.clone(),
                Cmd::View { id: Some(id) } => id.clone(),
                Cmd::View { id: None } => continue,
            };
            let bytes = self.decoy_receipt(&id);
            for d in ["state/completed", "completed", "receipts"] {
                let f = self.outside.join(d).join(format!("{id}.json"));
                std::fs::write(&f, &bytes).unwrap();
                chmod(&f, 0o600);
            }
        }
        self.outside_snap = snapshot(&self.outside, true);
    }

    fn ensure_state_dir(&self) {
        let s = self.node.state();
        if !s.exists() {
            std::fs::create_dir_all(&s).unwrap();
            chmod(&s, 0o700);
        }
    }

    /// (the managed path, where the real one is kept meanwhile, the target)
    fn link_paths(&self, link: Link, env: &Env) -> (PathBuf, PathBuf, PathBuf) {
        let st = self.node.state();
        let aside = |n: &str| st.join(format!(".model-aside-{n}"));
        match link {
            Link::StateDir => (
                st.clone(),
                st.parent().unwrap().join(".model-aside-state"),
                self.outside.join("state"),
            ),
            Link::LockFile => (st.join("lock"), aside("lock"), self.outside.join("lock")),
            Link::PhaseFile => (st.join("phase"), aside("phase"), self.outside.join("phase")),
            Link::CompletedDir => (
                self.completed(),
                aside("completed"),
                self.outside.join("completed"),
            ),
            Link::Receipt => {
                let id = env.link_receipt.clone().unwrap();
                (
                    self.completed().join(format!("{id}.json")),
                    aside("receipt"),
                    self.outside.join("receipts").join(format!("{id}.json")),
                )
            }
            Link::StagingDir => (
                self.staging_dir(),
                self.node.root.join("etc/kubernetes/.model-aside-staging"),
                self.outside.join("staging"),
            ),
            Link::BackupDir => (
                st.join("backup"),
                aside("backup"),
                self.outside.join("backup"),
            ),
        }
    }

    fn plant(&mut self, link: Link, env: &Env, model: &Model) {
        self.plant_decoy_receipts(model);
        if link == Link::StateDir {
            std::fs::create_dir_all(self.node.state().parent().unwrap()).unwrap();
        } else {
            self.ensure_state_dir();
        }
        if link == Link::Receipt && !self.completed().exists() {
            std::fs::create_dir_all(self.completed()).unwrap();
            chmod(&self.completed(), 0o700);
        }
        let (path, aside, target) = self.link_paths(link, env);
        if std::fs::symlink_metadata(&path).is_ok() {
            std::fs::rename(&path, &aside).unwrap();
        }
        std::os::unix::fs::symlink(&target, &path).unwrap();
        if link == Link::StagingDir {
            self.staging_now = aside;
        }
    }

    fn unplant(&mut self, link: Link, env: &Env) {
        let (path, aside, _) = self.link_paths(link, env);
        let md = std::fs::symlink_metadata(&path).unwrap();
        assert!(
            md.file_type().is_symlink(),
            "{} is no longer the planted symlink",
            path.display()
        );
        std::fs::remove_file(&path).unwrap();
        if std::fs::symlink_metadata(&aside).is_ok() {
            std::fs::rename(&aside, &path).unwrap();
        }
        self.staging_now = self.staging_dir();
    }

    fn corrupt_phase(&mut self, kind: Corruption) {
        self.ensure_state_dir();
        let p = self.node.state().join("phase");
        let current = std::fs::read(&p).ok();
        if self.saved_phase.is_none() {
            self.saved_phase = Some(current.clone());
        }
        let valid = self.saved_phase.clone().flatten().unwrap_or_else(|| {
            self.node
                .v2_phase("op-torn", "restart_pending", Some("etcd"))
                .into_bytes()
        });
        let bytes = match kind {
            Corruption::Garbage => b"\x00\xffnot a phase file\x7f\n".to_vec(),
            Corruption::Empty => Vec::new(),
            Corruption::Truncated => valid[..valid.len() / 2].to_vec(),
            Corruption::BadPair if valid.starts_with(b"STATE=") => {
                // Legacy five-line: `done` with a component.
                let text = String::from_utf8(valid).unwrap();
                let mut lines: Vec<&str> = text.lines().collect();
                lines[0] = "STATE=done";
                lines[1] = "COMPONENT=kube-apiserver";
                (lines.join("\n") + "\n").into_bytes()
            }
            Corruption::BadPair => {
                let mut v: Value = serde_json::from_slice(&valid).unwrap();
                v["state"] = json!("done");
                v["nextComponent"] = json!("kube-apiserver");
                (serde_json::to_string_pretty(&v).unwrap() + "\n").into_bytes()
            }
        };
        std::fs::write(&p, &bytes).unwrap();
        chmod(&p, 0o600);
        self.corrupt_bytes = bytes;
    }

    fn repair_phase(&mut self) {
        let p = self.node.state().join("phase");
        match self.saved_phase.take() {
            None => {}
            Some(None) => std::fs::remove_file(&p).unwrap(),
            Some(Some(b)) => {
                std::fs::write(&p, b).unwrap();
                chmod(&p, 0o600);
            }
        }
    }

    fn args(&self, cmd: &Cmd, env: &Env) -> Vec<OsString> {
        let mut extra: Vec<String> = Vec::new();
        match cmd {
            Cmd::Renew {
                id,
                force,
                expect_ca,
                ..
            } => {
                extra.extend(["--operation-id".into(), id.clone()]);
                if *force {
                    extra.push("--force".into());
                }
                if *expect_ca {
                    for f in ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"] {
                        extra.push("--expect-ca-sha256".into());
                        extra.push(format!("{f}={}", sha256_hex(&self.base.protected[f].0)));
                    }
                }
                // A gate that must time out does so in 1 s; two voters are
                // refused at once, but only once the gate sees etcd running
                // (it may be restarting), so that keeps the default timeout.
                if let Some((v, u, l)) = env.etcd {
                    if etcd_gate(v, u, l) == Err("health") {
                        extra.extend(["--health-timeout".into(), "1".into()]);
                    }
                }
                // crictl runs under the same timeout: not too short on a
                // busy machine.
                if env.kubeadm_hangs {
                    extra.extend(["--command-timeout".into(), "4".into()]);
                }
            }
            Cmd::Fence { id, .. } => {
                extra.extend(["--status-only".into(), "--operation-id".into(), id.clone()]);
                extra.push("--fence".into());
            }
            Cmd::View { id } => {
                extra.push("--status-only".into());
                if let Some(id) = id {
                    extra.extend(["--operation-id".into(), id.clone()]);
                }
            }
        }
        let refs: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut args = self.node.runbook_args(&refs);
        for (flag, missing) in [
            ("--crictl", env.crictl_missing),
            ("--kubeadm", env.kubeadm_missing),
        ] {
            if missing {
                let i = args.iter().position(|a| a == flag).unwrap();
                args[i + 1] = self.node.sim.join("bin/tool-not-there").into();
            }
        }
        args
    }

    fn exec(&self, cmd: &Cmd, env: &Env) -> RunResult {
        count(|c| c.runs += 1);
        let fp = match cmd {
            Cmd::Renew { failpoint, .. } | Cmd::Fence { failpoint, .. } => *failpoint,
            Cmd::View { .. } => None,
        };
        let mut c = std::process::Command::new(RUNBOOK);
        c.args(self.args(cmd, env))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(fp) = fp {
            c.env("FAILPOINTS", format!("{fp}=return"));
        }
        let watcher = Watcher::start(&self.node.root, self.staging_now.clone());
        let mut child = c.spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let t_out = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = out.read_to_end(&mut b);
            b
        });
        let t_err = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = err.read_to_end(&mut b);
            b
        });
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > RUN_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{cmd:?} hung for {RUN_DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let (max_out, zero_copies) = watcher.finish();
        let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).to_string();
        let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).to_string();
        let json = if status.signal().is_none() {
            assert_eq!(
                stdout.lines().count(),
                1,
                "{cmd:?}: exactly one JSON line expected on stdout:\n{stdout}\n{stderr}"
            );
            serde_json::from_str(&stdout)
                .unwrap_or_else(|e| panic!("{cmd:?}: {e}: {stdout}\n{stderr}"))
        } else {
            Value::Null
        };
        RunResult {
            code: status.code(),
            signal: status.signal(),
            json,
            stdout,
            stderr,
            max_out,
            zero_copies,
        }
    }

    /// Every manifest as the runbook would see it: active (only in
    /// manifests/, a regular file).
    /// SPEC 7 (v1.1): every manifest is in `manifests/` (a staged copy
    /// beside it is a conflict, not a pod down).
    fn fs_all_active(&self) -> bool {
        COMPONENTS
            .iter()
            .all(|c| std::fs::symlink_metadata(self.node.manifest(c)).is_ok_and(|m| m.is_file()))
    }

    fn receipt_file(&self, id: &str) -> PathBuf {
        self.completed().join(format!("{id}.json"))
    }

    /// Compare one run with what the model expects, and the generic rules.
    fn verify(&mut self, p: &Planned, r: &RunResult, receipt_before: bool) {
        let ctx = || {
            format!(
                "\nrun: {:?}\nexpected: {:?}\ngot: exit {:?} signal {:?}\nstdout: {}\nstderr (tail): {}\ntranscript:\n  {}",
                p.cmd,
                p.expect,
                r.code,
                r.signal,
                r.stdout.trim_end(),
                tail(&r.stderr, 3000),
                self.transcript.join("\n  ")
            )
        };
        // Oracle 3, during the run.
        assert!(
            r.max_out <= 1,
            "{} manifests were out of manifests/ at once{}",
            r.max_out,
            ctx()
        );
        if let Some(z) = &r.zero_copies {
            panic!("a manifest had zero copies during the run: {z}{}", ctx());
        }
        let e = &p.expect;
        match e.code {
            None => assert_eq!(
                r.signal,
                Some(9),
                "the run should have been killed at its failpoint{}",
                ctx()
            ),
            // The model knows the files, not the live node (SPEC 10): a
            // view taken while the simulated kubelet is still restarting a
            // pod the run left (or put back) says ACTION NEEDED (4) where
            // the files alone say not clean (1). That, and only that, is
            // let through: all four manifests active, and the document's
            // own live judgement names what an operator must act on.
            Some(1) if r.code == Some(4) && live_action_needed(&r.json) => {}
            Some(code) => assert_eq!(r.code, Some(code), "exit code{}", ctx()),
        }
        if e.code.is_none() {
            return;
        }
        let j = &r.json;
        for (field, want) in [
            ("outcome", e.outcome),
            ("phase", e.phase),
            ("termination", e.termination),
        ] {
            if let Some(want) = want {
                assert_eq!(j[field].as_str(), Some(want), "{field}{}", ctx());
            }
        }
        if let Some(want) = e.replayed {
            assert_eq!(j["replayed"].as_bool(), Some(want), "replayed{}", ctx());
        }
        if let Some(want) = e.clean {
            assert_eq!(j["clean"].as_bool(), Some(want), "clean{}", ctx());
        }
        if let Some(want) = e.fencing {
            assert_eq!(
                j["fencing"]["termination"].as_str(),
                Some(want),
                "the view's fencing forecast{}",
                ctx()
            );
        }
        // Oracle 2: a renewal that ends with a manifest not active says so.
        if let Cmd::Renew { id, .. } = &p.cmd {
            if j["replayed"].as_bool() != Some(true) {
                let all_active = self.fs_all_active();
                if !all_active {
                    assert_eq!(
                        r.code,
                        Some(4),
                        "a renewal left a manifest not active without exit 4{}",
                        ctx()
                    );
                }
                let path = self.receipt_file(id);
                let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
                if !receipt_before && is_file {
                    let rc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap())
                        .unwrap_or_else(|e| panic!("receipt of {id}: {e}{}", ctx()));
                    // `both` is active too (SPEC 7, v1.1).
                    let recorded_active = COMPONENTS.iter().all(|c| {
                        matches!(rc["manifests"][c].as_str(), Some("active") | Some("both"))
                    });
                    assert_eq!(
                        recorded_active,
                        all_active,
                        "the receipt does not record where the manifests are{}",
                        ctx()
                    );
                    assert_eq!(rc["outcome"], j["outcome"], "receipt vs output{}", ctx());
                    if !all_active {
                        assert_ne!(rc["outcome"], "renewed", "{}", ctx());
                        assert_ne!(rc["outcome"], "unchanged", "{}", ctx());
                    }
                }
            }
        }
    }

    /// Record receipts not seen before (oracle 4 compares them later).
    fn note_receipts(&mut self) {
        let Ok(rd) = std::fs::read_dir(self.completed()) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            if self.receipts.contains_key(id) {
                continue;
            }
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            if !md.is_file() {
                continue; // the oracle reports it
            }
            self.receipts.insert(
                id.to_string(),
                (
                    std::fs::read(e.path()).unwrap(),
                    md.ino(),
                    (md.mtime(), md.mtime_nsec()),
                ),
            );
        }
    }

    /// The transcript (printed with `NVKE_MODEL_VERBOSE=1`).
    fn log(&mut self, line: String) {
        if std::env::var_os("NVKE_MODEL_VERBOSE").is_some() {
            say(&line);
        }
        self.transcript.push(line);
    }

    fn set_knobs(&mut self, v: Value) {
        self.node.set_knobs(v);
    }

    /// Set up the transition's environment, run its plan, undo.
    fn run_transition(&mut self, t: &Transition, model: &Model) {
        let env = model.env.clone();
        let fp_ca = self.node.root.join("etc/kubernetes/pki/front-proxy-ca.crt");
        let mut differs_path = None;
        match t {
            Transition::CorruptPhaseFile(kind) => self.corrupt_phase(*kind),
            Transition::RepairPhaseFile => self.repair_phase(),
            Transition::PlantSymlink(link) => self.plant(*link, &env, model),
            Transition::ChangeCA { on_disk: true } => {
                let mut b = self.base.protected["front-proxy-ca.crt"].0.clone();
                b.extend_from_slice(b"\n");
                nvke_cert_runbook::rules::pki::parse_pem_certificate(&b)
                    .expect("the changed CA still parses");
                std::fs::write(&fp_ca, b).unwrap();
            }
            Transition::ChangeCA { on_disk: false } => {
                self.set_knobs(json!({ "kubeadm": { "changeCA": true } }))
            }
            Transition::ToolHangs => self.set_knobs(json!({ "kubeadm": { "hangSecs": 30 } })),
            Transition::EtcdHealth(v, u, l) => {
                self.set_knobs(json!({ "etcd": { "voters": v, "unhealthy": u, "learners": l } }))
            }
            Transition::StagedDiffers(_) => {
                let c = COMPONENTS[env.staged_differs.unwrap()];
                let dir = self.staging_dir();
                if !dir.exists() {
                    std::fs::create_dir_all(&dir).unwrap();
                    chmod(&dir, 0o700);
                }
                let mut b = self.base.manifests[c].0.clone();
                b.extend_from_slice(b"# an operator's edited copy\n");
                let p = self.node.staged(c);
                std::fs::write(&p, b).unwrap();
                chmod(&p, 0o600);
                differs_path = Some(p);
            }
            _ => {}
        }
        for p in &model.plan {
            let id = match &p.cmd {
                Cmd::Renew { id, .. } => Some(id.clone()),
                _ => None,
            };
            let receipt_before = id
                .as_ref()
                .is_some_and(|id| std::fs::symlink_metadata(self.receipt_file(id)).is_ok());
            let r = self.exec(&p.cmd, &env);
            self.log(format!(
                "    {:?} -> exit {:?} signal {:?} outcome {} phase {} termination {}",
                p.cmd, r.code, r.signal, r.json["outcome"], r.json["phase"], r.json["termination"]
            ));
            self.verify(p, &r, receipt_before);
        }
        match t {
            Transition::PlantSymlink(link) => self.unplant(*link, &env),
            Transition::ChangeCA { on_disk: true } => {
                std::fs::write(&fp_ca, &self.base.protected["front-proxy-ca.crt"].0).unwrap()
            }
            Transition::ChangeCA { on_disk: false } => {
                self.set_knobs(json!({ "kubeadm": { "changeCA": false } }))
            }
            Transition::ToolHangs => self.set_knobs(json!({ "kubeadm": { "hangSecs": 0 } })),
            Transition::EtcdHealth(..) => {
                self.set_knobs(json!({ "etcd": { "voters": 1, "unhealthy": 0, "learners": 0 } }))
            }
            Transition::StagedDiffers(_) => {
                // The operator keeps the original copy.
                std::fs::remove_file(differs_path.unwrap()).unwrap();
            }
            _ => {}
        }
        self.note_receipts();
    }

    /// The oracle, after every transition (see the header).
    fn oracle(&self, model: &Model) {
        let ctx = || {
            format!(
                "\nmodel: staged {:?}, phase {:?}, corrupt {:?}, receipts {:?}\ntranscript:\n  {}",
                model.staged,
                model.phase,
                model.corrupt,
                model.receipts,
                self.transcript.join("\n  ")
            )
        };
        // 1. each manifest in exactly one place, original bytes and mode,
        // where the model says; kube-vip's never moves.
        let (staged, errs) = manifests_in_place(&self.node, &self.base);
        assert!(errs.is_empty(), "{}{}", errs.join("; "), ctx());
        let want: Vec<&str> = model.staged.map(|i| COMPONENTS[i]).into_iter().collect();
        assert_eq!(
            staged,
            want,
            "staged {staged:?}, the model says {:?}{}",
            model.staged,
            ctx()
        );
        let vip = self.node.manifest("kube-vip");
        assert_eq!(
            std::fs::read(&vip).ok().as_ref(),
            Some(&self.vip),
            "kube-vip's manifest moved or changed{}",
            ctx()
        );
        if let Ok(rd) = std::fs::read_dir(self.staging_dir()) {
            let names: Vec<String> = rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect();
            let allowed: Vec<String> = model
                .staged
                .map(|i| format!("{}.yaml", COMPONENTS[i]))
                .into_iter()
                .collect();
            assert_eq!(names, allowed, "the staging dir{}", ctx());
        }
        // 4. receipts: exactly the model's, never changed.
        let mut on_disk = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(self.completed()) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.starts_with('.') {
                    continue;
                }
                let id = name
                    .strip_suffix(".json")
                    .unwrap_or_else(|| panic!("unexpected {name} in completed/{}", ctx()))
                    .to_string();
                let md = std::fs::symlink_metadata(e.path()).unwrap();
                assert!(md.is_file(), "receipt {name} is not a file{}", ctx());
                assert_eq!(md.mode() & 0o077, 0, "receipt {name} mode{}", ctx());
                on_disk.insert(id, (std::fs::read(e.path()).unwrap(), md));
            }
        }
        let want: BTreeSet<&String> = model.receipts.keys().collect();
        let got: BTreeSet<&String> = on_disk.keys().collect();
        assert_eq!(got, want, "the set of receipts{}", ctx());
        for (id, (bytes, md)) in &on_disk {
            let v: Value = serde_json::from_slice(bytes)
                .unwrap_or_else(|e| panic!("receipt {id}: {e}{}", ctx()));
            assert_eq!(v["format"], "nvke-cert-runbook/receipt/v1", "{}", ctx());
            assert_eq!(v["operationID"].as_str(), Some(id.as_str()), "{}", ctx());
            let r = model.receipts[id];
            assert_eq!(
                v["outcome"].as_str(),
                Some(r.out.as_str()),
                "receipt {id} outcome{}",
                ctx()
            );
            // `both` is active too (SPEC 7, v1.1).
            let recorded_active = COMPONENTS
                .iter()
                .all(|c| matches!(v["manifests"][c].as_str(), Some("active") | Some("both")));
            assert_eq!(
                recorded_active,
                r.all_active,
                "receipt {id} manifests{}",
                ctx()
            );
            let (b0, ino0, mt0) = self
                .receipts
                .get(id)
                .unwrap_or_else(|| panic!("receipt {id} not noted{}", ctx()));
            assert_eq!(bytes, b0, "receipt {id} changed{}", ctx());
            assert_eq!(md.ino(), *ino0, "receipt {id} rewritten{}", ctx());
            assert_eq!(
                (md.mtime(), md.mtime_nsec()),
                *mt0,
                "receipt {id} touched{}",
                ctx()
            );
        }
        // 5. the phase file.
        let pf = self.node.state().join("phase");
        match (&model.corrupt, &model.phase) {
            (Some(_), _) => assert_eq!(
                std::fs::read(&pf).ok().as_ref(),
                Some(&self.corrupt_bytes),
                "the corrupt phase file was changed{}",
                ctx()
            ),
            (None, Ph::Absent) => assert!(
                std::fs::symlink_metadata(&pf).is_err(),
                "a phase file appeared: {}{}",
                std::fs::read_to_string(&pf).unwrap_or_default(),
                ctx()
            ),
            (None, Ph::Legacy { st }) => {
                let md = std::fs::symlink_metadata(&pf)
                    .unwrap_or_else(|_| panic!("no phase file{}", ctx()));
                assert!(md.is_file(), "{}", ctx());
                let bytes = std::fs::read(&pf).unwrap();
                nvke_cert_runbook::rules::phase::parse_phase_file(&bytes)
                    .unwrap_or_else(|e| panic!("the phase file is invalid: {e}{}", ctx()));
                let text = String::from_utf8(bytes).unwrap();
                let (state, next) = st.names();
                let lines: Vec<&str> = text.lines().collect();
                assert_eq!(
                    (lines[0], lines[1], lines[2]),
                    (
                        format!("STATE={state}").as_str(),
                        format!("COMPONENT={}", next.unwrap_or("none")).as_str(),
                        "STARTED=1764460800"
                    ),
                    "the legacy phase file (kept in its format, started time kept){}",
                    ctx()
                );
            }
            (None, Ph::V2 { id, st }) => {
                let md = std::fs::symlink_metadata(&pf)
                    .unwrap_or_else(|_| panic!("no phase file{}", ctx()));
                assert!(md.is_file(), "{}", ctx());
                assert_eq!(md.mode() & 0o077, 0, "phase file mode{}", ctx());
                let bytes = std::fs::read(&pf).unwrap();
                nvke_cert_runbook::rules::phase::parse_phase_file(&bytes)
                    .unwrap_or_else(|e| panic!("the phase file is invalid: {e}{}", ctx()));
                let v: Value = serde_json::from_slice(&bytes).unwrap();
                let (state, next) = st.names();
                assert_eq!(
                    (
                        v["format"].as_str(),
                        v["operationID"].as_str(),
                        v["state"].as_str(),
                        v["nextComponent"].as_str()
                    ),
                    (
                        Some("nvke-cert-runbook/phase/v2"),
                        Some(id.as_str()),
                        Some(state),
                        next
                    ),
                    "the phase file{}",
                    ctx()
                );
            }
        }
        // 6. nothing outside the root; CAs and keys kept.
        let changed = diff(&self.outside_snap, &snapshot(&self.outside, true));
        if !changed.is_empty() {
            panic!("something outside --root changed: {changed:?}{}", ctx());
        }
        let pki = self.node.root.join(PKI);
        for (f, (bytes, mode)) in &self.base.protected {
            let p = pki.join(f);
            assert_eq!(&std::fs::read(&p).unwrap(), bytes, "{f} changed{}", ctx());
            assert_eq!(mode_of(&p), *mode, "{f} mode changed{}", ctx());
        }
    }
}

struct ModelTest;

impl StateMachineTest for ModelTest {
    type SystemUnderTest = Sut;
    type Reference = RefModel;

    fn init_test(model: &Model) -> Sut {
        count(|c| c.cases += 1);
        let mut sut = Sut::new(model);
        sut.log(format!("case: initial phase {:?}", model.phase));
        sut
    }

    fn apply(mut sut: Sut, model: &Model, t: Transition) -> Sut {
        count(|c| c.transitions += 1);
        sut.log(format!("  {t:?}"));
        sut.run_transition(&t, model);
        sut
    }

    fn check_invariants(sut: &Sut, model: &Model) {
        sut.oracle(model);
    }

    /// The controller's and the operator's recovery, then oracle 2's end
    /// state: all four active with their bytes, staging empty, the node
    /// clean, every container running.
    fn teardown(mut sut: Sut, model: Model) {
        let mut model = model;
        for t in [
            Transition::RepairPhaseFile,
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Last),
            },
            Transition::Resume(IdPick::Fresh),
        ] {
            count(|c| c.recovery += 1);
            model = RefModel::apply(model, &t);
            sut = <ModelTest as StateMachineTest>::apply(sut, &model, t);
            sut.oracle(&model);
        }
        let recovered = &model.plan[0].expect;
        assert_eq!(
            recovered.code,
            Some(0),
            "the model says recovery fails: {model:?}"
        );
        assert_eq!(model.staged, None);
        assert!(!model.intent_unclean(&Env::default()), "{model:?}");
        let t = Transition::StatusOnly {
            fence: false,
            id: None,
        };
        count(|c| c.recovery += 1);
        model = RefModel::apply(model, &t);
        assert_eq!(model.plan[0].expect.clean, Some(true));
        sut = <ModelTest as StateMachineTest>::apply(sut, &model, t);
        sut.oracle(&model);
        sut.node.wait_all_running();
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn model_based() {
    let cases = env_usize("PROPTEST_CASES", 12) as u32;
    let max = env_usize("NVKE_MODEL_TRANSITIONS", 8).max(1);
    let config = Config {
        cases,
        max_shrink_iters: env_usize("PROPTEST_MAX_SHRINK_ITERS", 64) as u32,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        source_file: Some(file!()),
        test_name: Some("model_based"),
        ..Config::default()
    };
    let started = Instant::now();
    let mut runner = TestRunner::new(config.clone());
    let result = runner.run(
        &RefModel::sequential_strategy(max.min(3)..=max),
        |(initial, transitions, seen)| {
            ModelTest::test_sequential(config.clone(), initial, transitions, seen);
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    let c = COUNTS.with(|c| c.get());
    say(&format!(
        "model: {} cases, {} transitions (+{} recovery), {} runs of the binary, all invariants held ({:.0} s)",
        c.cases,
        c.transitions - c.recovery,
        c.recovery,
        c.runs,
        started.elapsed().as_secs_f64()
    ));
}

// ---------------------------------------------------------------------------
// Deterministic replays of interesting sequences
// ---------------------------------------------------------------------------

fn fp(name: &str) -> usize {
    FAILPOINTS.iter().position(|p| *p == name).unwrap()
}

fn replay(initial: Ph, transitions: Vec<Transition>) {
    ModelTest::test_sequential(Config::default(), Model::new(initial), transitions, None);
}

/// Killed with etcd's manifest staged; the controller's fencing check puts
/// it back and abandons the operation; a delayed attempt is fenced (exit 5);
/// the next operation resumes at etcd.
#[test]
fn crash_after_stage_then_fence_then_resume() {
    replay(
        Ph::Absent,
        vec![
            Transition::Crash(fp("restart-after-stage")),
            Transition::StatusOnly {
                fence: false,
                id: Some(IdPick::Last),
            },
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Last),
            },
            Transition::Resume(IdPick::Last),
            Transition::Resume(IdPick::Fresh),
        ],
    );
}

/// A staged manifest left by a kill, then a corrupt phase file: runs refuse
/// with exit 4 and touch nothing but their receipts, the fencing check is
/// unconfirmed, until the operator repairs the file.
#[test]
fn corrupt_phase_file_refuses_until_repaired() {
    replay(
        Ph::V2 {
            id: "op-seed".into(),
            st: St::Restart(Some(3)),
        },
        vec![
            Transition::Crash(fp("restart-in-wait-stop")),
            Transition::CorruptPhaseFile(Corruption::Truncated),
            // op-m1, the killed operation: no receipt, so unconfirmed.
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Old(0)),
            },
            Transition::Step,
            Transition::CorruptPhaseFile(Corruption::BadPair),
            Transition::RepairPhaseFile,
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Old(0)),
            },
            Transition::Resume(IdPick::Old(0)),
            Transition::Resume(IdPick::Fresh),
        ],
    );
}

/// Killed between the receipt and `done`: the next operation treats the
/// work as done; symlinks planted over a receipt, the staging dir and the
/// state dir are refused; a changed CA and two etcd voters are refused.
#[test]
fn receipt_before_done_then_hostile_changes() {
    replay(
        Ph::V2 {
            id: "op-seed".into(),
            st: St::Restart(None),
        },
        vec![
            Transition::Crash(fp("renew-after-receipt-before-done")),
            Transition::Resume(IdPick::Fresh),
            Transition::PlantSymlink(Link::Receipt),
            Transition::PlantSymlink(Link::StagingDir),
            Transition::PlantSymlink(Link::StateDir),
            Transition::ChangeCA { on_disk: true },
            Transition::EtcdHealth(2, 0, 0),
        ],
    );
}

/// Interrupted renewing work meets a missing crictl, a hanging kubeadm, a
/// kubeadm that changes a CA, a differing staged copy, a learner and a lost
/// quorum; then a kill inside the fencing check.
#[test]
fn renewing_work_under_tool_faults() {
    replay(
        Ph::V2 {
            id: "op-seed".into(),
            st: St::Renewing,
        },
        vec![
            Transition::PlantSymlink(Link::BackupDir),
            Transition::ToolMissing { crictl: true },
            Transition::ToolMissing { crictl: false },
            Transition::ToolHangs,
            Transition::ChangeCA { on_disk: false },
            Transition::Crash(fp("restart-after-stop")),
            Transition::StagedDiffers(0),
            Transition::EtcdHealth(3, 0, 1),
            Transition::EtcdHealth(3, 1, 0),
            Transition::Crash(fp("restart-after-stage")),
            Transition::Crash(fp(FENCE_POINT)),
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Last),
            },
        ],
    );
}

/// A manifest left staged by a kill while the state dir, the lock, the
/// receipts dir, a receipt, the phase file or the staging dir is a symlink:
/// every run is refused, nothing outside the root is touched, and a renewal
/// that ends with the manifest still staged exits 4 (SPEC section 7).
#[test]
fn staged_manifest_under_planted_symlinks() {
    replay(
        Ph::Absent,
        vec![
            Transition::Crash(fp("restart-after-stage")),
            Transition::PlantSymlink(Link::StagingDir),
            Transition::PlantSymlink(Link::StateDir),
            Transition::PlantSymlink(Link::LockFile),
            Transition::PlantSymlink(Link::CompletedDir),
            Transition::PlantSymlink(Link::PhaseFile),
            Transition::PlantSymlink(Link::Receipt),
            Transition::Resume(IdPick::Old(0)),
        ],
    );
}

/// Unfinished legacy five-line work: the fencing check never abandons it
/// (unconfirmed, even with a manifest staged by a killed V2 run that was
/// resuming it); the next renewal resumes it in the legacy format until
/// `done`; the renewal after that writes V2.
#[test]
fn legacy_work_is_resumed_in_its_format_and_never_abandoned() {
    replay(
        Ph::Legacy {
            st: St::Restart(Some(1)),
        },
        vec![
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Fresh),
            },
            Transition::Crash(fp("restart-after-stage")),
            Transition::StatusOnly {
                fence: true,
                id: Some(IdPick::Last),
            },
            Transition::CorruptPhaseFile(Corruption::BadPair),
            Transition::RepairPhaseFile,
            Transition::Resume(IdPick::Old(0)),
            Transition::ChangeCA { on_disk: true },
            Transition::Step,
        ],
    );
}
