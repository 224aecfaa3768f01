//! The restart loop's wait for a new container of the static pod to run:
//! the kubelet's container links where they are watched, listings with
//! back-off otherwise; the listing found is handed to the gate after it.

use super::poll::{Polled, RestartWait};
use super::{sleep_until, Backoff, GateError, Health, EVENT_SAFETY};
use crate::rules::component::Component;
use crate::rules::cri;
use crate::tools::runtime::RtError;
use std::time::{Duration, Instant};

/// After an event, polls are dense until their pause reaches this, then the
/// wait sleeps on the event again.
const DENSE: Duration = Duration::from_millis(100);

impl Health<'_> {
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
        let mut wait = RestartWait::new(
            c,
            format!("no new {c} container ran"),
            timeout,
            deadline,
            self.cancel,
        );
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
                wait.backoff.polls += 1;
                let polled = self.list_new_running(c, old, deadline, &mut wait.backoff);
                if let Some(id) = wait.step(polled)? {
                    tracing::info!(
                        component = c.name(),
                        calls = wait.backoff.polls,
                        ms = t0.elapsed().as_millis() as u64,
                        "new container running"
                    );
                    return Ok(id);
                }
            }
            self.pause_for_new(c, created, deadline, &mut wait.backoff, &mut after_event)?;
        }
    }

    /// One listing of `wait_new_running`: the ID of a running container of
    /// `c`'s static pod other than `old`; not yet (no candidate, or none in
    /// the static pod); refused (containers of two static pods). Sandboxes
    /// are listed only for a candidate in a sandbox not seen before (a call
    /// more in `backoff`).
    fn list_new_running(
        &self,
        c: Component,
        old: &str,
        deadline: Instant,
        backoff: &mut Backoff,
    ) -> Result<Polled<String>, RtError> {
        let left = || deadline.saturating_duration_since(Instant::now());
        let containers = self.rt.ps(left())?;
        let candidate = containers.iter().any(|x| {
            x.is_running()
                && x.id != old
                && x.labels.get(cri::LABEL_CONTAINER).map(String::as_str) == Some(c.name())
        });
        if !candidate {
            return Ok(Polled::NotYet);
        }
        if !self.sandboxes.covers(&containers) {
            backoff.polls += 1;
        }
        let listing = self.with_sandboxes(containers, left())?;
        let found = match listing.component(c.name()) {
            Err(ambiguous) => return Ok(Polled::Refused(ambiguous)),
            Ok(v) => cri::running(&v)
                .filter(|n| n.id != old)
                .map(|n| n.id.clone()),
        };
        Ok(match found {
            Some(id) => {
                // The gate that follows starts from this listing.
                self.sandboxes.hand(listing.containers);
                Polled::Done(id)
            }
            None => Polled::NotYet,
        })
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
