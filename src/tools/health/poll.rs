//! One poll of the restart loop's waits (the old container stops, a new
//! one runs), judged alike: what the runtime answered, what its failures
//! mean for the wait, and when the wait ends (cancelled, past its
//! deadline).

use super::{Backoff, GateError};
use crate::rules::component::Component;
use crate::rules::cri::CriError;
use crate::rules::outcome::Phase;
use crate::tools::runtime::RtError;
use crate::tools::signals::Cancel;
use std::time::{Duration, Instant};

/// What one listing of a restart wait found.
#[derive(Debug)]
pub(super) enum Polled<T> {
    /// What the wait waits for: it ends with this.
    Done(T),
    /// Not yet: the wait goes on.
    NotYet,
    /// The listing cannot be judged (containers of two static pods): will
    /// not pass by waiting.
    Refused(CriError),
}

/// One restart wait of component `c`: its polls and back-off, its
/// deadline, and why its last poll failed.
pub(super) struct RestartWait<'a> {
    c: Component,
    /// What did not happen, for the timeout's message (`no new
    /// kube-scheduler container ran`).
    what: String,
    timeout: Duration,
    deadline: Instant,
    cancel: &'a Cancel,
    pub(super) backoff: Backoff,
    last_error: Option<RtError>,
}

impl<'a> RestartWait<'a> {
    pub(super) fn new(
        c: Component,
        what: String,
        timeout: Duration,
        deadline: Instant,
        cancel: &'a Cancel,
    ) -> RestartWait<'a> {
        RestartWait {
            c,
            what,
            timeout,
            deadline,
            cancel,
            backoff: Backoff::default(),
            last_error: None,
        }
    }

    /// A runtime call's answer; None when it failed and the wait goes on
    /// (the failure kept for the timeout's message). The runtime
    /// unreachable will not pass by waiting: the restart fails at once.
    pub(super) fn answer<T>(&mut self, r: Result<T, RtError>) -> Result<Option<T>, GateError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(RtError::Unreachable(m)) => Err(self.refused(m)),
            Err(e) => {
                self.last_error = Some(e);
                Ok(None)
            }
        }
    }

    /// One poll's step: what it found ends the wait (`Some`), a refusal or
    /// the runtime unreachable fails it at once; otherwise the wait ends
    /// cancelled (the deadline passed, or a signal came, meanwhile) or
    /// timed out, or goes on (`None`: pause, then poll again).
    pub(super) fn step<T>(
        &mut self,
        r: Result<Polled<T>, RtError>,
    ) -> Result<Option<T>, GateError> {
        match self.answer(r)? {
            Some(Polled::Done(v)) => return Ok(Some(v)),
            Some(Polled::Refused(e)) => return Err(self.refused(e.to_string())),
            Some(Polled::NotYet) | None => {}
        }
        if self.cancel.is_cancelled() {
            return Err(GateError::Cancelled);
        }
        if Instant::now() >= self.deadline {
            return Err(GateError::TimedOut {
                message: format!(
                    "{} within {}s ({} calls){}",
                    self.what,
                    self.timeout.as_secs(),
                    self.backoff.polls,
                    self.last_error
                        .as_ref()
                        .map(|e| format!("; the last poll failed: {e}"))
                        .unwrap_or_default()
                ),
            });
        }
        Ok(None)
    }

    fn refused(&self, message: String) -> GateError {
        GateError::Structural {
            phase: Phase::Restart(self.c),
            message,
        }
    }
}
