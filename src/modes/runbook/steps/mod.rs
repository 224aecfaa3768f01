//! The renewal as a table of steps (SPEC 4). Each step has its phase (what
//! a failure or a panic in it is reported as), what the phase file records
//! once it succeeded, and its successor; [`Run::steps`] is the one loop that
//! runs them. One file per step; what a run ends with (receipt, restore,
//! result) stays in `modes::runbook`.
//!
//! Adding a step: a variant here with its phase, record and successor, and
//! its file with one `impl Run` method that the loop calls.

mod ca_check;
mod expiry;
mod gate;
mod phase_file;
mod postflight;
mod preflight;
mod recovery;
mod renew;
mod restart;

use crate::modes::runbook::*;

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
    /// Step 7: the tools the next steps need, then the health gate.
    Gate,
    /// Step 8: kubeadm renews the leaves.
    Renew,
    /// Step 9, for one component.
    Restart(Component),
    /// Step 10.
    Postflight,
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
            Step::Expiry => Phase::Expiry,
            Step::Gate => Phase::Health,
            Step::Renew => Phase::RenewCerts,
            Step::Restart(c) => Phase::Restart(c),
            Step::Postflight => Phase::Postflight,
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

    /// The step after this one once it succeeded; None: the renewal is
    /// done. After the gate, the work goes where the phase file said it
    /// stands (`start`).
    pub(in crate::modes::runbook) fn next(self, start: Start) -> Option<Step> {
        Some(match self {
            Step::Deadline => Step::PhaseFile,
            Step::PhaseFile => Step::Preflight,
            Step::Preflight => Step::CaCheck,
            Step::CaCheck => Step::Expiry,
            Step::Expiry => Step::Gate,
            Step::Gate => match start {
                Start::Fresh | Start::Renewing => Step::Renew,
                Start::Restart(Some(c)) => Step::Restart(c),
                Start::Restart(None) => Step::Postflight,
            },
            Step::Renew => Step::Restart(Component::Etcd),
            Step::Restart(c) => c.next().map_or(Step::Postflight, Step::Restart),
            Step::Postflight => return None,
        })
    }
}

impl Run<'_> {
    /// Run the steps from the first: to the end (`renewed`), to a step
    /// that ends the run early (`unchanged`), or to the first failure.
    pub(in crate::modes::runbook) fn steps(&mut self) -> Result<Success, Fail> {
        self.step = Step::FIRST;
        loop {
            let ended = match self.step {
                Step::Deadline => self.deadline().map(|()| None),
                Step::PhaseFile => self.phase_file().map(|()| None),
                Step::Preflight => self.preflight_step().map(|()| None),
                Step::CaCheck => self.ca_check().map(|()| None),
                Step::Expiry => self.expiry(),
                Step::Gate => self.gate_step().map(|()| None),
                Step::Renew => self.renew_step().map(|()| None),
                Step::Restart(c) => self.restart_step(c).map(|()| None),
                Step::Postflight => self.postflight_step().map(|()| None),
            }?;
            if let Some(success) = ended {
                return Ok(success);
            }
            match self.step.next(self.start) {
                Some(next) => self.step = next,
                None => return Ok(Success::Renewed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in the order SPEC 4 gives, fresh work to the end.
    fn walk(start: Start) -> Vec<Step> {
        let mut at = Some(Step::FIRST);
        let mut seen = Vec::new();
        while let Some(s) = at {
            seen.push(s);
            at = s.next(start);
        }
        seen
    }

    #[test]
    fn fresh_work_runs_every_step_in_order() {
        use Component::*;
        assert_eq!(
            walk(Start::Fresh),
            vec![
                Step::Deadline,
                Step::PhaseFile,
                Step::Preflight,
                Step::CaCheck,
                Step::Expiry,
                Step::Gate,
                Step::Renew,
                Step::Restart(Etcd),
                Step::Restart(KubeApiserver),
                Step::Restart(KubeControllerManager),
                Step::Restart(KubeScheduler),
                Step::Postflight,
            ]
        );
        assert_eq!(walk(Start::Renewing), walk(Start::Fresh));
    }

    #[test]
    fn resumed_work_goes_from_the_gate_to_the_recorded_step() {
        let after_gate = |start| {
            walk(start)
                .into_iter()
                .skip_while(|s| *s != Step::Gate)
                .skip(1)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            after_gate(Start::Restart(Some(Component::KubeControllerManager))),
            vec![
                Step::Restart(Component::KubeControllerManager),
                Step::Restart(Component::KubeScheduler),
                Step::Postflight,
            ]
        );
        assert_eq!(after_gate(Start::Restart(None)), vec![Step::Postflight]);
    }

    #[test]
    fn each_step_reports_its_phase_and_records_its_successor() {
        assert_eq!(Step::Deadline.phase(), Phase::Cancelled);
        assert_eq!(Step::Preflight.phase(), Phase::StagingConflict);
        assert_eq!(Step::Gate.phase(), Phase::Health);
        assert_eq!(Step::Renew.phase(), Phase::RenewCerts);
        assert_eq!(
            Step::Restart(Component::Etcd).phase(),
            Phase::Restart(Component::Etcd)
        );
        assert_eq!(
            Step::Renew.records(),
            Some(Progress::Restart(Some(Component::Etcd)))
        );
        assert_eq!(
            Step::Restart(Component::KubeScheduler).records(),
            Some(Progress::Restart(None))
        );
        assert_eq!(Step::Expiry.records(), None);
        // What a step records is where the work resumes: its successor.
        for c in Component::ALL {
            let Some(Progress::Restart(next)) = Step::Restart(c).records() else {
                panic!("a restart records restart_pending");
            };
            assert_eq!(
                Step::Restart(c).next(Start::Fresh),
                Step::Gate.next(Start::Restart(next))
            );
        }
    }
}
