//! `--check`: the read-only preflight of SPEC section 5. Gathers facts
//! (never writing or creating anything), then decides with a pure function.

use crate::contract::cli::Global;
use crate::contract::{self as doc, Decision, Executor};
use crate::modes::output::{self, Report};
use crate::node::fsx::Root;
use crate::node::snapshot::NodeSnapshot;
use crate::rules::expiry;
use crate::rules::outcome::exit;
use crate::rules::verdict::{decide, Facts, Verdict};
use time::OffsetDateTime;

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
        facts.state_errors.push(e.to_string());
    }
    facts.runbook = s.phase.judgement.clone();
    facts.agent = Some(s.agent.clone());
    facts.manifest_problems = s.manifests.problems();
    facts.pki_errors = s.pki.errors();
    // External etcd is the one verdict (SPEC 12, v1.3): its etcd leaves
    // and pod never existed.
    facts.unsupported = s.manifests.external_etcd_verdict();
    // The kubelet's configuration over a bound (SPEC 10): refused, named.
    facts.pki_errors.extend(s.kubelet.hostile.clone());
    facts.leaves_due = s.pki.leaves_due(now, threshold);
    facts.ca_walls = s.pki.ca_walls(now, threshold, force);
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
            "{}: a renewal refuses at once while a leaf is expired (kube-apiserver and etcd refuse it, so its health gate could not pass); an operator recovers the node with --recover-expired under a new operation ID (the status view prints the command)",
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
    let counts = crate::judge::advice::counts(problems, verdict.warnings.len());
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
    let facts = facts(&s, force, now, threshold);
    let mut verdict = decide(&facts);
    let observed = crate::modes::live::observe(root, g);
    let judged = observed.judged();
    // A node the runbook does not renew has its one verdict.
    if facts.unsupported.is_none() {
        verdict
            .warnings
            .extend(crate::judge::live::check_warnings(&judged, observed.wall));
    }
    let code = match verdict.decision {
        Decision::Failed => exit::FAILED,
        _ => exit::OK,
    };
    let checked = Checked {
        s: &s,
        verdict,
        observed: &observed,
        judged,
        now,
        threshold,
        certificates: s.pki.certificates(now, threshold),
        certificate_authorities: s.pki.authorities(now, threshold),
        kubelet: s.kubelet.views(now, threshold),
    };
    let text = checked.text(root, g, code);
    let severity = match checked.verdict.decision {
        Decision::Failed => doc::Severity::NotClean,
        _ => doc::Severity::Clean,
    };
    let text = g.term.render(&text, "CHECK:", severity);
    Report {
        code,
        doc: Box::new(checked.document(force)),
        text,
    }
}

/// The node as the check read and judged it.
struct Checked<'a> {
    s: &'a NodeSnapshot,
    verdict: Verdict,
    observed: &'a crate::tools::live::Observation,
    judged: crate::rules::live::Judged,
    now: OffsetDateTime,
    threshold: u32,
    certificates: Vec<doc::CertificateView>,
    certificate_authorities: Vec<doc::CaView>,
    kubelet: Vec<doc::KubeletCertificateView>,
}

impl Checked<'_> {
    /// The text: the verdict and its lists, the node's files, the live
    /// node, the conflicts, the certificates, and the verdict again last
    /// (with what to do, when it failed). A node that is not a control
    /// plane fails with its one reason.
    fn text(&self, root: &Root, g: &Global, code: u8) -> String {
        let (s, verdict) = (self.s, &self.verdict);
        let foreign = crate::node::manifests::not_renewable(root, &s.manifests);
        let head = headline(verdict);
        let conflicts = crate::node::conflict::conflicts(root, &s.manifests);
        let mut text = String::new();
        if let (Some(f), Decision::Failed) = (&foreign, verdict.decision) {
            text.push_str(&format!("CHECK: FAILED: {f}\n"));
            return text;
        }
        text.push_str(&head);
        text.push('\n');
        output::text_list(&mut text, "reasons", &verdict.reasons);
        output::text_list(&mut text, "warnings", &verdict.warnings);
        text.push('\n');
        crate::judge::text::text_node(&mut text, s, self.observed, &self.judged, g.wide);
        crate::contract::screen::text_conflicts(&mut text, &conflicts, g.wide);
        output::text_cert_tables(
            &mut text,
            &self.certificates,
            &self.certificate_authorities,
            self.threshold,
            g.wide,
        );
        output::text_kubelet(&mut text, &self.kubelet, s.kubelet.note.as_deref());
        // The verdict again, last: what a scrolled terminal still shows.
        text.push('\n');
        text.push_str(&crate::contract::screen::closing(&head, code, g.term.width));
        if verdict.decision == Decision::Failed {
            // And what to do.
            let cmd = crate::judge::advice::commands(g, s);
            let advice = crate::judge::advice::advise(
                s,
                &verdict.reasons,
                &conflicts,
                &cmd,
                self.now,
                self.threshold,
            );
            crate::judge::advice::render_next(&mut text, &advice.next, g.term.width);
        }
        text
    }

    /// The check's document.
    fn document(self, force: bool) -> doc::CheckDocument {
        let s = self.s;
        let message = message(&self.verdict);
        let verdict = self.verdict;
        doc::CheckDocument {
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
            threshold_days: self.threshold,
            now: doc::Timestamp(crate::rules::clock::rfc3339(self.now)),
            agent_state: s.agent_view(),
            phase_file: s.phase.view(),
            lock: s.lock.view(),
            manifests: s.manifests.views(),
            staging: s.manifests.staging(),
            stray_manifests: s.manifests.strays.clone(),
            certificates: self.certificates,
            certificate_authorities: self.certificate_authorities,
            kubelet_certificates: self.kubelet,
            live: Some(crate::judge::live::view(self.observed, &self.judged)),
            ca_sha256: s.pki.ca_sha256_view(),
            duration_ms: 0,
            exit_code: 0,
        }
    }
}
