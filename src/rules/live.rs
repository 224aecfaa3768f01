//! The live node's judgement (SPEC 10, v1.2): what one observation of the
//! runtime and the components says, judged once, for the operator view,
//! check and the renewal's health gate alike. Pure: the observation is
//! made in [`crate::tools::live`]; here it is only judged and worded.

pub use crate::rules::cri::Exit;
use crate::rules::cri::{Container, CriError, Listing};
use crate::rules::progress::{Reason, ReasonKind};
use time::{Duration, OffsetDateTime};

/// A running container younger than this, restarted in place in its pod
/// sandbox (an earlier one exited there), has not yet shown that it stays
/// up: it is `restarting` (a crash loop caught while a container runs),
/// and the gate waits. A restart by the runbook (its manifest moved out and
/// back) gets a new sandbox and is not one.
pub const STAY_UP: Duration = Duration::seconds(60);

/// What one listing says of a component's static pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containers {
    /// A container runs. `restarts`: how many times the kubelet restarted
    /// it (`metadata.attempt`: across the pod's sandboxes, a static pod's
    /// UID being its manifest's, so a restart by moving the manifest counts
    /// too). `previous`: the newest earlier container of it that exited
    /// in this same sandbox (the kubelet restarted it in place: a crash,
    /// or a liveness probe's kill), with how it ended when asked.
    Running {
        id: String,
        since: Option<OffsetDateTime>,
        restarts: u32,
        previous: Option<Previous>,
    },
    /// None runs; the newest one exited (`exit` from `crictl inspect`).
    Exited {
        id: String,
        exit: Exit,
        restarts: u32,
    },
    /// The static pod has no container at all.
    Absent,
}

/// The container that ran before the running one in its sandbox (a crash
/// loop's last crash): its ID (for its log) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    pub id: String,
    pub exit: Exit,
}

/// A health endpoint's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy,
    /// What it answered instead (bounded, one line).
    Unhealthy(String),
}

/// What a serving port presents, against its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The file's certificate.
    Current,
    /// Another, still valid.
    Other,
    /// A certificate past its notAfter.
    Expired(OffsetDateTime),
}

/// `Err(why)`: not checked, and why.
pub type Seen<T> = Result<T, Unseen>;

/// Why something of the live node was not seen, by the kind of failure.
/// The tools' errors (the runtime's, a probe's, the node's files') cannot
/// be named here: where the observation was made ([`crate::tools::live`])
/// they are put in words, under the kind they are; the rest are worded
/// here. Shown as those words (`Display`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unseen {
    /// The runtime could not be listed (crictl missing, the runtime
    /// unreachable, its answer not understood): the runtime's error.
    #[error("{0}")]
    Runtime(String),
    /// The listing cannot be judged for the component: containers of more
    /// than one static pod.
    #[error(transparent)]
    Listing(#[from] CriError),
    /// What to ask could not be read from the node (the port or address in
    /// a manifest, the client identity, the certificate file to compare).
    #[error("{0}")]
    Target(String),
    /// The endpoint gave no usable answer (refused, timed out, the
    /// handshake failed, no HTTP answer, no certificate presented).
    #[error("{0}")]
    Probe(String),
    /// The endpoint refused the connection (nothing listens there): a
    /// failed probe as the kubelet counts it, `starting` or `unhealthy` by
    /// the container's age (SPEC 12, v1.3).
    #[error("{0}")]
    Refused(String),
    /// A file the component reads at start does not exist (its node path).
    #[error("restart needed: {0} does not exist")]
    Missing(String),
    /// When a file was last written could not be read.
    #[error("{0}")]
    File(String),
    /// The thread that asked panicked.
    #[error("the probe panicked")]
    Panicked,
    /// Nothing asked it.
    #[error("not asked")]
    NotAsked,
}

/// A file a component reads at start, and when it was last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The node path (`/etc/kubernetes/pki/apiserver.crt`).
    pub file: String,
    pub at: OffsetDateTime,
}

/// One port's served certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub port: u16,
    /// The file it should serve (node path).
    pub file: String,
    pub served: Seen<Served>,
}

/// Everything observed of one static pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// `etcd`, `kube-apiserver`, ... or another static pod (`kube-vip`).
    pub name: String,
    pub containers: Seen<Containers>,
    /// None: this pod has no health endpoint to ask (kube-vip), or the
    /// caller does not ask it.
    pub health: Option<Seen<Health>>,
    pub ports: Vec<Port>,
    /// The newest of the files it reads at start (none: none is known).
    pub newest: Option<Seen<Written>>,
    /// etcd: what its members say of the cluster (the quorum rule of the
    /// renewal's gate); None: not asked (not etcd, or its container does
    /// not run).
    pub quorum: Option<QuorumSeen>,
    /// How long its probe may fail while the container starts (SPEC 12:
    /// the startup probe's `initialDelaySeconds + failureThreshold x
    /// periodSeconds`, else the probe's `initialDelaySeconds`); None: not
    /// known (a failed probe is then judged as it answers).
    pub allowance: Option<Duration>,
}

/// etcd's quorum as asked, by the renewal's gate's rule
/// ([`crate::tools::etcd`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuorumSeen {
    /// Enough healthy voters: the gate passes it.
    Healthy,
    /// What the gate waits on or refuses, in the quorum rule's words: too
    /// few healthy voters, two voters, a learner, an answer that is not a
    /// success.
    Problem(String),
    /// etcd's members could not be asked (no answer in time, an answer
    /// that cannot be read, nothing to ask with), and why: a finding
    /// `not_checked` (SPEC 10), not `quorum`. The gate waits on it alike.
    NotChecked(Unseen),
}

/// The serving certificates kubeadm renews (SPEC 2): any other file a
/// component serves is reported, never asked to change (SPEC 12, v1.3).
pub const KUBEADM_SERVING: [&str; 3] = [
    "/etc/kubernetes/pki/apiserver.crt",
    "/etc/kubernetes/pki/etcd/server.crt",
    "/etc/kubernetes/pki/etcd/peer.crt",
];

/// Whether kubeadm renews the serving file at `node_path`.
pub fn kubeadm_renews(node_path: &str) -> bool {
    KUBEADM_SERVING.contains(&node_path)
}

/// `kube-apiserver serves /etc/ssl/x.pem, which kubeadm does not renew`.
pub fn unmanaged_words(component: &str, node_path: &str) -> String {
    format!("{component} serves {node_path}, which kubeadm does not renew")
}

/// What is wrong with one component, worst first ([`judge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    NotRunning(Option<Exit>),
    /// A crash loop caught while a container runs: how often the kubelet
    /// restarted it, since when the running one is up, and how the one
    /// before it ended (when the runtime said).
    Restarting {
        restarts: u32,
        since: OffsetDateTime,
        last: Option<Exit>,
    },
    Unhealthy(String),
    /// Its probe fails (`answer`) while its container, up since `since`,
    /// is still within the probe's start `allowance` (SPEC 12, v1.3): the
    /// kubelet does not count it yet; the gate waits.
    Starting {
        answer: String,
        since: OffsetDateTime,
        allowance: Duration,
    },
    ServesExpired {
        port: u16,
        not_after: OffsetDateTime,
    },
    /// The containers or the health endpoint could not be asked.
    NotChecked(String),
    /// etcd's cluster, as its members say: not enough healthy voters, two
    /// voters, a learner. This node's member may be fine; a renewal waits.
    Quorum(String),
    /// What a port serves, or when a file was written, could not be
    /// asked: not clean, but the gate (which asks neither) passes it.
    AsideNotChecked(String),
    ServesOther {
        port: u16,
        file: String,
    },
    RestartNeeded {
        file: String,
        renewed: OffsetDateTime,
        started: OffsetDateTime,
    },
}

/// How bad a finding is for the operator view (SPEC 6, v1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Weight {
    /// Exit 1: not clean.
    NotClean,
    /// Exit 4: an operator must act.
    ActionNeeded,
}

impl Finding {
    pub fn weight(&self) -> Weight {
        match self {
            Finding::NotRunning(_)
            | Finding::Restarting { .. }
            | Finding::Unhealthy(_)
            | Finding::ServesExpired { .. } => Weight::ActionNeeded,
            Finding::NotChecked(_)
            | Finding::Starting { .. }
            | Finding::Quorum(_)
            | Finding::AsideNotChecked(_)
            | Finding::ServesOther { .. }
            | Finding::RestartNeeded { .. } => Weight::NotClean,
        }
    }

    /// Whether the renewal's health gate waits (or fails) on it: what the
    /// gate asks (containers, health endpoints, etcd's quorum). What a port
    /// serves and when files were written it does not ask: a component
    /// that serves another or an expired certificate, or needs a restart,
    /// passes the gate as long as it answers healthy (an expired one
    /// seldom does: its clients refuse it, and the gate sees that).
    pub fn blocks_gate(&self) -> bool {
        !matches!(
            self,
            Finding::ServesOther { .. }
                | Finding::ServesExpired { .. }
                | Finding::RestartNeeded { .. }
                | Finding::AsideNotChecked(_)
        )
    }

    /// The JSON kind (`not_running`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::NotRunning(_) => "not_running",
            Finding::Restarting { .. } => "restarting",
            Finding::Unhealthy(_) => "unhealthy",
            Finding::Starting { .. } => "starting",
            Finding::ServesExpired { .. } => "serves_expired",
            Finding::Quorum(_) => "quorum",
            Finding::NotChecked(_) | Finding::AsideNotChecked(_) => "not_checked",
            Finding::ServesOther { .. } => "serves_other",
            Finding::RestartNeeded { .. } => "restart_needed",
        }
    }

    /// In words, measured against `wall` (the real clock: the runtime's
    /// and the files' times are real ones).
    pub fn words(&self, wall: OffsetDateTime) -> String {
        match self {
            Finding::NotRunning(None) => "not running (no container)".to_string(),
            Finding::NotRunning(Some(e)) => format!("not running: {}", exited(e, wall)),
            Finding::Restarting {
                restarts,
                since,
                last,
            } => format!(
                "crash-looping: {restarts} {}, up {}{}",
                plural(*restarts, "restart"),
                span(wall - *since),
                last.as_ref()
                    .map(|e| format!("; the one before {}", exited(e, wall)))
                    .unwrap_or_default(),
            ),
            Finding::Unhealthy(a) => format!("unhealthy: {a}"),
            Finding::Starting {
                answer,
                since,
                allowance,
            } => format!(
                "starting: {answer} (up {} of the probe's {} start allowance)",
                span(wall - *since),
                span(*allowance)
            ),
            Finding::ServesExpired { port, not_after } => format!(
                "serves an expired certificate on port {port} (expired {})",
                crate::rules::expiry::date(*not_after)
            ),
            Finding::NotChecked(why) | Finding::AsideNotChecked(why) => {
                format!("not checked: {why}")
            }
            Finding::Quorum(what) => format!("cluster: {what}"),
            Finding::ServesOther { port, file } => {
                format!("serves an older certificate on port {port}, not {file}'s")
            }
            Finding::RestartNeeded {
                file,
                renewed,
                started,
            } => format!(
                "restart needed: {file} renewed {} ago, container started {} ago",
                span(wall - *renewed),
                span(wall - *started)
            ),
        }
    }
}

fn plural(n: u32, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// `exited 1 (its own error), 40 s ago`; `exited` alone when the runtime
/// did not say.
pub fn exited(e: &Exit, wall: OffsetDateTime) -> String {
    let mut s = match e.code {
        Some(c) => format!("exited {c} ({})", exit_meaning(c)),
        None => "exited".to_string(),
    };
    if let Some(t) = e.finished {
        s.push_str(&format!(", {} ago", span(wall - t)));
    }
    s
}

/// What a container's exit code means, in words (SPEC 6, v1.3): a signal's
/// 128 + n by the signal, else the component's own.
pub fn exit_meaning(code: i32) -> String {
    match code {
        0 => "ended by itself".to_string(),
        126 | 127 => "could not run its command".to_string(),
        134 => "aborted".to_string(),
        137 => "killed".to_string(),
        139 => "segmentation fault".to_string(),
        143 => "terminated".to_string(),
        c if (129..=192).contains(&c) => format!("signal {}", c - 128),
        _ => "its own error".to_string(),
    }
}

/// What an exit code says of why the container ended, for the step that
/// shows why (the kubelet's journal and its log say which).
pub fn exit_causes(code: Option<i32>) -> Option<&'static str> {
    match code {
        Some(137) => Some("out of memory, a failed liveness probe, or a stop"),
        Some(143) => Some("stopped by the kubelet or by hand"),
        _ => None,
    }
}

/// A duration for people: `40 s`, `12 min`, `3 h`, `5 days` (never
/// negative: a clock a little ahead says `0 s`).
pub fn span(d: Duration) -> String {
    let s = d.whole_seconds().max(0);
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// The container whose end says why (its exit asked of the runtime, its
/// log shown): when one runs, the newest that exited before it in its
/// sandbox (a crash loop's last crash), else the newest.
pub fn last_ended<'a>(mine: &[&'a Container]) -> Option<&'a Container> {
    match crate::rules::cri::running(mine) {
        Some(r) => mine
            .iter()
            .find(|c| c.id != r.id && c.pod_sandbox_id == r.pod_sandbox_id && !c.is_running())
            .copied(),
        None => mine.first().copied(),
    }
}

/// The component's containers from one listing (newest first, already
/// narrowed to its static pod): the running one, else the newest exited
/// one with `exit` (what inspect said of it, when asked).
pub fn containers(mine: &[&Container], exit: Option<Exit>) -> Containers {
    if let Some(r) = crate::rules::cri::running(mine) {
        return Containers::Running {
            id: r.id.clone(),
            since: r.created(),
            restarts: r.attempt(),
            previous: last_ended(mine).map(|c| Previous {
                id: c.id.clone(),
                exit: exit.unwrap_or_default(),
            }),
        };
    }
    match mine.first() {
        Some(c) => Containers::Exited {
            id: c.id.clone(),
            exit: exit.unwrap_or_default(),
            restarts: c.attempt(),
        },
        None => Containers::Absent,
    }
}

/// The component's containers as a listing shows them, or why not.
pub fn from_listing(listing: &Seen<Listing>, name: &str, exit: Option<Exit>) -> Seen<Containers> {
    in_listing(listing.as_ref().map_err(Clone::clone)?, name, exit)
}

/// The component's containers in a listing (two static pods: why not).
pub fn in_listing(l: &Listing, name: &str, exit: Option<Exit>) -> Seen<Containers> {
    let mine = l.component(name)?;
    Ok(containers(&mine, exit))
}

/// What is wrong with one component, worst first; empty: healthy.
pub fn judge(o: &Observed, wall: OffsetDateTime) -> Vec<Finding> {
    let mut v = Vec::new();
    let mut started = None;
    match &o.containers {
        Err(why) => v.push(Finding::NotChecked(format!("containers: {why}"))),
        Ok(Containers::Absent) => v.push(Finding::NotRunning(None)),
        Ok(Containers::Exited { exit, .. }) => v.push(Finding::NotRunning(Some(*exit))),
        Ok(Containers::Running {
            since,
            restarts,
            previous,
            ..
        }) => {
            started = *since;
            if let Some(s) = since {
                if let Some(p) = previous.as_ref().filter(|_| wall - *s < STAY_UP) {
                    v.push(Finding::Restarting {
                        restarts: *restarts,
                        since: *s,
                        last: (p.exit != Exit::default()).then_some(p.exit),
                    });
                }
            }
        }
    }
    let running = started.is_some() || matches!(o.containers, Ok(Containers::Running { .. }));
    // A failed probe as the kubelet counts it (an answer other than
    // 2xx/3xx, a refused connection), by the container's age against the
    // probe's start allowance (SPEC 12, v1.3).
    let failed = |answer: &str| match (started, o.allowance) {
        (Some(s), Some(allowance)) if wall - s < allowance => Finding::Starting {
            answer: answer.to_string(),
            since: s,
            allowance,
        },
        _ => Finding::Unhealthy(answer.to_string()),
    };
    match &o.health {
        None | Some(Ok(Health::Healthy)) => {}
        // A component that does not run cannot answer: its endpoint says
        // nothing more.
        Some(_) if !running && o.containers.is_ok() => {}
        Some(Ok(Health::Unhealthy(a))) => v.push(failed(a)),
        // Refused, with the container's age known: the kubelet's count.
        // Without it (no start time, no allowance, the containers not
        // listed) the runbook could not judge it: not checked.
        Some(Err(Unseen::Refused(a))) if started.is_some() && o.allowance.is_some() => {
            v.push(failed(a))
        }
        Some(Err(why)) => v.push(Finding::NotChecked(why.to_string())),
    }
    for p in &o.ports {
        match &p.served {
            Ok(Served::Current) => {}
            Ok(Served::Expired(t)) => v.push(Finding::ServesExpired {
                port: p.port,
                not_after: *t,
            }),
            Ok(Served::Other) => v.push(Finding::ServesOther {
                port: p.port,
                file: p.file.clone(),
            }),
            // Not running: nothing serves; already said.
            Err(_) if !running => {}
            Err(why) => v.push(Finding::AsideNotChecked(format!("port {}: {why}", p.port))),
        }
    }
    match &o.quorum {
        Some(QuorumSeen::Problem(what)) => v.push(Finding::Quorum(what.clone())),
        Some(QuorumSeen::NotChecked(why)) => v.push(Finding::NotChecked(format!("cluster: {why}"))),
        Some(QuorumSeen::Healthy) | None => {}
    }
    match (&o.newest, started) {
        (Some(Ok(w)), Some(s)) if w.at > s => v.push(Finding::RestartNeeded {
            file: w.file.clone(),
            renewed: w.at,
            started: s,
        }),
        (Some(Err(why)), Some(_)) => v.push(Finding::AsideNotChecked(why.to_string())),
        // Running, with files to compare, and no start time: not checked.
        (Some(Ok(_)), None) if running => v.push(Finding::AsideNotChecked(
            "restart needed: the runtime gives no start time for the container".to_string(),
        )),
        _ => {}
    }
    v.sort_by_key(|f| std::cmp::Reverse(f.weight()));
    v
}

/// The gate's verdict on one component: `Err` with the first finding it
/// waits on, in words.
pub fn gate(o: &Observed, wall: OffsetDateTime) -> Result<(), Blocked> {
    match judge(o, wall).into_iter().find(Finding::blocks_gate) {
        None => Ok(()),
        Some(finding) => Err(Blocked {
            name: o.name.clone(),
            finding,
            wall,
        }),
    }
}

/// The finding the gate waits on, for the pod `name`; in words (measured
/// against `wall`) only when shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} {}", .finding.words(*.wall))]
pub struct Blocked {
    pub name: String,
    pub finding: Finding,
    pub wall: OffsetDateTime,
}

/// A served leaf (DER) against its file's (DER), at `now` (the clock
/// certificates are judged by).
pub fn served(
    presented: &[u8],
    file: &[u8],
    presented_not_after: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Served {
    if presented == file {
        return match presented_not_after {
            Some(t) if crate::rules::expiry::is_expired(now, t) => Served::Expired(t),
            _ => Served::Current,
        };
    }
    match presented_not_after {
        Some(t) if crate::rules::expiry::is_expired(now, t) => Served::Expired(t),
        _ => Served::Other,
    }
}

/// One line of an HTTP health answer, for a finding: the status and the
/// first failed check of a `/readyz?verbose`-style body, else its first
/// line; printable and at most 120 characters.
pub fn answer_words(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text
        .lines()
        .find(|l| l.starts_with("[-]"))
        .or_else(|| text.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim();
    let clean: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect();
    if clean.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {clean}")
    }
}

/// kube-apiserver's `/readyz`, kube-controller-manager's and
/// kube-scheduler's `/healthz`: 200 `ok` is healthy (a verbose answer
/// ends `check passed`); a 200 with another body is not what they send.
pub fn http_health(status: u16, body: &[u8]) -> Health {
    let text = String::from_utf8_lossy(body);
    let t = text.trim();
    match status {
        200 if t == "ok" || t.ends_with("check passed") => Health::Healthy,
        200 => Health::Unhealthy(format!("{}, not ok", answer_words(status, body))),
        _ => Health::Unhealthy(answer_words(status, body)),
    }
}

/// etcd's `/health`: 200 and `{"health":"true"}` is healthy.
pub fn etcd_health(status: u16, body: &[u8]) -> Health {
    #[derive(serde::Deserialize)]
    struct H {
        health: String,
        #[serde(default)]
        reason: String,
    }
    match serde_json::from_slice::<H>(body) {
        Ok(h) if status == 200 && h.health == "true" => Health::Healthy,
        Ok(h) if !h.reason.is_empty() => Health::Unhealthy(format!(
            "HTTP {status}: health {}: {}",
            h.health,
            answer_words(status, h.reason.as_bytes())
                .trim_start_matches(&format!("HTTP {status}: "))
        )),
        Ok(h) => Health::Unhealthy(format!("HTTP {status}: health {}", h.health)),
        Err(_) => Health::Unhealthy(format!(
            "{} (not etcd's health JSON)",
            answer_words(status, body)
        )),
    }
}

/// A component down, crash-looping or unhealthy, for the step that shows
/// why ([`Judged::why_down`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Down {
    pub name: String,
    /// Its finding in words (`not running: exited 137 (killed), 40 s ago`).
    pub words: String,
    /// What its exit code says of why, when it says something.
    pub cause: Option<&'static str>,
    /// The container whose log says why.
    pub log_of: Option<String>,
}

/// The container whose log says why a pod is down or unhealthy, by its
/// findings: the one before the running one in a crash loop, else the one
/// that exited (not running), else the running one (unhealthy: its own
/// log; an earlier one that exited days ago says nothing of now).
pub fn log_container<'a>(o: &'a Observed, findings: &[Finding]) -> Option<&'a str> {
    let looping = findings
        .iter()
        .any(|f| matches!(f, Finding::Restarting { .. }));
    match o.containers.as_ref().ok()? {
        Containers::Running {
            previous: Some(p), ..
        } if looping => Some(&p.id),
        Containers::Exited { id, .. } | Containers::Running { id, .. } => Some(id),
        Containers::Absent => None,
    }
}

/// The whole node's live judgement: each observed pod's findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Why no pod's containers could be listed (crictl missing, the
    /// runtime unreachable): said once, not per pod.
    pub runtime: Option<Unseen>,
    pub pods: Vec<(Observed, Vec<Finding>)>,
}

impl Judged {
    pub fn new(observed: Vec<Observed>, wall: OffsetDateTime) -> Judged {
        let first = observed.first().and_then(|o| o.containers.as_ref().err());
        let runtime = first
            .filter(|why| {
                observed
                    .iter()
                    .all(|o| o.containers.as_ref().err() == Some(*why))
            })
            .cloned();
        let said = runtime
            .as_ref()
            .map(|why| Finding::NotChecked(format!("containers: {why}")));
        Judged {
            pods: observed
                .into_iter()
                .map(|o| {
                    let mut f = judge(&o, wall);
                    f.retain(|x| Some(x) != said.as_ref());
                    (o, f)
                })
                .collect(),
            runtime,
        }
    }

    /// The worst weight of any finding of the four components (other
    /// static pods are warnings only).
    pub fn weight(&self) -> Option<Weight> {
        let runtime = self.runtime.as_ref().map(|_| Weight::NotClean);
        self.components()
            .flat_map(|(_, f)| f.iter().map(Finding::weight))
            .chain(runtime)
            .max()
    }

    fn components(&self) -> impl Iterator<Item = &(Observed, Vec<Finding>)> {
        self.pods
            .iter()
            .filter(|(o, _)| crate::rules::component::Component::from_name(&o.name).is_some())
    }

    /// `kube-apiserver not running (exited 1, 40 s ago)`, one per finding
    /// of the four components, worst first.
    pub fn problems(&self, wall: OffsetDateTime) -> Vec<Reason> {
        let mut v: Vec<(Weight, Reason)> = self
            .components()
            .flat_map(|(o, fs)| {
                let c = crate::rules::component::Component::from_name(&o.name);
                fs.iter().map(move |f| {
                    let kind = match (c, f) {
                        (None, _) => ReasonKind::Other,
                        (Some(c), Finding::RestartNeeded { .. } | Finding::ServesOther { .. }) => {
                            ReasonKind::AwaitsRestart(c)
                        }
                        (Some(c), _) => ReasonKind::Component(c),
                    };
                    (
                        f.weight(),
                        Reason::new(kind, format!("{} {}", o.name, f.words(wall))),
                    )
                })
            })
            .collect();
        if let Some(why) = &self.runtime {
            v.insert(
                0,
                (
                    Weight::NotClean,
                    Reason::other(format!("containers not checked: {why}")),
                ),
            );
        }
        v.sort_by_key(|(w, _)| std::cmp::Reverse(*w));
        v.into_iter().map(|(_, s)| s).collect()
    }

    /// The findings an operator must act on, for the headline: (the
    /// component, the words).
    pub fn action_needed(&self, wall: OffsetDateTime) -> Vec<(String, String)> {
        self.components()
            .flat_map(|(o, fs)| {
                fs.iter()
                    .filter(|f| f.weight() == Weight::ActionNeeded)
                    .map(move |f| (o.name.clone(), format!("{} {}", o.name, f.words(wall))))
            })
            .collect()
    }

    /// Other static pods that keep an old credential (kube-vip), and
    /// check's "a renewal would fail its health gate".
    pub fn other_pods(&self, wall: OffsetDateTime) -> Vec<String> {
        self.pods
            .iter()
            .filter(|(o, _)| crate::rules::component::Component::from_name(&o.name).is_none())
            .flat_map(|(o, fs)| {
                fs.iter().map(move |f| match f {
                    Finding::RestartNeeded { file, .. } => format!(
                        "{} started before {} was renewed: it keeps the old credential until it restarts",
                        o.name,
                        file.rsplit('/').next().unwrap_or(file)
                    ),
                    // Never touched here; said, so an operator knows.
                    other => format!("{} {}", o.name, other.words(wall)),
                })
            })
            .collect()
    }

    /// The components down, crash-looping or unhealthy (an operator must
    /// act), each with why in words and the container whose log says why
    /// (the last one that ran; none when it never ran): the steps that
    /// show why (SPEC 6, v1.3).
    pub fn why_down(&self, wall: OffsetDateTime) -> Vec<Down> {
        self.components()
            .filter_map(|(o, fs)| {
                let f = fs.iter().find(|f| {
                    matches!(
                        f,
                        Finding::NotRunning(_) | Finding::Restarting { .. } | Finding::Unhealthy(_)
                    )
                })?;
                let cause = match f {
                    Finding::NotRunning(Some(e)) => exit_causes(e.code),
                    Finding::Restarting { last: Some(e), .. } => exit_causes(e.code),
                    _ => None,
                };
                Some(Down {
                    name: o.name.clone(),
                    words: f.words(wall),
                    cause,
                    log_of: log_container(o, fs).map(str::to_string),
                })
            })
            .collect()
    }

    /// Other static pods that started before a file they mount was renewed
    /// (kube-vip after a renewal or a recovery, SPEC 10): each name and its
    /// running container (stopping it makes the kubelet start a new one
    /// from the same manifest).
    pub fn keeping_old(&self) -> Vec<(String, String)> {
        self.pods
            .iter()
            .filter(|(o, _)| crate::rules::component::Component::from_name(&o.name).is_none())
            .filter(|(_, fs)| {
                fs.iter()
                    .any(|f| matches!(f, Finding::RestartNeeded { .. }))
            })
            .filter_map(|(o, _)| match &o.containers {
                Ok(Containers::Running { id, .. }) => Some((o.name.clone(), id.clone())),
                _ => None,
            })
            .collect()
    }

    /// Each serving file kubeadm does not renew, as its component's flag
    /// names it (a warning, SPEC 12, v1.3): compared, never asked to
    /// change.
    pub fn unmanaged_serving(&self) -> Vec<String> {
        self.pods
            .iter()
            .flat_map(|(o, _)| {
                o.ports
                    .iter()
                    .filter(|p| !kubeadm_renews(&p.file))
                    .map(|p| unmanaged_words(&o.name, &p.file))
            })
            .collect()
    }

    /// What the gate would wait on, per component (check's warnings).
    pub fn gate_refusals(&self, wall: OffsetDateTime) -> Vec<String> {
        if let Some(why) = &self.runtime {
            return vec![format!("containers not checked: {why}")];
        }
        self.components()
            .filter_map(|(o, _)| gate(o, wall).err().map(|b| b.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    //! SPEC 10's judgement, case by case: what each observation gives, its
    //! weight for the operator view and whether the gate waits on it.
    use super::*;
    use time::macros::datetime;

    const WALL: OffsetDateTime = datetime!(2026-12-02 12:00:00 UTC);

    fn running(restarts: u32, age: i64) -> Seen<Containers> {
        Ok(Containers::Running {
            id: "c1".into(),
            since: Some(WALL - Duration::seconds(age)),
            restarts,
            previous: (restarts > 0).then(|| Previous {
                id: "c0".into(),
                exit: Exit {
                    code: Some(1),
                    finished: Some(WALL - Duration::seconds(age + 2)),
                },
            }),
        })
    }

    fn pod(containers: Seen<Containers>, health: Option<Seen<Health>>) -> Observed {
        Observed {
            name: "kube-apiserver".into(),
            containers,
            health,
            ports: Vec::new(),
            newest: Some(Ok(Written {
                file: "/etc/kubernetes/pki/apiserver.crt".into(),
                at: WALL - Duration::hours(5),
            })),
            quorum: None,
            allowance: None,
        }
    }

    #[test]
    fn a_running_healthy_component_has_no_finding() {
        let o = pod(running(0, 3600), Some(Ok(Health::Healthy)));
        assert_eq!(judge(&o, WALL), vec![]);
        assert_eq!(gate(&o, WALL), Ok(()));
    }

    #[test]
    fn an_exited_component_is_not_running_with_its_exit_and_nothing_else() {
        let exit = Exit {
            code: Some(1),
            finished: Some(WALL - Duration::seconds(40)),
        };
        let o = pod(
            Ok(Containers::Exited {
                id: "c0".into(),
                exit,
                restarts: 2,
            }),
            Some(Err(Unseen::Probe("connect 127.0.0.1:6443: refused".into()))),
        );
        let f = judge(&o, WALL);
        assert_eq!(f, vec![Finding::NotRunning(Some(exit))]);
        assert_eq!(
            f[0].words(WALL),
            "not running: exited 1 (its own error), 40 s ago"
        );
        assert_eq!(f[0].weight(), Weight::ActionNeeded);
        assert_eq!(
            gate(&o, WALL).map_err(|b| b.to_string()),
            Err("kube-apiserver not running: exited 1 (its own error), 40 s ago".into())
        );
    }

    #[test]
    fn a_young_container_of_a_restarted_pod_is_restarting_until_it_stays_up() {
        let young = pod(running(3, 20), Some(Ok(Health::Healthy)));
        let f = judge(&young, WALL);
        assert_eq!(f[0].kind(), "restarting");
        assert_eq!(
            f[0].words(WALL),
            "crash-looping: 3 restarts, up 20 s; the one before exited 1 (its own error), 22 s ago"
        );
        assert!(gate(&young, WALL).is_err());
        // Up for longer than STAY_UP: healthy again.
        assert_eq!(
            judge(&pod(running(3, 61), Some(Ok(Health::Healthy))), WALL),
            vec![]
        );
        // A first container, however young, is not a restart; nor one the
        // runbook restarted (a new sandbox: nothing exited in it).
        assert_eq!(
            judge(&pod(running(0, 1), Some(Ok(Health::Healthy))), WALL),
            vec![]
        );
        let moved = Ok(Containers::Running {
            id: "c2".into(),
            since: Some(WALL - Duration::seconds(1)),
            restarts: 4,
            previous: None,
        });
        assert_eq!(judge(&pod(moved, Some(Ok(Health::Healthy))), WALL), vec![]);
    }

    #[test]
    fn unhealthy_and_unanswered_endpoints_are_never_healthy() {
        let u = pod(
            running(0, 3600),
            Some(Ok(Health::Unhealthy("HTTP 500".into()))),
        );
        assert_eq!(judge(&u, WALL)[0].weight(), Weight::ActionNeeded);
        let n = pod(
            running(0, 3600),
            Some(Err(Unseen::Probe("timed out".into()))),
        );
        let f = judge(&n, WALL);
        assert_eq!(f, vec![Finding::NotChecked("timed out".into())]);
        assert_eq!(f[0].weight(), Weight::NotClean);
        assert!(gate(&n, WALL).is_err());
    }

    /// SPEC 12 (v1.3): a refused port or a failing answer is `starting`
    /// while the container is within its probe's start allowance, then
    /// `unhealthy` as the kubelet counts it; `not checked` only when the
    /// runbook cannot judge (no start time, no allowance).
    #[test]
    fn a_failed_probe_is_starting_within_the_allowance_then_unhealthy() {
        let refused = || {
            Some(Err(Unseen::Refused(
                "/healthz: connect 127.0.0.1:10257: Connection refused".into(),
            )))
        };
        let allowance = Some(Duration::seconds(250));
        let mut young = pod(running(0, 20), refused());
        young.allowance = allowance;
        let f = judge(&young, WALL);
        assert_eq!(f[0].kind(), "starting");
        assert_eq!(
            f[0].words(WALL),
            "starting: /healthz: connect 127.0.0.1:10257: Connection refused (up 20 s of the probe's 4 min start allowance)"
        );
        assert_eq!(f[0].weight(), Weight::NotClean);
        assert!(
            gate(&young, WALL).is_err(),
            "the gate waits while it starts"
        );
        let mut old = pod(running(0, 251), refused());
        old.allowance = allowance;
        let f = judge(&old, WALL);
        assert_eq!(
            f[0],
            Finding::Unhealthy("/healthz: connect 127.0.0.1:10257: Connection refused".into())
        );
        assert_eq!(f[0].weight(), Weight::ActionNeeded);
        // At exactly the allowance: the kubelet counts it.
        let mut edge = pod(running(0, 250), refused());
        edge.allowance = allowance;
        assert_eq!(judge(&edge, WALL)[0].kind(), "unhealthy");
        // An answer other than 2xx/3xx: the same rule.
        let mut answered = pod(
            running(0, 5),
            Some(Ok(Health::Unhealthy("HTTP 500".into()))),
        );
        answered.allowance = allowance;
        assert_eq!(judge(&answered, WALL)[0].kind(), "starting");
        // Refused without an allowance, or without a start time: the
        // runbook could not judge it.
        let unknown = pod(running(0, 3600), refused());
        assert_eq!(judge(&unknown, WALL)[0].kind(), "not_checked");
        let mut no_time = pod(
            Ok(Containers::Running {
                id: "c1".into(),
                since: None,
                restarts: 0,
                previous: None,
            }),
            refused(),
        );
        no_time.allowance = allowance;
        assert_eq!(judge(&no_time, WALL)[0].kind(), "not_checked");
        // Not running: the endpoint says nothing more.
        let mut exited = pod(
            Ok(Containers::Exited {
                id: "c0".into(),
                exit: Exit::default(),
                restarts: 0,
            }),
            refused(),
        );
        exited.allowance = allowance;
        assert_eq!(judge(&exited, WALL).len(), 1);
        assert_eq!(judge(&exited, WALL)[0].kind(), "not_running");
    }

    #[test]
    fn a_container_older_than_its_files_needs_a_restart_which_the_gate_passes() {
        let mut o = pod(running(0, 3600), Some(Ok(Health::Healthy)));
        o.newest = Some(Ok(Written {
            file: "/etc/kubernetes/pki/apiserver.crt".into(),
            at: WALL - Duration::seconds(600),
        }));
        let f = judge(&o, WALL);
        assert_eq!(
            f[0].words(WALL),
            "restart needed: /etc/kubernetes/pki/apiserver.crt renewed 10 min ago, container started 60 min ago"
        );
        assert_eq!(f[0].weight(), Weight::NotClean);
        assert_eq!(gate(&o, WALL), Ok(()));
    }

    #[test]
    fn served_certificates_are_current_other_or_expired() {
        let now = datetime!(2026-11-30 00:00:00 UTC);
        let later = Some(now + Duration::days(300));
        let past = now - Duration::days(2);
        assert_eq!(served(b"a", b"a", later, now), Served::Current);
        assert_eq!(served(b"b", b"a", later, now), Served::Other);
        assert_eq!(served(b"b", b"a", Some(past), now), Served::Expired(past));
        assert_eq!(served(b"a", b"a", Some(past), now), Served::Expired(past));
        let mut o = pod(running(0, 3600), Some(Ok(Health::Healthy)));
        o.ports.push(Port {
            port: 6443,
            file: "/etc/kubernetes/pki/apiserver.crt".into(),
            served: Ok(Served::Other),
        });
        assert_eq!(judge(&o, WALL)[0].kind(), "serves_other");
        assert_eq!(gate(&o, WALL), Ok(()));
        o.ports[0].served = Ok(Served::Expired(past));
        assert_eq!(judge(&o, WALL)[0].weight(), Weight::ActionNeeded);
        // The gate judges what an expired certificate does (its clients
        // refuse it), not the certificate.
        assert_eq!(gate(&o, WALL), Ok(()));
    }

    #[test]
    fn health_answers_are_judged_as_the_components_mean_them() {
        assert_eq!(http_health(200, b"ok"), Health::Healthy);
        assert_eq!(
            http_health(200, b"[+]ping ok\nreadyz check passed\n"),
            Health::Healthy
        );
        assert!(
            matches!(http_health(200, b"<html>"), Health::Unhealthy(s) if s == "HTTP 200: <html>, not ok")
        );
        assert_eq!(
            http_health(
                500,
                b"[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"
            ),
            Health::Unhealthy("HTTP 500: [-]etcd failed: reason withheld".into())
        );
        assert_eq!(
            etcd_health(200, br#"{"health":"true","reason":""}"#),
            Health::Healthy
        );
        assert_eq!(
            etcd_health(503, br#"{"health":"false","reason":"RAFT NO LEADER"}"#),
            Health::Unhealthy("HTTP 503: health false: RAFT NO LEADER".into())
        );
        assert!(
            matches!(etcd_health(200, b"\x1b[31mgarbage"), Health::Unhealthy(s) if !s.contains('\x1b'))
        );
    }

    #[test]
    fn etcds_cluster_and_an_unknown_start_are_never_passed_over() {
        let mut o = pod(running(0, 3600), Some(Ok(Health::Healthy)));
        o.quorum = Some(QuorumSeen::Problem(
            "only 2 of 3 etcd voters are healthy".into(),
        ));
        let f = judge(&o, WALL);
        assert_eq!(
            f[0].words(WALL),
            "cluster: only 2 of 3 etcd voters are healthy"
        );
        assert_eq!(f[0].weight(), Weight::NotClean);
        assert!(gate(&o, WALL).is_err());
        // Not asked: never judged healthy, nor a quorum problem.
        o.quorum = Some(QuorumSeen::NotChecked(Unseen::Probe(
            "etcd's member list: connection refused".into(),
        )));
        let f = judge(&o, WALL);
        assert_eq!(f[0].kind(), "not_checked");
        assert_eq!(
            f[0].words(WALL),
            "not checked: cluster: etcd's member list: connection refused"
        );
        assert_eq!(f[0].weight(), Weight::NotClean);
        assert!(gate(&o, WALL).is_err());
        o.quorum = Some(QuorumSeen::Healthy);
        assert_eq!(judge(&o, WALL), vec![]);
        let unknown = Ok(Containers::Running {
            id: "c3".into(),
            since: None,
            restarts: 0,
            previous: None,
        });
        let f = judge(&pod(unknown, Some(Ok(Health::Healthy))), WALL);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind(), "not_checked");
        assert!(!f[0].blocks_gate());
    }

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(span(Duration::seconds(-3)), "0 s");
        assert_eq!(span(Duration::seconds(40)), "40 s");
        assert_eq!(span(Duration::minutes(12)), "12 min");
        assert_eq!(span(Duration::hours(3)), "3 h");
        assert_eq!(span(Duration::days(5)), "5 days");
    }
}
