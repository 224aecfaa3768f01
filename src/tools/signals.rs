//! Cancellation: SIGTERM and SIGINT set a flag that every step and every wait
//! loop checks; SIGHUP is ignored (the SSH session going away must not stop a
//! renewal half-way), except while the operator view writes evidence
//! ([`install_for_evidence`]). SIGPIPE is already ignored by the Rust runtime, so a
//! closed stdout or stderr only makes writes fail, which we ignore.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The cancel flag, and the controller's deadline (`--deadline`, SPEC 4
/// "Deadline", v1.1): once it has passed, the run is cancelled as by
/// SIGTERM. Every wait checks [`Cancel::is_cancelled`] every few
/// milliseconds and every tool call is killed when it turns true, so no
/// wait and no tool call runs past the deadline.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    deadline: Option<Deadline>,
}

/// `--deadline T`: when it falls on the monotonic clock, and as given.
#[derive(Debug, Clone)]
struct Deadline {
    at: Instant,
    text: String,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }
    /// The same flag, with the controller's deadline: `left` from now
    /// (zero: it has passed), `text` as the caller gave it.
    /// The same flag, cut at the command line's `--deadline` when one was
    /// given.
    pub fn with_deadline_of(self, g: &crate::contract::cli::Global) -> Cancel {
        match g.deadline_left() {
            None => self,
            Some((left, text)) => self.with_deadline(left, text),
        }
    }

    pub fn with_deadline(mut self, left: Duration, text: &str) -> Cancel {
        self.deadline = Some(Deadline {
            at: Instant::now() + left,
            text: text.to_string(),
        });
        self
    }
    /// A signal came, or the deadline passed.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst) || self.deadline_passed()
    }
    /// The controller's deadline has passed (a signal aside).
    pub fn deadline_passed(&self) -> bool {
        self.deadline
            .as_ref()
            .is_some_and(|d| Instant::now() >= d.at)
    }
    /// Time left before the deadline (None: no deadline).
    pub fn left(&self) -> Option<Duration> {
        self.deadline
            .as_ref()
            .map(|d| d.at.saturating_duration_since(Instant::now()))
    }
    /// `limit`, or less when the deadline comes first.
    pub fn bound(&self, limit: Duration) -> Duration {
        self.left().map_or(limit, |l| l.min(limit))
    }
    /// Why the run is cancelled, for messages and receipts.
    pub fn why(&self) -> String {
        match &self.deadline {
            Some(d) if self.deadline_passed() && !self.flag.load(Ordering::SeqCst) => {
                format!("cancelled: the controller's deadline {} passed", d.text)
            }
            _ => "cancelled by a signal (SIGTERM/SIGINT)".to_string(),
        }
    }
    /// What SIGTERM does (the handler sets the same flag), for tests.
    #[cfg(test)]
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst)
    }
}

/// Install the handlers for a renewal: SIGTERM/SIGINT cancel, SIGHUP ignored.
pub fn install() -> Cancel {
    let c = Cancel::new();
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&c.flag));
    }
    // A registered handler replaces the default "terminate" action.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGHUP,
        Arc::new(AtomicBool::new(false)),
    );
    c
}

/// Install the handlers for the operator view writing an evidence bundle
/// (`--status-only --evidence`): SIGTERM, SIGINT and SIGHUP all set the
/// flag. The view changes nothing on the node, so a hang-up has nothing to
/// protect: the bundle is abandoned (no file left, not even its temp file)
/// and the view still prints its one document.
pub fn install_for_evidence() -> Cancel {
    let c = Cancel::new();
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&c.flag));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_deadline_cancels_and_says_so() {
        let c = Cancel::new();
        assert!(!c.is_cancelled() && c.left().is_none());
        assert_eq!(c.bound(Duration::from_secs(7)), Duration::from_secs(7));
        let passed = c
            .clone()
            .with_deadline(Duration::ZERO, "2026-12-01T00:00:00Z");
        assert!(passed.is_cancelled() && passed.deadline_passed());
        assert_eq!(
            passed.why(),
            "cancelled: the controller's deadline 2026-12-01T00:00:00Z passed"
        );
        assert_eq!(passed.bound(Duration::from_secs(7)), Duration::ZERO);
        // A signal is named as the cause when it came, deadline or not.
        passed.cancel();
        assert_eq!(passed.why(), "cancelled by a signal (SIGTERM/SIGINT)");
        assert!(c.is_cancelled(), "the flag is shared by the clones");
        let later = Cancel::new().with_deadline(Duration::from_secs(3600), "T");
        assert!(!later.is_cancelled());
        let b = later.bound(Duration::from_secs(7200));
        assert!(b <= Duration::from_secs(3600) && b > Duration::from_secs(3590));
    }
}
