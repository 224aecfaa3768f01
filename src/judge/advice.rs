//! What the operator should know and do next (issue "The 3 a.m. view"):
//! from one read of the node, the severity, the warnings that do not make
//! it unclean, and exact next steps (copy-pasteable commands) for every
//! unclean state the runbook can name. Pure: it judges a snapshot.

use crate::contract::{NextStep, Severity, StagingConflict};
use crate::node::inspect::{PhaseReport, ReceiptLookup, RunbookIntent};
use crate::node::lock::OwnerInfo;
use crate::node::manifests::ManifestsReport;
use crate::node::paths::{
    self, AGENT_STAGING_DIR, LOG_DIR, MANIFESTS_DIR, PHASE_FILE, STAGING_DIR,
};
use crate::node::snapshot::NodeSnapshot;
use crate::rules::agent::AgentIntent;
use crate::rules::component::Component;
use crate::rules::expiry::{self, Expiry};
use crate::rules::phase::PhaseFile;
use time::OffsetDateTime;

/// How commands name the runbook and the node: the program as invoked, and
/// `--root` when it is not `/` (paths in file commands are then under it).
#[derive(Debug, Clone)]
pub struct Commands {
    pub program: String,
    /// The root as given, None for `/`.
    pub root: Option<String>,
    /// The lock file's host path (file moves take it).
    pub lock: String,
    /// Whether the lock file exists (else a move creates it, as the
    /// runbook would: mode 0600 in a 0700 state directory).
    pub lock_exists: bool,
}

impl Commands {
    /// The runbook with `args` (and `--root` first when not `/`).
    pub fn runbook(&self, args: &[&str]) -> String {
        let mut w = vec![self.program.clone()];
        if let Some(r) = &self.root {
            w.push("--root".into());
            w.push(r.clone());
        }
        w.extend(args.iter().map(|a| a.to_string()));
        words(&w)
    }
    /// A node path as a file command on this host must name it.
    pub fn host(&self, rel: &str) -> String {
        match &self.root {
            None => paths::node(rel),
            Some(r) => format!("{}/{}", r.trim_end_matches('/'), rel),
        }
    }
    /// A file command run in `/etc/kubernetes` (`cd DIR && tool args...`);
    /// a move or removal only while no process holds the renewal lock
    /// (`flock -n` on the lock file, when there is one): a renewal that
    /// started after this view was printed is never disturbed.
    pub fn in_kubernetes(&self, tool: &str, args: &[String]) -> String {
        let mut w = Vec::new();
        let guarded = matches!(tool, "mv" | "rm");
        if guarded {
            w.extend(["flock".to_string(), "-n".to_string(), self.lock.clone()]);
        }
        w.push(tool.to_string());
        w.extend(args.iter().cloned());
        let cd = self.file("cd", &[self.host(KUBE_DIR)]);
        if guarded && !self.lock_exists {
            // No lock file yet: made as the runbook makes it, in a
            // subshell (the operator's umask is left alone).
            let state = self.host(paths::STATE_DIR);
            return format!(
                "{cd} && (umask 077 && {} && {})",
                self.file("mkdir", &["-p".into(), state]),
                words(&w)
            );
        }
        format!("{cd} && {}", words(&w))
    }
    /// A file command: `tool args...`, every word quoted for the shell.
    pub fn file(&self, tool: &str, args: &[String]) -> String {
        let mut w = vec![tool.to_string()];
        w.extend(args.iter().cloned());
        words(&w)
    }
}

fn words(w: &[String]) -> String {
    w.iter()
        .map(|s| crate::contract::screen::shell_word(s))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The judgement of a snapshot.
#[derive(Debug, Clone)]
pub struct Advice {
    pub severity: Severity,
    /// The four that are not in `manifests/` (their pods are down).
    pub not_active: Vec<Component>,
    /// A runbook at work: "pid P, operation X, step S, running for T".
    pub in_progress: Option<String>,
    /// The leaf the headline names (v1.2): expired (ACTION NEEDED) or due
    /// (RENEWAL DUE), in the headline's words.
    pub expiry: Option<(Expiry, String)>,
    /// The kubelet's expired client certificate, in the headline's words.
    pub kubelet_expired: Vec<String>,
    /// A leaf or the kubelet's client certificate has expired: exit 4
    /// whatever else the view says (SPEC 6).
    pub expired: bool,
    /// What the live node shows that an operator must act on (v1.2, SPEC
    /// 10): a component not running, unhealthy, serving an expired
    /// certificate; in the headline's words.
    pub live: Vec<String>,
    pub warnings: Vec<String>,
    pub next: Vec<NextStep>,
}

impl Advice {
    /// Take the live judgement in: its findings an operator must act on
    /// make the view ACTION NEEDED (unless a renewal is at work: it shows
    /// its progress), and other static pods that keep an old credential
    /// are warnings.
    pub fn with_live(
        &mut self,
        j: &crate::rules::live::Judged,
        wall: OffsetDateTime,
        restarting: Option<Component>,
    ) {
        self.warnings.extend(j.other_pods(wall));
        // A renewal at work restarts one component: that one's findings
        // are its progress (SPEC 6), the others' still count.
        let busy = self.severity == Severity::InProgress;
        let skip = if busy { restarting } else { None };
        self.live = j
            .action_needed(wall)
            .into_iter()
            .filter(|(c, _)| skip.is_none_or(|r| r.name() != c))
            .map(|(_, w)| w)
            .collect();
        if !self.live.is_empty() {
            self.severity = Severity::ActionNeeded;
        } else if self.severity == Severity::Clean && j.weight().is_some() {
            self.severity = Severity::NotClean;
        }
    }
}

/// The phase file records a recovery's work (SPEC 11).
fn recovery_work(s: &NodeSnapshot) -> bool {
    matches!(&s.phase.file, Some(crate::rules::phase::PhaseFile::V2(p)) if p.recovery)
}

/// What the other control-plane nodes still need after this node's
/// recovery (SPEC 11), when its newest receipt is a recovery that ended
/// without a healthy cluster (etcd without quorum: the other members still
/// hold expired certificates).
fn after_recovery(s: &NodeSnapshot) -> Option<String> {
    let r = s.receipts.as_ref()?.recent.first()?;
    let health = r.health_at_end.as_ref()?;
    (r.recovery
        && r.outcome == Some(crate::rules::outcome::Outcome::Renewed)
        && health.0.starts_with("not healthy yet"))
    .then(|| {
        format!(
            "this node was recovered by {} but the cluster was not healthy at its end (etcd needs a majority of its members with renewed certificates): run the same recovery (--recover-expired, with a new operation ID and the node's saved ClusterConfiguration as --kubeadm-config) on every other control-plane node whose certificates expired, one at a time, then check each:",
            r.operation_id
        )
    })
}

/// Whether a CA's notAfter has passed (SPEC 11: a recovery refuses then).
fn ca_expired(s: &NodeSnapshot, now: time::OffsetDateTime) -> bool {
    s.pki
        .cas
        .iter()
        .filter_map(|c| c.cert.as_ref())
        .any(|c| expiry::is_expired(now, c.not_after))
}

fn step(what: impl Into<String>, command: Option<String>) -> NextStep {
    NextStep {
        what: what.into(),
        command,
    }
}

/// The runbook holding the lock: the process `/proc/locks` names, when
/// the owner record names it on this boot.
fn live_holder(s: &NodeSnapshot) -> Option<&crate::node::lock::Owner> {
    match (&s.lock.held, &s.lock.owner) {
        (Some(h), OwnerInfo::Known(o)) if h.owner_matches => Some(o),
        _ => None,
    }
}

/// The pid `/proc/locks` names as the holder, if it named one.
fn holder_pid(s: &NodeSnapshot) -> Option<u32> {
    match &s.lock.held {
        Some(crate::node::lock::HeldBy {
            holder: crate::node::lock::Holder::Process { pid, .. },
            ..
        }) => Some(*pid),
        _ => None,
    }
}

fn elapsed(since: &str, now: OffsetDateTime) -> Option<String> {
    let t = crate::rules::clock::parse_rfc3339(since, false).ok()?;
    let secs = (now - t).whole_seconds();
    if secs < 0 {
        return None;
    }
    Some(match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    })
}

/// What the phase file says the renewal was doing, in plain words.
fn phase_step(p: &PhaseReport) -> String {
    match &p.file {
        Some(f) => f.plain_step(),
        None => "starting".to_string(),
    }
}

/// A new operation ID for a renewal by hand (`manual-STAMP`, or
/// `recover-STAMP`): never one the controller uses, never one fenced.
fn new_id(prefix: &str, now: OffsetDateTime) -> String {
    crate::rules::opid::OperationId::fresh(prefix, now)
        .as_str()
        .to_string()
}

/// The put-back command of a staged manifest: never replacing an active
/// copy (`mv -n`), so it cannot lose one.
fn put_back(cmd: &Commands, dir: &str, c: Component) -> String {
    cmd.in_kubernetes(
        "mv",
        &[
            "-n".into(),
            kube_rel(dir, c.manifest_file()),
            kube_rel(MANIFESTS_DIR, ""),
        ],
    )
}

/// A path under `/etc/kubernetes`, relative to it (file commands run there:
/// short words that fit a terminal line).
fn kube_rel(dir: &str, c: impl std::fmt::Display) -> String {
    let d = dir.trim_start_matches(KUBE_DIR).trim_start_matches('/');
    format!("{d}/{c}")
}

const KUBE_DIR: &str = "etc/kubernetes";
/// Where file steps set a copy aside (never deleted: the operator decides).
const SET_ASIDE: &str = "root/nvke-set-aside";

/// Judge a snapshot: severity, warnings, next steps (`reasons`: the
/// problems of the view or the check; only whether there are any counts).
pub fn advise<R>(
    s: &NodeSnapshot,
    reasons: &[R],
    conflicts: &[StagingConflict],
    cmd: &Commands,
    now: OffsetDateTime,
    threshold: u32,
) -> Advice {
    let m: &ManifestsReport = &s.manifests;
    let not_active = not_active(m);
    let warnings = warnings(s, now, threshold);
    let mut next = Vec::new();
    let in_progress = in_progress(s, now);
    lock_step(s, cmd, in_progress.as_deref(), &mut next);
    let busy = s.lock.is_held();
    if !busy {
        repair_steps(s, conflicts, cmd, &not_active, now, &mut next);
    }
    if !reasons.is_empty() && !busy {
        evidence_step(cmd, now, &mut next);
    }
    let worst = expiry::worst(s.pki.leaf_times(), now, threshold);
    let expiry = worst.as_ref().map(|w| (w.expiry, w.words(now)));
    let clean = reasons.is_empty();
    if !busy {
        // (A held lock always has its step above: a due leaf adds none.)
        expiry_step(s, cmd, worst.as_ref(), clean, now, threshold, &mut next);
    }
    // While the node is not clean (once the cluster is healthy again, the
    // step would only be stale).
    if let Some(w) = after_recovery(s) {
        if !busy && !reasons.is_empty() {
            next.push(step(w, Some(cmd.runbook(&["--check"]))));
        }
    }
    let kubelet_expired = s.kubelet.expired_words(now);
    if !kubelet_expired.is_empty() && !busy {
        next.push(step(
            "the kubelet's client certificate has expired: the kubelet cannot rotate it any more and this node drops out of the cluster; renew it by hand as kubeadm's troubleshooting guide says (\"Kubelet client cert rotation fails\"), restart the kubelet, then look again:",
            Some(cmd.runbook(&["--status-only"])),
        ));
    }
    let expired = matches!(expiry, Some((Expiry::Expired, _))) || !kubelet_expired.is_empty();
    let severity = if in_progress.is_some() {
        Severity::InProgress
    } else if !not_active.is_empty() || expired {
        Severity::ActionNeeded
    } else if !reasons.is_empty() {
        Severity::NotClean
    } else {
        Severity::Clean
    };
    Advice {
        severity,
        not_active,
        in_progress,
        expiry,
        kubelet_expired,
        expired,
        live: Vec::new(),
        warnings,
        next,
    }
}

/// The lock's holder first: a renewal at work is left alone; a holder that
/// is not the runbook on record is found out before anything else.
fn lock_step(
    s: &NodeSnapshot,
    cmd: &Commands,
    in_progress: Option<&str>,
    next: &mut Vec<NextStep>,
) {
    if let Some(p) = in_progress {
        next.push(step(
            format!("a renewal is at work ({p}): do not move manifests; look again when it ends:"),
            Some(cmd.runbook(&["--status-only"])),
        ));
    } else if s.lock.is_held() {
        next.push(step(
            "the lock is held by a process that is not the runbook on record: find out what it is before anything else",
            Some(match holder_pid(s) {
                Some(pid) => cmd.file(
                    "ps",
                    &["-o".into(), "pid,etime,args".into(), "--pid".into(), pid.to_string()],
                ),
                None => cmd.file("lslocks", &["--output".into(), "PID,COMMAND,PATH".into()]),
            }),
        ));
    }
}

/// With the lock free: the state directory repaired first, else what
/// blocks every renewal (a conflict, a stray file in a staging directory),
/// then the renewal's own steps.
fn repair_steps(
    s: &NodeSnapshot,
    conflicts: &[StagingConflict],
    cmd: &Commands,
    not_active: &[Component],
    now: OffsetDateTime,
    next: &mut Vec<NextStep>,
) {
    if let Some(e) = &s.state_error {
        // No step moves a file while the state directory (and so its
        // lock) is refused: a move's `flock` would follow a symlink
        // there, or take a lock no renewal takes.
        next.push(step(
            format!("repair the state directory (root-owned, mode 0700, not a symlink), then look again; no manifest is moved until then: {e}"),
            Some(cmd.file("ls", &["-ld".into(), cmd.host(paths::STATE_DIR)])),
        ));
    } else {
        conflict_steps(conflicts, cmd, now, next);
        file_steps(&s.manifests, cmd, now, next);
        phase_steps(s, cmd, not_active, now, next);
    }
}

/// The step the worst leaf calls for: an expired one (under an expired CA,
/// or recovered once), or one due on a node otherwise clean. Asked only
/// while no process holds the lock.
fn expiry_step(
    s: &NodeSnapshot,
    cmd: &Commands,
    worst: Option<&expiry::Worst>,
    clean: bool,
    now: OffsetDateTime,
    threshold: u32,
    next: &mut Vec<NextStep>,
) {
    match worst.map(|w| w.expiry) {
        Some(Expiry::Expired) if ca_expired(s, now) => next.push(step(
            "a leaf certificate and a CA have expired: CAs are never rotated by this runbook and leaves renewed under an expired CA would never be trusted, so a recovery refuses; rotate the CA first (kubeadm's \"Manual rotation of CA certificates\"), then look again:",
            Some(cmd.runbook(&["--status-only"])),
        )),
        // Once: the unfinished work's step may already be this recovery.
        Some(Expiry::Expired)
            if !next.iter().any(|n| {
                    n.command
                        .as_deref()
                        .is_some_and(|c| c.contains(" --recover-expired"))
                }) =>
        {
            next.push(step(
                "a leaf certificate has expired: kube-apiserver and etcd refuse it, so a renewal's health gate cannot pass and a renewal refuses; recover this node (add --kubeadm-config with the node's saved ClusterConfiguration, if you have one), then every other control-plane node whose certificates expired:",
                Some(cmd.runbook(&[
                    "--operation-id",
                    &new_id("recover", now),
                    "--recover-expired",
                ])),
            ))
        }
        Some(Expiry::Due) if clean && next.is_empty() => {
            next.push(step(
                format!(
                    "renew before {}: the controller renews due certificates on its next run; to renew now, by hand:",
                    worst.map(|w| expiry::date(w.not_after)).unwrap_or_default()
                ),
                Some(cmd.runbook(&[
                    "--operation-id",
                    &new_id("manual", now),
                    "--threshold-days",
                    &threshold.to_string(),
                ])),
            ));
        }
        _ => {}
    }
}

/// The four whose manifest is not active (none refused), when
/// `manifests/` could be read.
fn not_active(m: &ManifestsReport) -> Vec<Component> {
    if m.manifests_dir_error.is_some() {
        return Vec::new();
    }
    Component::ALL
        .into_iter()
        // Not in `manifests/`: its pod is down, even when a staged copy
        // is refused (a refused active copy counts as present).
        .filter(|c| m.manifests.get(c).is_some_and(|v| !v.active))
        .collect()
}

/// What does not make the node not clean but is worth saying: the agent's
/// pending or unknown state, strays, certificate warnings and errors, the
/// kubelet's, and the leaves due.
fn warnings(s: &NodeSnapshot, now: OffsetDateTime, threshold: u32) -> Vec<String> {
    let mut warnings = Vec::new();
    match &s.agent {
        AgentIntent::Pending {
            phase,
            operation_id,
        } => warnings.push(format!(
            "the node agent has a pending renewal ({}{}): the controller finishes it with the node agent",
            crate::rules::agent::phase_words(phase),
            operation_id
                .as_deref()
                .map(|i| format!(", operation {i}"))
                .unwrap_or_default()
        )),
        AgentIntent::Unknown { reason } => {
            warnings.push(format!("the node agent's state is unknown: {reason}"))
        }
        _ => {}
    }
    warnings.extend(s.manifests.stray_warnings());
    warnings.extend(s.pki.warnings(now, threshold));
    warnings.extend(s.pki.errors());
    warnings.extend(s.kubelet.warnings(now, threshold));
    let due: Vec<(String, i64)> = s
        .pki
        .leaves_due(now, threshold)
        .into_iter()
        .filter(|(n, _)| {
            s.pki
                .leaf_times()
                .iter()
                .any(|(m, t)| m == n && expiry::judge(now, *t, threshold) == Expiry::Due)
        })
        .collect();
    if !due.is_empty() {
        warnings.push(format!(
            "{} certificate(s) due for renewal (within {threshold} days): {}",
            due.len(),
            due.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    warnings
}

/// The renewal at work, in words, when the lock's holder is the runbook on
/// record.
fn in_progress(s: &NodeSnapshot, now: OffsetDateTime) -> Option<String> {
    live_holder(s).map(|o| {
        let mut parts = vec![match &o.operation_id {
            Some(i) => format!("{} {i} (pid {})", o.mode, o.pid),
            None => format!("{} (pid {})", o.mode, o.pid),
        }];
        if recovery_work(s) {
            parts.push("a recovery (--recover-expired)".to_string());
        }
        parts.push(work_at(s).map(|(w, _)| w).unwrap_or_default());
        if let Some(e) = elapsed(&o.started_at, now) {
            parts.push(format!("running for {e}"));
        }
        parts.join(", ")
    })
}

/// Where the runbook at work is, when one is (the lock's holder is the
/// runbook on record), and the component it restarts: its phase file's
/// step only when that file is its own work (another operation's finished
/// file says nothing of a run still in its health gate).
pub fn work_at(s: &NodeSnapshot) -> Option<(String, Option<Component>)> {
    let o = live_holder(s)?;
    let own = match &s.phase.file {
        Some(f @ PhaseFile::V2(p)) if f.is_unfinished() => {
            o.operation_id.as_deref() == Some(p.operation_id.as_str())
        }
        Some(f @ PhaseFile::Legacy(_)) => f.is_unfinished(),
        _ => false,
    };
    Some(match (&s.phase.file, own) {
        (Some(f), true) => (f.plain_step(), f.next_component()),
        _ => (
            "starting: checking the node before any change".to_string(),
            None,
        ),
    })
}

/// A log of the state directory as one full path (SPEC 6, v1.2), when the
/// log exists.
fn log_of(s: &NodeSnapshot, cmd: &Commands, name: &str) -> Option<String> {
    s.logs.iter().any(|l| l == name).then(|| {
        cmd.file(
            "tail",
            &[
                "-n".into(),
                "40".into(),
                cmd.host(&format!("{}/{LOG_DIR}/{name}", paths::STATE_DIR)),
            ],
        )
    })
}

/// The step for a component that is down and that the fencing check does
/// not put back, by where its manifest is.
fn down_step(
    m: &ManifestsReport,
    cmd: &Commands,
    c: Component,
    now: OffsetDateTime,
    next: &mut Vec<NextStep>,
) {
    let v = &m.manifests[&c];
    let file = c.manifest_file();
    if let Some(e) = &v.error {
        // A staged copy is refused (a symlink, a directory...): never
        // moved by a printed step; a person puts a regular file back.
        next.push(step(
            format!("{c} is down on this node and a staged copy of its manifest is refused ({e}): no step moves it; look at it, then put a regular file back in {} by hand", paths::node(MANIFESTS_DIR)),
            Some(cmd.file(
                "ls",
                &[
                    "-la".into(),
                    cmd.host(&format!("{STAGING_DIR}/{file}")),
                    cmd.host(&format!("{AGENT_STAGING_DIR}/{file}")),
                ],
            )),
        ));
    } else if v.runbook_staged && !v.agent_staged {
        next.push(step(
            format!("{c} is down on this node: its manifest is left in the runbook's staging directory and no renewal holds the lock: put it back"),
            Some(put_back(cmd, STAGING_DIR, c)),
        ));
    } else if v.agent_staged && !v.runbook_staged {
        next.push(step(
            format!("{c} is down on this node: the node agent staged its manifest; unless the agent is at work, put it back"),
            Some(put_back(cmd, AGENT_STAGING_DIR, c)),
        ));
    } else if v.agent_staged {
        // Both staging directories hold it: keep one (the other set
        // aside, never deleted), put it back.
        next.push(step(
            format!("{c} is down on this node and staged in both staging directories: keep the runbook's copy (the node agent's is set aside) and put it back:"),
            Some(format!(
                "{} && {}",
                set_aside(cmd, &kube_rel(AGENT_STAGING_DIR, &file), &file, "agent", now),
                put_back(cmd, STAGING_DIR, c)
            )),
        ));
        next.push(step(
            "or keep the node agent's copy instead (the runbook's is set aside):".to_string(),
            Some(format!(
                "{} && {}",
                set_aside(cmd, &kube_rel(STAGING_DIR, &file), &file, "runbook", now),
                put_back(cmd, AGENT_STAGING_DIR, c)
            )),
        ));
    } else {
        next.push(step(
            format!("{c} is down on this node: its manifest is in no directory; restore it (another control-plane node, your backups, or kubeadm) before its pod can run"),
            None,
        ));
    }
}

/// The steps the phase file calls for (an unfinished V2 or legacy
/// renewal, a malformed file), and those of the pods that are down.
fn phase_steps(
    s: &NodeSnapshot,
    cmd: &Commands,
    not_active: &[Component],
    now: OffsetDateTime,
    next: &mut Vec<NextStep>,
) {
    let m = &s.manifests;
    // A renewal refuses while a leaf is expired (SPEC 11): the work is
    // then finished by a recovery, which resumes it.
    let expired = !s.pki.expired(now).is_empty();
    match (s.phase.intent(), &s.phase.file) {
        (RunbookIntent::Pending, Some(PhaseFile::V2(p))) => {
            // What the fencing check would put back (the runbook's staging
            // only); the other pods that are down get steps of their own.
            let fence_restores = m.staged_not_active();
            let work = Unfinished {
                id: p.operation_id.as_str(),
                at: phase_step(&s.phase),
                who: if p.recovery { "recovery" } else { "renewal" },
                // A leaf expired: the work is finished by a recovery (a
                // renewal refuses); else by a renewal, a recovery's work
                // too, with the gate before every restart (SPEC 11, v1.3).
                as_recovery: expired,
            };
            if let Some(ReceiptLookup::Found(r)) = &s.phase.receipt_of_phase_op {
                work.spent_id_step(cmd, &r.outcome.to_string(), now, next);
            } else {
                work.died_steps(cmd, &fence_restores, next);
            }
            if let Some(c) = log_of(s, cmd, &format!("{}.log", work.id)) {
                next.push(step("its log:", Some(c)));
            }
            for c in not_active.iter().filter(|c| !fence_restores.contains(c)) {
                down_step(m, cmd, *c, now, next);
            }
        }
        (RunbookIntent::Pending, Some(PhaseFile::Legacy(_))) => {
            for c in not_active {
                down_step(m, cmd, *c, now, next);
            }
            legacy_steps(s, cmd, expired, now, next);
        }
        (RunbookIntent::Malformed, _) => {
            next.push(step(
                "the phase file cannot be read as one: every renewal refuses this node until it is repaired; keep the evidence bundle (above) before changing it",
                Some(cmd.file("cat", &["-v".into(), cmd.host(&format!("{}/{PHASE_FILE}", paths::STATE_DIR))])),
            ));
            for c in not_active {
                down_step(m, cmd, *c, now, next);
            }
        }
        _ => {
            for c in not_active {
                down_step(m, cmd, *c, now, next);
            }
        }
    }
}

/// An unfinished V2 phase file's work: its operation, where it stopped,
/// and whether a recovery must finish it.
struct Unfinished<'a> {
    id: &'a str,
    /// Where the work stopped, in plain words.
    at: String,
    /// `renewal` or `recovery`.
    who: &'static str,
    /// A leaf expired since a renewal's work began: a recovery finishes it.
    as_recovery: bool,
}

impl Unfinished<'_> {
    /// Who resumes the work under a new operation ID.
    fn later(&self) -> &'static str {
        if self.as_recovery {
            "a recovery (--recover-expired: a leaf has expired)"
        } else if self.who == "recovery" {
            "the next renewal (no leaf has expired: it finishes the recovery's restarts as a renewal, the health gate before each)"
        } else {
            "the next renewal"
        }
    }

    /// The command that resumes the work under a new operation ID.
    fn resume_new(&self, cmd: &Commands, now: OffsetDateTime) -> String {
        let mut args = vec!["--operation-id".to_string()];
        if self.as_recovery {
            args.push(new_id("recover", now));
            args.push("--recover-expired".into());
        } else {
            args.push(new_id("manual", now));
        }
        cmd.runbook(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Fenced (or ended) already: that ID is spent, a delayed attempt with
    /// it only replays its receipt (exit 5). The work goes on under a new
    /// ID (SPEC 6, v1.2). A recovery is an operator's: the controller
    /// never takes it.
    fn spent_id_step(
        &self,
        cmd: &Commands,
        outcome: &str,
        now: OffsetDateTime,
        next: &mut Vec<NextStep>,
    ) {
        let Unfinished { id, at, who, .. } = self;
        let later = self.later();
        let who_does = if self.as_recovery {
            "by hand: the controller's renewals refuse while a leaf is expired"
        } else {
            "the controller's next cycle does; to finish it now, by hand"
        };
        next.push(step(
            format!(
                "the {who} {id} is recorded {outcome} (its receipt), but its work stopped while {at}: {later}, under a new operation ID, resumes it ({who_does}):"
            ),
            Some(self.resume_new(cmd, now)),
        ));
    }

    /// No receipt: the run died. Fence it (putting back what it left
    /// staged), or finish it now under the same ID.
    fn died_steps(&self, cmd: &Commands, fence_restores: &[Component], next: &mut Vec<NextStep>) {
        let Unfinished { id, at, who, .. } = self;
        let later = self.later();
        let put = if fence_restores.is_empty() {
            String::new()
        } else {
            format!(
                "put {} back and ",
                fence_restores
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        next.push(step(
            format!(
                "the {who} {id} died while {at}, leaving no receipt: {put}record it as finished (abandoned), as the controller's termination check does (the fencing check, --fence); {later}, under a new ID, then resumes the work:"
            ),
            Some(cmd.runbook(&["--status-only", "--operation-id", id, "--fence"])),
        ));
        if self.as_recovery {
            next.push(step(
                format!("or finish it now, under the same ID, as a recovery (a renewal refuses while a leaf is expired; it resumes while {at}):"),
                Some(cmd.runbook(&["--operation-id", id, "--recover-expired"])),
            ));
        } else {
            let how = if *who == "recovery" {
                ", as a renewal with the health gate before each restart"
            } else {
                ""
            };
            next.push(step(
                format!("or finish it now, under the same ID{how} (it resumes while {at}):"),
                Some(cmd.runbook(&["--operation-id", id])),
            ));
        }
    }
}

/// The legacy runbook's unfinished renewal: the next legacy run resumes
/// it, or a recovery when a leaf has expired; and its log.
fn legacy_steps(
    s: &NodeSnapshot,
    cmd: &Commands,
    expired: bool,
    now: OffsetDateTime,
    next: &mut Vec<NextStep>,
) {
    if expired {
        next.push(step(
            format!(
                "the legacy runbook's renewal stopped while {}, and a leaf has expired (a renewal, legacy too, refuses): a recovery resumes it, keeping its format:",
                phase_step(&s.phase)
            ),
            Some(cmd.runbook(&[
                "--operation-id",
                &new_id("recover", now),
                "--recover-expired",
            ])),
        ));
    } else {
        next.push(step(
            format!(
                "the legacy runbook's renewal stopped while {}: the next legacy runbook run resumes it; by hand:",
                phase_step(&s.phase)
            ),
            Some(cmd.runbook(&["--legacy-v1"])),
        ));
    }
    if let Some(c) = log_of(s, cmd, "legacy-v1.log") {
        next.push(step("its log:", Some(c)));
    }
}

/// `mkdir -p ASIDE && mv -n FROM ASIDE/FILE.SUFFIX-STAMP`: a copy set
/// aside, never deleted, under a name no earlier step used (`mv -n` onto
/// an existing name does nothing, and says nothing).
fn set_aside(cmd: &Commands, from: &str, file: &str, suffix: &str, now: OffsetDateTime) -> String {
    let aside = cmd.host(SET_ASIDE);
    format!(
        "{} && {}",
        cmd.file("mkdir", &["-p".into(), aside.clone()]),
        cmd.in_kubernetes(
            "mv",
            &[
                "-n".into(),
                from.to_string(),
                format!(
                    "{aside}/{file}.{suffix}-{}",
                    crate::rules::clock::stamp(now)
                )
            ]
        )
    )
}

/// Each staging conflict: which copy to keep, and how.
fn conflict_steps(
    conflicts: &[StagingConflict],
    cmd: &Commands,
    now: OffsetDateTime,
    next: &mut Vec<NextStep>,
) {
    for k in conflicts {
        let (dir, who) = if k.staging == "agent" {
            (AGENT_STAGING_DIR, "the node agent's staging directory")
        } else {
            (STAGING_DIR, "the runbook's staging directory")
        };
        let file = k.component.manifest_file();
        let staged = kube_rel(dir, &file);
        let active = kube_rel(MANIFESTS_DIR, &file);
        match k.identical {
            Some(true) => next.push(step(
                format!(
                    "{}: the copy in {who} is identical to the active one: set it aside",
                    k.component
                ),
                Some(set_aside(cmd, &staged, &file, "staged", now)),
            )),
            _ => {
                next.push(step(
                    format!("{}: the copies differ (see CONFLICT above); keep the active one, the copy kubelet runs (the staged one is set aside):", k.component),
                    Some(set_aside(cmd, &staged, &file, "staged", now)),
                ));
                next.push(step(
                    "or keep the staged one instead (the active one is set aside; the pod restarts with the staged one):".to_string(),
                    Some(format!(
                        "{} && {}",
                        set_aside(cmd, &active, &file, "active", now),
                        cmd.in_kubernetes("mv", &["-n".into(), staged, kube_rel(MANIFESTS_DIR, "")])
                    )),
                ));
            }
        }
    }
}

/// Unexpected entries of the staging directories, and strays kubelet loads
/// as pods.
fn file_steps(m: &ManifestsReport, cmd: &Commands, now: OffsetDateTime, next: &mut Vec<NextStep>) {
    for (view, who) in [
        (&m.runbook_staging, "runbook"),
        (&m.agent_staging, "node agent"),
    ] {
        for name in &view.unexpected {
            next.push(step(
                format!("unexpected {}/{name} in the {who} staging directory: move it out (it is not one of the four manifests)", view.path),
                Some(cmd.file("ls", &["-la".into(), cmd.host(view.path.trim_start_matches('/'))])),
            ));
        }
    }
    for stray in &m.strays {
        let rel = stray.path.trim_start_matches("/etc/kubernetes/");
        let name = rel.rsplit('/').next().unwrap_or(rel);
        next.push(step(
            format!(
                "kubelet loads {} as a pod: set it aside, out of {}",
                stray.path,
                paths::node(MANIFESTS_DIR)
            ),
            Some(set_aside(cmd, rel, name, "stray", now)),
        ));
    }
}

/// The evidence bundle's step: first whenever the node is not clean (SPEC
/// 6, v1.2: the bundle holds the node as it is now, before any step).
fn evidence_step(cmd: &Commands, now: OffsetDateTime, next: &mut Vec<NextStep>) {
    let evidence = step(
        "hand off the sanitized evidence first (no keys, no kubeconfigs):",
        Some(cmd.runbook(&[
            "--status-only",
            "--evidence",
            &format!("/root/{}.tgz", new_id("nvke-evidence", now)),
        ])),
    );
    next.insert(0, evidence);
}

/// The first `n` of `items` joined, and how many more (a message stays
/// whole within its 512 bytes: `reasons` lists them all).
pub fn first_of(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > n {
        s.push_str(&format!("; and {} more (reasons)", items.len() - n));
    }
    s
}

/// "2 problems, 1 warning" (empty when both are none).
pub fn counts(problems: usize, warnings: usize) -> String {
    let count = |n: usize, what: &str| match n {
        0 => None,
        1 => Some(format!("1 {what}")),
        n => Some(format!("{n} {what}s")),
    };
    [count(problems, "problem"), count(warnings, "warning")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
}

/// The steps as text: `next:` then each step, its command on its own
/// line(s) below, wrapped with continuations.
pub fn render_next(out: &mut String, next: &[NextStep], width: Option<usize>) {
    if next.is_empty() {
        return;
    }
    out.push_str("next:\n");
    for (i, s) in next.iter().enumerate() {
        out.push_str(&format!(
            "  {}. {}\n",
            i + 1,
            crate::contract::text::escape(&s.what)
        ));
        if let Some(c) = &s.command {
            // Commands are built from validated IDs and paths and quoted
            // word by word (never escaped: that would change them).
            // A control character (a --root that holds one) never reaches
            // the terminal: such a command is shown escaped.
            let shown = if c.chars().any(char::is_control) {
                crate::contract::text::escape(c)
            } else {
                c.clone()
            };
            for l in command_split(&shown, width) {
                out.push_str(&l);
                out.push('\n');
            }
        }
    }
}

/// A command line (already quoted) split at its spaces outside quotes,
/// wrapped with continuations.
fn command_split(c: &str, width: Option<usize>) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = c.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                quoted = !quoted;
                cur.push(ch);
            }
            // `\'` between quoted parts (`'it'\''s'`) is one literal quote.
            '\\' if !quoted => {
                cur.push(ch);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            ' ' if !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(ch),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    crate::contract::screen::command_lines(&words, 5, width)
}

/// How this run's commands name the runbook and the node.
pub fn commands(g: &crate::contract::cli::Global, s: &NodeSnapshot) -> Commands {
    let c = Commands {
        program: g.program.clone(),
        root: (!crate::contract::cli::is_host_root(&g.root)).then(|| g.root.display().to_string()),
        lock: String::new(),
        // Unusable (a refused state directory): flock then fails, and the
        // move does not run.
        lock_exists: !matches!(s.lock.probe, Ok(crate::node::lock::Probe::Absent)),
    };
    Commands {
        lock: c.host(&format!(
            "{}/{}",
            crate::node::paths::STATE_DIR,
            crate::node::paths::LOCK_FILE
        )),
        ..c
    }
}
