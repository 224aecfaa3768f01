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
    /// CAs that end within the threshold with a leaf due under them (SPEC
    /// 4 step 8, v1.3): no renewal can help; ACTION NEEDED, exit 4.
    pub ca_walls: Vec<String>,
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
        self.warnings.extend(j.unmanaged_serving());
        // A renewal at work restarts one component: that one's findings
        // are its progress (SPEC 6), the others' still count.
        // A renewal at work (its holder alive), whatever the severity.
        let busy = self.in_progress.is_some();
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

impl Advice {
    /// The steps that show why a component is down, crash-looping or
    /// unhealthy (SPEC 6, v1.3), after the steps already advised (those
    /// mend what the headline names): its containers, the log of the
    /// container that says why and the kubelet's journal, pasteable
    /// (`crictl`: as this run called it; none found: the journal only).
    /// The component a renewal at work restarts is its progress. Last,
    /// with no renewal at work, a static pod that keeps an old credential
    /// gets its stop.
    pub fn with_why(
        &mut self,
        j: &crate::rules::live::Judged,
        crictl: Option<&[String]>,
        wall: OffsetDateTime,
        restarting: Option<Component>,
    ) {
        // A renewal at work (its holder alive), whatever the severity.
        let busy = self.in_progress.is_some();
        let mut why = Vec::new();
        for d in j.why_down(wall) {
            if busy && restarting.is_some_and(|r| r.name() == d.name) {
                continue;
            }
            // Its manifest is not active: why it is down is known, and its
            // own step puts it back.
            if self.not_active.iter().any(|c| c.name() == d.name) {
                continue;
            }
            let cause = d.cause.map(|c| format!(": {c}")).unwrap_or_default();
            let mut parts = Vec::new();
            if let Some(w) = crictl {
                // `--name` is a regular expression: anchored, this one only.
                parts.push(crictl_cmd(
                    w,
                    &["ps", "-a", "--name", &format!("^{}$", d.name)],
                ));
                if let Some(id) = &d.log_of {
                    parts.push(logs_command(w, id));
                }
            }
            parts.push(journal(&d.name));
            why.push(step(
                format!(
                    "{} {}{cause}; {} say why:",
                    d.name,
                    d.words,
                    match (crictl.is_some(), d.log_of.is_some()) {
                        (true, true) =>
                            "its containers, the last one's log and the kubelet's journal",
                        (true, false) => "its containers and the kubelet's journal",
                        (false, _) => "the kubelet's journal (crictl was not found)",
                    }
                ),
                Some(parts.join("; ")),
            ));
        }
        self.next.append(&mut why);
        if !busy {
            for (name, id) in j.keeping_old() {
                let Some(w) = crictl else { continue };
                why.push(step(
                    format!("{name} keeps the old credential until its container restarts: stop it (30 s to end by itself), and the kubelet starts a new one from the same manifest (this runbook never touches it):"),
                    Some(crictl_cmd(w, &["stop", "--timeout", "30", &id])),
                ));
            }
        }
        // After the steps that mend the situation the headline names (a
        // put-back, the lock's holder, a recovery): what shows why a
        // component is down may be a symptom of those; kube-vip's stop
        // (a warning's) last.
        self.next.extend(why);
    }
}

/// crictl (as this run called it) with `args`, quoted for the shell.
fn crictl_cmd(crictl: &[String], args: &[&str]) -> String {
    let mut w = crictl.to_vec();
    w.extend(args.iter().map(|a| a.to_string()));
    words(&w)
}

/// The last 40 lines of a container's log.
pub fn logs_command(crictl: &[String], id: &str) -> String {
    crictl_cmd(crictl, &["logs", "--tail", "40", id])
}

/// The kubelet's journal lines about `name`.
fn journal(name: &str) -> String {
    format!(
        "journalctl -u kubelet --no-pager -n 400 | grep -F {} | tail -n 20",
        crate::contract::screen::shell_word(name)
    )
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
    // An ended CA under an expired leaf has the expiry's own step (rotate
    // the CA first); a CA ending within the threshold has this one, for a
    // renewal and a recovery alike.
    let ca_walls = match ca_expired(s, now) {
        true => Vec::new(),
        false => s.pki.ca_walls(now, threshold, false),
    };
    if !ca_walls.is_empty() && !busy {
        // Before the leaf's own step: no renewal gets past a CA's end.
        // The first CA and its end; the problems list every one.
        let head = ca_walls[0].split(": renewing").next().unwrap_or_default();
        let more = match ca_walls.len() {
            1 => String::new(),
            n => format!(" (and {} more CAs, in the problems)", n - 1),
        };
        next.push(step(
            format!(
                "{head}{more}: no renewal or recovery can move a leaf past its CA's end, so both refuse, and the controller must stop renewing this node; rotate the CA (kubeadm's \"Manual rotation of CA certificates\"; never done by this tool) on every control-plane node, then look again:"
            ),
            Some(cmd.runbook(&["--status-only"])),
        ));
    }
    if !busy && ca_walls.is_empty() {
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
    } else if !not_active.is_empty() || expired || !ca_walls.is_empty() {
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
        ca_walls,
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
        "hand off the sanitized evidence (no keys, no kubeconfigs):",
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
    render_steps(out, next, width);
}

/// The lines a screen holds (SPEC 6, v1.3: the closing verdict and the
/// first step fit in the last 24 lines at 80 columns).
pub const SCREEN_LINES: usize = 24;

/// The end of a view: the verdict (`closing`, already laid out) and the
/// steps, so that the verdict and the first step are on the last screen:
/// when the steps are too long for it, they are listed in full first, then
/// the verdict, then the first step again.
pub fn render_closing(out: &mut String, closing: &str, next: &[NextStep], width: Option<usize>) {
    let mut block = closing.to_string();
    render_next(&mut block, next, width);
    let fits = crate::contract::screen::fit(&block, width).lines().count() <= SCREEN_LINES;
    if fits || next.len() < 2 {
        out.push_str(&block);
        return;
    }
    out.push_str("next, in full:\n");
    render_steps(out, next, width);
    out.push('\n');
    out.push_str(closing);
    out.push_str(&format!("first step (of the {} above):\n", next.len()));
    render_steps(out, &next[..1], width);
}

/// Each step, numbered from 1: its words, then its command.
fn render_steps(out: &mut String, next: &[NextStep], width: Option<usize>) {
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

/// Hand-made snapshots for the judgements' unit tests (`advice`, `status`):
/// a clean kubeadm control plane as the read-only modes would read it,
/// changed one fact at a time. No file is read: each fact is the value a
/// reader in `node/` would have produced.
#[cfg(test)]
pub(crate) mod test_node {
    use super::*;
    use crate::contract::{ManifestCopy, ManifestLocation, ManifestView, StagingView};
    use crate::node::inspect::{LockReport, PhaseJudgement};
    use crate::node::kubelet::{KubeletCert, KubeletReport, KubeletRole};
    use crate::node::lock::{HeldBy, Holder, LockFileId, Owner, Probe};
    use crate::node::node_pki::{CaView, LeafStatus, LeafView, PkiReport};
    use crate::node::snapshot::Receipts;
    use crate::rules::outcome::Outcome;
    use crate::rules::pki::{CaId, ParsedCert, LEAVES};
    use std::collections::BTreeMap;
    use time::macros::datetime;

    /// The view's clock (the fixtures' date).
    pub(crate) const NOW: OffsetDateTime = datetime!(2026-11-30 00:00:00 UTC);
    /// Every leaf's notAfter on a clean node: far past the threshold.
    pub(crate) const LEAF_END: OffsetDateTime = datetime!(2027-06-01 00:00:00 UTC);
    /// Two days before [`NOW`].
    pub(crate) const EXPIRED: OffsetDateTime = datetime!(2026-11-28 00:00:00 UTC);
    /// Within the default threshold (30 days) of [`NOW`].
    pub(crate) const DUE: OffsetDateTime = datetime!(2026-12-13 00:00:00 UTC);
    /// The default threshold.
    pub(crate) const THRESHOLD: u32 = 30;

    fn cert(subject: &str, not_after: OffsetDateTime, is_ca: bool) -> ParsedCert {
        ParsedCert {
            der: Vec::new(),
            subject: format!("CN={subject}"),
            issuer: "CN=kubernetes".into(),
            not_before: datetime!(2026-06-01 00:00:00 UTC),
            not_after,
            serial: "01".into(),
            key_algorithm: "rsa".into(),
            is_ca,
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            usages: Vec::new(),
        }
    }

    fn staging(rel: &str, exists: bool) -> StagingView {
        StagingView {
            path: paths::node(rel),
            exists,
            entries: Vec::new(),
            unexpected: Vec::new(),
            error: None,
        }
    }

    fn location(active: bool, staged: bool) -> ManifestLocation {
        match (active, staged) {
            (true, false) => ManifestLocation::Active,
            (false, true) => ManifestLocation::Staged,
            (true, true) => ManifestLocation::Both,
            (false, false) => ManifestLocation::Missing,
        }
    }

    /// A node's one read, built fact by fact.
    #[derive(Debug, Clone)]
    pub(crate) struct TestNode(pub(crate) NodeSnapshot);

    impl TestNode {
        /// A clean control plane: lock free (its file exists), no phase
        /// file, no receipt, the agent idle, the four manifests active,
        /// both staging directories empty, every leaf and CA valid far
        /// past the threshold, the kubelet's certificates not listed.
        pub(crate) fn clean() -> TestNode {
            let manifests = Component::ALL
                .into_iter()
                .map(|c| {
                    (
                        c,
                        ManifestView {
                            location: ManifestLocation::Active,
                            active: true,
                            runbook_staged: false,
                            agent_staged: false,
                            error: None,
                        },
                    )
                })
                .collect::<BTreeMap<_, _>>();
            let cas = CaId::ALL
                .iter()
                .map(|&id| CaView {
                    id,
                    sha256: Some("a".repeat(64)),
                    cert: Some(cert(id.name(), datetime!(2035-01-01 00:00:00 UTC), true)),
                    error: None,
                })
                .collect();
            let leaves = LEAVES
                .iter()
                .map(|spec| LeafView {
                    spec: *spec,
                    status: LeafStatus::Ok,
                    cert: Some(cert(spec.name, LEAF_END, false)),
                    chains_to_ca: Some(true),
                    error: None,
                })
                .collect();
            TestNode(NodeSnapshot {
                state_error: None,
                lock: LockReport {
                    probe: Ok(Probe::Free),
                    owner: OwnerInfo::Absent,
                    held: None,
                },
                phase: PhaseReport {
                    file: None,
                    receipt_of_phase_op: None,
                    judgement: PhaseJudgement::Absent,
                },
                receipts: Some(Receipts::default()),
                agent_path: paths::node(paths::AGENT_STATE_FILE),
                agent: AgentIntent::Absent,
                manifests: ManifestsReport {
                    manifests,
                    runbook_staging: staging(STAGING_DIR, true),
                    agent_staging: staging(AGENT_STAGING_DIR, false),
                    strays: Vec::new(),
                    hostile: Vec::new(),
                    manifests_dir_error: None,
                    external_etcd: None,
                },
                pki: PkiReport { cas, leaves },
                kubelet: KubeletReport::default(),
                logs: Vec::new(),
            })
        }

        fn manifest(&mut self, c: Component, f: impl FnOnce(&mut ManifestView)) {
            let v = self.0.manifests.manifests.get_mut(&c).unwrap();
            f(v);
            v.location = location(v.active, v.runbook_staged || v.agent_staged);
        }

        /// `c`'s manifest in the runbook's staging directory, not active
        /// (what a run killed mid-restart leaves).
        pub(crate) fn staged(mut self, c: Component) -> TestNode {
            self.manifest(c, |v| {
                v.active = false;
                v.runbook_staged = true;
            });
            let e = &mut self.0.manifests.runbook_staging.entries;
            e.push(c.manifest_file());
            e.sort();
            self
        }

        /// `c`'s manifest in the node agent's staging directory, not active.
        pub(crate) fn agent_staged(mut self, c: Component) -> TestNode {
            self.manifest(c, |v| {
                v.active = false;
                v.agent_staged = true;
            });
            let s = &mut self.0.manifests.agent_staging;
            s.exists = true;
            s.entries.push(c.manifest_file());
            s.entries.sort();
            self
        }

        /// `c`'s manifest active and a copy in `staging` (`runbook` or
        /// `agent`) too: a staging conflict.
        pub(crate) fn both(self, c: Component, staging: &str) -> TestNode {
            let mut n = if staging == "agent" {
                self.agent_staged(c)
            } else {
                self.staged(c)
            };
            n.manifest(c, |v| v.active = true);
            n
        }

        /// `c`'s manifest nowhere.
        pub(crate) fn missing(mut self, c: Component) -> TestNode {
            self.manifest(c, |v| v.active = false);
            self
        }

        /// The leaf `name`'s notAfter.
        pub(crate) fn leaf_ends(mut self, name: &str, at: OffsetDateTime) -> TestNode {
            let l = self
                .0
                .pki
                .leaves
                .iter_mut()
                .find(|l| l.spec.name == name)
                .unwrap();
            l.cert.as_mut().unwrap().not_after = at;
            self
        }

        /// Every CA's notAfter.
        pub(crate) fn cas_end(mut self, at: OffsetDateTime) -> TestNode {
            for c in &mut self.0.pki.cas {
                c.cert.as_mut().unwrap().not_after = at;
            }
            self
        }

        /// The kubelet's client certificate, ending at `at`.
        pub(crate) fn kubelet_client_ends(mut self, at: OffsetDateTime) -> TestNode {
            self.0.kubelet.certs.push(KubeletCert {
                role: KubeletRole::Client,
                path: "/var/lib/kubelet/pki/kubelet-client-current.pem".into(),
                not_after: Some(at),
                rotates: Some(true),
                error: None,
            });
            self
        }

        /// The phase file `file`, and the receipt of the operation it
        /// names (`None`: it has none), judged as the reader judges them.
        pub(crate) fn phase(mut self, file: PhaseFile, receipt: Option<Outcome>) -> TestNode {
            let receipt = match &file {
                PhaseFile::V2(p) if file.is_unfinished() => receipt.map(|o| {
                    ReceiptLookup::Found(Box::new(crate::node::inspect::state_files::receipt(
                        p.operation_id.as_str(),
                        o,
                    )))
                }),
                _ => None,
            };
            let judgement = crate::node::inspect::judge(Some(&file), receipt.as_ref());
            self.0.phase = PhaseReport {
                file: Some(file),
                receipt_of_phase_op: receipt,
                judgement,
            };
            self
        }

        /// A phase file that cannot be read as one.
        pub(crate) fn malformed_phase(mut self) -> TestNode {
            self.0.phase = PhaseReport {
                file: None,
                receipt_of_phase_op: None,
                judgement: PhaseJudgement::Malformed("line 1: not a phase file".into()),
            };
            self
        }

        /// The lock held by the runbook on record (`renew`, pid 4242,
        /// operation `op`), started ten minutes before [`NOW`].
        pub(crate) fn held_by_runbook(mut self, op: &str) -> TestNode {
            let owner = OwnerInfo::Known(Owner {
                pid: 4242,
                operation_id: Some(op.to_string()),
                mode: "renew".into(),
                started_at: "2026-11-29T23:50:00Z".into(),
                boot_id: "boot-1".into(),
            });
            self.0.lock = LockReport {
                probe: Ok(Probe::Held(LockFileId { dev: 1, ino: 2 })),
                owner: owner.clone(),
                held: Some(HeldBy {
                    holder: Holder::Process {
                        pid: 4242,
                        command: Some("nvke-cert-runbook".into()),
                        command_line: Some(format!("nvke-cert-runbook --operation-id {op}")),
                    },
                    owner,
                    owner_matches: true,
                }),
            };
            self
        }

        /// The lock held by pid 999, which the owner record does not name.
        pub(crate) fn held_by_stranger(mut self) -> TestNode {
            self.0.lock = LockReport {
                probe: Ok(Probe::Held(LockFileId { dev: 1, ino: 2 })),
                owner: OwnerInfo::Absent,
                held: Some(HeldBy {
                    holder: Holder::Process {
                        pid: 999,
                        command: Some("sleep".into()),
                        command_line: Some("flock lock sleep 600".into()),
                    },
                    owner: OwnerInfo::Absent,
                    owner_matches: false,
                }),
            };
            self
        }

        /// No lock file yet (nothing ever ran).
        pub(crate) fn no_lock_file(mut self) -> TestNode {
            self.0.lock.probe = Ok(Probe::Absent);
            self
        }

        /// The state directory refused.
        pub(crate) fn state_refused(mut self) -> TestNode {
            self.0.state_error = Some("/var/lib/nvke/k8s-cert-renewal is a symlink".into());
            self
        }

        /// A log in `state/log/`.
        pub(crate) fn log(mut self, name: &str) -> TestNode {
            self.0.logs.push(name.to_string());
            self
        }

        /// The node agent's state.
        pub(crate) fn agent(mut self, a: AgentIntent) -> TestNode {
            self.0.agent = a;
            self
        }

        /// The newest receipt is a recovery's, renewed, the cluster not
        /// healthy at its end.
        pub(crate) fn recovered_unhealthy(mut self, op: &str) -> TestNode {
            let r = self.0.receipts.get_or_insert_with(Receipts::default);
            r.count += 1;
            r.recent.insert(
                0,
                crate::contract::ReceiptSummary {
                    operation_id: op.to_string(),
                    outcome: Some(Outcome::Renewed),
                    phase: Some(crate::rules::outcome::Phase::Done),
                    finished_at: Some(crate::contract::Timestamp("2026-11-29T23:00:00Z".into())),
                    message: None,
                    error: None,
                    recovery: true,
                    health_at_end: Some(crate::contract::Message(
                        "not healthy yet: etcd has no quorum".into(),
                    )),
                    certificates: Vec::new(),
                },
            );
            self
        }
    }

    /// A staging conflict on `c`'s manifest (`staging`: `runbook` or
    /// `agent`), its copies identical or not.
    pub(crate) fn conflict(c: Component, staging: &str, identical: bool) -> StagingConflict {
        let copy = |dir: &str, sha: char| ManifestCopy {
            path: paths::node(&format!("{dir}/{}", c.manifest_file())),
            sha256: Some(crate::contract::Sha256Hex(sha.to_string().repeat(64))),
            size: Some(1000),
            modified_at: None,
            error: None,
        };
        let dir = if staging == "agent" {
            AGENT_STAGING_DIR
        } else {
            STAGING_DIR
        };
        StagingConflict {
            component: c,
            staging: staging.to_string(),
            active: copy(MANIFESTS_DIR, 'a'),
            staged: copy(dir, if identical { 'a' } else { 'b' }),
            identical: Some(identical),
            newer: None,
            diff: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    //! SPEC 6 ("Next steps", v1.2 and v1.3) and 11: what the operator view
    //! advises for each unclean state, judged from hand-made snapshots:
    //! the exact commands (the runbook with `--root` only when it is not
    //! `/`, every word quoted for the shell, moves only under the renewal
    //! lock), the operation IDs they carry (the same one only while its
    //! work can still be finished under it, a fresh valid one otherwise),
    //! and no placeholder anywhere.
    use super::test_node::*;
    use super::*;
    use crate::contract::cli::Global;
    use crate::node::inspect::state_files::{legacy, v2};
    use crate::rules::outcome::Outcome;
    use crate::rules::phase::PhaseState;
    use crate::rules::progress::Reason;
    use std::path::Path;

    const LOCK: &str = "/var/lib/nvke/k8s-cert-renewal/lock";
    const STAMP: &str = "20261130T000000Z";
    const EVIDENCE: &str =
        "nvke-cert-runbook --status-only --evidence /root/nvke-evidence-20261130T000000Z.tgz";
    /// kube-apiserver's manifest put back from the runbook's staging.
    const PUT_BACK: &str = "cd /etc/kubernetes && flock -n /var/lib/nvke/k8s-cert-renewal/lock mv -n nvke-cert-renewal-staging/kube-apiserver.yaml manifests/";

    fn manual() -> String {
        format!("manual-{STAMP}")
    }

    fn recover() -> String {
        format!("recover-{STAMP}")
    }

    /// How the view names the runbook and the node for `root`.
    fn cmd_at(root: &str, s: &NodeSnapshot) -> Commands {
        commands(&Global::for_tests(Path::new(root)), s)
    }

    /// The view's problems from the files (`status::problems` without the
    /// live node: these snapshots observe none).
    fn reasons(s: &NodeSnapshot) -> Vec<Reason> {
        let mut r = crate::judge::status::not_clean_reasons(
            s.state_error.as_deref(),
            &s.lock,
            &s.phase,
            &s.manifests,
        );
        r.extend(s.pki.expired_reasons(NOW).into_iter().map(Reason::other));
        r.extend(s.kubelet.expired(NOW).into_iter().map(Reason::other));
        r
    }

    fn advise_at(root: &str, n: &TestNode, conflicts: &[StagingConflict]) -> Advice {
        let s = &n.0;
        advise(s, &reasons(s), conflicts, &cmd_at(root, s), NOW, THRESHOLD)
    }

    fn advised(n: &TestNode) -> Advice {
        advise_at("/", n, &[])
    }

    fn commands_of(a: &Advice) -> Vec<&str> {
        a.next.iter().filter_map(|n| n.command.as_deref()).collect()
    }

    /// The one step whose words contain `what`.
    fn step_of<'a>(a: &'a Advice, what: &str) -> &'a NextStep {
        let found: Vec<&NextStep> = a.next.iter().filter(|n| n.what.contains(what)).collect();
        assert_eq!(found.len(), 1, "one step says {what:?}: {:#?}", a.next);
        found[0]
    }

    fn command_of<'a>(a: &'a Advice, what: &str) -> &'a str {
        step_of(a, what).command.as_deref().unwrap()
    }

    fn recovery(mut f: PhaseFile) -> PhaseFile {
        if let PhaseFile::V2(p) = &mut f {
            p.recovery = true;
        }
        f
    }

    fn restarting_apiserver(op: &str) -> PhaseFile {
        v2(
            op,
            PhaseState::RestartPending,
            Some(Component::KubeApiserver),
        )
    }

    /// SPEC 1 and 6: a command names the runbook with `--root` only when
    /// the root is not `/` (any spelling of it), and its file commands
    /// name the node's paths under that root.
    #[test]
    fn the_root_is_named_only_when_it_is_not_the_host_root() {
        let s = TestNode::clean().0;
        for root in ["/", "//", "/./"] {
            let c = cmd_at(root, &s);
            assert_eq!(c.root, None, "{root}");
            assert_eq!(
                c.runbook(&["--status-only"]),
                "nvke-cert-runbook --status-only"
            );
            assert_eq!(c.lock, LOCK);
            assert_eq!(c.host("etc/kubernetes"), "/etc/kubernetes");
        }
        let c = cmd_at("/srv/node-1", &s);
        assert_eq!(c.root.as_deref(), Some("/srv/node-1"));
        assert_eq!(
            c.runbook(&["--status-only"]),
            "nvke-cert-runbook --root /srv/node-1 --status-only"
        );
        assert_eq!(c.lock, "/srv/node-1/var/lib/nvke/k8s-cert-renewal/lock");
        assert_eq!(c.host("etc/kubernetes"), "/srv/node-1/etc/kubernetes");
        // Every step of a node under that root says so.
        let a = advise_at(
            "/srv/node-1",
            &TestNode::clean().staged(Component::KubeApiserver),
            &[],
        );
        assert_eq!(
            commands_of(&a),
            [
                "nvke-cert-runbook --root /srv/node-1 --status-only --evidence /root/nvke-evidence-20261130T000000Z.tgz",
                "cd /srv/node-1/etc/kubernetes && flock -n /srv/node-1/var/lib/nvke/k8s-cert-renewal/lock mv -n nvke-cert-renewal-staging/kube-apiserver.yaml manifests/",
            ]
        );
    }

    /// SPEC 6 (v1.2): pasted as printed, a command does what it says: a
    /// path the shell would split or expand is one quoted word, and the
    /// shell reads back exactly the path.
    #[test]
    #[allow(clippy::disallowed_methods)] // the real shell reads the words back
    fn odd_paths_are_quoted_so_the_shell_reads_them_back_whole() {
        let odd = "/srv/it's a $HOME; *node\\";
        let c = cmd_at(odd, &TestNode::clean().0);
        assert_eq!(
            c.runbook(&["--status-only"]),
            r"nvke-cert-runbook --root '/srv/it'\''s a $HOME; *node\' --status-only"
        );
        assert_eq!(
            c.file("ls", &["-ld".into(), "/plain/path-1.yaml".into()]),
            "ls -ld /plain/path-1.yaml",
            "a plain word stays as it is"
        );
        let printed = c.file("printf", &["%s\n".into(), odd.into(), c.lock.clone()]);
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&printed)
            .env_clear()
            .output()
            .unwrap();
        assert!(out.status.success(), "{printed}");
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!("{odd}\n{odd}/var/lib/nvke/k8s-cert-renewal/lock\n")
        );
    }

    /// SPEC 6 (v1.1): a printed move or removal runs only while no process
    /// holds the renewal lock (`flock -n` on its file): a renewal that
    /// started after the view was printed is never disturbed. A look
    /// takes no lock. With no lock file yet, the move makes it as the
    /// runbook would (0700 state directory), in a subshell.
    #[test]
    fn a_move_takes_the_renewal_lock_first_and_a_look_does_not() {
        let c = cmd_at("/", &TestNode::clean().0);
        let args = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            c.in_kubernetes("mv", &args(&["-n", "a.yaml", "manifests/"])),
            format!("cd /etc/kubernetes && flock -n {LOCK} mv -n a.yaml manifests/")
        );
        assert_eq!(
            c.in_kubernetes("rm", &args(&["a.yaml"])),
            format!("cd /etc/kubernetes && flock -n {LOCK} rm a.yaml")
        );
        assert_eq!(
            c.in_kubernetes("ls", &args(&["-la"])),
            "cd /etc/kubernetes && ls -la"
        );
        let c = cmd_at("/", &TestNode::clean().no_lock_file().0);
        assert!(!c.lock_exists);
        assert_eq!(
            c.in_kubernetes("mv", &args(&["-n", "a.yaml", "manifests/"])),
            format!("cd /etc/kubernetes && (umask 077 && mkdir -p /var/lib/nvke/k8s-cert-renewal && flock -n {LOCK} mv -n a.yaml manifests/)")
        );
    }

    /// SPEC 6 (v1.1, v1.2): a pod down because its manifest was left
    /// staged gets the command that puts it back (`mv -n`: never over an
    /// active copy), after the evidence; the view is ACTION NEEDED.
    #[test]
    fn a_staged_manifest_is_put_back_with_mv_n() {
        let a = advised(&TestNode::clean().staged(Component::KubeApiserver));
        assert_eq!(a.severity, Severity::ActionNeeded);
        assert_eq!(a.not_active, [Component::KubeApiserver]);
        assert_eq!(commands_of(&a), [EVIDENCE, PUT_BACK]);
        assert!(step_of(&a, "kube-apiserver is down")
            .what
            .contains("put it back"));

        // Staged by the node agent: put back from its directory.
        let a = advised(&TestNode::clean().agent_staged(Component::KubeApiserver));
        assert_eq!(
            command_of(&a, "the node agent staged its manifest"),
            format!("cd /etc/kubernetes && flock -n {LOCK} mv -n nvke-cert-renewal-manifests/kube-apiserver.yaml manifests/")
        );

        // In both staging directories: one copy kept, the other set aside
        // (never deleted), either way round.
        let a = advised(
            &TestNode::clean()
                .staged(Component::KubeApiserver)
                .agent_staged(Component::KubeApiserver),
        );
        let aside = "mkdir -p /root/nvke-set-aside && cd /etc/kubernetes && flock -n /var/lib/nvke/k8s-cert-renewal/lock mv -n";
        assert_eq!(
            command_of(&a, "keep the runbook's copy"),
            format!("{aside} nvke-cert-renewal-manifests/kube-apiserver.yaml /root/nvke-set-aside/kube-apiserver.yaml.agent-{STAMP} && {PUT_BACK}")
        );
        assert_eq!(
            command_of(&a, "keep the node agent's copy instead"),
            format!("{aside} nvke-cert-renewal-staging/kube-apiserver.yaml /root/nvke-set-aside/kube-apiserver.yaml.runbook-{STAMP} && cd /etc/kubernetes && flock -n {LOCK} mv -n nvke-cert-renewal-manifests/kube-apiserver.yaml manifests/")
        );

        // In no directory: said, and nothing to paste.
        let a = advised(&TestNode::clean().missing(Component::Etcd));
        assert_eq!(a.severity, Severity::ActionNeeded);
        assert_eq!(step_of(&a, "in no directory").command, None);
    }

    /// SPEC 6: a V2 renewal that died left no receipt: fence it (which
    /// puts back what it staged, so no separate move is printed), or
    /// finish it now under the same ID; its log as one full path. A pod
    /// the fence does not put back (the agent's staging) gets its own step.
    #[test]
    fn a_renewal_that_died_is_fenced_or_finished_under_the_same_id() {
        let n = TestNode::clean()
            .phase(restarting_apiserver("op-1"), None)
            .staged(Component::KubeApiserver)
            .agent_staged(Component::KubeScheduler)
            .log("op-1.log");
        let a = advised(&n);
        assert_eq!(a.severity, Severity::ActionNeeded);
        let fence = step_of(&a, "died while");
        assert!(
            fence.what.starts_with(
                "the renewal op-1 died while restarting kube-apiserver (2 of 4), leaving no receipt: put kube-apiserver back and record it as finished (abandoned)"
            ),
            "{}",
            fence.what
        );
        assert_eq!(
            commands_of(&a),
            [
                EVIDENCE,
                "nvke-cert-runbook --status-only --operation-id op-1 --fence",
                "nvke-cert-runbook --operation-id op-1",
                "tail -n 40 /var/lib/nvke/k8s-cert-renewal/log/op-1.log",
                &format!("cd /etc/kubernetes && flock -n {LOCK} mv -n nvke-cert-renewal-manifests/kube-scheduler.yaml manifests/"),
            ]
        );
        assert!(step_of(&a, "or finish it now")
            .what
            .contains("under the same ID"));
    }

    /// SPEC 6 (v1.2, v1.3): once its operation is recorded failed,
    /// cancelled or abandoned, that ID is spent (a run with it replays the
    /// receipt): the work resumes under a fresh `manual-<stamp>` ID, and no
    /// step names the spent one again.
    #[test]
    fn a_recorded_failure_resumes_under_a_fresh_id_never_the_spent_one() {
        for o in [Outcome::Failed, Outcome::Cancelled, Outcome::Abandoned] {
            let n = TestNode::clean()
                .phase(
                    v2("op-1", PhaseState::RestartPending, Some(Component::Etcd)),
                    Some(o),
                )
                .staged(Component::Etcd);
            let a = advised(&n);
            let spent = step_of(&a, "is recorded");
            assert!(
                spent
                    .what
                    .starts_with(&format!("the renewal op-1 is recorded {o} (its receipt)")),
                "{}",
                spent.what
            );
            assert_eq!(
                spent.command.as_deref(),
                Some(format!("nvke-cert-runbook --operation-id {}", manual()).as_str())
            );
            for c in commands_of(&a) {
                assert!(!c.contains("op-1"), "{o}: {c}");
            }
        }
    }

    /// SPEC 11 (v1.3): a recovery's unfinished work, a leaf still expired,
    /// is finished by `--recover-expired` only: under the same ID while it
    /// has no receipt, under a fresh `recover-<stamp>` once it has one;
    /// the recovery is offered once. A renewal's work is finished the same
    /// way while a leaf is expired (a renewal refuses).
    #[test]
    fn unfinished_work_with_a_leaf_expired_is_finished_by_a_recovery() {
        for (who, file) in [
            ("recovery", recovery(restarting_apiserver("rec-1"))),
            ("renewal", restarting_apiserver("rec-1")),
        ] {
            let died = TestNode::clean()
                .phase(file.clone(), None)
                .leaf_ends("apiserver", EXPIRED);
            let a = advised(&died);
            assert!(
                step_of(&a, "died while")
                    .what
                    .contains("a recovery (--recover-expired: a leaf has expired)"),
                "{who}"
            );
            assert_eq!(
                commands_of(&a)[1..],
                [
                    "nvke-cert-runbook --status-only --operation-id rec-1 --fence",
                    "nvke-cert-runbook --operation-id rec-1 --recover-expired",
                ],
                "{who}"
            );

            let spent = TestNode::clean()
                .phase(file, Some(Outcome::Abandoned))
                .leaf_ends("apiserver", EXPIRED);
            let a = advised(&spent);
            assert_eq!(
                commands_of(&a)[1..],
                [format!(
                    "nvke-cert-runbook --operation-id {} --recover-expired",
                    recover()
                )],
                "{who}"
            );
        }
    }

    /// SPEC 11 (v1.3): a recovery's unfinished work with no leaf expired
    /// any more is finished by the next renewal, as a renewal with the
    /// health gate before each restart; the step's words say so, and no
    /// step asks for `--recover-expired` (refused: no leaf has expired).
    #[test]
    fn a_recoverys_work_without_an_expired_leaf_is_finished_as_a_renewal_with_the_gate() {
        let file = recovery(restarting_apiserver("rec-1"));
        let a = advised(&TestNode::clean().phase(file.clone(), None));
        assert!(
            step_of(&a, "died while")
                .what
                .starts_with("the recovery rec-1 died while"),
            "{:#?}",
            a.next
        );
        assert!(step_of(&a, "died while").what.contains(
            "the next renewal (no leaf has expired: it finishes the recovery's restarts as a renewal, the health gate before each)"
        ));
        let same = step_of(&a, "or finish it now");
        assert!(
            same.what
                .contains("as a renewal with the health gate before each restart"),
            "{}",
            same.what
        );
        assert_eq!(
            same.command.as_deref(),
            Some("nvke-cert-runbook --operation-id rec-1")
        );

        let a = advised(&TestNode::clean().phase(file, Some(Outcome::Abandoned)));
        let spent = step_of(&a, "is recorded abandoned");
        assert!(spent
            .what
            .contains("as a renewal, the health gate before each"));
        assert_eq!(
            spent.command.as_deref(),
            Some(format!("nvke-cert-runbook --operation-id {}", manual()).as_str())
        );
        for a in [
            &a,
            &advised(&TestNode::clean().phase(recovery(restarting_apiserver("rec-1")), None)),
        ] {
            for c in commands_of(a) {
                assert!(!c.contains("--recover-expired"), "{c}");
            }
        }
    }

    /// SPEC 3 and 11: the legacy runbook's unfinished renewal is resumed by
    /// the next legacy run (`--legacy-v1`), or by a recovery under a fresh
    /// ID when a leaf has expired; its log as one full path.
    #[test]
    fn legacy_unfinished_work_is_resumed_by_a_legacy_run_or_a_recovery() {
        let n = TestNode::clean()
            .phase(
                legacy(PhaseState::RestartPending, Some(Component::Etcd)),
                None,
            )
            .log("legacy-v1.log");
        let a = advised(&n);
        assert_eq!(a.severity, Severity::NotClean);
        assert!(step_of(
            &a,
            "legacy runbook's renewal stopped while restarting etcd (1 of 4)"
        )
        .what
        .contains("the next legacy runbook run resumes it"));
        assert_eq!(
            commands_of(&a),
            [
                EVIDENCE,
                "nvke-cert-runbook --legacy-v1",
                "tail -n 40 /var/lib/nvke/k8s-cert-renewal/log/legacy-v1.log",
            ]
        );

        let a = advised(&n.leaf_ends("etcd-peer", EXPIRED));
        assert!(step_of(&a, "legacy runbook's renewal stopped")
            .what
            .contains("a recovery resumes it"));
        assert_eq!(
            commands_of(&a),
            [
                EVIDENCE,
                &format!(
                    "nvke-cert-runbook --operation-id {} --recover-expired",
                    recover()
                ),
                "tail -n 40 /var/lib/nvke/k8s-cert-renewal/log/legacy-v1.log",
            ]
        );
    }

    /// SPEC 4 and 6: a malformed phase file refuses every renewal: it is
    /// shown (`cat -v`, never moved or removed), and a pod that is down
    /// still gets its put-back.
    #[test]
    fn a_malformed_phase_file_is_shown_and_a_pod_down_still_goes_back() {
        let a = advised(
            &TestNode::clean()
                .malformed_phase()
                .staged(Component::KubeApiserver),
        );
        assert!(step_of(&a, "cannot be read as one")
            .what
            .contains("every renewal refuses this node until it is repaired"));
        assert_eq!(
            commands_of(&a),
            [
                EVIDENCE,
                "cat -v /var/lib/nvke/k8s-cert-renewal/phase",
                PUT_BACK
            ]
        );
    }

    /// SPEC 10 and 11: an expired leaf is ACTION NEEDED and recovered
    /// under a fresh `recover-<stamp>` ID; under an expired CA a recovery
    /// would refuse, and the step says to rotate the CA instead.
    #[test]
    fn expired_leaves_are_recovered_under_a_fresh_recover_id() {
        let n = TestNode::clean()
            .leaf_ends("apiserver", EXPIRED)
            .leaf_ends("admin.conf", EXPIRED + time::Duration::hours(1));
        let a = advised(&n);
        assert_eq!(a.severity, Severity::ActionNeeded);
        assert!(a.expired);
        assert_eq!(
            a.expiry,
            Some((
                Expiry::Expired,
                "apiserver expired 2026-11-28 (2 days ago) (and 1 more)".to_string()
            ))
        );
        assert_eq!(
            commands_of(&a),
            [
                EVIDENCE,
                &format!(
                    "nvke-cert-runbook --operation-id {} --recover-expired",
                    recover()
                ),
            ]
        );

        let a = advised(&n.cas_end(EXPIRED));
        assert!(step_of(&a, "rotate the CA first")
            .what
            .contains("a recovery refuses"));
        assert_eq!(
            commands_of(&a),
            [EVIDENCE, "nvke-cert-runbook --status-only"]
        );
    }

    /// SPEC 4 step 8 (v1.3): a due leaf under a CA that ends within the
    /// threshold is ACTION NEEDED (no renewal can help): its step says to
    /// rotate the CA, and no renewal is offered. A CA ending soon with no
    /// leaf due under it stays a warning.
    #[test]
    fn a_due_leaf_under_a_ca_that_ends_first_is_action_needed() {
        let n = TestNode::clean()
            .leaf_ends("apiserver", DUE)
            .cas_end(time::macros::datetime!(2026-12-20 00:00:00 UTC));
        let a = advised(&n);
        assert_eq!(a.severity, Severity::ActionNeeded);
        assert_eq!(a.ca_walls.len(), 1, "{:?}", a.ca_walls);
        assert!(
            a.ca_walls[0].starts_with("ca ca ends 2026-12-20T00:00:00Z"),
            "{:?}",
            a.ca_walls
        );
        let s = step_of(&a, "ca ca ends 2026-12-20T00:00:00Z");
        assert!(s.what.contains("rotate the CA"), "{}", s.what);
        assert!(
            !a.next.iter().any(|n| n.what.starts_with("renew before")),
            "{:?}",
            a.next
        );
        let quiet =
            advised(&TestNode::clean().cas_end(time::macros::datetime!(2026-12-20 00:00:00 UTC)));
        assert!(quiet.ca_walls.is_empty());
        assert_ne!(quiet.severity, Severity::ActionNeeded);
    }

    /// SPEC 6 and 10: the kubelet's expired client certificate is ACTION
    /// NEEDED, with the step to renew it by hand.
    #[test]
    fn an_expired_kubelet_client_certificate_is_action_needed() {
        let a = advised(&TestNode::clean().kubelet_client_ends(EXPIRED));
        assert_eq!(a.severity, Severity::ActionNeeded);
        assert!(a.expired);
        assert_eq!(
            a.kubelet_expired,
            ["kubelet client certificate expired 2026-11-28 (2 days ago)"]
        );
        assert!(step_of(&a, "the kubelet's client certificate has expired")
            .command
            .is_some());
    }

    /// SPEC 10 ("Expiry severity"): a due leaf on a node otherwise clean
    /// is RENEWAL DUE, clean, with one step: a renewal by hand under a
    /// fresh `manual-<stamp>` ID at the view's threshold. On a node that
    /// is not clean, the repair comes first and no renewal is offered.
    #[test]
    fn a_due_leaf_on_a_clean_node_gets_a_manual_renewal_at_the_threshold() {
        let n = TestNode::clean().leaf_ends("apiserver", DUE);
        let a = advised(&n);
        assert_eq!(a.severity, Severity::Clean);
        assert_eq!(
            a.expiry,
            Some((Expiry::Due, "apiserver in 13 days (2026-12-13)".to_string()))
        );
        assert_eq!(
            a.warnings,
            ["1 certificate(s) due for renewal (within 30 days): apiserver"]
        );
        assert_eq!(a.next.len(), 1);
        assert!(a.next[0].what.starts_with("renew before 2026-12-13"));
        assert_eq!(
            a.next[0].command.as_deref(),
            Some(
                format!(
                    "nvke-cert-runbook --operation-id {} --threshold-days 30",
                    manual()
                )
                .as_str()
            )
        );
        let s = &n.0;
        let at_45 = advise(s, &reasons(s), &[], &cmd_at("/", s), NOW, 45);
        assert!(at_45.next[0]
            .command
            .as_deref()
            .is_some_and(|c| c.ends_with(" --threshold-days 45")));

        let a = advised(&n.staged(Component::Etcd));
        for c in commands_of(&a) {
            assert!(!c.contains("--threshold-days"), "{c}");
        }
    }

    /// SPEC 7 (v1.1) and 6: a staging conflict (active and staged): copies
    /// identical, the staged one is set aside (never deleted); copies
    /// differing, either one is kept, the other set aside. All four
    /// active: NOT CLEAN, not ACTION NEEDED.
    #[test]
    fn staging_conflicts_set_a_copy_aside_never_delete_it() {
        let aside =
            format!("mkdir -p /root/nvke-set-aside && cd /etc/kubernetes && flock -n {LOCK} mv -n");
        let n = TestNode::clean().both(Component::KubeApiserver, "agent");
        let a = advise_at(
            "/",
            &n,
            &[conflict(Component::KubeApiserver, "agent", true)],
        );
        assert_eq!(a.severity, Severity::NotClean);
        assert!(a.not_active.is_empty());
        assert_eq!(
            command_of(&a, "is identical to the active one: set it aside"),
            format!("{aside} nvke-cert-renewal-manifests/kube-apiserver.yaml /root/nvke-set-aside/kube-apiserver.yaml.staged-{STAMP}")
        );
        assert!(step_of(&a, "identical")
            .what
            .contains("the node agent's staging directory"));

        let n = TestNode::clean().both(Component::KubeApiserver, "runbook");
        let a = advise_at(
            "/",
            &n,
            &[conflict(Component::KubeApiserver, "runbook", false)],
        );
        assert_eq!(
            command_of(&a, "keep the active one"),
            format!("{aside} nvke-cert-renewal-staging/kube-apiserver.yaml /root/nvke-set-aside/kube-apiserver.yaml.staged-{STAMP}")
        );
        assert_eq!(
            command_of(&a, "or keep the staged one instead"),
            format!("{aside} manifests/kube-apiserver.yaml /root/nvke-set-aside/kube-apiserver.yaml.active-{STAMP} && {PUT_BACK}")
        );
        for c in commands_of(&a) {
            assert!(!c.split(' ').any(|w| w == "rm"), "{c}");
        }
    }

    /// SPEC 6 (v1.1, v1.2): while a process holds the lock nothing is
    /// moved: a renewal at work is left alone (IN PROGRESS, one step: look
    /// again); a holder that is not the runbook on record is found out
    /// first (its pid), even with a pod down.
    #[test]
    fn nothing_is_moved_while_the_lock_is_held() {
        let n = TestNode::clean()
            .phase(restarting_apiserver("op-1"), None)
            .staged(Component::KubeApiserver)
            .held_by_runbook("op-1");
        let a = advised(&n);
        assert_eq!(a.severity, Severity::InProgress);
        assert_eq!(
            a.in_progress.as_deref(),
            Some("renew op-1 (pid 4242), restarting kube-apiserver (2 of 4), running for 10m")
        );
        assert_eq!(commands_of(&a), ["nvke-cert-runbook --status-only"]);
        assert!(a.next[0].what.contains("do not move manifests"));

        let a = advised(
            &TestNode::clean()
                .staged(Component::KubeApiserver)
                .held_by_stranger(),
        );
        assert_eq!(a.severity, Severity::ActionNeeded);
        assert_eq!(commands_of(&a), ["ps -o pid,etime,args --pid 999"]);
        let a = advised(&TestNode::clean().held_by_stranger());
        assert_eq!(a.severity, Severity::NotClean);
    }

    /// SPEC 2 and 6: a refused state directory (and so its lock) is
    /// repaired first; no manifest is moved until then.
    #[test]
    fn a_refused_state_directory_is_repaired_before_any_move() {
        let a = advised(
            &TestNode::clean()
                .state_refused()
                .staged(Component::KubeApiserver),
        );
        assert_eq!(
            commands_of(&a),
            [EVIDENCE, "ls -ld /var/lib/nvke/k8s-cert-renewal"]
        );
    }

    /// SPEC 6 (v1.2): the evidence bundle first whenever the node is not
    /// clean, before any step changes it; a clean node gets no step.
    #[test]
    fn the_evidence_comes_first_and_a_clean_node_has_no_step() {
        let a = advised(&TestNode::clean());
        assert_eq!(a.severity, Severity::Clean);
        assert!(a.next.is_empty() && a.warnings.is_empty(), "{a:#?}");
        assert!(a.expiry.is_none() && !a.expired);
        for n in scenarios() {
            let a = advise_at("/", &n.1, &n.2);
            if !reasons(&n.1 .0).is_empty() && !n.1 .0.lock.is_held() {
                assert_eq!(a.next[0].command.as_deref(), Some(EVIDENCE), "{}", n.0);
            }
        }
    }

    /// SPEC 11: a recovery that ended with the cluster unhealthy (etcd
    /// without quorum) is followed by the same recovery on every other
    /// control-plane node, then `--check`: while the node is not clean.
    #[test]
    fn after_a_recovery_the_other_nodes_come_next_while_not_clean() {
        let n = TestNode::clean().recovered_unhealthy("recover-1");
        let s = &n.0;
        let a = advise(
            s,
            &["etcd has no quorum"],
            &[],
            &cmd_at("/", s),
            NOW,
            THRESHOLD,
        );
        let other = step_of(&a, "run the same recovery (--recover-expired");
        assert!(other
            .what
            .starts_with("this node was recovered by recover-1"));
        assert_eq!(other.command.as_deref(), Some("nvke-cert-runbook --check"));
        let a = advise::<&str>(s, &[], &[], &cmd_at("/", s), NOW, THRESHOLD);
        assert!(a.next.is_empty(), "{:#?}", a.next);
    }

    /// SPEC 7 (v1.1): a command holding a control character (a `--root`
    /// that has one) is shown escaped: none reaches the terminal.
    #[test]
    fn a_control_character_never_reaches_the_terminal() {
        let a = advise_at(
            "/srv/a\nb\x1b[31m",
            &TestNode::clean().staged(Component::Etcd),
            &[],
        );
        let mut out = String::new();
        render_next(&mut out, &a.next, None);
        assert!(out.starts_with("next:\n  1. "));
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert_eq!(out.lines().count(), 1 + 2 * a.next.len(), "{out}");
    }

    /// Every state the advice names, as (name, node, conflicts).
    fn scenarios() -> Vec<(&'static str, TestNode, Vec<StagingConflict>)> {
        use Component::{Etcd, KubeApiserver, KubeScheduler};
        let clean = TestNode::clean;
        let v2_done = v2("op-0", PhaseState::Done, None);
        let mut v = vec![
            ("clean", clean(), vec![]),
            ("staged", clean().staged(KubeApiserver), vec![]),
            ("agent staged", clean().agent_staged(Etcd), vec![]),
            (
                "staged twice",
                clean().staged(Etcd).agent_staged(Etcd),
                vec![],
            ),
            ("missing", clean().missing(KubeScheduler), vec![]),
            ("no lock file", clean().no_lock_file().staged(Etcd), vec![]),
            ("done", clean().phase(v2_done, None), vec![]),
            ("malformed", clean().malformed_phase().staged(Etcd), vec![]),
            ("state refused", clean().state_refused(), vec![]),
            (
                "held",
                clean()
                    .held_by_runbook("op-1")
                    .phase(restarting_apiserver("op-1"), None),
                vec![],
            ),
            ("stranger", clean().held_by_stranger(), vec![]),
            ("expired", clean().leaf_ends("apiserver", EXPIRED), vec![]),
            (
                "expired CA",
                clean().leaf_ends("apiserver", EXPIRED).cas_end(EXPIRED),
                vec![],
            ),
            ("due", clean().leaf_ends("etcd-peer", DUE), vec![]),
            ("kubelet", clean().kubelet_client_ends(EXPIRED), vec![]),
            (
                "recovered",
                clean().recovered_unhealthy("recover-1").staged(Etcd),
                vec![],
            ),
            (
                "identical",
                clean().both(KubeApiserver, "agent"),
                vec![conflict(KubeApiserver, "agent", true)],
            ),
            (
                "differ",
                clean().both(KubeApiserver, "runbook"),
                vec![conflict(KubeApiserver, "runbook", false)],
            ),
        ];
        for expired in [false, true] {
            let at = |n: TestNode| {
                if expired {
                    n.leaf_ends("apiserver", EXPIRED)
                } else {
                    n
                }
            };
            let staged = || {
                clean()
                    .staged(KubeApiserver)
                    .log("op-1.log")
                    .log("legacy-v1.log")
            };
            v.push((
                "died",
                at(staged().phase(restarting_apiserver("op-1"), None)),
                vec![],
            ));
            v.push((
                "recovery died",
                at(staged().phase(recovery(restarting_apiserver("op-1")), None)),
                vec![],
            ));
            v.push((
                "legacy",
                at(staged().phase(legacy(PhaseState::Renewing, None), None)),
                vec![],
            ));
            for o in [Outcome::Failed, Outcome::Abandoned] {
                v.push((
                    "spent",
                    at(staged().phase(restarting_apiserver("op-1"), Some(o))),
                    vec![],
                ));
                v.push((
                    "recovery spent",
                    at(staged().phase(recovery(restarting_apiserver("op-1")), Some(o))),
                    vec![],
                ));
            }
        }
        v
    }

    /// SPEC 6 (v1.2, v1.3): no step holds a placeholder (`ID`, `PATH`) or
    /// a section of SPEC; every operation ID a command carries is a valid
    /// one, a fresh one exactly `manual-<stamp>` or `recover-<stamp>`, and
    /// never the one a receipt has spent; every move or removal runs under
    /// the renewal lock. Under any root.
    #[test]
    fn no_step_holds_a_placeholder_and_every_id_and_move_is_sound() {
        let mut fresh_seen = 0;
        for root in ["/", "/srv/it's a node"] {
            for (name, n, conflicts) in scenarios() {
                let a = advise_at(root, &n, &conflicts);
                let c = cmd_at(root, &n.0);
                let lock = format!("flock -n {} ", crate::contract::screen::shell_word(&c.lock));
                // A receipt spent the phase file's ID: no step names it.
                let spent = match (&n.0.phase.file, &n.0.phase.receipt_of_phase_op) {
                    (Some(PhaseFile::V2(p)), Some(ReceiptLookup::Found(_))) => {
                        Some(format!(" {} ", p.operation_id))
                    }
                    _ => None,
                };
                for s in &a.next {
                    assert!(!s.what.contains("SPEC"), "{name}: {}", s.what);
                    let Some(command) = &s.command else { continue };
                    assert!(!command.contains("SPEC"), "{name}: {command}");
                    if let Some(spent) = &spent {
                        assert!(
                            !format!("{command} ").contains(spent.as_str()),
                            "{name}: {command}"
                        );
                    }
                    for w in [" ID ", " PATH "] {
                        assert!(!command.contains(w), "{name}: {command}");
                    }
                    let words: Vec<&str> = command.split(' ').collect();
                    for w in &words {
                        assert!(
                            !["ID", "PATH", "<ID>", "<PATH>"].contains(w),
                            "{name}: {command}"
                        );
                    }
                    for pair in words.windows(2) {
                        if pair[0] != "--operation-id" {
                            continue;
                        }
                        let id = crate::rules::opid::OperationId::parse(pair[1]);
                        assert!(id.is_ok(), "{name}: {command}");
                        if pair[1].starts_with("manual-") || pair[1].starts_with("recover-") {
                            fresh_seen += 1;
                            assert!(
                                [manual(), recover()].contains(&pair[1].to_string()),
                                "{name}: {command}"
                            );
                        }
                    }
                    for part in command.split(" && ") {
                        let part = part.trim_start_matches('(');
                        if part.split(' ').any(|w| w == "mv" || w == "rm") {
                            assert!(part.starts_with(&lock), "{name}: {command}");
                        }
                    }
                }
            }
        }
        assert!(fresh_seen >= 10, "{fresh_seen}");
    }
}
