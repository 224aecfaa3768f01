//! The renewal as tables of steps. Each step has its phase (what a
//! failure or a panic in it is reported as), what the phase file records
//! once it succeeded; each [`Table`] says which step follows which, and
//! how the steps two tables share ask the node ([`Way`]); [`Run::steps`]
//! is the one loop that runs them. One file per step; what a run ends with
//! (receipt, restore, result) stays in `modes::runbook`.
//!
//! Two tables: the renewal's (SPEC 4; `--legacy-v1` runs it too: a legacy
//! run differs in its phase file's format and in writing no receipt, not
//! in its steps) and the recovery's (`--recover-expired`, SPEC 11: no
//! health gate before the renewal, restarts that end when the new
//! container serves the renewed certificate, the health at the end
//! reported). Which one runs is the mode asked's, never the phase file's
//! (SPEC 11, v1.3): a recovery's unfinished work is resumed as a recovery
//! only by `--recover-expired`; a plain renewal that finds it refuses while
//! a leaf is expired, else finishes it with the renewal's table, the whole
//! gate before every restart ([`Table::of`]).
//!
//! Adding a step: a variant here with its phase and record, its place in
//! the tables' `next`, and its file with one `impl Run` method that the
//! loop calls.

mod ca_check;
mod expiry;
mod gate;
mod phase_file;
mod postflight;
mod preflight;
mod recovery;
mod renew;
mod restart;
mod serving;

use crate::modes::runbook::Run;
use crate::rules::component::Component;
use crate::rules::failure::{Fail, Progress, Success};
use crate::rules::outcome::Phase;
use crate::rules::resume::Start;
use std::time::{Duration, Instant};

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

/// A table of steps: which follows which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::modes::runbook) enum Table {
    /// SPEC 4 (and `--legacy-v1`).
    Renewal,
    /// `--recover-expired`, SPEC 11.
    Recovery,
}

impl Table {
    /// The table a run takes: the mode asked's (`recovery`:
    /// `--recover-expired`), whatever work the phase file records (SPEC 11,
    /// v1.3). The phase file says where the work starts, never how.
    pub(in crate::modes::runbook) fn of(recovery: bool) -> Table {
        if recovery {
            Table::Recovery
        } else {
            Table::Renewal
        }
    }

    /// The step after `step` once it succeeded; None: the work is done.
    /// After the gate (a recovery: the tools), the work goes where the
    /// phase file said it stands (`start`).
    pub(in crate::modes::runbook) fn next(self, step: Step, start: Start) -> Option<Step> {
        let recovery = self == Table::Recovery;
        Some(match step {
            Step::Deadline => Step::PhaseFile,
            Step::PhaseFile => Step::Preflight,
            Step::Preflight => Step::CaCheck,
            Step::CaCheck if recovery => Step::ExpiredLeaves,
            Step::CaCheck => Step::Expiry,
            Step::Expiry => Step::Gate,
            Step::ExpiredLeaves => Step::Tools,
            Step::Gate | Step::Tools => match start {
                Start::Fresh | Start::Renewing => Step::Renew,
                Start::Restart(Some(c)) => Step::Restart(c),
                Start::Restart(None) => Step::Postflight,
            },
            Step::Renew => Step::Restart(Component::Etcd),
            Step::Restart(c) => c.next().map_or(Step::Postflight, Step::Restart),
            Step::Postflight if recovery => Step::HealthAtEnd,
            Step::Postflight | Step::HealthAtEnd => return None,
        })
    }

    /// How the steps both tables run (a restart, the postflight) ask the
    /// node where the two differ.
    pub(in crate::modes::runbook) fn way(self) -> Way {
        match self {
            Table::Renewal => Way {
                old: |run, c| run.gate_old(c),
                after_restart: |run, c, deadline| run.gate_after_restart(c, deadline),
                still_healthy: |run| run.gate_at_postflight(),
                etcd_serves: |run, budget| run.etcd_serves(budget),
            },
            Table::Recovery => Way {
                old: |run, c| run.recovery_old(c),
                after_restart: |run, c, deadline| run.wait_serving(c, deadline),
                still_healthy: |run| run.stayed(),
                etcd_serves: |run, budget| run.recovered_etcd_serves(budget),
            },
        }
    }
}

/// What a table's shared steps do where the renewal and the recovery
/// differ: the renewal asks the whole health gate, the recovery what
/// SPEC 11 says in its place.
#[derive(Clone, Copy)]
pub(in crate::modes::runbook) struct Way {
    /// The container a restart of the component replaces.
    pub old: fn(&mut Run<'_>, Component) -> Result<String, Fail>,
    /// After the component's new container runs, until the deadline: what
    /// lets the restarts go on.
    pub after_restart: fn(&mut Run<'_>, Component, Instant) -> Result<(), Fail>,
    /// The postflight's look at the health.
    pub still_healthy: fn(&mut Run<'_>) -> Result<(), Fail>,
    /// etcd serves the renewed certificates, within the budget.
    pub etcd_serves: fn(&Run<'_>, Duration) -> Result<(), Fail>,
}

impl Run<'_> {
    /// The table this work runs: the mode asked's ([`Table::of`]).
    pub(in crate::modes::runbook) fn table(&self) -> Table {
        Table::of(self.env.req.recovery())
    }

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
                Step::ExpiredLeaves => self.expired_leaves().map(|()| None),
                Step::Gate => self.gate_step().map(|()| None),
                Step::Tools => self.tools_step().map(|()| None),
                Step::Renew => self.renew_step().map(|()| None),
                Step::Restart(c) => self.restart_step(c).map(|()| None),
                Step::Postflight => self.postflight_step().map(|()| None),
                Step::HealthAtEnd => self.health_at_end().map(|()| None),
            }?;
            if let Some(success) = ended {
                return Ok(success);
            }
            match self.table().next(self.step, self.start) {
                Some(next) => self.step = next,
                None => return Ok(Success::Renewed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::runbook::cancelled;
    use crate::tools::signals::Cancel;

    /// A table in the order SPEC 4 (SPEC 11) gives, from the first step to
    /// the end.
    fn walk(table: Table, start: Start) -> Vec<Step> {
        let mut at = Some(Step::FIRST);
        let mut seen = Vec::new();
        while let Some(s) = at {
            seen.push(s);
            assert!(seen.len() < 20, "{seen:?}");
            at = table.next(s, start);
        }
        seen
    }

    #[test]
    fn fresh_work_runs_every_step_in_order() {
        use Component::*;
        assert_eq!(
            walk(Table::Renewal, Start::Fresh),
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
        assert_eq!(
            walk(Table::Renewal, Start::Renewing),
            walk(Table::Renewal, Start::Fresh)
        );
    }

    #[test]
    fn resumed_work_goes_from_the_gate_to_the_recorded_step() {
        let after_gate = |start| {
            walk(Table::Renewal, start)
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
            for table in [Table::Renewal, Table::Recovery] {
                assert_eq!(
                    table.next(Step::Restart(c), Start::Fresh),
                    table.next(Step::Gate, Start::Restart(next))
                );
            }
        }
    }

    const PRELUDE: [Step; 4] = [
        Step::Deadline,
        Step::PhaseFile,
        Step::Preflight,
        Step::CaCheck,
    ];
    const RESTARTS: [Step; 4] = [
        Step::Restart(Component::Etcd),
        Step::Restart(Component::KubeApiserver),
        Step::Restart(Component::KubeControllerManager),
        Step::Restart(Component::KubeScheduler),
    ];

    #[test]
    fn the_recovery_has_no_gate_and_ends_with_its_look_at_the_health() {
        let mut want = PRELUDE.to_vec();
        want.extend([Step::ExpiredLeaves, Step::Tools, Step::Renew]);
        want.extend(RESTARTS);
        want.extend([Step::Postflight, Step::HealthAtEnd]);
        assert_eq!(walk(Table::Recovery, Start::Fresh), want);
        let steps = walk(Table::Recovery, Start::Fresh);
        assert!(!steps.contains(&Step::Gate) && !steps.contains(&Step::Expiry));
    }

    #[test]
    fn both_tables_resume_where_the_phase_file_says() {
        for table in [Table::Renewal, Table::Recovery] {
            let from_scheduler = walk(table, Start::Restart(Some(Component::KubeScheduler)));
            let after_gate = from_scheduler
                .iter()
                .position(|s| matches!(s, Step::Gate | Step::Tools))
                .unwrap();
            assert_eq!(
                from_scheduler[after_gate + 1..][..2],
                [Step::Restart(Component::KubeScheduler), Step::Postflight]
            );
            let all_restarted = walk(table, Start::Restart(None));
            assert!(!all_restarted.contains(&Step::Renew), "{all_restarted:?}");
            assert!(!all_restarted.iter().any(|s| matches!(s, Step::Restart(_))));
        }
    }

    /// SPEC 11 (v1.3): for every phase a recovery can leave, the table is
    /// the mode asked's: a plain renewal runs its own, the expiry refusal
    /// and the whole gate before the first restart, and never a recovery's
    /// step; only `--recover-expired` runs the recovery's.
    #[test]
    fn a_recoverys_work_is_resumed_as_a_recovery_only_when_one_is_asked() {
        let mut left = vec![Start::Fresh, Start::Renewing, Start::Restart(None)];
        left.extend(Component::ALL.map(|c| Start::Restart(Some(c))));
        let recovery_only = [Step::ExpiredLeaves, Step::Tools, Step::HealthAtEnd];
        for start in left {
            let plain = walk(Table::of(false), start);
            assert_eq!(Table::of(false), Table::Renewal);
            assert!(
                !plain.iter().any(|s| recovery_only.contains(s)),
                "{start:?}: {plain:?}"
            );
            let expiry = plain.iter().position(|s| *s == Step::Expiry).unwrap();
            let gate = plain.iter().position(|s| *s == Step::Gate).unwrap();
            let first_change = plain
                .iter()
                .position(|s| matches!(s, Step::Renew | Step::Restart(_) | Step::Postflight))
                .unwrap();
            assert!(expiry < gate && gate < first_change, "{start:?}: {plain:?}");
            let recovery = walk(Table::of(true), start);
            assert_eq!(Table::of(true), Table::Recovery);
            assert!(
                recovery.contains(&Step::ExpiredLeaves) && !recovery.contains(&Step::Gate),
                "{start:?}: {recovery:?}"
            );
        }
    }

    #[test]
    fn the_recovery_steps_report_the_phases_of_the_steps_they_replace() {
        assert_eq!(Step::ExpiredLeaves.phase(), Step::Expiry.phase());
        assert_eq!(Step::Tools.phase(), Step::Gate.phase());
        assert_eq!(Step::HealthAtEnd.phase(), Phase::Postflight);
        assert_eq!(Step::Tools.records(), None);
        assert_eq!(Step::HealthAtEnd.records(), None);
    }

    #[test]
    fn a_cancelled_run_says_what_the_flag_says() {
        let cancel = Cancel::new();
        cancel.cancel();
        let c = cancelled(&cancel, Some(Component::Etcd));
        assert!(c.cancelled() && c.phase == Phase::Cancelled);
        assert_eq!(c.message(), cancel.why());
    }
}
