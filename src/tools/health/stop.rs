//! The restart loop's wait for the old container to stop: the pidfd of its
//! process where the runtime tells it, listings with back-off otherwise.

use super::poll::{Polled, RestartWait};
use super::{short, sleep_until, Backoff, GateError, Health, EVENT_SAFETY};
use crate::rules::component::Component;
use std::time::{Duration, Instant};

impl Health<'_> {
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
        let mut wait = RestartWait::new(
            c,
            format!("{c} container {} did not stop", short(old)),
            timeout,
            deadline,
            self.cancel,
        );
        tracing::info!(
            component = c.name(),
            "waiting for the old container to stop"
        );
        wait.backoff.polls += 1;
        let mut watched = wait
            .answer(self.rt.container_pid(old, left()))?
            .flatten()
            .and_then(crate::tools::pidwatch::PidFd::open);
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
                wait.backoff.polls += 1;
                let polled = self.rt.ps(left()).map(|list| {
                    if list.iter().any(|x| x.id == old && x.is_running()) {
                        Polled::NotYet
                    } else {
                        Polled::Done(())
                    }
                });
                if wait.step(polled)?.is_some() {
                    tracing::info!(
                        component = c.name(),
                        calls = wait.backoff.polls,
                        ms = t0.elapsed().as_millis() as u64,
                        event,
                        "old container stopped"
                    );
                    return Ok(());
                }
            }
            match watched.take() {
                Some(fd) => {
                    let until = (Instant::now() + EVENT_SAFETY).min(deadline);
                    match fd.wait(until, self.cancel) {
                        // Gone: the runtime may take a moment to say so,
                        // polled densely from here.
                        crate::tools::pidwatch::Waited::Exited => {
                            wait.backoff = Backoff {
                                polls: wait.backoff.polls,
                                ..Backoff::default()
                            }
                        }
                        crate::tools::pidwatch::Waited::TimedOut => watched = Some(fd),
                        crate::tools::pidwatch::Waited::Cancelled => {
                            return Err(GateError::Cancelled)
                        }
                    }
                }
                None => sleep_until(deadline, wait.backoff.pause(), self.cancel),
            }
        }
    }
}
