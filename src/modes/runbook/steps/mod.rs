//! The renewal as tables of steps. Each step has its phase (what a
//! failure or a panic in it is reported as), what the phase file records
//! once it succeeded; each [`Table`] says which step follows which, and
//! how the steps two tables share ask the node ([`Way`]); [`run_all`]
//! is the one loop that runs them and folds in what each found
//! ([`Found`]). One file per step, each a plain function over what it
//! reads and writes (the transaction on the node, the tools, the request,
//! the gate's memory); what a run ends with (receipt, restore, result)
//! stays in `modes::runbook`.
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
//! the tables' `next`, its file with one function, and its line in
//! [`one`].

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
pub(in crate::modes::runbook) mod step;

pub(in crate::modes::runbook) use step::Step;

use crate::contract::cli::Request;
use crate::modes::runbook::run::{Found, Run, Seen, Tools};
use crate::rules::component::Component;
use crate::rules::failure::{Fail, Success};
use crate::rules::resume::Progress;
use std::time::Instant;

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
    pub(in crate::modes::runbook) fn next(self, step: Step, start: Progress) -> Option<Step> {
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
                Progress::Fresh | Progress::Renewing => Step::Renew,
                Progress::Restart(Some(c)) => Step::Restart(c),
                // The phase file's `done` is fresh work (step 3); were it
                // ever where work starts, the postflight still proves it.
                Progress::Restart(None) | Progress::Done => Step::Postflight,
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
                old: gate::old,
                after_restart: gate::after_restart,
                still_healthy: gate::at_postflight,
                etcd_serves: serving::etcd_serves,
            },
            Table::Recovery => Way {
                old: recovery::old,
                after_restart: recovery::wait_serving,
                still_healthy: recovery::stayed,
                etcd_serves: recovery::etcd_serves,
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
    pub old: fn(&Tools<'_>, &mut Seen, Component) -> Result<String, Fail>,
    /// After the component's new container runs, until the deadline: what
    /// lets the restarts go on.
    pub after_restart: fn(&Tools<'_>, &mut Seen, Component, Instant) -> Result<(), Fail>,
    /// The postflight's look at the health.
    pub still_healthy: fn(&Tools<'_>, &mut Seen) -> Result<(), Fail>,
    /// etcd serves the renewed certificates, within the budget.
    pub etcd_serves: serving::EtcdServes,
}

/// Run the steps of the mode asked's table ([`Table::of`]) from the
/// first, folding in what each found: to the end (`renewed`), to a step
/// that ends the run early (`unchanged`), or to the first failure.
/// `run.step` is the step it is in.
pub(in crate::modes::runbook) fn run_all(
    run: &mut Run<'_>,
    req: &Request,
) -> Result<Success, Fail> {
    let table = Table::of(req.recovery());
    run.step = Step::FIRST;
    loop {
        match one(run, req, table.way())? {
            Found::Nothing => {}
            Found::Start(p) => run.start = p,
            Found::Before(pki) => run.report.before = Some(pki),
            Found::Unchanged(pki, why) => {
                run.report.before = Some(pki);
                return Ok(Success::Unchanged(why));
            }
            Found::Restarted(r) => run.report.restarts.push(r),
            Found::HealthAtEnd(h) => run.report.health_at_end = Some(h),
        }
        match table.next(run.step, run.start) {
            Some(next) => run.step = next,
            None => return Ok(Success::Renewed),
        }
    }
}

/// The step the run is in, over what it reads and writes.
fn one(run: &mut Run<'_>, req: &Request, way: Way) -> Result<Found, Fail> {
    let (op, t, seen, start) = (&mut run.op, &run.tools, &mut run.seen, run.start);
    let nothing = |()| Found::Nothing;
    match run.step {
        Step::Deadline => phase_file::deadline(t).map(nothing),
        Step::PhaseFile => phase_file::take_up(op, t).map(Found::Start),
        Step::Preflight => preflight::preflight(t).map(nothing),
        Step::CaCheck => ca_check::ca_check(op, t, req).map(nothing),
        Step::Expiry => expiry::expiry(op, t, req, start),
        Step::ExpiredLeaves => recovery::expired_leaves(op, t, start).map(Found::Before),
        Step::Gate => gate::gate_step(op, t, seen, start).map(nothing),
        Step::Tools => recovery::tools_step(op, t, start).map(nothing),
        Step::Renew => {
            let renewed = renew::renew(op, t, seen);
            run.report.resigned = renewed.resigned;
            run.report.leaves = renewed.leaves;
            renewed.result.map(nothing)
        }
        Step::Restart(c) => restart::restart(op, t, seen, way, c).map(Found::Restarted),
        Step::Postflight => postflight::postflight(op, t, seen, way).map(nothing),
        Step::HealthAtEnd => recovery::health_at_end(t, seen).map(Found::HealthAtEnd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::runbook::run::cancelled;
    use crate::rules::outcome::Phase;
    use crate::tools::signals::Cancel;

    /// A table in the order SPEC 4 (SPEC 11) gives, from the first step to
    /// the end.
    fn walk(table: Table, start: Progress) -> Vec<Step> {
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
            walk(Table::Renewal, Progress::Fresh),
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
            walk(Table::Renewal, Progress::Renewing),
            walk(Table::Renewal, Progress::Fresh)
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
            after_gate(Progress::Restart(Some(Component::KubeControllerManager))),
            vec![
                Step::Restart(Component::KubeControllerManager),
                Step::Restart(Component::KubeScheduler),
                Step::Postflight,
            ]
        );
        assert_eq!(after_gate(Progress::Restart(None)), vec![Step::Postflight]);
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
                    table.next(Step::Restart(c), Progress::Fresh),
                    table.next(Step::Gate, Progress::Restart(next))
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
        assert_eq!(walk(Table::Recovery, Progress::Fresh), want);
        let steps = walk(Table::Recovery, Progress::Fresh);
        assert!(!steps.contains(&Step::Gate) && !steps.contains(&Step::Expiry));
    }

    #[test]
    fn both_tables_resume_where_the_phase_file_says() {
        for table in [Table::Renewal, Table::Recovery] {
            let from_scheduler = walk(table, Progress::Restart(Some(Component::KubeScheduler)));
            let after_gate = from_scheduler
                .iter()
                .position(|s| matches!(s, Step::Gate | Step::Tools))
                .unwrap();
            assert_eq!(
                from_scheduler[after_gate + 1..][..2],
                [Step::Restart(Component::KubeScheduler), Step::Postflight]
            );
            let all_restarted = walk(table, Progress::Restart(None));
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
        let mut left = vec![Progress::Fresh, Progress::Renewing, Progress::Restart(None)];
        left.extend(Component::ALL.map(|c| Progress::Restart(Some(c))));
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
