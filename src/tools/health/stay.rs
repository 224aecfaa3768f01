//! The components this run restarted still run the containers their
//! restarts started (SPEC 4 steps 7 and 10, v1.2): asked within every gate
//! attempt, and alone as a recovery's postflight (SPEC 11).

use super::{short, GateError, Health};
use crate::rules::component::Component;
use crate::rules::cri::{Container, Listing};
use crate::rules::outcome::Phase;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// How many of a crashed component's containers its message names.
const CRASHES_NAMED: usize = 3;

impl Health<'_> {
    /// Whether `c`'s container `id`, started by this run's restart, no
    /// longer runs: why, naming the exits seen since (`crictl inspect` of
    /// the newest few of that static pod, oldest first).
    pub(super) fn crashed(
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
}
