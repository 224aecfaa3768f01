//! SPEC 4 step 3, the resume rule, once: given the phase file, who asks and
//! the receipt of the operation the phase file names, where a renewal
//! starts. Pure. The renewal acts on the answer; `--check` and
//! `--status-only` report it (they ask as nobody in particular).

use crate::rules::component::Component;
use crate::rules::opid::OperationId;
use crate::rules::outcome::Outcome;
use crate::rules::phase::{PhaseFile, PhaseState};
use crate::rules::receipt::Receipt;
use crate::rules::values::ConstBool;
use serde::{Deserialize, Serialize};

// The doc comments of the next three types are the contract's descriptions
// (the schema's text): the printed views use these types as they are.

/// A receipt that exists but cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MalformedReceipt {
    pub malformed: ConstBool<true>,
    // Why it is not to be trusted (printed as is).
    pub error: String,
}

// `completed/<ID>.json`; absent is `None` (`Option<ReceiptLookup>`).
/// A receipt looked up by ID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ReceiptLookup {
    Found(Box<Receipt>),
    Malformed(MalformedReceipt),
}

impl ReceiptLookup {
    /// There, but not to be trusted: why.
    pub fn malformed(error: impl Into<String>) -> ReceiptLookup {
        ReceiptLookup::Malformed(MalformedReceipt {
            malformed: ConstBool,
            error: error.into(),
        })
    }
}

/// The phase file judged as a renewal would judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum RunbookIntent {
    // No phase file.
    #[default]
    #[serde(rename = "absent")]
    Absent,
    // `done`, in either format.
    #[serde(rename = "done")]
    Done,
    // The crash fell between its receipt and its last phase write.
    /// Unfinished V2 whose operation has a success receipt: treated as done.
    #[serde(rename = "done-by-receipt")]
    DoneByReceipt,
    /// Unfinished work the next renewal resumes.
    #[serde(rename = "pending")]
    Pending,
    // Unreadable or malformed (the phase file or the receipt it depends
    // on); the reason is in `PhaseJudgement::Malformed`.
    #[serde(rename = "malformed")]
    Malformed,
}

impl RunbookIntent {
    /// Unfinished work a renewal would resume.
    pub fn is_pending(self) -> bool {
        self == RunbookIntent::Pending
    }
}

/// The phase file judged as a renewal would judge it, with why in the one
/// case that has a reason: what [`RunbookIntent`] prints, and the words of
/// `malformed` that go with it (so neither can be had without the other).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PhaseJudgement {
    #[default]
    Absent,
    Done,
    DoneByReceipt,
    Pending,
    /// Unreadable or malformed (the phase file or the receipt it depends
    /// on), and why.
    Malformed(String),
}

impl PhaseJudgement {
    /// As printed (`intent`).
    pub fn intent(&self) -> RunbookIntent {
        match self {
            PhaseJudgement::Absent => RunbookIntent::Absent,
            PhaseJudgement::Done => RunbookIntent::Done,
            PhaseJudgement::DoneByReceipt => RunbookIntent::DoneByReceipt,
            PhaseJudgement::Pending => RunbookIntent::Pending,
            PhaseJudgement::Malformed(_) => RunbookIntent::Malformed,
        }
    }

    /// Why it is malformed; None: it is not.
    pub fn malformed(&self) -> Option<&str> {
        match self {
            PhaseJudgement::Malformed(why) => Some(why),
            _ => None,
        }
    }

    /// Unfinished work a renewal would resume.
    pub fn is_pending(&self) -> bool {
        *self == PhaseJudgement::Pending
    }
}

/// Where a renewal's work stands (SPEC 4 steps 8 to 10): where it starts,
/// as the phase file says (step 3), and what each step records once it
/// succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// From the beginning (expiry, gate, kubeadm, every component); no
    /// phase file is written for it.
    Fresh,
    /// kubeadm renews the certificates (`renewing`): kubeadm again, then
    /// every component.
    Renewing,
    /// The restarts, from this component (`restart_pending`; None: the
    /// restarts are over, postflight remains).
    Restart(Option<Component>),
    /// Postflight passed; recorded after the receipt (`done`).
    Done,
}

impl Progress {
    /// The phase file's `state` and next component; None for
    /// [`Progress::Fresh`], which the phase file never records.
    pub fn phase_state(self) -> Option<(PhaseState, Option<Component>)> {
        match self {
            Progress::Fresh => None,
            Progress::Renewing => Some((PhaseState::Renewing, None)),
            Progress::Restart(next) => Some((PhaseState::RestartPending, next)),
            Progress::Done => Some((PhaseState::Done, None)),
        }
    }
}

/// Who asks.
#[derive(Debug, Clone, Copy)]
pub enum Asker<'a> {
    /// A V2 renewal with this operation ID.
    V2(&'a OperationId),
    /// `--legacy-v1`.
    Legacy,
    /// `--check` or `--status-only`: what would a renewal do?
    Observer,
}

/// The resume rule's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// No phase file, or `done`: start fresh.
    Fresh,
    /// Unfinished V2 work of another operation whose receipt is a success:
    /// the crash fell between its receipt and its last phase write; done.
    DoneByReceipt {
        operation_id: OperationId,
        outcome: Outcome,
    },
    /// Unfinished five-line work: resumed in the legacy format.
    Legacy { start: Progress },
    /// This operation's own unfinished work.
    Own { start: Progress },
    /// Another operation's unfinished V2 work, taken over; `supersede`: it
    /// has no receipt yet and gets a `superseded` one.
    TakeOver {
        from: OperationId,
        start: Progress,
        supersede: bool,
    },
    /// Unfinished V2 work (of an observer's unknown asker): some renewal
    /// would resume or take it over.
    Pending { start: Progress },
    /// `--legacy-v1` over unfinished V2 work: refused, nothing changes.
    RefuseLegacyOverV2 {
        operation_id: OperationId,
        state: PhaseState,
    },
    /// The receipt the decision depends on is unusable.
    ReceiptMalformed(String),
}

impl Resume {
    /// Unfinished work that a renewal would do (or, for an observer, that
    /// some renewal would).
    #[cfg(test)]
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            Resume::Legacy { .. }
                | Resume::Own { .. }
                | Resume::TakeOver { .. }
                | Resume::Pending { .. }
        )
    }
}

fn start_of(file: &PhaseFile) -> Progress {
    match file.state() {
        PhaseState::Renewing => Progress::Renewing,
        _ => Progress::Restart(file.next_component()),
    }
}

/// The rule. `receipt_of` looks up the receipt of the operation the phase
/// file names (None: it has none); it is called only when the answer
/// depends on it (never for the asker's own operation, never for legacy
/// work).
pub fn resume(
    file: Option<&PhaseFile>,
    asker: Asker<'_>,
    receipt_of: impl FnOnce(&OperationId) -> Option<ReceiptLookup>,
) -> Resume {
    let Some(file) = file.filter(|f| f.is_unfinished()) else {
        return Resume::Fresh;
    };
    let start = start_of(file);
    let p = match file {
        PhaseFile::Legacy(_) => return Resume::Legacy { start },
        PhaseFile::V2(p) => p,
    };
    match asker {
        Asker::Legacy => {
            return Resume::RefuseLegacyOverV2 {
                operation_id: p.operation_id.clone(),
                state: p.state,
            }
        }
        Asker::V2(me) if *me == p.operation_id => return Resume::Own { start },
        Asker::V2(_) | Asker::Observer => {}
    }
    match receipt_of(&p.operation_id) {
        Some(ReceiptLookup::Found(r)) if r.outcome.is_success() => Resume::DoneByReceipt {
            operation_id: p.operation_id.clone(),
            outcome: r.outcome,
        },
        Some(ReceiptLookup::Malformed(m)) => Resume::ReceiptMalformed(m.error),
        _ if matches!(asker, Asker::Observer) => Resume::Pending { start },
        found => Resume::TakeOver {
            from: p.operation_id.clone(),
            start,
            supersede: found.is_none(),
        },
    }
}

/// Whose unfinished work a run took up (SPEC 4 step 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resumed {
    /// This operation's own earlier attempt.
    Own,
    /// Another V2 operation's.
    Other(OperationId),
    /// Legacy five-line work.
    Legacy,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::node::inspect::state_files::{id, v2};

    fn legacy(state: PhaseState) -> PhaseFile {
        let component = (state == PhaseState::RestartPending).then_some(Component::Etcd);
        crate::node::inspect::state_files::legacy(state, component)
    }

    fn receipt(outcome: Outcome) -> Option<ReceiptLookup> {
        Some(ReceiptLookup::Found(Box::new(
            crate::node::inspect::state_files::receipt("op-0", outcome),
        )))
    }

    fn never(_: &OperationId) -> Option<ReceiptLookup> {
        panic!("the receipt must not be looked up")
    }

    #[test]
    fn progress_is_recorded_as_the_phase_file_says_it() {
        assert_eq!(Progress::Fresh.phase_state(), None);
        assert_eq!(
            Progress::Renewing.phase_state(),
            Some((PhaseState::Renewing, None))
        );
        assert_eq!(
            Progress::Restart(Some(Component::Etcd)).phase_state(),
            Some((PhaseState::RestartPending, Some(Component::Etcd)))
        );
        assert_eq!(Progress::Done.phase_state(), Some((PhaseState::Done, None)));
    }

    #[test]
    fn nothing_or_done_starts_fresh_without_a_lookup() {
        let me = id("op-1");
        assert_eq!(resume(None, Asker::V2(&me), never), Resume::Fresh);
        let done = v2("op-0", PhaseState::Done, None);
        for asker in [Asker::V2(&me), Asker::Legacy, Asker::Observer] {
            assert_eq!(resume(Some(&done), asker, never), Resume::Fresh);
        }
        assert_eq!(
            resume(Some(&legacy(PhaseState::Done)), Asker::Legacy, never),
            Resume::Fresh
        );
    }

    #[test]
    fn own_work_resumes_where_it_stopped() {
        let me = id("op-1");
        let f = v2(
            "op-1",
            PhaseState::RestartPending,
            Some(Component::KubeApiserver),
        );
        assert_eq!(
            resume(Some(&f), Asker::V2(&me), never),
            Resume::Own {
                start: Progress::Restart(Some(Component::KubeApiserver))
            }
        );
        let f = v2("op-1", PhaseState::Renewing, None);
        assert_eq!(
            resume(Some(&f), Asker::V2(&me), never),
            Resume::Own {
                start: Progress::Renewing
            }
        );
    }

    #[test]
    fn legacy_work_is_resumed_in_its_format_by_anyone() {
        let f = legacy(PhaseState::RestartPending);
        let me = id("op-1");
        for asker in [Asker::V2(&me), Asker::Legacy, Asker::Observer] {
            let r = resume(Some(&f), asker, never);
            assert!(
                matches!(
                    r,
                    Resume::Legacy {
                        start: Progress::Restart(Some(Component::Etcd))
                    }
                ),
                "{r:?}"
            );
            assert!(r.is_pending());
        }
    }

    #[test]
    fn legacy_v1_refuses_unfinished_v2_work_before_any_lookup() {
        let f = v2("op-0", PhaseState::RestartPending, Some(Component::Etcd));
        assert_eq!(
            resume(Some(&f), Asker::Legacy, never),
            Resume::RefuseLegacyOverV2 {
                operation_id: id("op-0"),
                state: PhaseState::RestartPending
            }
        );
    }

    #[test]
    fn another_operations_work_depends_on_its_receipt() {
        let me = id("op-1");
        let f = v2(
            "op-0",
            PhaseState::RestartPending,
            Some(Component::KubeScheduler),
        );
        let start = Progress::Restart(Some(Component::KubeScheduler));
        // No receipt: taken over, and it will be superseded.
        assert_eq!(
            resume(Some(&f), Asker::V2(&me), |_| None),
            Resume::TakeOver {
                from: id("op-0"),
                start,
                supersede: true
            }
        );
        assert_eq!(
            resume(Some(&f), Asker::Observer, |_| None),
            Resume::Pending { start }
        );
        // A success receipt: the crash fell after it; done, for anyone.
        let r = resume(Some(&f), Asker::V2(&me), |_| receipt(Outcome::Renewed));
        assert!(
            matches!(r, Resume::DoneByReceipt { ref operation_id, .. } if *operation_id == id("op-0")),
            "{r:?}"
        );
        assert!(!r.is_pending());
        assert!(matches!(
            resume(Some(&f), Asker::Observer, |_| receipt(Outcome::Renewed)),
            Resume::DoneByReceipt { .. }
        ));
        // A failure receipt: taken over, nothing to supersede.
        let r = resume(Some(&f), Asker::V2(&me), |_| receipt(Outcome::Failed));
        assert!(
            matches!(
                r,
                Resume::TakeOver {
                    supersede: false,
                    ..
                }
            ),
            "{r:?}"
        );
        // An unusable receipt: refused.
        assert_eq!(
            resume(Some(&f), Asker::Observer, |_| Some(
                ReceiptLookup::malformed("bad")
            )),
            Resume::ReceiptMalformed("bad".into())
        );
    }
}
