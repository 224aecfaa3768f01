//! The local health gate (SPEC 4 step 7): one attempt (the components'
//! health endpoints probed side by side with one listing of kube-system,
//! judged as the view judges them, then etcd's quorum) and the wait that
//! polls attempts with back-off to the deadline.

use super::{sleep_until, Backoff, GateError, GateOk, Health};
use crate::rules::component::Component;
use crate::rules::outcome::Phase;
use crate::tools::etcd::{self, Quorum};
use crate::tools::runtime::RtError;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

pub(super) enum Attempt {
    Pass(GateOk),
    NotYet(String),
    Structural(Phase, String),
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
            Quorum::NotYet(m) | Quorum::Unasked(m) => Attempt::NotYet(m),
            Quorum::Structural(p, m) => Attempt::Structural(p, m),
        }
    }

    /// One gate attempt, bounded by `deadline`: one listing of kube-system
    /// (containers and sandboxes; the containers the start wait listed a
    /// moment ago when it handed them over) side by side with the
    /// kube-apiserver probe, then etcd (it needs the etcd container's ID).
    pub(super) fn attempt(&self, deadline: Instant) -> Attempt {
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
                        .unwrap_or((Err(crate::rules::live::Unseen::Panicked), None))
                })
                .collect();
            let direct = direct.join().unwrap_or_else(|_| {
                etcd::Direct::Asked(Quorum::Unasked("the etcd probe panicked".into()))
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
                return Attempt::Structural(Phase::Health, m.to_string());
            }
            let containers = crate::rules::live::in_listing(&listing, c.name(), None);
            let (health, allowance) = match healths.next() {
                Some((h, a)) => (Some(h), a),
                None => (None, None),
            };
            let observed = crate::rules::live::Observed {
                name: c.name().to_string(),
                health,
                allowance,
                containers,
                ports: Vec::new(),
                newest: None,
                quorum: None,
            };
            if let Err(m) = crate::rules::live::gate(&observed, wall) {
                return Attempt::NotYet(m.to_string());
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
}
