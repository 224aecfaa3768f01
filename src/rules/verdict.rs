//! `--check`'s judgement (SPEC section 5 and the product guide): the facts
//! of one read of the node in, the verdict out. Pure: the check mode
//! gathers the facts and prints what this decides.

use crate::rules::agent::{self, AgentIntent};
use crate::rules::resume::PhaseJudgement;
use crate::rules::values::{CheckFailure, Decision, Executor};

/// The facts the decision rests on (pure input).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Holder description when the lock is held.
    pub lock_held_by: Option<String>,
    /// The state dir, lock or owner could not be used.
    pub state_errors: Vec<String>,
    /// The phase file judged as a renewal would judge it (done, by its
    /// file or by a receipt, and absent settle nothing pending), and why
    /// when it (or the receipt it depends on) is malformed.
    pub runbook: PhaseJudgement,
    pub agent: Option<AgentIntent>,
    /// Manifests staged, missing, refused; unexpected staging entries.
    pub manifest_problems: Vec<String>,
    /// Missing or unparsable leaves, unreadable CAs.
    pub pki_errors: Vec<String>,
    pub force: bool,
    pub threshold_days: u32,
    /// Leaves within the threshold (name, days left).
    pub leaves_due: Vec<(String, i64)>,
    pub soonest_leaf: Option<(String, i64)>,
    /// Expired leaves (name, the reason's words: `leaf apiserver expired
    /// 2026-11-30 (2 days ago)`; v1.2).
    pub expired_leaves: Vec<(String, String)>,
    /// Warnings that never fail the check (CAs near expiry, strays, chains).
    pub warnings: Vec<String>,
    /// CAs that end within the threshold with a leaf due under them (SPEC
    /// 4 step 8, v1.3): renewing cannot help; the first failure.
    pub ca_walls: Vec<String>,
    /// A node this runbook does not renew (external etcd, SPEC 12, v1.3):
    /// the one verdict, whatever else is found.
    pub unsupported: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// Executors the controller must run, in order.
    pub executors: Vec<Executor>,
    /// Whether the controller may fall back to this runbook when the typed
    /// executor is unimplemented (only with no pending intent at all).
    pub legacy_fallback: bool,
    /// The first failure's kind.
    pub failure: Option<CheckFailure>,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
}

/// Pure: decide per SPEC section 5 and the product guide. Failures win;
/// else pending work selects the executors; else expiry (or `--force`).
pub fn decide(f: &Facts) -> Verdict {
    if let Some(why) = &f.unsupported {
        return Verdict {
            decision: Decision::Failed,
            executors: Vec::new(),
            legacy_fallback: false,
            failure: Some(CheckFailure::Manifests),
            reasons: vec![why.clone()],
            warnings: Vec::new(),
        };
    }
    let legacy_pending = f.runbook.is_pending();
    let agent = f.agent.clone().unwrap_or(AgentIntent::Absent);
    let mut warnings = f.warnings.clone();
    let failures = failures(f, &agent, legacy_pending, &mut warnings);
    if let Some((first, _)) = failures.first() {
        return Verdict {
            decision: Decision::Failed,
            executors: Vec::new(),
            legacy_fallback: false,
            failure: Some(*first),
            reasons: failures.into_iter().map(|(_, r)| r).collect(),
            warnings,
        };
    }
    let typed_pending = matches!(agent, AgentIntent::Pending { .. });
    let mut reasons = pending_reasons(&agent, legacy_pending);
    let (decision, executors, legacy_fallback) =
        select(f, legacy_pending, typed_pending, &mut reasons);
    // An expired leaf is named with its date whatever decided (SPEC 10).
    if f.force || legacy_pending || typed_pending {
        reasons.extend(f.expired_leaves.iter().map(|(_, w)| w.clone()));
    }
    Verdict {
        decision,
        executors,
        legacy_fallback,
        failure: None,
        reasons,
        warnings,
    }
}

/// What fails the check, in order (the first is its kind): the lock held,
/// the state directory, the phase file, the manifests, the PKI, and an
/// unknown agent state (only a warning while the runbook has work).
fn failures(
    f: &Facts,
    agent: &AgentIntent,
    legacy_pending: bool,
    warnings: &mut Vec<String>,
) -> Vec<(CheckFailure, String)> {
    let mut failures: Vec<(CheckFailure, String)> = Vec::new();
    // Named first (v1.3): no retry, however soon, gets past a CA's end;
    // a controller stops here instead of renewing every interval.
    for w in &f.ca_walls {
        failures.push((CheckFailure::Pki, format!("pki: {w}")));
    }
    if let Some(holder) = &f.lock_held_by {
        failures.push((
            CheckFailure::Busy,
            format!("busy: the renewal lock is held by {holder}"),
        ));
    }
    for e in &f.state_errors {
        failures.push((CheckFailure::State, format!("state: {e}")));
    }
    if let Some(e) = f.runbook.malformed() {
        failures.push((CheckFailure::PhaseFile, format!("phase file: {e}")));
    }
    for p in &f.manifest_problems {
        failures.push((CheckFailure::Manifests, format!("manifests: {p}")));
    }
    for e in &f.pki_errors {
        failures.push((CheckFailure::Pki, format!("pki: {e}")));
    }
    if let AgentIntent::Unknown { reason } = agent {
        if legacy_pending {
            warnings.push(format!(
                "the node agent's state is unknown ({reason}); the runbook has unfinished work, so only the runbook is selected"
            ));
        } else {
            failures.push((
                CheckFailure::AgentState,
                format!("the node agent's state is unknown: {reason}"),
            ));
        }
    }
    failures
}

/// The work that must finish first: the runbook's phase file, the node
/// agent's pending renewal.
fn pending_reasons(agent: &AgentIntent, legacy_pending: bool) -> Vec<String> {
    let mut reasons = Vec::new();
    if legacy_pending {
        reasons.push(
            "the runbook has unfinished work (its phase file): its restarts must finish first"
                .to_string(),
        );
    }
    if let AgentIntent::Pending {
        phase,
        operation_id,
    } = agent
    {
        reasons.push(format!(
            "the node agent has a pending renewal ({}{}): it must finish on the node agent (the runbook may not take over)",
            agent::phase_words(phase),
            operation_id.as_deref().map(|id| format!(" (operation {id})")).unwrap_or_default()
        ));
    }
    reasons
}

/// The decision, its executors and whether the legacy fallback is allowed:
/// pending work first, then `--force`, then the leaves due.
fn select(
    f: &Facts,
    legacy_pending: bool,
    typed_pending: bool,
    reasons: &mut Vec<String>,
) -> (Decision, Vec<Executor>, bool) {
    match (legacy_pending, typed_pending) {
        (true, true) => (
            Decision::Renew,
            vec![Executor::Legacy, Executor::Typed],
            false,
        ),
        (true, false) => (Decision::Renew, vec![Executor::Legacy], false),
        (false, true) => (Decision::Renew, vec![Executor::Typed], false),
        (false, false) if f.force => {
            reasons.push("forced: expiry is not checked".to_string());
            (Decision::Renew, vec![Executor::Typed], true)
        }
        (false, false) if !f.leaves_due.is_empty() => {
            reasons.extend(due_reasons(f));
            (Decision::Renew, vec![Executor::Typed], true)
        }
        (false, false) => {
            reasons.push(match &f.soonest_leaf {
                Some((name, days)) => format!(
                    "no leaf expires within {} days (soonest: {name} in {days} days)",
                    f.threshold_days
                ),
                None => format!("no leaf expires within {} days", f.threshold_days),
            });
            (Decision::Unchanged, Vec::new(), false)
        }
    }
}

/// Each leaf due, in words: an expired one with its date (never a negative
/// count), the others with their days left.
fn due_reasons(f: &Facts) -> Vec<String> {
    f.leaves_due
        .iter()
        .map(|(name, days)| {
            let expired = f.expired_leaves.iter().find(|(n, _)| n == name);
            if let Some((_, words)) = expired {
                words.clone()
            } else if *days < 0 {
                format!("leaf {name} expired {} days ago", -days)
            } else {
                format!(
                    "leaf {name} expires in {days} days (threshold {})",
                    f.threshold_days
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC 4 step 8 (v1.3): a CA that ends within the threshold with a
    /// leaf due under it fails the check, named first (before a held
    /// lock: no retry gets past a CA's end), so a controller stops.
    #[test]
    fn a_ca_wall_fails_the_check_and_is_named_first() {
        let wall = "ca ca ends 2027-06-10T00:00:00Z: renewing its leaves cannot move them past the threshold; the CA must be rotated (never done here)";
        let v = decide(&Facts {
            ca_walls: vec![wall.into()],
            lock_held_by: Some("pid 42".into()),
            leaves_due: vec![("apiserver".into(), 3)],
            ..Facts::default()
        });
        assert_eq!(v.decision, Decision::Failed);
        assert_eq!(v.failure, Some(CheckFailure::Pki));
        assert_eq!(v.reasons[0], format!("pki: {wall}"));
        assert!(v.reasons[1].starts_with("busy:"), "{:?}", v.reasons);
    }

    /// SPEC 12 (v1.3): a node the runbook does not renew is one verdict,
    /// whatever else the facts hold.
    #[test]
    fn an_unsupported_node_is_the_one_reason() {
        let why = "external etcd: this runbook renews stacked-etcd nodes only";
        let v = decide(&Facts {
            unsupported: Some(why.into()),
            pki_errors: vec!["leaf etcd-server is missing".into()],
            leaves_due: vec![("apiserver".into(), 3)],
            ..base()
        });
        assert_eq!(v.decision, Decision::Failed);
        assert_eq!(v.reasons, [why]);
        assert_eq!(v.failure, Some(CheckFailure::Manifests));
        assert!(v.executors.is_empty() && v.warnings.is_empty());
    }

    fn base() -> Facts {
        Facts {
            threshold_days: 30,
            soonest_leaf: Some(("etcd-peer".into(), 91)),
            ..Default::default()
        }
    }
    fn pending_agent() -> Option<AgentIntent> {
        Some(AgentIntent::Pending {
            phase: "renewing".into(),
            operation_id: Some("a".into()),
        })
    }

    #[test]
    fn nothing_pending_nothing_due_is_unchanged() {
        let v = decide(&base());
        assert_eq!(v.decision, Decision::Unchanged);
        assert!(v.executors.is_empty());
        assert!(v.reasons[0].contains("etcd-peer in 91 days"));
        let mut f = base();
        f.soonest_leaf = None;
        assert_eq!(decide(&f).reasons, vec!["no leaf expires within 30 days"]);
    }

    #[test]
    fn due_or_forced_is_renew_with_fallback() {
        let mut f = base();
        f.leaves_due = vec![("apiserver".into(), 3)];
        let v = decide(&f);
        assert_eq!(
            (v.decision, v.executors.clone(), v.legacy_fallback),
            (Decision::Renew, vec![Executor::Typed], true)
        );
        assert_eq!(
            v.reasons,
            vec!["leaf apiserver expires in 3 days (threshold 30)"]
        );
        let mut f = base();
        f.force = true;
        let v = decide(&f);
        assert_eq!(
            (v.decision, v.legacy_fallback, v.reasons),
            (
                Decision::Renew,
                true,
                vec!["forced: expiry is not checked".to_string()]
            )
        );
    }

    #[test]
    fn an_expired_leaf_is_a_reason_with_its_date_never_a_negative_count() {
        let mut f = base();
        f.leaves_due = vec![("apiserver".into(), -2), ("etcd-peer".into(), 11)];
        f.expired_leaves = vec![(
            "apiserver".into(),
            "leaf apiserver expired 2026-11-30 (2 days ago)".into(),
        )];
        let v = decide(&f);
        assert_eq!(v.decision, Decision::Renew);
        assert_eq!(
            v.reasons[0],
            "leaf apiserver expired 2026-11-30 (2 days ago)"
        );
        assert!(v.reasons[1].contains("etcd-peer expires in 11 days"));
        assert!(v.reasons.iter().all(|r| !r.contains("-2")));
        // Forced or pending: still named, with its date.
        f.force = true;
        let v = decide(&f);
        assert!(v
            .reasons
            .iter()
            .any(|r| r.contains("apiserver expired 2026-11-30")));
        f.force = false;
        f.agent = pending_agent();
        let v = decide(&f);
        assert!(v
            .reasons
            .iter()
            .any(|r| r.contains("apiserver expired 2026-11-30")));
    }

    #[test]
    fn an_expired_leaf_without_its_words_says_its_days() {
        let mut f = base();
        f.leaves_due = vec![("apiserver".into(), -2)];
        assert_eq!(
            decide(&f).reasons,
            vec!["leaf apiserver expired 2 days ago"]
        );
    }

    #[test]
    fn executor_selection_follows_pending_intent() {
        let mut f = base();
        f.runbook = PhaseJudgement::Pending;
        f.agent = pending_agent();
        let v = decide(&f);
        assert_eq!(v.executors, vec![Executor::Legacy, Executor::Typed]);
        assert!(!v.legacy_fallback);
        assert!(v.reasons[0].contains("the runbook has unfinished work"));
        assert!(v.reasons[1].contains("(operation a)"));
        f.runbook = PhaseJudgement::Done;
        assert_eq!(decide(&f).executors, vec![Executor::Typed]);
        assert!(!decide(&f).legacy_fallback);
        f.runbook = PhaseJudgement::Pending;
        f.agent = Some(AgentIntent::Idle {
            phase: "done".into(),
            operation_id: None,
        });
        assert_eq!(decide(&f).executors, vec![Executor::Legacy]);
        // forced does not bypass pending intent
        f.force = true;
        assert_eq!(decide(&f).executors, vec![Executor::Legacy]);
        // settled work (done, by its file or its receipt) is not pending
        f.force = false;
        for settled in [
            PhaseJudgement::Absent,
            PhaseJudgement::Done,
            PhaseJudgement::DoneByReceipt,
        ] {
            f.runbook = settled;
            assert_eq!(decide(&f).decision, Decision::Unchanged);
        }
    }

    #[test]
    fn unknown_agent_fails_unless_legacy_pending() {
        let mut f = base();
        f.agent = Some(AgentIntent::Unknown {
            reason: "bad json".into(),
        });
        let v = decide(&f);
        assert_eq!(
            (v.decision, v.failure),
            (Decision::Failed, Some(CheckFailure::AgentState))
        );
        f.runbook = PhaseJudgement::Pending;
        let v = decide(&f);
        assert_eq!(v.decision, Decision::Renew);
        assert_eq!(v.executors, vec![Executor::Legacy]);
        assert!(v
            .warnings
            .iter()
            .any(|w| w.contains("node agent's state is unknown")));
    }

    #[test]
    fn failures_win_and_busy_comes_first() {
        let mut f = base();
        f.runbook = PhaseJudgement::Malformed("six lines".into());
        f.lock_held_by = Some("pid 7".into());
        f.manifest_problems = vec!["etcd manifest is missing".into()];
        let v = decide(&f);
        assert_eq!(v.decision, Decision::Failed);
        assert_eq!(v.failure, Some(CheckFailure::Busy));
        assert_eq!(
            v.reasons,
            vec![
                "busy: the renewal lock is held by pid 7",
                "phase file: six lines",
                "manifests: etcd manifest is missing"
            ]
        );
        assert!(v.executors.is_empty());
        let mut f = base();
        f.pki_errors = vec!["apiserver.crt does not parse".into()];
        assert_eq!(decide(&f).failure, Some(CheckFailure::Pki));
        let mut f = base();
        f.state_errors = vec!["refused".into()];
        assert_eq!(
            (decide(&f).failure, decide(&f).reasons),
            (
                Some(CheckFailure::State),
                vec!["state: refused".to_string()]
            )
        );
    }
}
