//! `--check`: the read-only preflight of SPEC section 5. Gathers facts
//! (never writing or creating anything), then decides with a pure function.

use crate::agent::AgentIntent;
use crate::cli::Global;
use crate::fsx::Root;
use crate::inspect::{self, RunbookIntent};
use crate::manifests::{self, ManifestsReport};
use crate::node_pki;
use crate::outcome::exit;
use crate::output::{self, Report};
use serde::Serialize;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Renew,
    Unchanged,
    Failed,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Renew => "renew",
            Decision::Unchanged => "unchanged",
            Decision::Failed => "failed",
        }
    }
}

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
    /// Warnings that never fail the check (CAs near expiry, strays, chains).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// Executors the controller must run, in order: `legacy`, `typed`.
    pub executors: Vec<&'static str>,
    /// Whether the controller may fall back to this runbook when the typed
    /// executor is unimplemented (only with no pending intent at all).
    pub legacy_fallback: bool,
    /// The first failure's code: busy, state, phase-file, manifests,
    /// agent-state, pki.
    pub failure: Option<&'static str>,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
}

/// Pure: decide per SPEC section 5 and the product guide.
pub fn decide(f: &Facts) -> Verdict {
    let mut failures: Vec<(&'static str, String)> = Vec::new();
    let mut warnings = f.warnings.clone();
    if let Some(holder) = &f.lock_held_by {
        failures.push((
            "busy",
            format!("busy: the renewal lock is held by {holder}"),
        ));
    }
    for e in &f.state_errors {
        failures.push(("state", format!("state: {e}")));
    }
    let runbook = f.runbook.clone().unwrap_or(RunbookIntent::Absent);
    if let RunbookIntent::Malformed(e) = &runbook {
        failures.push(("phase-file", format!("phase file: {e}")));
    }
    for p in &f.manifest_problems {
        failures.push(("manifests", format!("manifests: {p}")));
    }
    for e in &f.pki_errors {
        failures.push(("pki", format!("pki: {e}")));
    }
    let legacy_pending = runbook.is_pending();
    let agent = f.agent.clone().unwrap_or(AgentIntent::Absent);
    let typed_pending = matches!(agent, AgentIntent::Pending { .. });
    if let AgentIntent::Unknown { reason } = &agent {
        if legacy_pending {
            warnings.push(format!(
                "agent state unknown ({reason}); legacy intent is pending, so only the legacy executor is selected"
            ));
        } else {
            failures.push(("agent-state", format!("agent state unknown: {reason}")));
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
        reasons.push("legacy intent pending: the runbook's phase file is unfinished and must finish its restarts".to_string());
    }
    if typed_pending && !agent_unknown {
        if let AgentIntent::Pending {
            phase,
            operation_id,
        } = &agent
        {
            reasons.push(format!(
                "typed intent pending: the node agent's renewal is {phase}{} and must finish (no legacy fallback)",
                operation_id.as_deref().map(|id| format!(" (operation {id})")).unwrap_or_default()
            ));
        }
    }
    let (decision, executors, legacy_fallback) = match (legacy_pending, typed_pending) {
        (true, true) => (Decision::Renew, vec!["legacy", "typed"], false),
        (true, false) => (Decision::Renew, vec!["legacy"], false),
        (false, true) => (Decision::Renew, vec!["typed"], false),
        (false, false) if f.force => {
            reasons.push("forced: expiry is not checked".to_string());
            (Decision::Renew, vec!["typed"], true)
        }
        (false, false) if !f.leaves_due.is_empty() => {
            for (name, days) in &f.leaves_due {
                reasons.push(if *days < 0 {
                    format!(
                        "leaf {name} expired {} days ago (threshold {})",
                        -days, f.threshold_days
                    )
                } else {
                    format!(
                        "leaf {name} expires in {days} days (threshold {})",
                        f.threshold_days
                    )
                });
            }
            (Decision::Renew, vec!["typed"], true)
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
    Verdict {
        decision,
        executors,
        legacy_fallback,
        failure: None,
        reasons,
        warnings,
    }
}

/// Manifest problems that fail a check: any of the four staged or missing
/// (or refused), and anything unexpected in the runbook's staging directory.
pub fn manifest_problems(m: &ManifestsReport) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(e) = &m.manifests_dir_error {
        v.push(e.clone());
    }
    for (c, view) in &m.manifests {
        if let Some(e) = &view.error {
            v.push(e.clone());
            continue;
        }
        let mut where_: Vec<&str> = Vec::new();
        if view.runbook_staged {
            where_.push("the runbook's staging directory");
        }
        if view.agent_staged {
            where_.push("the node agent's staging directory");
        }
        if !view.active && where_.is_empty() {
            v.push(format!("{c} manifest is missing"));
        } else if !view.active {
            v.push(format!(
                "{c} manifest is staged in {} and not active",
                where_.join(" and ")
            ));
        } else if !where_.is_empty() {
            v.push(format!(
                "{c} manifest is both active and staged in {}",
                where_.join(" and ")
            ));
        }
    }
    for (view, who) in [
        (&m.runbook_staging, "runbook"),
        (&m.agent_staging, "node agent"),
    ] {
        if let Some(e) = &view.error {
            v.push(format!("{who} staging directory: {e}"));
        }
    }
    for name in &m.runbook_staging.unexpected {
        v.push(format!(
            "unexpected entry {}/{name} in the runbook's staging directory",
            m.runbook_staging.path
        ));
    }
    v
}

pub fn stray_warnings(m: &ManifestsReport) -> Vec<String> {
    m.strays
        .iter()
        .map(|s| format!("stray manifest {}: {}", s.path, s.reason))
        .collect()
}

/// Run the check: gather, decide, report. Writes nothing to the node.
pub fn run(root: &Root, g: &Global, force: bool, agent_state: Option<&str>) -> Report {
    let now = g.clock.now();
    let threshold = g.threshold_days;
    let mut facts = Facts {
        force,
        threshold_days: threshold,
        ..Default::default()
    };

    let state = match inspect::open_state(root) {
        Ok(s) => s,
        Err(e) => {
            facts.state_errors.push(e.to_string());
            None
        }
    };
    let lock = inspect::read_lock(state.as_ref());
    if lock.is_held() {
        facts.lock_held_by = Some(lock.owner.describe());
    }
    if let Err(e) = &lock.probe {
        facts.state_errors.push(e.clone());
    }
    let phase = inspect::read_phase(state.as_ref());
    facts.runbook = Some(phase.intent.clone());
    let (agent_path, agent) = inspect::read_agent(root, agent_state);
    facts.agent = Some(agent.clone());
    let manifests = manifests::inspect(root);
    facts.manifest_problems = manifest_problems(&manifests);
    let pki = node_pki::read(root);
    facts.pki_errors = pki.errors();
    facts.leaves_due = pki.leaves_due(now, threshold);
    facts.soonest_leaf = pki.soonest_leaf(now);
    facts.warnings = pki.warnings(now, threshold);
    facts.warnings.extend(stray_warnings(&manifests));

    let verdict = decide(&facts);
    let code = match verdict.decision {
        Decision::Failed => exit::FAILED,
        _ => exit::OK,
    };
    let message = match verdict.decision {
        Decision::Failed => format!(
            "check failed: {}",
            verdict.reasons.first().cloned().unwrap_or_default()
        ),
        Decision::Unchanged => verdict.reasons.first().cloned().unwrap_or_default(),
        Decision::Renew => format!("renew with executors [{}]", verdict.executors.join(", ")),
    };
    let json = json!({
        "mode": "check",
        "runbookVersion": crate::version::RUNBOOK_VERSION,
        "operationID": null,
        "outcome": verdict.decision.as_str(),
        "decision": verdict.decision.as_str(),
        "executors": verdict.executors,
        "legacyFallback": verdict.legacy_fallback,
        "failure": verdict.failure,
        "reasons": verdict.reasons,
        "warnings": verdict.warnings,
        "message": crate::receipt::bounded_message(&message),
        "force": force,
        "thresholdDays": threshold,
        "now": crate::clock::rfc3339(now),
        "agentState": inspect::agent_json(&agent_path, &agent),
        "phaseFile": phase.to_json(),
        "lock": lock.to_json(),
        "manifests": manifests.manifests,
        "staging": { "runbook": manifests.runbook_staging, "agent": manifests.agent_staging },
        "strayManifests": manifests.strays,
        "certificates": pki.leaves_json(now, threshold),
        "certificateAuthorities": pki.cas_json(now, threshold),
        "caSHA256": pki.ca_sha256(),
    });

    let mut text = String::new();
    text.push_str(&format!(
        "CHECK: {}",
        verdict.decision.as_str().to_uppercase()
    ));
    if !verdict.executors.is_empty() {
        text.push_str(&format!("  executors: {}", verdict.executors.join(", ")));
    }
    text.push('\n');
    output::text_list(&mut text, "reasons", &verdict.reasons);
    output::text_list(&mut text, "warnings", &verdict.warnings);
    text.push('\n');
    output::text_node_summary(
        &mut text,
        &lock.describe(),
        &phase.describe(),
        &agent_summary(&agent),
        &manifests,
    );
    text.push('\n');
    output::text_cert_tables(&mut text, &pki, now, threshold);
    Report { code, json, text }
}

pub fn agent_summary(a: &AgentIntent) -> String {
    match a {
        AgentIntent::Absent => "absent (no typed intent)".to_string(),
        AgentIntent::Idle { phase, .. } => format!("idle ({phase})"),
        AgentIntent::Pending {
            phase,
            operation_id,
        } => format!(
            "pending ({phase}{})",
            operation_id
                .as_deref()
                .map(|i| format!(", operation {i}"))
                .unwrap_or_default()
        ),
        AgentIntent::Unknown { reason } => format!("unknown: {reason}"),
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
            (Decision::Renew, vec!["typed"], true)
        );
        let mut f = base();
        f.force = true;
        assert_eq!(decide(&f).decision, Decision::Renew);
    }

    #[test]
    fn executor_selection_follows_pending_intent() {
        let mut f = base();
        f.runbook = Some(RunbookIntent::Pending);
        f.agent = pending_agent();
        let v = decide(&f);
        assert_eq!(v.executors, vec!["legacy", "typed"]);
        assert!(!v.legacy_fallback);
        f.runbook = Some(RunbookIntent::Absent);
        assert_eq!(decide(&f).executors, vec!["typed"]);
        assert!(!decide(&f).legacy_fallback);
        f.runbook = Some(RunbookIntent::Pending);
        f.agent = Some(AgentIntent::Idle {
            phase: "done".into(),
            operation_id: None,
        });
        assert_eq!(decide(&f).executors, vec!["legacy"]);
        // forced does not bypass pending intent
        f.force = true;
        assert_eq!(decide(&f).executors, vec!["legacy"]);
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
            (Decision::Failed, Some("agent-state"))
        );
        f.runbook = Some(RunbookIntent::Pending);
        let v = decide(&f);
        assert_eq!(v.decision, Decision::Renew);
        assert_eq!(v.executors, vec!["legacy"]);
        assert!(v.warnings.iter().any(|w| w.contains("agent state unknown")));
    }

    #[test]
    fn failures_win_and_busy_comes_first() {
        let mut f = base();
        f.runbook = Some(RunbookIntent::Malformed("six lines".into()));
        f.lock_held_by = Some("pid 7".into());
        f.manifest_problems = vec!["etcd manifest is missing".into()];
        let v = decide(&f);
        assert_eq!(v.decision, Decision::Failed);
        assert_eq!(v.failure, Some("busy"));
        assert_eq!(v.reasons.len(), 3);
        assert!(v.executors.is_empty());
        let mut f = base();
        f.pki_errors = vec!["apiserver.crt does not parse".into()];
        assert_eq!(decide(&f).failure, Some("pki"));
    }
}
