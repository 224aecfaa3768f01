//! The local health gate (SPEC step 7) and the waits of the restart loop.
//! Every wait polls at a short interval to a deadline and checks the cancel
//! flag; structural refusals (two voters, a learner, not a voter) end at once.

use crate::node::fsx::Root;
use crate::rules::component::Component;
use crate::rules::cri::{self, Container, Listing, Sandbox};
use crate::rules::outcome::Phase;
use crate::tools::etcd::{self, Quorum};
use crate::tools::runtime::{RtError, Runtime};
use crate::tools::signals::Cancel;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// Waits poll with back-off (SPEC 4 "Waits", v1.1): dense right after a
/// move, where detection latency matters, then cheap.
pub const POLL_FIRST: Duration = Duration::from_millis(10);
/// The longest pause between two polls of one wait.
pub const POLL_MAX: Duration = Duration::from_millis(500);

/// The longest an event-driven wait goes without a listing (a missed or
/// absent event costs at most this much latency).
const EVENT_SAFETY: Duration = Duration::from_secs(5);
/// After an event, polls are dense until their pause reaches this, then the
/// wait sleeps on the event again.
const DENSE: Duration = Duration::from_millis(100);

/// The pauses of one wait: 10 ms, growing by half each time, to 500 ms.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    /// Polls made so far (tool calls of the wait, for its log line).
    pub polls: u32,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            next: POLL_FIRST,
            polls: 0,
        }
    }
}

impl Backoff {
    /// The pause before the next poll.
    pub fn pause(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 3 / 2).min(POLL_MAX);
        d
    }
}

#[derive(Debug, Clone)]
pub enum GateError {
    /// Will not pass by waiting: fail at once with this phase.
    Structural {
        phase: Phase,
        message: String,
    },
    TimedOut {
        message: String,
    },
    Cancelled,
}

/// What a passing gate saw.
#[derive(Debug, Clone)]
pub struct GateOk {
    pub etcd_voters: usize,
    pub etcd_healthy_voters: usize,
    pub containers: Vec<(Component, String)>,
}

enum Attempt {
    Pass(GateOk),
    NotYet(String),
    Structural(Phase, String),
}

pub struct Health<'a> {
    pub rt: &'a dyn Runtime,
    pub root: &'a Root,
    pub cancel: &'a Cancel,
    pub now: OffsetDateTime,
    pub sandboxes: &'a Sandboxes,
    /// The components this run restarted, each with the container its
    /// restart started: each must still run it (SPEC 4 step 7, v1.2).
    pub stay: &'a [(Component, String)],
}

/// The pod sandboxes seen so far, by ID. A sandbox's labels and annotations
/// (its config source among them) never change, and a restarted static pod
/// comes with a new sandbox: a listing whose components' containers all
/// belong to known sandboxes needs no `crictl pods` call.
/// It also hands the containers a wait just listed to the gate attempt
/// right after it (`handed`), so that attempt need not list them again.
#[derive(Debug, Default)]
pub struct Sandboxes(
    Mutex<BTreeMap<String, Sandbox>>,
    Mutex<Option<(Instant, Vec<Container>)>>,
);

/// How many of a crashed component's containers its message names.
const CRASHES_NAMED: usize = 3;

/// A listing handed from a wait to the next gate attempt is used only this
/// young (it is then the attempt's own listing, a moment early).
const HANDED_FRESH: Duration = Duration::from_millis(250);

impl Sandboxes {
    fn known(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Sandbox>> {
        // A panic while holding it cannot leave the map half-written (one
        // assignment): the data is good even when poisoned.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether every container of a component has a sandbox seen before.
    pub fn covers(&self, containers: &[Container]) -> bool {
        let known = self.known();
        containers
            .iter()
            .filter(|c| {
                c.labels
                    .get(cri::LABEL_CONTAINER)
                    .is_some_and(|n| Component::ALL.iter().any(|x| x.name() == n))
            })
            .all(|c| known.contains_key(&c.pod_sandbox_id))
    }

    /// Forget what was seen and keep `fresh` (one complete listing).
    pub fn replace(&self, fresh: Vec<Sandbox>) {
        *self.known() = fresh.into_iter().map(|s| (s.id.clone(), s)).collect();
    }

    pub fn all(&self) -> Vec<Sandbox> {
        self.known().values().cloned().collect()
    }

    /// Hand `containers`, just listed, to the next gate attempt.
    pub fn hand(&self, containers: Vec<Container>) {
        *self.1.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), containers));
    }

    /// The containers handed over, if still fresh (taken either way).
    fn take_handed(&self) -> Option<Vec<Container>> {
        let handed = self.1.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        (handed.0.elapsed() < HANDED_FRESH).then_some(handed.1)
    }
}

impl Health<'_> {
    fn etcd(&self, direct: etcd::Direct, etcd_id: &str, deadline: Instant) -> Attempt {
        match etcd::settle(direct, self.rt, self.root, Some(etcd_id), deadline) {
            Quorum::Ok {
                voters,
                healthy_voters,
            } => Attempt::Pass(GateOk {
                etcd_voters: voters,
                etcd_healthy_voters: healthy_voters,
                containers: Vec::new(),
            }),
            Quorum::NotYet(m) => Attempt::NotYet(m),
            Quorum::Structural(p, m) => Attempt::Structural(p, m),
        }
    }

    /// One gate attempt, bounded by `deadline`: one listing of kube-system
    /// (containers and sandboxes; the containers the start wait listed a
    /// moment ago when it handed them over) side by side with the
    /// kube-apiserver probe, then etcd (it needs the etcd container's ID).
    fn attempt(&self, deadline: Instant) -> Attempt {
        let left = || deadline.saturating_duration_since(Instant::now());
        // The health endpoints the view asks, judged as it judges them
        // (SPEC 10): etcd's /health, kube-apiserver's /readyz,
        // kube-controller-manager's and kube-scheduler's /healthz; then
        // etcd's quorum, as the view asks it too.
        let asked = Component::ALL;
        let (listing, healths, direct) = std::thread::scope(|s| {
            // etcd's quorum, asked directly, needs no container ID: side by
            // side with the rest (etcdctl, the fallback, does: after).
            let direct = s.spawn(|| etcd::direct(self.rt, self.root, self.now, deadline));
            let probes: Vec<_> = asked
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        crate::tools::live::gate_health(self.rt, self.root, self.now, *c, deadline)
                    })
                })
                .collect();
            let listing = match self.sandboxes.take_handed() {
                Some(containers) => self.with_sandboxes(containers, left()),
                None => self.list(left()),
            };
            let healths: Vec<_> = probes
                .into_iter()
                .map(|p| {
                    p.join()
                        .unwrap_or_else(|_| Err("the probe panicked".into()))
                })
                .collect();
            let direct = direct.join().unwrap_or_else(|_| {
                etcd::Direct::Asked(Quorum::NotYet("the etcd probe panicked".into()))
            });
            (listing, healths, direct)
        });
        let listing = match listing {
            Ok(l) => l,
            Err(RtError::Unreachable(m)) => return Attempt::Structural(Phase::Health, m),
            Err(e) => return Attempt::NotYet(e.to_string()),
        };
        let wall = OffsetDateTime::now_utc();
        // A component restarted by this run runs the container its restart
        // started, or it crashed since: that restart failed (at once).
        for (c, id) in self.stay {
            if let Some(m) = self.crashed(&listing, *c, id, deadline) {
                return Attempt::Structural(Phase::Restart(*c), m);
            }
        }
        // What etcd's member list says that waiting will not change (two
        // voters, a local learner) is refused at once, even while a
        // member's /health says unhealthy: the gate would otherwise wait
        // for its whole timeout to refuse what it already knows.
        if let etcd::Direct::Asked(Quorum::Structural(p, m)) = &direct {
            return Attempt::Structural(*p, m.clone());
        }
        let mut healths = healths.into_iter();
        let mut running = Vec::new();
        for c in Component::ALL {
            // Two static pods for one component: refused at once.
            if let Err(m) = listing.component(c.name()) {
                return Attempt::Structural(Phase::Health, m);
            }
            let containers = crate::rules::live::in_listing(&listing, c.name(), None);
            let observed = crate::rules::live::Observed {
                name: c.name().to_string(),
                health: healths.next(),
                containers,
                ports: Vec::new(),
                newest: None,
                quorum: None,
            };
            if let Err(m) = crate::rules::live::gate(&observed, wall) {
                return Attempt::NotYet(m);
            }
            if let Ok(crate::rules::live::Containers::Running { id, .. }) = observed.containers {
                running.push((c, id));
            }
        }
        let mut ok = match self.etcd(direct, &running[0].1, deadline) {
            Attempt::Pass(ok) => ok,
            other => return other,
        };
        ok.containers = running;
        Attempt::Pass(ok)
    }

    /// Whether `c`'s container `id`, started by this run's restart, no
    /// longer runs: why, naming the exits seen since (`crictl inspect` of
    /// the newest few of that static pod, oldest first).
    fn crashed(
        &self,
        listing: &Listing,
        c: Component,
        id: &str,
        deadline: Instant,
    ) -> Option<String> {
        let mine = listing.component(c.name()).unwrap_or_default();
        if mine.iter().any(|x| x.id == id && x.is_running()) {
            return None;
        }
        // Newest first: those created since `id` (its successors) and `id`.
        let since: &[&Container] = match mine.iter().position(|x| x.id == id) {
            Some(i) => &mine[..=i],
            None => &mine,
        };
        let mut exits = Vec::new();
        for x in since.iter().rev().take(CRASHES_NAMED) {
            if x.is_running() {
                exits.push(format!("{} running", short(&x.id)));
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let how = match self.rt.inspect_exit(&x.id, left) {
                Ok(e) => crate::rules::live::exited(&e, OffsetDateTime::now_utc()),
                Err(_) => "exited".to_string(),
            };
            exits.push(format!("{} {how}", short(&x.id)));
        }
        let seen = if exits.is_empty() {
            "its container is gone".to_string()
        } else {
            exits.join(", ")
        };
        Some(format!(
            "{c} did not stay up after its restart: the container it started ({}) no longer runs ({seen})",
            short(id)
        ))
    }

    /// A recovery's restart (SPEC 11), with no gate before it: the
    /// container of `c`'s static pod the restart replaces: the running one,
    /// else the newest (a component crash-looping on an expired
    /// certificate may have none running at this instant), else none ("").
    /// Two static pods for one component, or a runtime that cannot be
    /// reached: refused at once, as by the gate.
    pub fn current(&self, c: Component, budget: Duration) -> Result<String, GateError> {
        let listing = match self.list(budget) {
            Ok(l) => l,
            // The deadline (or a signal) cut the listing short.
            Err(_) if self.cancel.is_cancelled() => return Err(GateError::Cancelled),
            Err(RtError::Unreachable(m)) => {
                return Err(GateError::Structural {
                    phase: Phase::Health,
                    message: m,
                })
            }
            Err(e) => {
                return Err(GateError::TimedOut {
                    message: format!("listing {c}'s containers failed: {e}"),
                })
            }
        };
        let mine = listing
            .component(c.name())
            .map_err(|message| GateError::Structural {
                phase: Phase::Health,
                message,
            })?;
        Ok(mine
            .iter()
            .find(|x| x.is_running())
            .or(mine.first())
            .map(|x| x.id.clone())
            .unwrap_or_default())
    }

    /// Every component this run restarted still runs the container its
    /// restart started (SPEC 4 step 10, v1.2), asked without the rest of
    /// the gate (a recovery's postflight, SPEC 11): one listing.
    pub fn stayed(&self, budget: Duration) -> Result<(), GateError> {
        let deadline = Instant::now() + budget;
        let listing = self.list(budget).map_err(|e| {
            if self.cancel.is_cancelled() {
                GateError::Cancelled
            } else {
                GateError::TimedOut {
                    message: format!("listing the restarted containers failed: {e}"),
                }
            }
        })?;
        for (c, id) in self.stay {
            if let Some(message) = self.crashed(&listing, *c, id, deadline) {
                return Err(GateError::Structural {
                    phase: Phase::Restart(*c),
                    message,
                });
            }
        }
        Ok(())
    }

    /// One look at kube-system: `crictl ps`, then `crictl pods` only when a
    /// component's container belongs to a sandbox not seen before (SPEC 4
    /// "Waits": at most two listing calls per gate attempt).
    pub fn list(&self, budget: Duration) -> Result<Listing, RtError> {
        let t0 = Instant::now();
        let containers = self.rt.ps(budget)?;
        self.with_sandboxes(containers, budget.saturating_sub(t0.elapsed()))
    }

    fn with_sandboxes(
        &self,
        containers: Vec<Container>,
        budget: Duration,
    ) -> Result<Listing, RtError> {
        if !self.sandboxes.covers(&containers) {
            self.sandboxes.replace(self.rt.pods(budget)?);
        }
        Ok(Listing {
            containers,
            sandboxes: self.sandboxes.all(),
        })
    }

    /// Poll the whole gate until it passes, `timeout` runs out, a structural
    /// refusal, or cancellation. No attempt runs past the deadline (SPEC 4
    /// step 7, v1.1: the total overshoots by at most the 2 s a process needs
    /// to be killed).
    pub fn wait_gate(&self, timeout: Duration) -> Result<GateOk, GateError> {
        let t0 = Instant::now();
        // The controller's deadline cuts every wait (SPEC 4, v1.1).
        let deadline = t0 + self.cancel.bound(timeout);
        let mut last = String::new();
        let mut cut = None;
        let mut backoff = Backoff::default();
        loop {
            if self.cancel.is_cancelled() {
                return Err(GateError::Cancelled);
            }
            crate::crash_point!("gate-in-wait");
            backoff.polls += 1;
            match self.attempt(deadline) {
                Attempt::Pass(ok) => {
                    if backoff.polls > 1 {
                        tracing::info!(
                            attempts = backoff.polls,
                            ms = t0.elapsed().as_millis() as u64,
                            "health gate passed"
                        );
                    }
                    return Ok(ok);
                }
                Attempt::Structural(phase, message) => {
                    return Err(GateError::Structural { phase, message })
                }
                Attempt::NotYet(m) => {
                    if Instant::now() >= deadline && !last.is_empty() {
                        // Cut short by the deadline: the reason the gate
                        // did not pass is the one before.
                        if m != last {
                            cut = Some(m);
                        }
                    } else if m != last {
                        tracing::info!("health gate not yet passing: {m}");
                        last = m;
                    }
                }
            }
            if self.cancel.is_cancelled() {
                // The deadline passed (or a signal came) meanwhile.
                return Err(GateError::Cancelled);
            }
            if Instant::now() >= deadline {
                return Err(GateError::TimedOut {
                    message: format!(
                        "local health gate did not pass within {}s ({} attempts): {last}{}",
                        timeout.as_secs(),
                        backoff.polls,
                        cut.map(|m| format!(" (the last attempt, cut short at the deadline: {m})"))
                            .unwrap_or_default()
                    ),
                });
            }
            sleep_until(deadline, backoff.pause(), self.cancel);
        }
    }

    /// Wait until no container with ID `old` is running (gone counts as
    /// stopped). The old container was the static pod's (the gate said so),
    /// so only containers are listed. Event-driven where the runtime tells
    /// the container's PID (`crictl inspect`): the pidfd wakes the wait the
    /// moment the process exits, and only then is the runtime listed (a
    /// listing every 5 s guards against a PID seen from another PID
    /// namespace, or reused between the inspect and the pidfd's opening:
    /// such a wait costs at most 5 s more, never a wrong answer); without a
    /// pidfd, and once the process is gone, polls back off.
    pub fn wait_stopped(
        &self,
        c: Component,
        old: &str,
        timeout: Duration,
    ) -> Result<(), GateError> {
        let t0 = Instant::now();
        // The controller's deadline cuts every wait (SPEC 4, v1.1).
        let deadline = t0 + self.cancel.bound(timeout);
        let left = || deadline.saturating_duration_since(Instant::now());
        let mut backoff = Backoff::default();
        let mut last_error = None;
        tracing::info!(
            component = c.name(),
            "waiting for the old container to stop"
        );
        backoff.polls += 1;
        let mut watched = match self.rt.container_pid(old, left()) {
            Ok(pid) => pid.and_then(crate::tools::pidwatch::PidFd::open),
            Err(RtError::Unreachable(m)) => {
                return Err(GateError::Structural {
                    phase: Phase::Restart(c),
                    message: m,
                })
            }
            Err(e) => {
                last_error = Some(e.to_string());
                None
            }
        };
        let event = watched.is_some();
        // With the process watched, its exit is the first thing to wait
        // for: the runtime is asked once it has exited (or every
        // EVENT_SAFETY), not before. Without, it is polled at once.
        let mut list_now = !event;
        loop {
            crate::crash_point!("restart-in-wait-stop");
            if self.cancel.is_cancelled() {
                return Err(GateError::Cancelled);
            }
            if std::mem::replace(&mut list_now, true) {
                backoff.polls += 1;
                match self.rt.ps(left()) {
                    Ok(list) => {
                        if !list.iter().any(|x| x.id == old && x.is_running()) {
                            tracing::info!(
                                component = c.name(),
                                calls = backoff.polls,
                                ms = t0.elapsed().as_millis() as u64,
                                event,
                                "old container stopped"
                            );
                            return Ok(());
                        }
                    }
                    Err(RtError::Unreachable(m)) => {
                        return Err(GateError::Structural {
                            phase: Phase::Restart(c),
                            message: m,
                        })
                    }
                    Err(e) => last_error = Some(e.to_string()),
                }
                if self.cancel.is_cancelled() {
                    // The deadline passed (or a signal came) meanwhile.
                    return Err(GateError::Cancelled);
                }
                if Instant::now() >= deadline {
                    return Err(GateError::TimedOut {
                        message: format!(
                            "{c} container {} did not stop within {}s ({} calls){}",
                            short(old),
                            timeout.as_secs(),
                            backoff.polls,
                            last_error
                                .map(|e| format!("; the last poll failed: {e}"))
                                .unwrap_or_default()
                        ),
                    });
                }
            }
            match watched.take() {
                Some(fd) => {
                    let until = (Instant::now() + EVENT_SAFETY).min(deadline);
                    match fd.wait(until, self.cancel) {
                        // Gone: the runtime may take a moment to say so,
                        // polled densely from here.
                        crate::tools::pidwatch::Waited::Exited => {
                            backoff = Backoff {
                                polls: backoff.polls,
                                ..Backoff::default()
                            }
                        }
                        crate::tools::pidwatch::Waited::TimedOut => watched = Some(fd),
                        crate::tools::pidwatch::Waited::Cancelled => {
                            return Err(GateError::Cancelled)
                        }
                    }
                }
                None => sleep_until(deadline, backoff.pause(), self.cancel),
            }
        }
    }

    /// Wait until a container of `c`'s static pod other than `old` runs;
    /// returns its ID. Containers are polled; sandboxes are listed only when
    /// a candidate belongs to a sandbox not seen before (a restarted static
    /// pod comes with a new sandbox). With the kubelet's container links
    /// watched (`created`, set up before the manifest went back) and this
    /// kubelet seen to make them, the wait sleeps until a new link appears
    /// (a listing every 5 s at most), then polls densely for 100 ms; with an
    /// untrusted watch it polls with back-off and a link ends a pause early.
    pub fn wait_new_running(
        &self,
        c: Component,
        old: &str,
        deadline: Instant,
        timeout: Duration,
        created: Option<&crate::tools::pidwatch::NewContainers>,
    ) -> Result<String, GateError> {
        let t0 = Instant::now();
        let deadline = deadline.min(t0 + self.cancel.bound(timeout));
        let mut backoff = Backoff::default();
        let mut last_error = None;
        let mut after_event = false;
        tracing::info!(component = c.name(), "waiting for a new container");
        // With a trusted watch of the kubelet's links (set up before the
        // manifest went back), the new container's link is the first thing
        // to wait for: the runtime is listed once it appears (or every
        // EVENT_SAFETY), not before. Otherwise it is listed at once.
        let mut list_now = !created.is_some_and(|w| w.trusted());
        loop {
            crate::crash_point!("restart-in-wait-start");
            if self.cancel.is_cancelled() {
                return Err(GateError::Cancelled);
            }
            if std::mem::replace(&mut list_now, true) {
                backoff.polls += 1;
                match self.list_new_running(c, old, deadline, &mut backoff) {
                    Ok(Some(Err(ambiguous))) => {
                        return Err(GateError::Structural {
                            phase: Phase::Restart(c),
                            message: ambiguous,
                        })
                    }
                    Ok(Some(Ok(Some(id)))) => {
                        tracing::info!(
                            component = c.name(),
                            calls = backoff.polls,
                            ms = t0.elapsed().as_millis() as u64,
                            "new container running"
                        );
                        return Ok(id);
                    }
                    Ok(_) => {}
                    Err(RtError::Unreachable(m)) => {
                        return Err(GateError::Structural {
                            phase: Phase::Restart(c),
                            message: m,
                        })
                    }
                    Err(e) => last_error = Some(e.to_string()),
                }
                if self.cancel.is_cancelled() {
                    // The deadline passed (or a signal came) meanwhile.
                    return Err(GateError::Cancelled);
                }
                if Instant::now() >= deadline {
                    return Err(GateError::TimedOut {
                        message: format!(
                            "no new {c} container ran within {}s ({} calls){}",
                            timeout.as_secs(),
                            backoff.polls,
                            last_error
                                .map(|e| format!("; the last poll failed: {e}"))
                                .unwrap_or_default()
                        ),
                    });
                }
            }
            self.pause_for_new(c, created, deadline, &mut backoff, &mut after_event)?;
        }
    }

    /// One listing of `wait_new_running`: a running container of `c` other
    /// than `old` (`Ok(None)`: no candidate yet; `Some(Err)`: ambiguous).
    /// Sandboxes are listed only for a candidate in a sandbox not seen
    /// before (a call more in `backoff`).
    fn list_new_running(
        &self,
        c: Component,
        old: &str,
        deadline: Instant,
        backoff: &mut Backoff,
    ) -> Result<Option<Result<Option<String>, String>>, RtError> {
        let left = || deadline.saturating_duration_since(Instant::now());
        let containers = self.rt.ps(left())?;
        let candidate = containers.iter().any(|x| {
            x.is_running()
                && x.id != old
                && x.labels.get(cri::LABEL_CONTAINER).map(String::as_str) == Some(c.name())
        });
        if !candidate {
            return Ok(None);
        }
        if !self.sandboxes.covers(&containers) {
            backoff.polls += 1;
        }
        let listing = self.with_sandboxes(containers, left())?;
        let found = listing.component(c.name()).map(|v| {
            cri::running(&v)
                .filter(|n| n.id != old)
                .map(|n| n.id.clone())
        });
        if matches!(found, Ok(Some(_))) {
            // The gate that follows starts from this listing.
            self.sandboxes.hand(listing.containers);
        }
        Ok(Some(found))
    }

    /// The pause between two listings of `wait_new_running`. A trusted
    /// watch: sleep until the kubelet links a new container (polls only
    /// densely just after a link appeared, and once per EVENT_SAFETY); an
    /// untrusted one only ends a pause early. A link resets the back-off.
    fn pause_for_new(
        &self,
        c: Component,
        created: Option<&crate::tools::pidwatch::NewContainers>,
        deadline: Instant,
        backoff: &mut Backoff,
        after_event: &mut bool,
    ) -> Result<(), GateError> {
        let pause = backoff.pause();
        let until = match created {
            Some(w) if w.trusted() && (pause >= DENSE || !*after_event) => {
                Some((w, Instant::now() + EVENT_SAFETY))
            }
            Some(w) => Some((w, Instant::now() + pause)),
            None => None,
        };
        match until {
            Some((w, until)) => match w.wait(c.name(), until.min(deadline), self.cancel) {
                crate::tools::pidwatch::Waited::Exited => {
                    *after_event = true;
                    *backoff = Backoff {
                        polls: backoff.polls,
                        ..Backoff::default()
                    }
                }
                crate::tools::pidwatch::Waited::TimedOut => {}
                crate::tools::pidwatch::Waited::Cancelled => return Err(GateError::Cancelled),
            },
            None => sleep_until(deadline, pause, self.cancel),
        }
        Ok(())
    }
}

/// Sleep `step` (or to the deadline), waking early on cancellation.
pub fn sleep_until(deadline: Instant, step: Duration, cancel: &Cancel) {
    let end = (Instant::now() + step).min(deadline);
    while Instant::now() < end {
        if cancel.is_cancelled() {
            return;
        }
        std::thread::sleep(
            Duration::from_millis(5).min(end.saturating_duration_since(Instant::now())),
        );
    }
}

/// A container ID shortened for messages: the first 13 characters of a container ID (as crictl shows them). Cut by
/// characters, never by bytes: the ID comes from outside and a byte slice
/// through a multi-byte character panics.
pub fn short(id: &str) -> &str {
    match id.char_indices().nth(13) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests run real child processes and read their temp node
mod tests {
    //! The back-off schedule and the single-listing gate against the test
    //! double of the runtime ([`crate::tools::runtime::double`]), which counts its
    //! calls.
    use super::*;
    use crate::rules::cri::Listing;
    use crate::rules::pki;
    use crate::tools::etcd::{etcdctl_flags, etcdctl_margin};
    use crate::tools::runtime::double::{self, container, sandbox, Double};
    use crate::tools::targets::{apiserver_identity, apiserver_port, etcd_identity};

    #[test]
    fn backoff_is_dense_first_then_capped() {
        let mut b = Backoff::default();
        let pauses: Vec<u128> = (0..14).map(|_| b.pause().as_millis()).collect();
        assert_eq!(&pauses[..4], &[10, 15, 22, 33]);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), 500, "{pauses:?}");
        // The first 300 ms are polled densely: at least 6 polls.
        let mut b = Backoff::default();
        let (mut t, mut n) = (0u128, 0);
        while t < 300 {
            t += b.pause().as_millis();
            n += 1;
        }
        assert!(n >= 6, "{n} polls in the first 300 ms");
        // A wait of 60 s costs about 7 + 60 / 0.5 polls, not 6,000.
        let mut b = Backoff::default();
        let (mut t, mut n) = (0u128, 0);
        while t < 60_000 {
            t += b.pause().as_millis();
            n += 1;
        }
        assert!(n < 130, "{n} polls in 60 s");
    }

    #[test]
    fn short_ids_are_cut_by_characters_not_bytes() {
        assert_eq!(short("0123456789abcdef"), "0123456789abc");
        assert_eq!(short("abc"), "abc");
        // A byte slice at 13 would split the two-byte 'é' and panic.
        assert_eq!(short("0123456789abéé"), "0123456789abé");
        assert_eq!(short("ééééééééééééééé").chars().count(), 13);
    }

    #[test]
    fn etcdctl_timeouts_never_exceed_the_time_left() {
        let f = etcdctl_flags(2379, Duration::from_millis(2500));
        assert!(f.contains(&"--dial-timeout=2500ms".to_string()), "{f:?}");
        assert!(f.contains(&"--command-timeout=2500ms".to_string()), "{f:?}");
        let f = etcdctl_flags(2379, Duration::from_secs(300));
        assert!(f.contains(&"--dial-timeout=10000ms".to_string()), "{f:?}");
        assert!(
            f.contains(&"--command-timeout=30000ms".to_string()),
            "{f:?}"
        );
        let f = etcdctl_flags(2379, Duration::ZERO);
        assert!(f.contains(&"--command-timeout=1ms".to_string()), "{f:?}");
    }

    /// Four static pods and an unrelated kube-system pod with an `etcd`
    /// container, newer than the static etcd: a name-only match would pick
    /// it.
    fn counting() -> Double {
        let rt = Double::new();
        for c in Component::ALL {
            rt.push(container(
                c.name(),
                &format!("{c}-cp-1"),
                &format!("{c}-static"),
                &format!("sb-{c}"),
                true,
                "1",
            ));
            rt.add_sandbox(sandbox(&format!("sb-{c}"), "file"));
        }
        rt.insert_newest(container(
            "etcd",
            "etcd-backup-29123",
            "etcd-backup",
            "sb-backup",
            true,
            "2",
        ));
        rt.add_sandbox(sandbox("sb-backup", "api"));
        rt
    }

    #[test]
    fn one_gate_attempt_lists_once_and_judges_only_static_pods() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let cancel = Cancel::new();
        let sandboxes = Sandboxes::default();
        let h = Health {
            rt: &rt,
            root: &root,
            cancel: &cancel,
            now: time::macros::datetime!(2026-11-30 00:00:00 UTC),
            sandboxes: &sandboxes,
            stay: &[],
        };
        let ok = h.wait_gate(Duration::from_secs(5)).unwrap();
        assert_eq!(rt.calls.ps(), 1, "one container listing");
        assert_eq!(rt.calls.pods(), 1, "one sandbox listing");
        assert_eq!(
            rt.calls.etcdctl(),
            2,
            "member list and endpoint health --cluster"
        );
        // The next attempt: the sandboxes are known, only containers are listed.
        h.wait_gate(Duration::from_secs(5)).unwrap();
        assert_eq!(rt.calls.ps(), 2);
        assert_eq!(rt.calls.pods(), 1, "sandboxes not listed again");
        assert_eq!(rt.calls.etcdctl(), 4);
        // A sandbox not seen before (a restarted static pod): listed again.
        sandboxes.replace(Vec::new());
        h.wait_gate(Duration::from_secs(5)).unwrap();
        assert_eq!(rt.calls.pods(), 2, "a new sandbox is looked up");
        assert!(
            rt.exec_into().iter().all(|id| id == "etcd-static"),
            "etcdctl ran only in the static pod's etcd container"
        );
        assert_eq!(
            ok.containers[0],
            (Component::Etcd, "etcd-static".to_string())
        );
        let listing = Listing {
            containers: rt.ps(Duration::ZERO).unwrap(),
            sandboxes: rt.pods(Duration::ZERO).unwrap(),
        };
        // Two containers named etcd are listed; one is the static pod's.
        let named_etcd = listing
            .containers
            .iter()
            .filter(|c| c.labels.get(cri::LABEL_CONTAINER).map(String::as_str) == Some("etcd"))
            .count();
        assert_eq!(named_etcd, 2);
        assert_eq!(listing.component("etcd").unwrap().len(), 1);
        assert_eq!(rt.calls.renew(), 0, "the gate never renews");
    }

    /// One component, kube-scheduler: its old container `old` runs (in
    /// `sb-old`); `new` (in `sb-new`) is what a restart brings.
    fn waits() -> Double {
        let rt = Double::new();
        rt.push(scheduler("old", "sb-old", true));
        rt.add_sandbox(sandbox("sb-old", "file"));
        rt.add_sandbox(sandbox("sb-new", "file"));
        rt
    }

    fn scheduler(id: &str, sb: &str, running: bool) -> Container {
        container(
            "kube-scheduler",
            "kube-scheduler-cp-1",
            id,
            sb,
            running,
            "1",
        )
    }

    /// SPEC 4 step 7 (v1.2), staying up: a component this run restarted
    /// must still run the container its restart started. The kubelet
    /// restarted it in place (a crash): the gate fails at once, in that
    /// component's restart phase, naming the containers and their exits.
    #[test]
    fn a_restarted_component_that_crashed_since_fails_its_restart_at_once() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let stay = vec![(
            Component::KubeScheduler,
            "kube-scheduler-static".to_string(),
        )];
        let mut h = waits_health(&rt, &root, &cancel, &sandboxes);
        h.stay = &stay;
        assert!(h.wait_gate(Duration::from_secs(5)).is_ok(), "it still runs");
        // It crashed; the kubelet started another in the same sandbox.
        rt.set_running("kube-scheduler-static", false);
        rt.insert_newest(scheduler("sched-2", "sb-kube-scheduler", true));
        let t0 = Instant::now();
        match h.wait_gate(Duration::from_secs(30)) {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Restart(Component::KubeScheduler));
                assert!(
                    message.contains("kube-scheduler did not stay up after its restart"),
                    "{message}"
                );
                assert!(message.contains("kube-schedule"), "{message}");
                assert!(message.contains("sched-2 running"), "{message}");
                assert!(message.contains("exited"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "at once, not after the timeout"
        );
    }

    /// The waits only list and inspect.
    fn assert_waits_only_list(rt: &Double) {
        let c = &rt.calls;
        assert_eq!(
            (c.etcdctl(), c.probe(), c.renew()),
            (0, 0, 0),
            "the waits run no etcdctl, probe nothing, renew nothing"
        );
    }

    fn waits_health<'a>(
        rt: &'a Double,
        root: &'a Root,
        cancel: &'a Cancel,
        sandboxes: &'a Sandboxes,
    ) -> Health<'a> {
        Health {
            rt,
            root,
            cancel,
            now: time::macros::datetime!(2026-11-30 00:00:00 UTC),
            sandboxes,
            stay: &[],
        }
    }

    /// The stop wait watches the old container's process through a pidfd:
    /// one inspect, and one listing once it has exited, however long the
    /// process takes (here 1.5 s, which back-off would poll 6 times).
    #[test]
    fn the_stop_wait_sleeps_on_the_pidfd() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let rt = waits();
        rt.set_pid("old", child.id());
        let cancel = Cancel::new();
        let sandboxes = Sandboxes::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                // The runtime says exited by the time the process is gone
                // (so a loaded machine cannot add listings to the count).
                std::thread::sleep(Duration::from_millis(1500));
                rt.set_running("old", false);
                child.kill().unwrap();
                child.wait().unwrap();
            });
            waits_health(&rt, &root, &cancel, &sandboxes)
                .wait_stopped(Component::KubeScheduler, "old", Duration::from_secs(20))
                .unwrap();
        });
        assert_eq!(rt.calls.inspect(), 1);
        let ps = rt.calls.ps();
        assert_eq!(ps, 1, "{ps} listings");
        assert_waits_only_list(&rt);
    }

    /// The start wait, with the kubelet seen to link its containers, sleeps
    /// until the new container's link appears: one or two listings after
    /// the link (none before it), plus one sandbox listing for the new
    /// sandbox. Untrusted, the same wait polls with back-off, from at once.
    #[test]
    fn the_start_wait_sleeps_until_the_kubelet_links_the_new_container() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let logs = t.path().join("links");
        std::fs::create_dir(&logs).unwrap();
        let cancel = Cancel::new();
        let run = |trusted: bool| -> (u32, u32) {
            let rt = waits();
            let sandboxes = Sandboxes::default();
            let watch = crate::tools::pidwatch::NewContainers::watch(&logs, trusted).unwrap();
            let link = logs.join(format!(
                "kube-scheduler-cp-1_kube-system_kube-scheduler{}",
                crate::tools::pidwatch::NewContainers::link_suffix(if trusted {
                    "n1"
                } else {
                    "n2"
                })
            ));
            let id = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(1500));
                    rt.insert_newest(scheduler("new", "sb-new", true));
                    std::os::unix::fs::symlink("/x", &link).unwrap();
                });
                waits_health(&rt, &root, &cancel, &sandboxes)
                    .wait_new_running(
                        Component::KubeScheduler,
                        "old",
                        Instant::now() + Duration::from_secs(20),
                        Duration::from_secs(20),
                        Some(&watch),
                    )
                    .unwrap()
            });
            assert_eq!(id, "new");
            assert_waits_only_list(&rt);
            (rt.calls.ps(), rt.calls.pods())
        };
        let (ps, pods) = run(true);
        assert!((1..=2).contains(&ps), "trusted watch: {ps} listings");
        assert_eq!(pods, 1, "one sandbox listing, for the new sandbox");
        let (ps, _) = run(false);
        assert!(ps >= 6, "untrusted watch: back-off polls ({ps} listings)");
    }

    fn health<'a>(
        rt: &'a Double,
        root: &'a Root,
        cancel: &'a Cancel,
        sandboxes: &'a Sandboxes,
    ) -> Health<'a> {
        waits_health(rt, root, cancel, sandboxes)
    }

    /// The gate over the rsa fixture node against `rt`, with `timeout`.
    fn gate(rt: &Double, timeout: Duration) -> (Result<GateOk, GateError>, Duration) {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let cancel = Cancel::new();
        let sandboxes = Sandboxes::default();
        let t0 = Instant::now();
        let r = health(rt, &root, &cancel, &sandboxes).wait_gate(timeout);
        (r, t0.elapsed())
    }

    /// SPEC 4 step 7: etcdctl runs in the etcd container with the TLS flags
    /// of the guide, naming the paths as the container sees them whatever
    /// --root is, and the client port the manifest gives.
    #[test]
    fn etcdctl_gets_the_container_paths_and_the_manifests_client_port() {
        let t = double::node_tree("rsa");
        let etcd = t.path().join("etc/kubernetes/manifests/etcd.yaml");
        let m = std::fs::read_to_string(&etcd).unwrap();
        assert!(m.contains("https://127.0.0.1:2379"));
        std::fs::write(&etcd, m.replace("127.0.0.1:2379", "127.0.0.1:12379")).unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        health(&rt, &root, &cancel, &sandboxes)
            .wait_gate(Duration::from_secs(5))
            .unwrap();
        let calls = rt.etcdctl_args();
        assert_eq!(calls.len(), 2, "{calls:?}");
        for args in &calls {
            for flag in [
                "--endpoints=https://127.0.0.1:12379",
                "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
                "--cert=/etc/kubernetes/pki/etcd/server.crt",
                "--key=/etc/kubernetes/pki/etcd/server.key",
            ] {
                assert!(args.iter().any(|a| a == flag), "{flag} not in {args:?}");
            }
            let root = t.path().display().to_string();
            assert!(!args.iter().any(|a| a.contains(&root)), "{args:?}");
        }
        for cmd in [
            &["member", "list", "-w", "json"][..],
            &["endpoint", "health", "--cluster", "-w", "json"][..],
        ] {
            assert!(
                calls
                    .iter()
                    .any(|a| a.ends_with(&cmd.iter().map(|s| s.to_string()).collect::<Vec<_>>())),
                "{cmd:?} not run: {calls:?}"
            );
        }
    }

    /// SPEC 9: a container runtime that cannot be reached fails the gate at
    /// once; waiting does not fix it.
    #[test]
    fn an_unreachable_runtime_fails_the_gate_at_once() {
        let rt = counting();
        rt.fail_listings(Some(RtError::Unreachable("no socket".into())));
        let (r, took) = gate(&rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert_eq!(message, "no socket");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.ps(), 1);
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    /// A listing that fails on a reachable runtime is retried until the
    /// timeout, which then says why (a poll never swallows its error).
    #[test]
    fn a_failing_listing_is_retried_and_named_when_the_gate_times_out() {
        let rt = counting();
        rt.fail_listings(Some(RtError::Failed("crictl ps failed: boom".into())));
        let (r, _) = gate(&rt, Duration::from_millis(300));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(message.contains("crictl ps failed: boom"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(rt.calls.ps() > 1, "{} listings", rt.calls.ps());
    }

    /// SPEC 4 step 7 (v1.1): containers of more than one static pod for a
    /// component are refused at once, naming them; neither is exec'd into.
    #[test]
    fn two_static_pods_for_a_component_are_refused_naming_both() {
        let rt = counting();
        rt.insert_newest(container(
            "etcd",
            "etcd-cp-2",
            "etcd-stray",
            "sb-stray",
            true,
            "3",
        ));
        rt.add_sandbox(sandbox("sb-stray", "file"));
        let (r, _) = gate(&rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(
                    message.contains("etcd-cp-1") && message.contains("etcd-cp-2"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.etcdctl(), 0);
        assert_eq!(rt.calls.ps(), 1);
    }

    /// The gate's answer is `two-control-plane-voters` on its first attempt.
    fn refused_at_once_as_two_voters(rt: &Double) {
        let (r, _) = gate(rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, .. }) => {
                assert_eq!(phase, Phase::TwoControlPlaneVoters)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.ps(), 1, "refused on the first attempt");
    }

    /// SPEC 4 step 7: two voters is refused at once, with its own phase.
    #[test]
    fn two_etcd_voters_are_refused_at_once_with_their_phase() {
        let rt = counting();
        rt.set_etcd(
            r#"{"header":{"member_id":1},"members":[{"ID":1,"name":"cp-1","clientURLs":["https://10.0.0.11:2379"]},{"ID":2,"name":"cp-2","clientURLs":["https://10.0.0.12:2379"]}]}"#,
            r#"[{"endpoint":"https://10.0.0.11:2379","health":true},{"endpoint":"https://10.0.0.12:2379","health":true}]"#,
        );
        refused_at_once_as_two_voters(&rt);
    }

    /// Two voters are refused at once even when this member's own /health
    /// says unhealthy: the member list already tells what waiting will not
    /// change (the model test's case `EtcdHealth(2, 2, 0)`, which waited
    /// for the whole timeout).
    #[test]
    fn two_etcd_voters_are_refused_at_once_while_etcd_is_unhealthy() {
        let rt = counting();
        let list = gateway_members(2, false);
        rt.set_answer(crate::tools::etcd::MEMBER_LIST, 2379, Ok((200, &list)));
        rt.set_answer("/health", 2379, Ok((503, r#"{"health":"false"}"#)));
        refused_at_once_as_two_voters(&rt);
        assert_eq!(rt.calls.etcdctl(), 0);
    }

    /// SPEC 4 step 7: this member a learner is refused at once; etcd 3.4
    /// says so only by refusing a learner the member list.
    #[test]
    fn the_local_member_a_learner_is_refused_at_once() {
        let rt = counting();
        rt.fail_member_list("Error: etcdserver: rpc not supported for learner");
        let (r, _) = gate(&rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(message.contains("learner, not a voter"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.ps(), 1, "refused on the first attempt");
    }

    /// etcd's JSON gateway's member list for `voters` voters (member 1 is
    /// this one, on 10.0.0.1N), `learner` one more, as etcd 3.4 writes it.
    fn gateway_members(voters: u64, learner: bool) -> String {
        let member = |i: u64, learner: bool| {
            format!(
                r#"{{"ID":"{}","name":"cp-{i}","peerURLs":["https://10.0.0.1{i}:2380"],"clientURLs":["https://10.0.0.1{i}:2379"]{}}}"#,
                10_276_657_743_932_975_430u64 + i,
                if learner { r#","isLearner":true"# } else { "" }
            )
        };
        let mut m: Vec<String> = (1..=voters).map(|i| member(i, false)).collect();
        if learner {
            m.push(member(voters + 1, true));
        }
        format!(
            r#"{{"header":{{"cluster_id":"14841639068965178418","member_id":"{}","raft_term":"2"}},"members":[{}]}}"#,
            10_276_657_743_932_975_431u64,
            m.join(",")
        )
    }

    fn with_gateway(voters: u64, learner: bool) -> Double {
        let rt = counting();
        let list = gateway_members(voters, learner);
        rt.set_answer(crate::tools::etcd::MEMBER_LIST, 2379, Ok((200, &list)));
        rt
    }

    /// SPEC 4 step 7 (v1.2): etcd asked directly: its member list from the
    /// gateway and every other voter's /health on its client URL; no
    /// etcdctl, no crictl exec.
    #[test]
    fn etcd_is_asked_directly_without_etcdctl() {
        let rt = with_gateway(3, false);
        let (r, _) = gate(&rt, Duration::from_secs(5));
        let ok = r.unwrap();
        assert_eq!((ok.etcd_voters, ok.etcd_healthy_voters), (3, 3));
        assert_eq!(rt.calls.etcdctl(), 0, "no crictl exec");
    }

    /// A voter down: the gate waits, naming it; back, it passes.
    #[test]
    fn a_voter_down_keeps_the_gate_waiting_naming_it() {
        let rt = with_gateway(3, false);
        rt.set_host_answer(
            "10.0.0.13",
            "/health",
            2379,
            Err("connect 10.0.0.13:2379: Connection refused"),
        );
        let (r, took) = gate(&rt, Duration::from_millis(600));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("only 2 of 3 etcd voters are healthy"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(3), "{took:?}");
        rt.set_host_answer(
            "10.0.0.13",
            "/health",
            2379,
            Ok((200, r#"{"health":"true","reason":""}"#)),
        );
        let (r, _) = gate(&rt, Duration::from_secs(5));
        assert_eq!(r.unwrap().etcd_healthy_voters, 3);
    }

    /// An unhealthy answer (503, `health: false`) is not a healthy voter.
    #[test]
    fn an_unhealthy_voter_is_not_counted() {
        let rt = with_gateway(5, false);
        for h in ["10.0.0.14", "10.0.0.15"] {
            rt.set_host_answer(
                h,
                "/health",
                2379,
                Ok((503, r#"{"health":"false","reason":"RAFT NO LEADER"}"#)),
            );
        }
        let (r, _) = gate(&rt, Duration::from_millis(300));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("only 3 of 5 etcd voters are healthy"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    /// Two voters, a learner in the list, this member a learner (the
    /// gateway's 503): refused at once, each with its phase.
    #[test]
    fn the_direct_answers_refuse_at_once_as_etcdctls_did() {
        let rt = with_gateway(2, false);
        match gate(&rt, Duration::from_secs(5)).0 {
            Err(GateError::Structural { phase, .. }) => {
                assert_eq!(phase, Phase::TwoControlPlaneVoters)
            }
            other => panic!("{other:?}"),
        }
        let rt = with_gateway(3, true);
        match gate(&rt, Duration::from_secs(5)).0 {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(message.contains("1 learner"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let rt = counting();
        rt.set_answer(
            crate::tools::etcd::MEMBER_LIST,
            2379,
            Ok((503, r#"{"error":"etcdserver: rpc not supported for learner","message":"etcdserver: rpc not supported for learner","code":14}"#)),
        );
        match gate(&rt, Duration::from_secs(5)).0 {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(message.contains("learner, not a voter"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.etcdctl(), 0);
    }

    /// The gateway off (404): etcdctl through crictl exec, as v1.1.
    #[test]
    fn a_gateway_that_answers_404_falls_back_to_etcdctl() {
        let rt = counting();
        let (r, _) = gate(&rt, Duration::from_secs(5));
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(rt.calls.etcdctl(), 2, "member list and endpoint health");
    }

    /// etcdctl's own timeouts end before the call around it is killed,
    /// also when `--command-timeout` is what kills it, not the gate's time.
    #[test]
    fn etcdctl_timeouts_end_before_the_call_limit() {
        let rt = counting();
        rt.limit_calls(Duration::from_secs(4));
        let (r, _) = gate(&rt, Duration::from_secs(60));
        assert!(r.is_ok(), "{r:?}");
        let args = rt.etcdctl_args();
        assert!(!args.is_empty());
        for a in args {
            assert!(
                a.contains(&"--command-timeout=3200ms".to_string())
                    && a.contains(&"--dial-timeout=3200ms".to_string()),
                "{a:?}"
            );
        }
    }

    /// etcdctl's own timeout ends before the crictl call's, by a margin
    /// that leaves crictl's exec room on a loaded node.
    #[test]
    fn etcdctl_times_out_before_the_exec_around_it() {
        assert_eq!(
            etcdctl_margin(Duration::from_millis(500)),
            Duration::from_millis(200)
        );
        assert_eq!(
            etcdctl_margin(Duration::from_secs(3)),
            Duration::from_millis(600)
        );
        assert_eq!(
            etcdctl_margin(Duration::from_secs(300)),
            Duration::from_secs(1)
        );
    }

    /// SPEC 4 step 7: all four containers must run; one that does not keeps
    /// the gate polling, and the timeout names it.
    #[test]
    fn a_component_without_a_running_container_keeps_the_gate_waiting() {
        let rt = counting();
        rt.set_running("kube-scheduler-static", false);
        let (r, _) = gate(&rt, Duration::from_millis(300));
        match r {
            Err(GateError::TimedOut { message }) => assert!(
                message.contains("kube-scheduler not running (exited)"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(rt.calls.ps() > 1);
        assert_eq!(rt.calls.etcdctl(), 0, "etcd is judged once all four run");
    }

    /// SPEC 4 step 7: kube-apiserver must answer /readyz with 200; the gate
    /// waits for it, and overshoots its timeout by at most 2 s.
    #[test]
    fn readyz_other_than_200_keeps_the_gate_waiting_within_its_timeout() {
        let rt = counting();
        rt.set_readyz(500);
        let (r, took) = gate(&rt, Duration::from_millis(500));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("kube-apiserver unhealthy: HTTP 500"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(rt.calls.probe() > 1);
        assert!(took < Duration::from_millis(2500), "{took:?}");
    }

    /// A cancelled gate makes no call at all.
    #[test]
    fn a_cancelled_gate_makes_no_call() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        cancel.cancel();
        let r = health(&rt, &root, &cancel, &sandboxes).wait_gate(Duration::from_secs(5));
        assert!(matches!(r, Err(GateError::Cancelled)), "{r:?}");
        assert_eq!(rt.calls.ps() + rt.calls.probe() + rt.calls.etcdctl(), 0);
    }

    /// SPEC 4 step 9: a container that is gone counts as stopped.
    #[test]
    fn a_container_that_is_gone_counts_as_stopped() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = Double::new();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let t0 = Instant::now();
        health(&rt, &root, &cancel, &sandboxes)
            .wait_stopped(Component::KubeScheduler, "old", Duration::from_secs(20))
            .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_eq!(rt.calls.ps(), 1);
    }

    /// A stop that never comes ends at the timeout, naming the container,
    /// after polls that back off (SPEC 4 "Waits": O(log t) calls).
    #[test]
    fn a_stop_that_never_comes_times_out_naming_the_container() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = Double::new();
        rt.push(scheduler("0123456789abcdef-old", "sb-old", true));
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let r = health(&rt, &root, &cancel, &sandboxes).wait_stopped(
            Component::KubeScheduler,
            "0123456789abcdef-old",
            Duration::from_secs(2),
        );
        match r {
            Err(GateError::TimedOut { message }) => assert!(
                message.contains("kube-scheduler container 0123456789abc did not stop"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
        // 2 s at 10 ms growing by half to 500 ms: about a dozen polls, not 200.
        let ps = rt.calls.ps();
        assert!((5..=20).contains(&ps), "{ps} listings in 2 s");
    }

    /// An unreachable runtime ends a restart's wait at once, with that
    /// restart's phase.
    #[test]
    fn an_unreachable_runtime_ends_the_stop_wait_with_the_restart_phase() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = waits();
        rt.fail_listings(Some(RtError::Unreachable("no socket".into())));
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let r = health(&rt, &root, &cancel, &sandboxes).wait_stopped(
            Component::KubeScheduler,
            "old",
            Duration::from_secs(20),
        );
        match r {
            Err(GateError::Structural { phase, .. }) => {
                assert_eq!(phase, Phase::Restart(Component::KubeScheduler))
            }
            other => panic!("{other:?}"),
        }
    }

    /// SPEC 4 step 9 and "Which container": the new container is another
    /// ID of the static pod; the old one still running, or a container of
    /// the same name in another kube-system pod, is never taken for it.
    #[test]
    fn the_start_wait_takes_neither_the_old_container_nor_another_pods() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = waits();
        rt.insert_newest(container(
            "kube-scheduler",
            "kube-scheduler-debug",
            "not-static",
            "sb-api",
            true,
            "2",
        ));
        rt.add_sandbox(sandbox("sb-api", "api"));
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let r = health(&rt, &root, &cancel, &sandboxes).wait_new_running(
            Component::KubeScheduler,
            "old",
            Instant::now() + Duration::from_millis(300),
            Duration::from_millis(300),
            None,
        );
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("no new kube-scheduler container"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        // The static pod's new container is taken as soon as it runs.
        rt.insert_newest(scheduler("new", "sb-new", true));
        let id = health(&rt, &root, &cancel, &sandboxes)
            .wait_new_running(
                Component::KubeScheduler,
                "old",
                Instant::now() + Duration::from_secs(5),
                Duration::from_secs(5),
                None,
            )
            .unwrap();
        assert_eq!(id, "new");
    }

    /// Sandboxes are looked up again only for a component's container in a
    /// sandbox not seen before; other containers never cost a listing.
    #[test]
    fn known_sandboxes_cover_only_the_components_containers() {
        let known = Sandboxes::default();
        known.replace(vec![sandbox("sb-old", "file")]);
        let old = scheduler("old", "sb-old", true);
        let new = scheduler("new", "sb-new", true);
        let vip = container("kube-vip", "kube-vip-cp-1", "vip", "sb-vip", true, "1");
        assert!(known.covers(&[old.clone(), vip]));
        assert!(!known.covers(&[old, new]));
    }

    /// SPEC 4 step 7: kube-apiserver is probed on the --secure-port of its
    /// manifest, trusting pki/ca.crt and presenting admin.conf's client
    /// certificate.
    #[test]
    fn the_probe_identity_and_port_come_from_the_node() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let pki = t.path().join("etc/kubernetes/pki");
        let id = apiserver_identity(&root).unwrap();
        assert_eq!(id.ca_pem, std::fs::read(pki.join("ca.crt")).unwrap());
        let client = pki::parse_pem_certificate(&id.client_cert_pem).unwrap();
        assert!(
            client.subject.contains("CN=kubernetes-admin"),
            "{}",
            client.subject
        );
        assert!(!id.client_key_pem.is_empty());
        assert_eq!(apiserver_port(&root), Ok(6443));
        let m = t
            .path()
            .join("etc/kubernetes/manifests/kube-apiserver.yaml");
        let yaml = std::fs::read_to_string(&m).unwrap();
        std::fs::write(&m, yaml.replace("--secure-port=6443", "--secure-port=7443")).unwrap();
        assert_eq!(apiserver_port(&root), Ok(7443));
        let etcd = etcd_identity(&root).unwrap();
        let client = pki::parse_pem_certificate(&etcd.client_cert_pem).unwrap();
        assert!(
            client.subject.contains("kube-etcd-healthcheck-client"),
            "{}",
            client.subject
        );
    }

    /// Every wait's sleep wakes on cancellation.
    #[test]
    fn a_sleep_wakes_on_cancellation() {
        let cancel = Cancel::new();
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                cancel.cancel();
            });
            sleep_until(
                Instant::now() + Duration::from_secs(10),
                Duration::from_secs(10),
                &cancel,
            );
        });
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }

    /// SPEC 10: one judgement. On the same situations (a component's
    /// container running, exited, gone or restarting; each health endpoint
    /// answering 200, 500 or not at all; the runtime unreachable), one gate
    /// attempt passes exactly when the operator view's observation finds
    /// nothing the gate waits on.
    #[test]
    fn the_view_judges_every_situation_as_the_gate_does() {
        #[derive(Debug, Clone, Copy)]
        enum Fault {
            Exited(Component),
            Gone(Component),
            Restarting(Component),
            Answers(&'static str, u16, u16),
            Silent(&'static str, u16),
            Unreachable,
            /// etcd's members say its own member is unhealthy.
            Quorum,
        }
        let ports = [
            ("/health", 2379),
            ("/readyz", 6443),
            ("/healthz", 10257),
            ("/healthz", 10259),
        ];
        let mut faults: Vec<Fault> = Vec::new();
        for c in Component::ALL {
            faults.extend([Fault::Exited(c), Fault::Gone(c), Fault::Restarting(c)]);
        }
        for (path, port) in ports {
            faults.extend([
                Fault::Answers(path, port, 500),
                Fault::Answers(path, port, 200),
                Fault::Silent(path, port),
            ]);
        }
        faults.push(Fault::Unreachable);
        faults.push(Fault::Quorum);
        // No fault, each fault alone, and each pair.
        let mut situations: Vec<Vec<Fault>> = vec![Vec::new()];
        for (i, a) in faults.iter().enumerate() {
            situations.push(vec![*a]);
            for b in &faults[i + 1..] {
                situations.push(vec![*a, *b]);
            }
        }
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let now_nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            .to_string();
        let mut judged = 0;
        for faults in &situations {
            let rt = Double::new();
            for c in Component::ALL {
                rt.push(container(
                    c.name(),
                    &format!("{c}-cp-1"),
                    &format!("{c}-static"),
                    &format!("sb-{c}"),
                    true,
                    &now_nanos,
                ));
                rt.add_sandbox(sandbox(&format!("sb-{c}"), "file"));
            }
            for f in faults {
                match *f {
                    Fault::Exited(c) => rt.set_running(&format!("{c}-static"), false),
                    Fault::Gone(c) => rt.remove(&format!("{c}-static")),
                    Fault::Restarting(c) => {
                        rt.set_attempt(&format!("{c}-static"), 2);
                        // The one before it exited in the same sandbox.
                        rt.push(container(
                            c.name(),
                            &format!("{c}-cp-1"),
                            &format!("{c}-crashed"),
                            &format!("sb-{c}"),
                            false,
                            "1",
                        ));
                    }
                    Fault::Answers(path, port, code) => {
                        rt.set_answer(path, port, Ok((code, "[-]x failed")))
                    }
                    Fault::Silent(path, port) => rt.set_answer(path, port, Err("timed out")),
                    Fault::Unreachable => {
                        rt.fail_listings(Some(RtError::Unreachable("the runtime is down".into())))
                    }
                    Fault::Quorum => rt.set_etcd(
                        double::MEMBER_LIST,
                        r#"[{"endpoint":"https://10.0.0.11:2379","health":false,"error":"context deadline exceeded"}]"#,
                    ),
                }
            }
            let cancel = Cancel::new();
            let sandboxes = Sandboxes::default();
            let h = waits_health(&rt, &root, &cancel, &sandboxes);
            let gate_passes = matches!(
                h.attempt(Instant::now() + Duration::from_secs(2)),
                Attempt::Pass(_)
            );
            let o = crate::tools::live::observe(&rt, &root, h.now, Duration::from_secs(2));
            let view_passes = o.judged().gate_refusals(o.wall).is_empty();
            assert_eq!(
                gate_passes,
                view_passes,
                "{faults:?}: the gate {} and the view {}: {:?}",
                if gate_passes { "passes" } else { "waits" },
                if view_passes {
                    "would pass it"
                } else {
                    "would not"
                },
                o.judged().gate_refusals(o.wall)
            );
            judged += 1;
        }
        assert_eq!(judged, situations.len());
        assert!(judged > 300, "{judged}");
        // Past the harness's capture, into the suite's output (as the
        // integration tests' `say` does).
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "live view: {judged} situations judged as the gate judges"
        );
    }
}
