//! `--status-only` (SPEC section 6): the operator view (read-only) and the
//! controller's fencing check (`--operation-id ID --fence`).

use crate::contract as doc;
use crate::contract::cli::{Global, ReceiptFilter};
use crate::judge::advice;
use crate::modes::output::{self, Report};
use crate::node::conflict;
use crate::node::fsx::{Dir, FsError, Root};
use crate::node::inspect::{self, PhaseReport, ReceiptLookup, RunbookIntent};
use crate::node::lock::{self, LockError};
use crate::node::manifests::{self, ManifestsReport};
use crate::node::paths::{MANIFESTS_DIR, STAGING_DIR};
use crate::node::snapshot::{NodeSnapshot, Receipts};
use crate::node::statedir::{CheckedReceipt, StateDir};
use crate::rules::component::Component;
use crate::rules::expiry::Expiry;
use crate::rules::fence::{
    abandon_message, abandoned_phase, names, refused_before_lock, FencePlan, PhaseSeen,
};
use crate::rules::live::Judged;
use crate::rules::opid::OperationId;
use crate::rules::outcome::{exit, Outcome};
use crate::rules::phase::PhaseFile;
use crate::rules::progress;
use crate::rules::receipt::{self, Receipt};
use crate::tools::live::Observation;
use crate::tools::signals::Cancel;

/// What a fencing check would do, from the node's reads: the receipt
/// lookup, the phase file and where the manifests are
/// (`rules::fence::plan`).
pub fn fence_plan(receipt: &ReceiptLookup, phase: &PhaseReport, m: &ManifestsReport) -> FencePlan {
    let seen = PhaseSeen {
        file: phase.file.as_ref(),
        malformed: match &phase.intent {
            RunbookIntent::Malformed(e) => Some(e.as_str()),
            _ => None,
        },
    };
    crate::rules::fence::plan(receipt, seen, m.staged_not_active())
}

/// A plan as the operator view prints it: `restore`, what the check would
/// put back, in every plan (SPEC 6, v1.1).
fn plan_view(plan: &FencePlan) -> doc::FencingPlan {
    let restore = plan.restore().to_vec();
    match plan {
        FencePlan::Confirm { .. } => doc::FencingPlan::Confirm {
            termination: doc::Confirmed::Confirmed,
            restore,
        },
        FencePlan::Abandon { .. } => doc::FencingPlan::Abandon {
            termination: doc::Confirmed::Confirmed,
            restore,
        },
        FencePlan::Refuse { why, .. } => doc::FencingPlan::Refuse {
            termination: doc::Unconfirmed::Unconfirmed,
            reason: why.clone(),
            restore,
        },
    }
}

/// Reasons the node is not clean (empty: clean).
pub fn not_clean_reasons(
    state_error: Option<&str>,
    lock: &inspect::LockReport,
    phase: &PhaseReport,
    m: &ManifestsReport,
) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(e) = state_error {
        v.push(format!("state directory: {e}"));
    }
    if let Some(who) = lock.held_by() {
        v.push(progress::lock_held(&who));
    }
    if let Err(e) = &lock.probe {
        v.push(format!("lock: {e}"));
    }
    match &phase.intent {
        RunbookIntent::Pending => v.push(phase.describe()),
        RunbookIntent::Malformed(e) => v.push(format!("phase file: {e}")),
        _ => {}
    }
    v.extend(m.problems());
    for (view, who) in [
        (&m.runbook_staging, "runbook"),
        (&m.agent_staging, "node agent"),
    ] {
        let staged: Vec<_> = view
            .entries
            .iter()
            .filter(|n| !view.unexpected.contains(n))
            .collect();
        if !staged.is_empty() && view.error.is_none() {
            // Already named per manifest above; say the directory is not empty.
            v.push(progress::staging_not_empty(who, &view.path));
        } else if !view.unexpected.is_empty() && who == "node agent" {
            v.push(progress::staging_not_empty(who, &view.path));
        }
    }
    v
}

/// What the operator view is asked: an operation, an evidence bundle, which
/// receipts to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ask<'a> {
    pub id: Option<&'a OperationId>,
    /// `--evidence PATH`, relative to the root.
    pub evidence: Option<&'a str>,
    pub receipts: ReceiptFilter,
    /// The signals that stop an evidence bundle (SPEC 6, v1.2): asked
    /// between its entries and before it gets its name.
    pub cancel: Option<&'a Cancel>,
}

/// An operation the node never saw: said so, with the IDs it knows that
/// are nearest (a typo is likelier than a lost receipt).
fn unknown_id(
    s: &NodeSnapshot,
    id: Option<&OperationId>,
    asked: Option<&ReceiptLookup>,
    receipts: &Receipts,
) -> Option<String> {
    match (id, asked) {
        (Some(i), Some(ReceiptLookup::Absent)) if !matches!(&s.phase.file, Some(PhaseFile::V2(p)) if &p.operation_id == i) =>
        {
            let near = crate::rules::textdiff::nearest(
                i.as_str(),
                receipts.known_ids.iter().map(String::as_str),
                3,
            );
            Some(if near.is_empty() {
                format!("operation {i} is unknown to this node: no receipt, and the phase file does not name it")
            } else {
                format!(
                    "operation {i} is unknown to this node (no receipt, not in the phase file); nearest known: {}",
                    near.join(", ")
                )
            })
        }
        _ => None,
    }
}

/// A receipt that cannot be read leaves its operation unconfirmable: the
/// first three named, the rest counted.
fn unreadable_receipts(recent: &[doc::ReceiptSummary]) -> Vec<String> {
    let unreadable: Vec<&doc::ReceiptSummary> =
        recent.iter().filter(|r| r.error.is_some()).collect();
    let mut warnings: Vec<String> = unreadable
        .iter()
        .take(3)
        .map(|r| {
            format!(
                "receipt {} cannot be read ({}): a fencing check for that operation is unconfirmed",
                r.operation_id,
                r.error.as_deref().unwrap_or_default()
            )
        })
        .collect();
    if unreadable.len() > 3 {
        warnings.push(format!(
            "{} more receipts cannot be read (--receipts failed lists them)",
            unreadable.len() - 3
        ));
    }
    warnings
}

/// What a fencing check would do: it needs the state dir and the lock
/// first, and is unconfirmed when either is refused.
fn fence_preview(s: &NodeSnapshot, r: &ReceiptLookup) -> FencePlan {
    match (&s.state_error, &s.lock.probe) {
        (Some(e), _) => refused_before_lock(format!("state directory: {e}")),
        (None, Err(e)) => refused_before_lock(format!("lock: {e}")),
        _ => fence_plan(r, &s.phase, &s.manifests),
    }
}

/// The asked operation: its receipt and what a fencing check would do.
fn text_operation(
    text: &mut String,
    id: &OperationId,
    asked: &ReceiptLookup,
    plan: &FencePlan,
    unknown: bool,
) {
    let r = match asked {
        ReceiptLookup::Absent if unknown => "none: unknown to this node".to_string(),
        ReceiptLookup::Absent => "none".to_string(),
        ReceiptLookup::Found(r) => format!(
            "{} at {} ({}): {}",
            r.outcome, r.finished_at, r.phase, r.message
        ),
        ReceiptLookup::Malformed(e) => format!("MALFORMED: {e}"),
    };
    let names = names(plan.restore());
    let p = match plan {
        FencePlan::Confirm { restore, .. } if restore.is_empty() => {
            "confirm (receipt exists)".to_string()
        }
        FencePlan::Confirm { .. } => format!("confirm (receipt exists; put back {names})"),
        FencePlan::Abandon { restore } if restore.is_empty() => {
            "abandon (record an abandoned receipt)".into()
        }
        FencePlan::Abandon { .. } => {
            format!("abandon (put back {names} and record an abandoned receipt)")
        }
        FencePlan::Refuse { why, restore, .. } if restore.is_empty() => {
            format!("refuse: unconfirmed ({why})")
        }
        FencePlan::Refuse { why, .. } => {
            format!("refuse: unconfirmed ({why}); still put back {names}")
        }
    };
    output::table(
        text,
        &[
            vec!["OPERATION".to_string(), id.to_string()],
            vec!["RECEIPT".to_string(), r],
            vec!["FENCING WOULD".to_string(), p],
        ],
    );
    text.push('\n');
}

/// What the headline says besides the verdict: the renewal at work, the
/// staging conflicts.
struct HeadlineFacts<'a> {
    /// Where a renewal at work is, in plain words.
    step: Option<String>,
    /// The component a renewal at work is restarting (its pod is down by
    /// design).
    restarting: Option<Component>,
    conflicts: &'a [doc::StagingConflict],
}

/// `kube-apiserver.yaml in both directories (they differ)`.
fn conflict_words(conflicts: &[doc::StagingConflict]) -> String {
    conflicts
        .iter()
        .map(|k| {
            format!(
                "{} in both directories ({})",
                k.component.manifest_file(),
                match k.identical {
                    Some(true) => "identical",
                    Some(false) => "they differ",
                    None => "one cannot be read",
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The headline: the verdict, its severity and the counts.
fn headline(a: &advice::Advice, problems: usize, f: &HeadlineFacts<'_>) -> String {
    let counts = advice::counts(problems, a.warnings.len());
    let down = |skip: Option<Component>| {
        a.not_active
            .iter()
            .filter(|c| Some(**c) != skip)
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let expired = match &a.expiry {
        Some((Expiry::Expired, words)) => Some(words.as_str()),
        _ => None,
    };
    let (verdict, detail) = match (a.severity, &a.expiry) {
        (doc::Severity::Clean, Some((Expiry::Due, words))) => ("RENEWAL DUE", words.clone()),
        (doc::Severity::Clean, _) => ("CLEAN", String::new()),
        (doc::Severity::NotClean, _) if !f.conflicts.is_empty() => {
            ("CONFLICT", conflict_words(f.conflicts))
        }
        (doc::Severity::NotClean, _) => ("NOT CLEAN", String::new()),
        (doc::Severity::ActionNeeded, _) => {
            let mut parts = Vec::new();
            let down = down(None);
            if !down.is_empty() {
                parts.push(format!("{down} down"));
            }
            // An expired leaf leads (SPEC 11): it is why the live findings
            // (an expired certificate served, etcd without quorum) are.
            parts.extend(expired.map(|w| format!("certificates expired: {w}")));
            parts.extend(a.live.iter().cloned());
            parts.extend(a.kubelet_expired.iter().cloned());
            if !f.conflicts.is_empty() {
                parts.push(format!("CONFLICT: {}", conflict_words(f.conflicts)));
            }
            ("ACTION NEEDED", parts.join("; "))
        }
        (doc::Severity::InProgress, _) => {
            // Its progress, not problems (SPEC 6, v1.2): the pod it
            // restarts is down by design; any other is named.
            let mut parts = vec![f.step.clone().unwrap_or_else(|| "starting".to_string())];
            let others = down(f.restarting);
            if !others.is_empty() {
                parts.push(format!("{others} down"));
            }
            parts.push("do not touch".to_string());
            ("RENEWAL IN PROGRESS", parts.join("; "))
        }
    };
    match (detail.is_empty(), counts.is_empty()) {
        (true, true) => format!("NODE: {verdict}"),
        (true, false) => format!("NODE: {verdict} ({counts})"),
        (false, true) => format!("NODE: {verdict}: {detail}"),
        (false, false) => format!("NODE: {verdict}: {detail} ({counts})"),
    }
}

/// A renewal at work (SPEC 6, v1.2): the reasons that are its progress
/// (the lock it holds, its phase file, the component it restarts: staged,
/// down, not answering) apart from the problems (`rules::progress`).
fn progress_apart(
    reasons: &[String],
    s: &NodeSnapshot,
    restarting: Option<Component>,
) -> (Vec<String>, Vec<String>) {
    let holder = s.lock.held_by();
    let phase = s.phase.describe();
    let staging = &s.manifests.runbook_staging;
    let at_work = progress::AtWork {
        holder: holder.as_deref(),
        phase: &phase,
        staging: &staging.path,
        staged: &staging.entries,
        restarting,
    };
    progress::progress_apart(reasons, &at_work)
}

/// The receipts listed: a table when it fits, else each ID on its own
/// line (IDs are never cut: they are pasted into commands).
fn text_receipts(
    out: &mut String,
    listed: &[doc::ReceiptSummary],
    count: usize,
    which: ReceiptFilter,
    width: Option<usize>,
) {
    let shown = match (which, width) {
        (ReceiptFilter::Recent, Some(_)) => listed.len().min(NARROW_RECEIPTS),
        _ => listed.len(),
    };
    let title = match which {
        ReceiptFilter::Recent => "RECEIPTS",
        ReceiptFilter::All => "RECEIPTS (all)",
        ReceiptFilter::Failed => "RECEIPTS (not a success)",
    };
    if listed.is_empty() {
        out.push_str(&format!("{title}: none ({count} in all)\n"));
        return;
    }
    let cells = |r: &doc::ReceiptSummary| {
        vec![
            r.outcome
                .as_ref()
                .map(output::word)
                .unwrap_or_else(|| format!("MALFORMED: {}", r.error.clone().unwrap_or_default())),
            r.phase.as_ref().map(output::word).unwrap_or_default(),
            r.finished_at
                .as_ref()
                .map(|t| t.0.clone())
                .unwrap_or_default(),
        ]
    };
    let mut rows = vec![vec![
        "OPERATION".to_string(),
        "OUTCOME".to_string(),
        "PHASE".to_string(),
        "FINISHED".to_string(),
    ]];
    for r in &listed[..shown] {
        let mut row = vec![r.operation_id.clone()];
        row.extend(cells(r));
        rows.push(row);
    }
    let mut t = String::new();
    output::table(&mut t, &rows);
    let fits = width.is_none_or(|w| t.lines().all(|l| l.chars().count() <= w));
    out.push_str(&format!("{title}, newest first:\n"));
    if fits {
        out.push_str(&t);
    } else {
        let mut rows: Vec<Vec<String>> = vec![vec![
            "    OUTCOME".to_string(),
            "PHASE".to_string(),
            "FINISHED".to_string(),
        ]];
        let mut body = String::new();
        for r in &listed[..shown] {
            let mut row = cells(r);
            row[0] = format!("    {}", row[0]);
            rows.push(row);
        }
        output::table(&mut body, &rows);
        let mut lines = body.lines();
        out.push_str(lines.next().unwrap_or_default());
        out.push('\n');
        for (r, l) in listed[..shown].iter().zip(lines) {
            out.push_str(&format!("  {}\n{l}\n", output::escape(&r.operation_id)));
        }
    }
    if shown < count && which == ReceiptFilter::Recent {
        out.push_str(&format!(
            "({} of {count} shown; every one: --receipts all, the failures: --receipts failed)\n",
            shown
        ));
    }
}

/// Receipts listed in narrow text (the JSON lists the 20 most recent).
const NARROW_RECEIPTS: usize = 5;

/// The read-only operator view: the node read once, judged.
pub fn view(root: &Root, g: &Global, ask: &Ask<'_>, observed: &Observation) -> Report {
    let s = NodeSnapshot::for_status(root, ask.id, listing(ask.receipts));
    let none = Receipts::default();
    let receipts = s.receipts.as_ref().unwrap_or(&none);
    let v = Viewed::judge(root, g, ask, &s, receipts, observed);
    let (progress, shown) = v.progress_and_problems();
    let head = v.headline(shown.len());
    let code = view_code(v.foreign.is_some(), &v.advice, v.reasons.is_empty());
    let mut text = match &v.foreign {
        Some(f) => format!("NODE: NOT CLEAN: {f}\n"),
        None => v.text(g, ask, &head, &progress, &shown),
    };
    let mut document = v.document(ask, code);
    let viewed = code;
    let code = with_evidence(root, ask, &mut document, &mut text, code);
    let term = g.term;
    if v.foreign.is_none() {
        // The verdict again (with the exit code, the evidence's included),
        // and what to do, last: what a scrolled terminal still shows. The
        // headline never contradicts the code (SPEC 6, v1.2).
        let head = if code == viewed {
            head
        } else {
            format!("{head}; EVIDENCE NOT WRITTEN")
        };
        text.push('\n');
        text.push_str(&crate::contract::screen::closing(&head, code, term.width));
        advice::render_next(&mut text, &v.advice.next, term.width);
    }
    Report {
        code,
        doc: Box::new(document),
        text: term.render(&text, "NODE:", v.advice.severity),
    }
}

/// The node as the operator view judged it: the one read, the live
/// observation, the verdict and the advice, the asked operation.
struct Viewed<'a> {
    s: &'a NodeSnapshot,
    receipts: &'a Receipts,
    observed: &'a Observation,
    judged: Judged,
    now: time::OffsetDateTime,
    threshold: u32,
    /// Not a control plane: its one reason, and nothing advised.
    foreign: Option<String>,
    reasons: Vec<String>,
    conflicts: Vec<doc::StagingConflict>,
    advice: advice::Advice,
    /// The asked operation is unknown to this node (its warning).
    unknown_id: Option<String>,
    /// What a fencing check for the asked operation would do.
    plan: Option<FencePlan>,
    certificates: Vec<doc::CertificateView>,
    certificate_authorities: Vec<doc::CaView>,
    kubelet: Vec<doc::KubeletCertificateView>,
}

impl<'a> Viewed<'a> {
    /// Judge the read: its problems, the advice, the asked operation.
    fn judge(
        root: &Root,
        g: &Global,
        ask: &Ask<'_>,
        s: &'a NodeSnapshot,
        receipts: &'a Receipts,
        observed: &'a Observation,
    ) -> Self {
        let now = g.clock.now();
        let threshold = g.threshold_days;
        let foreign = manifests::not_a_control_plane(root, &s.manifests);
        let judged = observed.judged();
        let reasons = match &foreign {
            Some(f) => vec![f.clone()],
            None => problems(s, receipts, &judged, observed.wall, now),
        };
        let conflicts = conflict::conflicts(root, &s.manifests);
        let cmd = advice::commands(g, s);
        let mut advice = advice::advise(s, &reasons, &conflicts, &cmd, now, threshold);
        advice.with_live(
            &judged,
            observed.wall,
            advice::work_at(s).and_then(|(_, c)| c),
        );
        if foreign.is_some() {
            advice.severity = doc::Severity::NotClean;
            advice.not_active.clear();
            advice.next.clear();
            advice.warnings.clear();
        }
        if ask.evidence.is_some() {
            // Asked for already: its result ends the text.
            advice.next.retain(|n| {
                !n.command
                    .as_deref()
                    .is_some_and(|c| c.contains(" --evidence "))
            });
        }
        let asked = receipts.asked.as_ref();
        let unknown_id = unknown_id(s, ask.id, asked, receipts);
        if let Some(u) = &unknown_id {
            advice.warnings.insert(0, u.clone());
        }
        advice
            .warnings
            .extend(unreadable_receipts(&receipts.recent));
        Viewed {
            s,
            receipts,
            observed,
            judged,
            now,
            threshold,
            foreign,
            reasons,
            conflicts,
            advice,
            unknown_id,
            plan: asked.map(|r| fence_preview(s, r)),
            certificates: s.pki.certificates(now, threshold),
            certificate_authorities: s.pki.authorities(now, threshold),
            kubelet: s.kubelet.views(now, threshold),
        }
    }

    /// The reasons apart: a renewal at work's progress, and the problems
    /// shown as such (all of them otherwise).
    fn progress_and_problems(&self) -> (Vec<String>, Vec<String>) {
        match self.advice.severity {
            doc::Severity::InProgress => {
                let restarting = advice::work_at(self.s).unwrap_or_default().1;
                progress_apart(&self.reasons, self.s, restarting)
            }
            _ => (Vec::new(), self.reasons.clone()),
        }
    }

    /// The headline over `problems` shown as problems.
    fn headline(&self, problems: usize) -> String {
        let (step, restarting) = advice::work_at(self.s).unwrap_or_default();
        let facts = HeadlineFacts {
            step: (!step.is_empty()).then_some(step),
            restarting,
            conflicts: &self.conflicts,
        };
        headline(&self.advice, problems, &facts)
    }

    /// The text of a control plane's view, up to the evidence: the
    /// verdict and its lists, the conflicts, the node's files, the live
    /// node, the asked operation, the certificates, the receipts.
    fn text(
        &self,
        g: &Global,
        ask: &Ask<'_>,
        head: &str,
        progress: &[String],
        shown: &[String],
    ) -> String {
        let (s, advice) = (self.s, &self.advice);
        let mut text = String::new();
        text.push_str(head);
        text.push('\n');
        if let Some(p) = &advice.in_progress {
            text.push_str(&format!("in progress: {p}\n"));
        }
        output::text_list(&mut text, "progress", progress);
        output::text_list(&mut text, "problems", shown);
        output::text_list(&mut text, "warnings", &advice.warnings);
        text.push('\n');
        // A conflict's copies and their diff on the first screen.
        crate::contract::screen::text_conflicts(&mut text, &self.conflicts, g.wide);
        output::text_node_summary(
            &mut text,
            &s.lock.describe(),
            &s.phase.describe(),
            &s.agent.summary(),
            &s.manifests,
        );
        text.push('\n');
        crate::modes::live::text(&mut text, self.observed, &self.judged);
        text.push('\n');
        if let (Some(id), Some(asked), Some(plan)) = (ask.id, &self.receipts.asked, &self.plan) {
            text_operation(&mut text, id, asked, plan, self.unknown_id.is_some());
        }
        output::text_cert_tables(
            &mut text,
            &self.certificates,
            &self.certificate_authorities,
            self.threshold,
            g.wide,
        );
        output::text_kubelet(&mut text, &self.kubelet, s.kubelet.note.as_deref());
        text.push('\n');
        let receipts = self.receipts;
        text_receipts(
            &mut text,
            &receipts.recent,
            receipts.count,
            ask.receipts,
            g.term.width,
        );
        text
    }

    /// The status document, with the view's exit code (a bundle that is
    /// written carries it too).
    fn document(&self, ask: &Ask<'_>, code: u8) -> doc::StatusDocument {
        let (s, m, receipts) = (self.s, &self.s.manifests, self.receipts);
        let clean = self.reasons.is_empty();
        doc::StatusDocument {
            mode: doc::StatusMode::Status,
            runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
            operation_id: ask.id.cloned(),
            fence: doc::ConstBool,
            outcome: if clean {
                doc::Cleanliness::Clean
            } else {
                doc::Cleanliness::NotClean
            },
            clean,
            severity: self.advice.severity,
            message: doc::Message(receipt::bounded_message(&if clean {
                "node is clean".to_string()
            } else {
                format!("node is not clean: {}", advice::first_of(&self.reasons, 3))
            })),
            reasons: self.reasons.clone(),
            warnings: self.advice.warnings.clone(),
            next_steps: self.advice.next.clone(),
            conflicts: self.conflicts.clone(),
            now: doc::Timestamp(crate::rules::clock::rfc3339(self.now)),
            threshold_days: self.threshold,
            lock: s.lock.view(),
            phase_file: s.phase.view(),
            agent_state: s.agent_view(),
            receipt_count: receipts.count as u64,
            receipts: receipts.recent.to_vec(),
            receipts_listed: listed_word(ask.receipts).to_string(),
            receipt: receipts.asked.as_ref().and_then(ReceiptLookup::view),
            fencing: self.plan.as_ref().map(plan_view),
            manifests: m.views(),
            staging: m.staging(),
            stray_manifests: m.strays.clone(),
            ca_sha256: s.pki.ca_sha256_view(),
            certificates: self.certificates.clone(),
            certificate_authorities: self.certificate_authorities.clone(),
            kubelet_certificates: self.kubelet.clone(),
            live: Some(crate::modes::live::view(self.observed, &self.judged)),
            state_error: s.state_error.clone(),
            evidence: None,
            duration_ms: 0,
            // As printed: the bundle's status.json carries it too (a bundle
            // that is written leaves the code as it is).
            exit_code: code,
        }
    }
}

/// What the view lists of the receipts (`--receipts`).
fn listing(which: ReceiptFilter) -> inspect::Listing {
    match which {
        ReceiptFilter::Recent => inspect::Listing::Newest(inspect::RECENT_RECEIPTS),
        ReceiptFilter::All => inspect::Listing::All,
        ReceiptFilter::Failed => inspect::Listing::Failed,
    }
}

/// `receiptsListed`: which receipts the view lists.
fn listed_word(which: ReceiptFilter) -> &'static str {
    match which {
        ReceiptFilter::Recent => "recent",
        ReceiptFilter::All => "all",
        ReceiptFilter::Failed => "failed",
    }
}

/// The view's problems: what the files say first (state, lock, phase,
/// manifests, expired leaves, the kubelet's certificates, the receipts
/// directory), then the live node.
fn problems(
    s: &NodeSnapshot,
    receipts: &Receipts,
    judged: &crate::rules::live::Judged,
    wall: time::OffsetDateTime,
    now: time::OffsetDateTime,
) -> Vec<String> {
    let mut reasons = not_clean_reasons(s.state_error.as_deref(), &s.lock, &s.phase, &s.manifests);
    reasons.extend(s.pki.expired_reasons(now));
    reasons.extend(s.kubelet.expired(now));
    reasons.extend(s.kubelet.unreadable());
    reasons.extend(s.kubelet.hostile.clone());
    if let Some(e) = &receipts.error {
        reasons.push(format!("receipts directory: {e}"));
    }
    reasons.extend(judged.problems(wall));
    reasons
}

/// The view's exit code (SPEC 6, 7): 1 for a node that is not a control
/// plane; 4 when an operator must act (a pod down, a certificate expired,
/// a live finding); 0 clean; 1 otherwise.
fn view_code(foreign: bool, advice: &advice::Advice, clean: bool) -> u8 {
    if foreign {
        exit::FAILED
    } else if !advice.not_active.is_empty() || advice.expired || !advice.live.is_empty() {
        exit::OPERATOR_MUST_ACT
    } else if clean {
        exit::OK
    } else {
        exit::FAILED
    }
}

/// `--evidence PATH`: write the bundle of the document as built so far,
/// record it in the document and the text. A bundle not written never
/// exits 0 (1 instead; any other code stays).
fn with_evidence(
    root: &Root,
    ask: &Ask<'_>,
    document: &mut doc::StatusDocument,
    text: &mut String,
    code: u8,
) -> u8 {
    let Some(rel) = ask.evidence else {
        return code;
    };
    let stop = || ask.cancel.is_some_and(Cancel::is_cancelled);
    let ev = crate::node::evidence::write(root, rel, document, ask.id, &stop);
    let code = match &ev {
        doc::EvidenceView::Written(w) => {
            text.push_str(&format!(
                "EVIDENCE: {} ({} files, {} bytes)\n  sha256 {}\n  receipts {} ({} left out), {} credential values redacted\n",
                output::escape(&w.path),
                w.members,
                w.bytes,
                w.sha256.0,
                w.receipts,
                w.receipts_left_out,
                w.redacted
            ));
            let mut skipped: Vec<String> = w
                .skipped
                .iter()
                .take(10)
                .map(|s| format!("{}: {}", s.path, s.reason))
                .collect();
            if w.skipped.len() > 10 {
                skipped.push(format!(
                    "{} more: see nvke-evidence/evidence.json",
                    w.skipped.len() - 10
                ));
            }
            output::text_list(text, "evidence skipped", &skipped);
            code
        }
        doc::EvidenceView::NotWritten(n) => {
            tracing::warn!("evidence not written: {}", output::escape(&n.error));
            text.push_str(&format!(
                "EVIDENCE NOT WRITTEN: {}\n",
                output::escape(&n.error)
            ));
            if code == exit::OK {
                exit::FAILED
            } else {
                code
            }
        }
    };
    document.evidence = Some(ev);
    code
}

struct FenceOutcome {
    code: u8,
    termination: doc::Termination,
    action: doc::FenceAction,
    reason: doc::FenceReason,
    message: String,
    receipt: Option<Receipt>,
    restored: Vec<Component>,
    conflicts: Vec<String>,
    /// Abandoned an operation this node has no record of (no receipt, and
    /// no phase file, owner record or log names it): said on the verdict's
    /// line.
    never_seen: bool,
}

fn unconfirmed(code: u8, reason: doc::FenceReason, message: String) -> FenceOutcome {
    unconfirmed_after(code, reason, message, PutBack::default())
}

/// Unconfirmed, after the put-back (what it restored and left is reported).
fn unconfirmed_after(
    code: u8,
    reason: doc::FenceReason,
    message: String,
    pb: PutBack,
) -> FenceOutcome {
    FenceOutcome {
        code,
        termination: doc::Termination::Unconfirmed,
        action: doc::FenceAction::None,
        reason,
        message,
        receipt: None,
        restored: pb.restored,
        conflicts: pb.conflicts,
        never_seen: false,
    }
}

/// `state/owner`, written once, right before the fencing check's first
/// change (a move or the receipt): a check that changes nothing writes
/// nothing, not even this.
struct OwnerRecord<'a> {
    guard: &'a lock::LockGuard,
    state: &'a Dir,
    id: &'a OperationId,
    now: time::OffsetDateTime,
    written: bool,
}

impl OwnerRecord<'_> {
    fn before_first_change(&mut self) -> Result<(), String> {
        if !self.written {
            self.guard
                .write_owner(
                    self.state,
                    &lock::owner_for(
                        Some(self.id),
                        crate::contract::OwnerMode::StatusFence,
                        self.now,
                    ),
                )
                .map_err(|e| format!("cannot record the lock owner: {e}"))?;
            self.written = true;
        }
        Ok(())
    }
}

/// What the put-back did.
#[derive(Default)]
struct PutBack {
    restored: Vec<Component>,
    /// Left for an operator (both copies, a refused directory or manifest).
    conflicts: Vec<String>,
    /// A write failed (the owner record or a move): the answer is
    /// unconfirmed whatever the plan was.
    failed: Option<String>,
}

impl PutBack {
    /// The clauses a fence message gains: what was put back, what was left.
    fn describe(&self) -> String {
        let mut s = String::new();
        if !self.restored.is_empty() {
            s.push_str(&format!(
                "; put back {}, which a dead run left staged",
                names(&self.restored)
            ));
        }
        if let Some(f) = &self.failed {
            s.push_str(&format!("; {f}"));
        }
        for c in &self.conflicts {
            s.push_str(&format!("; {c}"));
        }
        s
    }
}

/// Put back the manifests a dead run left staged and not active (SPEC 6,
/// v1.1): what that run's exit would have done. Runs once the lock is
/// held, whatever the answer will be: no run is mid-restart, so a stopped
/// pod never waits for an operator. Never resumes, never restarts anything
/// else. What is left alone is named.
fn put_back(
    root: &Root,
    m: &ManifestsReport,
    restore: &[Component],
    owner: &mut OwnerRecord,
) -> PutBack {
    // A manifest both active and staged is never moved (SPEC 6 puts back
    // only "staged and not active"), but it is named: an operator must keep
    // exactly one copy.
    let conflicts = m
        .manifests
        .iter()
        .filter(|(c, v)| v.active && v.runbook_staged && v.error.is_none() && !restore.contains(c))
        .map(|(c, _)| {
            format!(
                "{}/{} is staged while {}/{} is active; both left alone, an operator must keep exactly one",
                crate::node::paths::node(STAGING_DIR),
                c.manifest_file(),
                crate::node::paths::node(MANIFESTS_DIR),
                c.manifest_file()
            )
        })
        .collect();
    let mut pb = PutBack {
        conflicts,
        ..PutBack::default()
    };
    // What the check refused to look into is named, never followed: a
    // refused staging directory or manifest may hide a staged copy.
    if let Some(e) = &m.runbook_staging.error {
        pb.conflicts.push(format!(
            "the runbook staging directory was refused, nothing put back from it: {e}"
        ));
    }
    pb.conflicts
        .extend(m.manifests.values().filter_map(|v| v.error.clone()));
    if restore.is_empty() {
        return pb;
    }
    if let Err(e) = owner.before_first_change() {
        // The owner record is bookkeeping; the put-back is what the dead
        // run's exit would have done, and the lock is held: do it all the
        // same (SPEC 6, v1.1: in every outcome), and answer unconfirmed.
        tracing::warn!("{e}; putting the staged manifests back all the same");
        pb.failed = Some(e);
    }
    for &c in restore {
        match crate::node::staging::put_back(root, c) {
            crate::node::staging::PutBack::Restored => {
                tracing::info!(
                    component = c.name(),
                    "put back the staged manifest a dead run left"
                );
                pb.restored.push(c);
            }
            crate::node::staging::PutBack::Conflict(conflict) => pb.conflicts.push(conflict),
            crate::node::staging::PutBack::Failed(e) => {
                let f = format!("putting back {c} failed: {e}");
                pb.failed = Some(match pb.failed.take() {
                    Some(before) => format!("{before}; {f}"),
                    None => f,
                });
                break;
            }
        }
    }
    pb
}

fn fence_inner(root: &Root, g: &Global, id: &OperationId, cancel: &Cancel) -> FenceOutcome {
    let now = g.clock.now();
    // `--deadline` (SPEC 6, v1.1): a check that begins after it writes
    // nothing; one whose lock wait reaches it stops waiting.
    let cancel = cancel.clone().with_deadline_of(g);
    let deadline = g.deadline.as_ref().map(|(_, t)| t.as_str()).unwrap_or("");
    if cancel.deadline_passed() {
        return unconfirmed(
            exit::FAILED,
            doc::FenceReason::Deadline,
            format!("termination unconfirmed: the controller's deadline {deadline} passed before the fencing check began; nothing was written"),
        );
    }
    let state = match StateDir::create(root) {
        Ok(s) => s,
        Err(e) => {
            return unconfirmed(
                exit::FAILED,
                doc::FenceReason::WriteFailed,
                format!("state directory: {e}"),
            )
        }
    };
    let guard = match lock::acquire(&state, g.lock_timeout, &|| cancel.is_cancelled()) {
        Ok(guard) => guard,
        Err(e) => return lock_refused(e, &cancel, deadline, &state, id),
    };
    // The lock is held from here on: every answer below comes after the
    // put-back of what a dead run left staged.
    let mut owner = OwnerRecord {
        guard: &guard,
        state: &state,
        id,
        now,
        written: false,
    };
    let at = Fencing {
        root,
        state: &state,
        id,
        now,
    };
    under_lock(&at, &mut owner)
}

/// The lock was not taken: unconfirmed, saying why (its timeout, the
/// deadline, a signal) and the receipt the operation has, if any.
fn lock_refused(
    e: LockError,
    cancel: &Cancel,
    deadline: &str,
    state: &Dir,
    id: &OperationId,
) -> FenceOutcome {
    let (reason, why) = match e {
        LockError::Timeout {
            path,
            waited_secs,
            holder,
        } => (
            doc::FenceReason::LockTimeout,
            format!("renewal lock {path} still held after {waited_secs}s by {holder}"),
        ),
        // The deadline, or the caller's SIGTERM/SIGINT (its
        // context ended): either way the caller's time is up.
        LockError::Cancelled { path, holder } if cancel.deadline_passed() => (
            doc::FenceReason::Deadline,
            format!("renewal lock {path} still held by {holder} when the controller's deadline {deadline} passed"),
        ),
        LockError::Cancelled { path, holder } => (
            doc::FenceReason::Deadline,
            format!("renewal lock {path} still held by {holder} when a signal (SIGTERM/SIGINT) ended the wait"),
        ),
        e => return unconfirmed(exit::FAILED, doc::FenceReason::WriteFailed, e.to_string()),
    };
    // Receipts are immutable: the one this operation has is read
    // without the lock, so the answer says what exists, though
    // termination stays unconfirmed until the lock is taken.
    let found = match StateDir::new(state).completed() {
        Ok(c) => match inspect::lookup_receipt(c.as_ref(), id) {
            ReceiptLookup::Found(r) => Some(r),
            _ => None,
        },
        Err(_) => None,
    };
    let has = found
        .as_ref()
        .map(|r| format!(" (operation {id} has a receipt: outcome {})", r.outcome))
        .unwrap_or_default();
    let mut o = unconfirmed(
        exit::LOCK_TIMEOUT,
        reason,
        format!("{why}; termination unconfirmed{has}"),
    );
    o.receipt = found;
    o
}

/// With the lock held: read the receipts, the phase file and where the
/// manifests are, plan, and carry the plan out.
fn under_lock(at: &Fencing<'_>, owner: &mut OwnerRecord<'_>) -> FenceOutcome {
    let Fencing {
        root, state, id, ..
    } = *at;
    let m = manifests::placement(root);
    let completed = match StateDir::new(state).completed() {
        Ok(c) => c,
        Err(e) => {
            let pb = put_back(root, &m, &m.staged_not_active(), owner);
            let message = format!("receipts directory: {e}{}", pb.describe());
            return unconfirmed_after(
                exit::FAILED,
                doc::FenceReason::MalformedReceipt,
                message,
                pb,
            );
        }
    };
    let lookup = inspect::lookup_receipt(completed.as_ref(), id);
    let phase = inspect::read_phase(Some(state));
    match fence_plan(&lookup, &phase, &m) {
        FencePlan::Confirm {
            receipt: r,
            restore,
        } => confirm(at, owner, &m, &restore, *r),
        FencePlan::Refuse {
            why,
            reason,
            restore,
        } => {
            // Unconfirmed, and still the staged manifests go back first
            // (SPEC 6, v1.1): the lock is held, so no run is mid-restart.
            // Over a malformed phase file or receipt too: the put-back is a
            // restoration of the node, not a record of the operation. It
            // writes no receipt and no phase file, judges no operation, and
            // does what the dead run's own exit would have done; the
            // answer stays unconfirmed and "nothing written" still holds
            // for the operation's records. The owner record is written only
            // right before the first move, so a check that moves nothing
            // writes nothing at all.
            let pb = put_back(root, &m, &restore, owner);
            let message = format!("termination unconfirmed: {why}{}", pb.describe());
            unconfirmed_after(exit::FAILED, reason, message, pb)
        }
        FencePlan::Abandon { restore } => abandon(at, completed, owner, &m, &restore, &phase),
    }
}

/// `FencePlan::Confirm`: the operation has a receipt. The put-back, then
/// confirmed, unless a write failed.
fn confirm(
    at: &Fencing<'_>,
    owner: &mut OwnerRecord<'_>,
    m: &ManifestsReport,
    restore: &[Component],
    r: Receipt,
) -> FenceOutcome {
    let id = at.id;
    let pb = put_back(at.root, m, restore, owner);
    let has = format!(
        "operation {id} already has a receipt (outcome {}){}",
        r.outcome,
        pb.describe()
    );
    if pb.failed.is_some() {
        // A write failed: unconfirmed (SPEC 6), so the controller
        // hands the node to an operator instead of moving on with a
        // pod down.
        let message = format!("termination unconfirmed: {has}");
        return unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb);
    }
    let message = format!("termination confirmed: {has}");
    confirmed(doc::FenceAction::ExistingReceipt, message, r, pb, false)
}

/// Confirmed: by the receipt that exists (`existing-receipt`) or the one
/// this check recorded (`abandoned`).
fn confirmed(
    action: doc::FenceAction,
    message: String,
    receipt: Receipt,
    pb: PutBack,
    never_seen: bool,
) -> FenceOutcome {
    FenceOutcome {
        code: exit::OK,
        termination: doc::Termination::Confirmed,
        action,
        reason: match action {
            doc::FenceAction::Abandoned => doc::FenceReason::Abandoned,
            _ => doc::FenceReason::Receipt,
        },
        message,
        receipt: Some(receipt),
        restored: pb.restored,
        conflicts: pb.conflicts,
        never_seen,
    }
}

/// Whether this node has no record of the operation: no phase file, owner
/// record or log names it. Read before the owner record is replaced by
/// this check's own.
fn never_seen(state: &Dir, id: &OperationId, phase: &PhaseReport) -> bool {
    let named = |i: Option<&str>| i == Some(id.as_str());
    let by_owner = matches!(lock::read_owner(state), lock::OwnerInfo::Known(o) if named(o.operation_id.as_deref()));
    let by_log = StateDir::new(state)
        .log_names()
        .contains(&format!("{id}.log"));
    let by_phase = matches!(&phase.file, Some(PhaseFile::V2(p)) if &p.operation_id == id);
    !(by_owner || by_log || by_phase)
}

/// `FencePlan::Abandon`: no receipt. The owner record, the put-back of what
/// the dead run left staged, then the `abandoned` receipt (SPEC 6).
fn abandon(
    at: &Fencing<'_>,
    completed: Option<Dir>,
    owner: &mut OwnerRecord<'_>,
    m: &ManifestsReport,
    restore: &[Component],
    phase: &PhaseReport,
) -> FenceOutcome {
    let Fencing {
        root,
        state,
        id,
        now,
    } = *at;
    // The owner record is written before the first change: the first
    // move, or else the receipt.
    // (A failed owner record still lets the put-back run: see
    // `put_back`; the answer is then unconfirmed.)
    // What this node has of the operation, read before the owner record
    // is replaced by this check's own: its phase file, the last runbook's
    // owner record, its log.
    let never_seen = never_seen(state, id, phase);
    let owner_error = owner.before_first_change().err();
    let pb = put_back(root, m, restore, owner);
    if let (Some(e), None) = (&owner_error, &pb.failed) {
        let message = format!("termination unconfirmed: {e}");
        return unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb);
    }
    if let Some(f) = &pb.failed {
        let message = format!("termination unconfirmed: {f}");
        return unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb);
    }
    let PutBack {
        restored,
        mut conflicts,
        ..
    } = pb;
    crate::crash_point!("fence-after-restore-before-receipt");
    let after = manifests::placement(root);
    conflicts.extend(missing_manifests(&after));
    let message = abandon_message(
        id,
        never_seen,
        &restored,
        &conflicts,
        phase.intent.is_pending(),
    );
    let (ph, failed_component) = abandoned_phase(phase.file.as_ref(), id);
    let r = crate::node::statedir::new_receipt(
        root,
        id,
        crate::node::statedir::Ended {
            outcome: Outcome::Abandoned,
            phase: ph,
            message: &message,
            failed_component,
            did: crate::node::statedir::Did::default(),
        },
        after.receipt_locations(),
        now,
    );
    let pb = PutBack {
        restored,
        conflicts,
        failed: None,
    };
    record_abandoned(at, completed, r, message, pb, never_seen)
}

/// The manifests in no directory after the put-back, each named.
fn missing_manifests(after: &ManifestsReport) -> Vec<String> {
    after
        .manifests
        .iter()
        .filter(|(_, v)| v.location == doc::ManifestLocation::Missing && v.error.is_none())
        .map(|(c, _)| format!("the {c} manifest is missing: neither active nor staged"))
        .collect()
}

/// Write the `abandoned` receipt, once: a receipt that appeared meanwhile
/// confirms instead; any failure leaves termination unconfirmed.
fn record_abandoned(
    at: &Fencing<'_>,
    completed: Option<Dir>,
    r: Receipt,
    message: String,
    pb: PutBack,
    never_seen: bool,
) -> FenceOutcome {
    let id = at.id;
    let checked = match CheckedReceipt::check(&r) {
        Ok(c) => c,
        Err(e) => {
            let message = format!("termination unconfirmed: {e}{}", pb.describe());
            return unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb);
        }
    };
    let completed = match completed {
        Some(c) => c,
        None => match StateDir::new(at.state).create_completed() {
            Ok(c) => c,
            Err(e) => {
                let message = format!("receipts directory: {e}{}", pb.describe());
                return unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb);
            }
        },
    };
    match StateDir::write_once(&completed, checked) {
        Ok(()) => {
            tracing::info!(operation = id.as_str(), "recorded an abandoned receipt");
            confirmed(doc::FenceAction::Abandoned, message, r, pb, never_seen)
        }
        Err(FsError::Exists { .. }) => match inspect::lookup_receipt(Some(&completed), id) {
            ReceiptLookup::Found(r) => {
                let message = format!(
                    "termination confirmed: operation {id} already has a receipt (outcome {})",
                    r.outcome
                );
                confirmed(doc::FenceAction::ExistingReceipt, message, r, pb, false)
            }
            _ => {
                let message = format!(
                    "termination unconfirmed: the receipt appeared malformed{}",
                    pb.describe()
                );
                unconfirmed_after(
                    exit::FAILED,
                    doc::FenceReason::MalformedReceipt,
                    message,
                    pb,
                )
            }
        },
        Err(e) => {
            let message = format!(
                "termination unconfirmed: writing the receipt failed: {e}{}",
                pb.describe()
            );
            unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb)
        }
    }
}

/// Where and when a fencing check runs, under the lock.
#[derive(Clone, Copy)]
struct Fencing<'a> {
    root: &'a Root,
    state: &'a Dir,
    id: &'a OperationId,
    now: time::OffsetDateTime,
}

/// The fencing check (mutating; under the lock).
///
/// `cancel` carries SIGTERM and SIGINT (the controller's executor sends
/// SIGTERM when its context ends): they end the lock wait, never the check
/// once it holds the lock, which then takes milliseconds.
pub fn fence(root: &Root, g: &Global, id: &OperationId, cancel: &Cancel) -> Report {
    let o = fence_inner(root, g, id, cancel);
    let m = manifests::placement(root);
    let receipt = o.receipt.as_ref();
    let document = doc::FenceDocument {
        mode: doc::StatusMode::Status,
        runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
        operation_id: id.clone(),
        fence: doc::ConstBool,
        termination: o.termination,
        confirmed: o.termination == doc::Termination::Confirmed,
        action: o.action,
        reason: o.reason,
        outcome: receipt.as_ref().map(|r| r.outcome),
        phase: receipt.as_ref().map(|r| r.phase),
        message: doc::Message(receipt::bounded_message(&o.message)),
        receipt: receipt.cloned(),
        restored: o.restored.to_vec(),
        conflicts: o.conflicts.clone(),
        manifests: m.views(),
        duration_ms: 0,
        exit_code: 0,
    };
    let doc: Box<dyn doc::Printed> = Box::new(document);
    let mut text = format!(
        "FENCE {id}: {}{}\n",
        output::word(&o.termination).to_uppercase(),
        if o.never_seen {
            " (this node has no record of that operation: a mistyped ID? it is now recorded abandoned here)"
        } else {
            ""
        }
    );
    output::table(
        &mut text,
        &[
            vec!["action".to_string(), output::word(&o.action)],
            vec!["reason".to_string(), output::word(&o.reason)],
            vec![
                "receipt".to_string(),
                o.receipt
                    .as_ref()
                    .map(|r| format!("{} ({}) at {}", r.outcome, r.phase, r.finished_at))
                    .unwrap_or_else(|| "none".into()),
            ],
            vec!["message".to_string(), o.message.clone()],
        ],
    );
    Report {
        code: o.code,
        doc,
        text,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage manifests and read their temp node directly
mod tests {
    //! SPEC 6: the operator view (read-only, creates nothing; clean or not,
    //! and why) and the fencing check (confirm from a receipt, abandon
    //! without one, never abandon unfinished legacy work, unconfirmed over
    //! malformed records or a held lock; in every outcome the manifests a
    //! dead run left staged go back first), on the rsa fixture node.
    use super::*;
    use crate::node::inspect::state_files::*;
    use crate::node::paths::{COMPLETED_DIR, STATE_DIR};
    use crate::rules::outcome::{ManifestLocation, Phase};
    use crate::rules::phase::PhaseState;
    use crate::tools::runtime::double::node_tree;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// The live node of a healthy kubelet for the tree (the test double).
    /// etcd's peer port moves to loopback (the fixture's 10.0.0.11 is not
    /// this host's, and is not asked).
    fn healthy(root: &Root) -> crate::tools::live::Observation {
        let etcd = root.host_path().join(MANIFESTS_DIR).join("etcd.yaml");
        if let Ok(m) = std::fs::read_to_string(&etcd) {
            std::fs::write(
                &etcd,
                m.replace("https://10.0.0.11:2380", "https://127.0.0.1:2380"),
            )
            .unwrap();
        }
        use crate::tools::runtime::double::{container, sandbox, Double};
        let rt = Double::kubelet(root.host_path());
        // The fixture's kube-vip static pod runs too.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            .to_string();
        rt.push(container(
            "kube-vip",
            "kube-vip-cp-1",
            "kube-vip-0",
            "sandbox-kube-vip-0",
            true,
            &now,
        ));
        rt.add_sandbox(sandbox("sandbox-kube-vip-0", "file"));
        crate::tools::live::observe(
            &rt,
            root,
            time::macros::datetime!(2026-11-30 00:00:00 UTC),
            Duration::from_secs(1),
        )
    }

    fn global(root: &Path) -> Global {
        Global {
            lock_timeout: Duration::from_millis(300),
            ..Global::for_tests(root)
        }
    }

    /// Move `c`'s manifest into the runbook's staging directory, as a run
    /// killed mid-restart leaves it.
    fn leave_staged(t: &Path, c: Component) {
        let staging = t.join(STAGING_DIR);
        std::fs::create_dir_all(&staging).unwrap();
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::rename(
            t.join(MANIFESTS_DIR).join(c.manifest_file()),
            staging.join(c.manifest_file()),
        )
        .unwrap();
    }

    fn active(t: &Path, c: Component) -> bool {
        t.join(MANIFESTS_DIR).join(c.manifest_file()).is_file()
    }

    fn receipt_path(t: &Path, op: &str) -> PathBuf {
        t.join(STATE_DIR)
            .join(COMPLETED_DIR)
            .join(format!("{op}.json"))
    }

    /// Every path under `t` with its mode and contents.
    fn snapshot(t: &Path) -> Vec<(PathBuf, u32, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, Vec<u8>)>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                if m.is_dir() {
                    out.push((p.clone(), m.permissions().mode(), Vec::new()));
                    walk(&p, out);
                } else {
                    out.push((
                        p.clone(),
                        m.permissions().mode(),
                        std::fs::read(&p).unwrap(),
                    ));
                }
            }
        }
        let mut v = Vec::new();
        walk(t, &mut v);
        v.sort();
        v
    }

    fn phase_report(file: Option<PhaseFile>, intent: RunbookIntent) -> PhaseReport {
        PhaseReport {
            file,
            receipt_of_phase_op: ReceiptLookup::Absent,
            intent,
        }
    }

    fn action(p: &FencePlan) -> &'static str {
        match p {
            FencePlan::Confirm { .. } => "confirm",
            FencePlan::Abandon { .. } => "abandon",
            FencePlan::Refuse { .. } => "refuse",
        }
    }

    /// SPEC 6, "Fencing check", as a decision, with etcd left staged.
    #[test]
    fn the_fencing_plan_follows_the_contract() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::Etcd);
        let m = manifests::inspect(&Root::open(t.path()).unwrap());
        let found = ReceiptLookup::Found(receipt("op-1", crate::rules::outcome::Outcome::Failed));
        let absent = ReceiptLookup::Absent;
        let malformed = ReceiptLookup::Malformed("bad json".into());
        let no_phase = phase_report(None, RunbookIntent::Absent);
        let unfinished_v2 = phase_report(
            Some(v2(
                "op-0",
                PhaseState::RestartPending,
                Some(Component::Etcd),
            )),
            RunbookIntent::Pending,
        );
        let done_v2 = phase_report(
            Some(v2("op-0", PhaseState::Done, None)),
            RunbookIntent::Done,
        );
        let unfinished_legacy = phase_report(
            Some(legacy(PhaseState::RestartPending, Some(Component::Etcd))),
            RunbookIntent::Pending,
        );
        let done_legacy = phase_report(Some(legacy(PhaseState::Done, None)), RunbookIntent::Done);
        let bad_phase = phase_report(None, RunbookIntent::Malformed("line 1".into()));
        for (receipt, phase, expected) in [
            (&found, &unfinished_legacy, "confirm"),
            (&found, &bad_phase, "confirm"),
            (&malformed, &no_phase, "refuse"),
            (&absent, &no_phase, "abandon"),
            (&absent, &unfinished_v2, "abandon"),
            (&absent, &done_v2, "abandon"),
            (&absent, &done_legacy, "abandon"),
            (&absent, &unfinished_legacy, "refuse"),
            (&absent, &bad_phase, "refuse"),
        ] {
            let plan = fence_plan(receipt, phase, &m);
            assert_eq!(action(&plan), expected, "{receipt:?} {phase:?}");
            // In every outcome, what the dead run left staged goes back.
            assert_eq!(plan.restore(), [Component::Etcd], "{plan:?}");
        }
        match fence_plan(&absent, &unfinished_legacy, &m) {
            FencePlan::Refuse { why, .. } => assert!(why.contains("legacy"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// SPEC 6: only a manifest staged and not active is put back; one both
    /// staged and active is never moved.
    #[test]
    fn a_manifest_both_staged_and_active_is_never_put_back() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::KubeScheduler);
        std::fs::copy(
            t.path()
                .join(STAGING_DIR)
                .join(Component::KubeScheduler.manifest_file()),
            t.path()
                .join(MANIFESTS_DIR)
                .join(Component::KubeScheduler.manifest_file()),
        )
        .unwrap();
        leave_staged(t.path(), Component::Etcd);
        let m = manifests::inspect(&Root::open(t.path()).unwrap());
        assert_eq!(m.staged_not_active(), [Component::Etcd]);
    }

    /// SPEC 6: the operator view of a clean node is clean (exit 0) and
    /// creates nothing, not even the state directory; with an ID it says
    /// what a fencing check would do.
    /// SPEC 6 (v1.2): a signal at any point of an evidence bundle (before
    /// it, between any two of its entries, or once it is written but not
    /// yet named) leaves nothing at PATH or beside it, and the view still
    /// gives its one document, saying why.
    #[test]
    fn evidence_stopped_at_any_point_leaves_nothing_behind() {
        let t = node_tree("rsa");
        let tmp = t.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let root = Root::open(t.path()).unwrap();
        let live = healthy(&root);
        let g = global(t.path());
        let listing = || {
            let mut v: Vec<String> = std::fs::read_dir(&tmp)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let sigterm = Cancel::new();
        sigterm.cancel();
        let r = view(
            &root,
            &g,
            &Ask {
                evidence: Some("tmp/x.tgz"),
                cancel: Some(&sigterm),
                ..Ask::default()
            },
            &live,
        );
        assert_eq!(r.json()["evidence"]["written"], false, "{:#}", r.json());
        assert_eq!(
            r.json()["evidence"]["error"],
            crate::node::evidence::INTERRUPTED
        );
        assert_ne!(r.code, exit::OK);
        assert!(r
            .text
            .contains("EVIDENCE NOT WRITTEN: interrupted by a signal"));
        assert!(listing().is_empty(), "{:?}", listing());

        // Stopped at the n-th question, for every n until one that completes.
        let shown = view(&root, &g, &Ask::default(), &live).json();
        let document: doc::StatusDocument = serde_json::from_value(shown).unwrap();
        for n in 0.. {
            let asked = std::cell::Cell::new(0usize);
            let stop = || {
                asked.set(asked.get() + 1);
                asked.get() > n
            };
            match crate::node::evidence::write(&root, "tmp/x.tgz", &document, None, &stop) {
                doc::EvidenceView::NotWritten(e) => {
                    assert_eq!(e.error, crate::node::evidence::INTERRUPTED, "at {n}");
                    assert!(listing().is_empty(), "at {n}: {:?}", listing());
                }
                doc::EvidenceView::Written(w) => {
                    assert!(n > 10, "asked only {n} times: {w:?}");
                    assert_eq!(asked.get(), n, "asked once more than it was stopped");
                    assert_eq!(listing(), ["x.tgz"]);
                    break;
                }
            }
        }
    }

    #[test]
    fn the_view_of_a_clean_node_is_clean_and_creates_nothing() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let live = healthy(&root);
        let before = snapshot(t.path());
        let r = view(
            &root,
            &global(t.path()),
            &Ask {
                id: Some(&id("op-1")),
                ..Ask::default()
            },
            &live,
        );
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["clean"], true);
        assert_eq!(r.json()["fencing"]["action"], "abandon");
        // Clean, with one thing to know: the node never saw op-1.
        assert!(
            r.text.starts_with("NODE: CLEAN (1 warning)\n"),
            "{}",
            r.text
        );
        assert!(r.json()["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("operation op-1 is unknown to this node"));
        assert_eq!(snapshot(t.path()), before, "the view changed the node");
    }

    /// SPEC 6: a manifest left staged, or a held lock, makes the node not
    /// clean, naming why; the view still changes nothing.
    #[test]
    fn a_staged_manifest_or_a_held_lock_makes_the_node_not_clean() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::Etcd);
        let root = Root::open(t.path()).unwrap();
        let g = global(t.path());
        let before = snapshot(t.path());
        let r = view(
            &root,
            &g,
            &Ask {
                id: Some(&id("op-1")),
                ..Ask::default()
            },
            &healthy(&root),
        );
        assert_ne!(r.code, exit::OK);
        assert_eq!(r.json()["clean"], false);
        let reasons = r.json()["reasons"].to_string();
        assert!(reasons.contains("etcd"), "{reasons}");
        assert_eq!(r.json()["fencing"]["restore"], serde_json::json!(["etcd"]));
        assert_eq!(snapshot(t.path()), before, "the view changed the node");
        // Put it back; hold the lock instead.
        std::fs::rename(
            t.path().join(STAGING_DIR).join("etcd.yaml"),
            t.path().join(MANIFESTS_DIR).join("etcd.yaml"),
        )
        .unwrap();
        state_dir(t.path());
        let state = StateDir::open(&root).unwrap().unwrap();
        let _held = lock::acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        let r = view(&root, &g, &Ask::default(), &healthy(&root));
        assert_ne!(r.code, exit::OK);
        assert!(
            r.json()["reasons"][0]
                .as_str()
                .is_some_and(|s| s.starts_with("the renewal lock is held by ")),
            "{:#}",
            r.json()["reasons"]
        );
    }

    /// SPEC 6: no receipt and V2 work: record `abandoned` (where the
    /// operation stood), put back what the dead run left staged,
    /// `confirmed`; the unfinished phase file stays for the next operation.
    /// A second check finds that receipt and leaves it as it is.
    #[test]
    fn fencing_without_a_receipt_abandons_and_puts_back() {
        let t = node_tree("rsa");
        let c = Component::KubeApiserver;
        write_phase(t.path(), &v2("op-1", PhaseState::RestartPending, Some(c)));
        leave_staged(t.path(), c);
        let phase_file = t
            .path()
            .join(STATE_DIR)
            .join(crate::node::paths::PHASE_FILE);
        let phase_before = std::fs::read(&phase_file).unwrap();
        let root = Root::open(t.path()).unwrap();
        let g = global(t.path());
        let r = fence(&root, &g, &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "confirmed");
        assert_eq!(r.json()["action"], "abandoned");
        assert_eq!(r.json()["restored"], serde_json::json!(["kube-apiserver"]));
        assert!(active(t.path(), c));
        assert!(!t.path().join(STAGING_DIR).join(c.manifest_file()).exists());
        let receipt = std::fs::read(receipt_path(t.path(), "op-1")).unwrap();
        let parsed = crate::rules::receipt::parse_receipt(&receipt, &id("op-1")).unwrap();
        assert_eq!(parsed.outcome, crate::rules::outcome::Outcome::Abandoned);
        assert_eq!(parsed.phase, Phase::Restart(c));
        assert_eq!(parsed.failed_component, Some(c));
        assert!(parsed
            .manifests
            .iter()
            .all(|(_, l)| l == ManifestLocation::Active));
        assert_eq!(std::fs::read(&phase_file).unwrap(), phase_before);
        let owner = std::fs::read_to_string(t.path().join(STATE_DIR).join("owner")).unwrap();
        assert!(owner.contains("\"mode\":\"status-fence\""), "{owner}");
        let again = fence(&root, &g, &id("op-1"), &Cancel::new());
        assert_eq!(again.code, exit::OK, "{:#}", again.json());
        assert_eq!(again.json()["action"], "existing-receipt");
        assert_eq!(again.json()["outcome"], "abandoned");
        assert_eq!(
            std::fs::read(receipt_path(t.path(), "op-1")).unwrap(),
            receipt
        );
    }

    /// SPEC 10, "Bounded reads" (issue 25): an alias bomb among the strays
    /// of `manifests/` (6,000 aliases: about 10^8 nodes once expanded, which
    /// aborted every mode before) never keeps a pod down: with etcd left
    /// staged by a dead run, the fencing check puts it back and confirms,
    /// reading no file's contents on the way; the operator view then
    /// refuses the bomb, naming it.
    #[test]
    fn a_hostile_stray_never_keeps_a_staged_manifest_from_going_back() {
        let t = node_tree("rsa");
        let c = Component::Etcd;
        write_phase(t.path(), &v2("op-1", PhaseState::RestartPending, Some(c)));
        leave_staged(t.path(), c);
        // The 56 KB file of issue 25: one anchor of 16,000 scalars.
        let mut bomb = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd-copy\n  annotations:\n    a: &a [{}]\n    b: [",
            ["x"; 16_000].join(",")
        );
        bomb.push_str(&["*a"; 6000].join(", "));
        bomb.push_str("]\n");
        write_raw(
            &t.path().join(MANIFESTS_DIR).join("bomb.yaml"),
            bomb.as_bytes(),
        );
        let root = Root::open(t.path()).unwrap();
        let g = global(t.path());
        let r = fence(&root, &g, &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "confirmed");
        assert_eq!(r.json()["restored"], serde_json::json!(["etcd"]));
        assert!(active(t.path(), c));
        assert!(!t.path().join(STAGING_DIR).join(c.manifest_file()).exists());
        // What the read-only modes read: the bomb is refused, named.
        let m = manifests::inspect(&root);
        assert_eq!(
            m.hostile,
            vec!["/etc/kubernetes/manifests/bomb.yaml is hostile YAML (more than 100000 nodes); refusing to read it".to_string()]
        );
        assert!(m
            .problems()
            .iter()
            .any(|p| p.contains("bomb.yaml is hostile YAML")));
        // And the put-back itself never reads it: placement alone.
        assert!(manifests::placement(&root).hostile.is_empty());
    }

    /// SPEC 6: unfinished legacy work carries no operation ID and is never
    /// abandoned: unconfirmed, no receipt; still (v1.1) the staged manifest
    /// goes back.
    #[test]
    fn unfinished_legacy_work_is_never_abandoned_but_its_manifest_goes_back() {
        let t = node_tree("rsa");
        let c = Component::Etcd;
        write_phase(t.path(), &legacy(PhaseState::RestartPending, Some(c)));
        leave_staged(t.path(), c);
        let root = Root::open(t.path()).unwrap();
        let r = fence(&root, &global(t.path()), &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::FAILED, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "unconfirmed");
        assert_eq!(r.json()["restored"], serde_json::json!(["etcd"]));
        assert!(active(t.path(), c));
        assert!(!receipt_path(t.path(), "op-1").exists());
    }

    /// SPEC 6: a malformed receipt is unconfirmed and nothing is written
    /// (the receipt stays as it is, no owner record: a check that changes
    /// nothing writes nothing).
    #[test]
    fn a_malformed_receipt_is_unconfirmed_and_nothing_is_written() {
        let t = node_tree("rsa");
        state_dir(t.path());
        write_raw(&receipt_path(t.path(), "op-1"), b"{\"format\": 1}");
        let root = Root::open(t.path()).unwrap();
        let r = fence(&root, &global(t.path()), &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::FAILED, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "unconfirmed");
        assert_eq!(
            std::fs::read(receipt_path(t.path(), "op-1")).unwrap(),
            b"{\"format\": 1}"
        );
        assert!(!t.path().join(STATE_DIR).join("owner").exists());
        assert!(!t.path().join(STATE_DIR).join("phase").exists());
    }

    /// SPEC 6: the lock stays held: exit 3, unconfirmed, no receipt.
    #[test]
    fn a_lock_that_stays_held_is_unconfirmed_with_exit_3() {
        let t = node_tree("rsa");
        state_dir(t.path());
        let root = Root::open(t.path()).unwrap();
        let state = StateDir::open(&root).unwrap().unwrap();
        let _held = lock::acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        let r = fence(&root, &global(t.path()), &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::LOCK_TIMEOUT, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "unconfirmed");
        assert_eq!(r.json()["reason"], "lock-timeout");
        assert!(!receipt_path(t.path(), "op-1").exists());
        // SIGTERM (the executor's context ended) ends the wait at once,
        // long before --lock-timeout: unconfirmed, reason deadline, exit 3.
        let g = Global {
            lock_timeout: Duration::from_secs(60),
            ..global(t.path())
        };
        let sigterm = Cancel::new();
        sigterm.cancel();
        let started = std::time::Instant::now();
        let r = fence(&root, &g, &id("op-1"), &sigterm);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the wait was not ended"
        );
        assert_eq!(r.code, exit::LOCK_TIMEOUT, "{:#}", r.json());
        assert_eq!(r.json()["reason"], "deadline");
        assert!(
            r.json()["message"]
                .as_str()
                .unwrap()
                .contains("a signal (SIGTERM/SIGINT) ended the wait"),
            "{:#}",
            r.json()
        );
        assert!(!receipt_path(t.path(), "op-1").exists());
    }

    /// A signal before the fencing check: the free lock is still taken and
    /// the check runs to its end (a signal never cuts it short once it
    /// holds the lock).
    #[test]
    fn a_signal_never_cuts_a_fencing_check_that_holds_the_lock() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::KubeApiserver);
        let root = Root::open(t.path()).unwrap();
        let sigterm = Cancel::new();
        sigterm.cancel();
        let r = fence(&root, &global(t.path()), &id("op-1"), &sigterm);
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["reason"], "abandoned");
        assert!(active(t.path(), Component::KubeApiserver));
        assert!(receipt_path(t.path(), "op-1").exists());
    }
}
