//! One step of a renewal: what a failure in it is reported as, and what
//! the phase file records once it succeeded. Which step follows which is
//! the tables' (`steps::Table`).

use crate::rules::component::Component;
use crate::rules::outcome::Phase;
use crate::rules::resume::Progress;

/// One step of a renewal, in the order SPEC 4 runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::modes::runbook) enum Step {
    /// The controller's deadline or a signal already received, before
    /// anything is read (SPEC 4 "Deadline", v1.1): its only failure is
    /// `cancelled`.
    Deadline,
    /// Step 3: read the phase file and decide where the work starts.
    PhaseFile,
    /// Step 4: the staging preflight.
    Preflight,
    /// Step 5: the CA fingerprints.
    CaCheck,
    /// Step 6: is any leaf due (skipped by `--force` and by resumed work);
    /// an expired leaf, or one not valid yet, fails any work here.
    Expiry,
    /// A recovery's step 6 (SPEC 11): a leaf has expired (unless the
    /// recovery's own work resumes), and none is not valid yet.
    ExpiredLeaves,
    /// Step 7: the tools the next steps need, then the health gate.
    Gate,
    /// A recovery's step 7: the tools only (the gate could not pass: the
    /// expired leaves are why).
    Tools,
    /// Step 8: kubeadm renews the leaves.
    Renew,
    /// Step 9, for one component.
    Restart(Component),
    /// Step 10.
    Postflight,
    /// A recovery's last look at the whole local gate: reported, not
    /// required (SPEC 11).
    HealthAtEnd,
}

impl Step {
    /// Where every run begins.
    pub(in crate::modes::runbook) const FIRST: Step = Step::Deadline;

    /// What a failure in this step, or a panic, is reported as (a failure
    /// may name a more precise phase of its own).
    pub(in crate::modes::runbook) fn phase(self) -> Phase {
        match self {
            Step::Deadline => Phase::Cancelled,
            Step::PhaseFile => Phase::PhaseFile,
            Step::Preflight => Phase::StagingConflict,
            Step::CaCheck => Phase::CaCheck,
            Step::Expiry | Step::ExpiredLeaves => Phase::Expiry,
            Step::Gate | Step::Tools => Phase::Health,
            Step::Renew => Phase::RenewCerts,
            Step::Restart(c) => Phase::Restart(c),
            Step::Postflight | Step::HealthAtEnd => Phase::Postflight,
        }
    }

    /// What the phase file records once this step succeeded (None:
    /// nothing; the restart records it as soon as the component is
    /// healthy, the receipt's commit records `done`).
    pub(in crate::modes::runbook) fn records(self) -> Option<Progress> {
        match self {
            Step::Renew => Some(Progress::Restart(Some(Component::Etcd))),
            Step::Restart(c) => Some(Progress::Restart(c.next())),
            _ => None,
        }
    }
}
