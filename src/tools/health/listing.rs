//! One look at kube-system for the gate and the waits: `crictl ps`, then
//! `crictl pods` only when a component's container belongs to a sandbox not
//! seen before ([`Sandboxes`]); and the container a recovery's restart
//! replaces.

use super::{GateError, Health};
use crate::rules::component::Component;
use crate::rules::cri::{self, Container, Listing, Sandbox};
use crate::rules::outcome::Phase;
use crate::tools::runtime::RtError;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    pub(super) fn take_handed(&self) -> Option<Vec<Container>> {
        let handed = self.1.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        (handed.0.elapsed() < HANDED_FRESH).then_some(handed.1)
    }
}

impl Health<'_> {
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
            .map_err(|e| GateError::Structural {
                phase: Phase::Health,
                message: e.to_string(),
            })?;
        Ok(mine
            .iter()
            .find(|x| x.is_running())
            .or(mine.first())
            .map(|x| x.id.clone())
            .unwrap_or_default())
    }

    /// One look at kube-system: `crictl ps`, then `crictl pods` only when a
    /// component's container belongs to a sandbox not seen before (SPEC 4
    /// "Waits": at most two listing calls per gate attempt).
    pub fn list(&self, budget: Duration) -> Result<Listing, RtError> {
        let t0 = Instant::now();
        let containers = self.rt.ps(budget)?;
        self.with_sandboxes(containers, budget.saturating_sub(t0.elapsed()))
    }

    pub(super) fn with_sandboxes(
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
}
