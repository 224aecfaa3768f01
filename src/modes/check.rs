//! `--check`: the read-only preflight of SPEC section 5. Gathers facts
//! (never writing or creating anything), then decides with a pure function.

use crate::contract::cli::Global;
use crate::contract::{self as doc, CheckFailure, Decision, Executor};
use crate::modes::output::{self, Report};
use crate::node::fsx::Root;
use crate::node::inspect::RunbookIntent;
use crate::node::snapshot::NodeSnapshot;
use crate::rules::agent::AgentIntent;
use crate::rules::expiry;
use crate::rules::outcome::exit;
use time::OffsetDateTime;

/// The facts the decision rests on (pure input).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Holder description when the lock is held.
    pub lock_held_by: Option<String>,
    /// The state dir, lock or owner could not be used.
    pub state_errors: Vec<String>,
    pub runbook: Option<RunbookIntent>,
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

/// Pure: decide per SPEC section 5 and the product guide.
pub fn decide(f: &Facts) -> Verdict {
    let mut failures: Vec<(CheckFailure, String)> = Vec::new();
    let mut warnings = f.warnings.clone();
    if let Some(holder) = &f.lock_held_by {
        failures.push((
            CheckFailure::Busy,
            format!("busy: the renewal lock is held by {holder}"),
        ));
    }
    for e in &f.state_errors {
        failures.push((CheckFailure::State, format!("state: {e}")));
    }
    let runbook = f.runbook.clone().unwrap_or(RunbookIntent::Absent);
    if let RunbookIntent::Malformed(e) = &runbook {
        failures.push((CheckFailure::PhaseFile, format!("phase file: {e}")));
    }
    for p in &f.manifest_problems {
        failures.push((CheckFailure::Manifests, format!("manifests: {p}")));
    }
    for e in &f.pki_errors {
        failures.push((CheckFailure::Pki, format!("pki: {e}")));
    }
    let legacy_pending = runbook.is_pending();
    let agent = f.agent.clone().unwrap_or(AgentIntent::Absent);
    let typed_pending = matches!(agent, AgentIntent::Pending { .. });
    if let AgentIntent::Unknown { reason } = &agent {
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

    if !failures.is_empty() {
        return Verdict {
            decision: Decision::Failed,
            executors: Vec::new(),
            legacy_fallback: false,
            failure: Some(failures[0].0),
            reasons: failures.into_iter().map(|(_, r)| r).collect(),
            warnings,
        };
    }

    let mut reasons = Vec::new();
    let agent_unknown = matches!(agent, AgentIntent::Unknown { .. });
    if legacy_pending {
        reasons.push(
            "the runbook has unfinished work (its phase file): its restarts must finish first"
                .to_string(),
        );
    }
    if typed_pending && !agent_unknown {
        if let AgentIntent::Pending {
            phase,
            operation_id,
        } = &agent
        {
            reasons.push(format!(
                "the node agent has a pending renewal ({}{}): it must finish on the node agent (the runbook may not take over)",
                crate::rules::agent::phase_words(phase),
                operation_id.as_deref().map(|id| format!(" (operation {id})")).unwrap_or_default()
            ));
        }
    }
    let (decision, executors, legacy_fallback) = match (legacy_pending, typed_pending) {
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
            for (name, days) in &f.leaves_due {
                let expired = f.expired_leaves.iter().find(|(n, _)| n == name);
                reasons.push(if let Some((_, words)) = expired {
                    words.clone()
                } else if *days < 0 {
                    format!("leaf {name} expired {} days ago", -days)
                } else {
                    format!(
                        "leaf {name} expires in {days} days (threshold {})",
                        f.threshold_days
                    )
                });
            }
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
    };
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

/// The facts of a snapshot, at the clock and threshold (pure).
pub fn facts(s: &NodeSnapshot, force: bool, now: OffsetDateTime, threshold: u32) -> Facts {
    let mut facts = Facts {
        force,
        threshold_days: threshold,
        ..Default::default()
    };
    facts.state_errors.extend(s.state_error.clone());
    facts.lock_held_by = s.lock.held_by();
    if let Err(e) = &s.lock.probe {
        facts.state_errors.push(e.clone());
    }
    facts.runbook = Some(s.phase.intent.clone());
    facts.agent = Some(s.agent.clone());
    facts.manifest_problems = s.manifests.problems();
    facts.pki_errors = s.pki.errors();
    // The kubelet's configuration over a bound (SPEC 10): refused, named.
    facts.pki_errors.extend(s.kubelet.hostile.clone());
    facts.leaves_due = s.pki.leaves_due(now, threshold);
    facts.soonest_leaf = s.pki.soonest_leaf(now);
    facts.expired_leaves = s
        .pki
        .expired(now)
        .into_iter()
        .map(|(n, _, w)| (n.to_string(), w))
        .collect();
    facts.warnings = s.pki.warnings(now, threshold);
    if let Some(w) = expiry::worst(s.pki.leaf_times(), now, threshold)
        .filter(|w| w.expiry == expiry::Expiry::Expired)
    {
        facts.warnings.push(format!(
            "{}: a renewal refuses at once while a leaf is expired (kube-apiserver and etcd refuse it, so its health gate could not pass); recover the node with --operation-id ID --recover-expired",
            w.words(now)
        ));
    }
    facts.warnings.extend(s.manifests.stray_warnings());
    facts.warnings.extend(s.kubelet.expired(now));
    facts.warnings.extend(s.kubelet.unreadable());
    facts.warnings.extend(s.kubelet.warnings(now, threshold));
    facts
}

/// The document's one-line message for a verdict.
fn message(verdict: &Verdict) -> String {
    let executors: Vec<String> = verdict.executors.iter().map(output::word).collect();
    match verdict.decision {
        Decision::Failed => format!(
            "check failed: {}",
            verdict.reasons.first().cloned().unwrap_or_default()
        ),
        Decision::Unchanged => verdict.reasons.first().cloned().unwrap_or_default(),
        Decision::Renew => format!("renew with executors [{}]", executors.join(", ")),
    }
}

/// An executor in plain words (SPEC 6, v1.2): JSON keeps `typed` and
/// `legacy`.
fn executor_words(e: Executor) -> &'static str {
    match e {
        Executor::Typed => "the node agent",
        // The controller's "legacy executor" is this runbook, whichever
        // format its phase file has.
        Executor::Legacy => "the runbook",
    }
}

/// The text's headline: `CHECK: RENEW with the node agent (1 warning)`.
fn headline(verdict: &Verdict) -> String {
    let executors: Vec<&str> = verdict
        .executors
        .iter()
        .map(|e| executor_words(*e))
        .collect();
    let decision = output::word(&verdict.decision).to_uppercase();
    let problems = if verdict.decision == Decision::Failed {
        verdict.reasons.len()
    } else {
        0
    };
    let counts = crate::modes::advice::counts(problems, verdict.warnings.len());
    let mut head = format!("CHECK: {decision}");
    if !executors.is_empty() {
        head.push_str(&format!(" with {}", executors.join(", then ")));
    }
    if !counts.is_empty() {
        head.push_str(&format!(" ({counts})"));
    }
    head
}

/// Run the check: read the node once, decide, report. Writes nothing to
/// the node.
pub fn run(root: &Root, g: &Global, force: bool, agent_state: Option<&str>) -> Report {
    let now = g.clock.now();
    let threshold = g.threshold_days;
    let s = NodeSnapshot::for_check(root, agent_state);
    let mut verdict = decide(&facts(&s, force, now, threshold));
    let observed = crate::modes::live::observe(root, g);
    let judged = observed.judged();
    verdict
        .warnings
        .extend(crate::modes::live::check_warnings(&judged, observed.wall));
    let code = match verdict.decision {
        Decision::Failed => exit::FAILED,
        _ => exit::OK,
    };
    let message = message(&verdict);
    let term = g.term;
    let foreign = crate::node::manifests::not_a_control_plane(root, &s.manifests);
    let head = headline(&verdict);
    let conflicts = crate::node::conflict::conflicts(root, &s.manifests);
    let mut text = String::new();
    if let (Some(f), Decision::Failed) = (&foreign, verdict.decision) {
        text.push_str(&format!("CHECK: FAILED: {f}\n"));
    } else {
        text.push_str(&head);
        text.push('\n');
        output::text_list(&mut text, "reasons", &verdict.reasons);
        output::text_list(&mut text, "warnings", &verdict.warnings);
        text.push('\n');
        output::text_node_summary(
            &mut text,
            &s.lock.describe(),
            &s.phase.describe(),
            &s.agent.summary(),
            &s.manifests,
        );
        text.push('\n');
        crate::modes::live::text(&mut text, &observed, &judged);
        text.push('\n');
        crate::contract::screen::text_conflicts(&mut text, &conflicts, g.wide);
    }
    let certificates = s.pki.certificates(now, threshold);
    let certificate_authorities = s.pki.authorities(now, threshold);
    let kubelet = s.kubelet.views(now, threshold);
    if foreign.is_none() || verdict.decision != Decision::Failed {
        output::text_cert_tables(
            &mut text,
            &certificates,
            &certificate_authorities,
            threshold,
            g.wide,
        );
        output::text_kubelet(&mut text, &kubelet, s.kubelet.note.as_deref());
        if verdict.decision != Decision::Failed {
            // The verdict again, last: what a scrolled terminal still shows.
            text.push('\n');
            text.push_str(&crate::contract::screen::closing(&head, code, term.width));
        } else {
            // The verdict again, and what to do, last.
            let cmd = crate::modes::advice::commands(g, &s);
            let advice = crate::modes::advice::advise(
                &s,
                &verdict.reasons,
                &conflicts,
                &cmd,
                now,
                threshold,
            );
            text.push('\n');
            text.push_str(&crate::contract::screen::closing(&head, code, term.width));
            crate::modes::advice::render_next(&mut text, &advice.next, term.width);
        }
    }
    let severity = match verdict.decision {
        Decision::Failed => doc::Severity::NotClean,
        _ => doc::Severity::Clean,
    };
    let text = term.render(&text, "CHECK:", severity);

    let document = doc::CheckDocument {
        mode: doc::CheckMode::Check,
        runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
        operation_id: doc::Null,
        outcome: verdict.decision,
        decision: verdict.decision,
        executors: verdict.executors,
        legacy_fallback: verdict.legacy_fallback,
        failure: verdict.failure,
        reasons: verdict.reasons,
        warnings: verdict.warnings,
        message: doc::Message(crate::rules::receipt::bounded_message(&message)),
        force,
        threshold_days: threshold,
        now: doc::Timestamp(crate::rules::clock::rfc3339(now)),
        agent_state: s.agent_view(),
        phase_file: s.phase.view(),
        lock: s.lock.view(),
        manifests: s.manifests.views(),
        staging: s.manifests.staging(),
        stray_manifests: s.manifests.strays.clone(),
        certificates,
        certificate_authorities,
        kubelet_certificates: kubelet,
        live: Some(crate::modes::live::view(&observed, &judged)),
        ca_sha256: s.pki.ca_sha256_view(),
        duration_ms: 0,
        exit_code: 0,
    };
    Report {
        code,
        doc: Box::new(document),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut f = base();
        f.force = true;
        assert_eq!(decide(&f).decision, Decision::Renew);
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
    fn executor_selection_follows_pending_intent() {
        let mut f = base();
        f.runbook = Some(RunbookIntent::Pending);
        f.agent = pending_agent();
        let v = decide(&f);
        assert_eq!(v.executors, vec![Executor::Legacy, Executor::Typed]);
        assert!(!v.legacy_fallback);
        f.runbook = Some(RunbookIntent::Absent);
        assert_eq!(decide(&f).executors, vec![Executor::Typed]);
        assert!(!decide(&f).legacy_fallback);
        f.runbook = Some(RunbookIntent::Pending);
        f.agent = Some(AgentIntent::Idle {
            phase: "done".into(),
            operation_id: None,
        });
        assert_eq!(decide(&f).executors, vec![Executor::Legacy]);
        // forced does not bypass pending intent
        f.force = true;
        assert_eq!(decide(&f).executors, vec![Executor::Legacy]);
        // done-by-receipt is not pending
        f.force = false;
        f.runbook = Some(RunbookIntent::DoneByReceipt);
        assert_eq!(decide(&f).decision, Decision::Unchanged);
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
        f.runbook = Some(RunbookIntent::Pending);
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
        f.runbook = Some(RunbookIntent::Malformed("six lines".into()));
        f.lock_held_by = Some("pid 7".into());
        f.manifest_problems = vec!["etcd manifest is missing".into()];
        let v = decide(&f);
        assert_eq!(v.decision, Decision::Failed);
        assert_eq!(v.failure, Some(CheckFailure::Busy));
        assert_eq!(v.reasons.len(), 3);
        assert!(v.executors.is_empty());
        let mut f = base();
        f.pki_errors = vec!["apiserver.crt does not parse".into()];
        assert_eq!(decide(&f).failure, Some(CheckFailure::Pki));
    }
}
