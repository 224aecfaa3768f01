//! The operator view of `--status-only` (SPEC 6), judged and rendered:
//! from the node's one read (`NodeSnapshot`), the live observation and
//! what the view read besides, its problems, its advice, what a fencing
//! check for the asked operation would do, its text and its document. No
//! I/O: `modes::status` reads and writes.

use crate::contract as doc;
use crate::contract::cli::{Global, ReceiptFilter};
use crate::contract::text;
use crate::judge::advice;
use crate::node::inspect::{self, PhaseJudgement, PhaseReport, ReceiptLookup};
use crate::node::manifests::ManifestsReport;
use crate::node::snapshot::{NodeSnapshot, Receipts};
use crate::rules::component::Component;
use crate::rules::expiry::Expiry;
use crate::rules::fence::{names, refused_before_lock, FencePlan, PhaseSeen};
use crate::rules::live::Judged;
use crate::rules::opid::OperationId;
use crate::rules::outcome::exit;
use crate::rules::phase::PhaseFile;
use crate::rules::progress::{self, Reason, Stager};
use crate::rules::receipt;
use crate::tools::live::Observation;

/// What a fencing check would do, from the node's reads: the receipt
/// lookup, the phase file and where the manifests are
/// (`rules::fence::plan`).
pub fn fence_plan(
    receipt: Option<&ReceiptLookup>,
    phase: &PhaseReport,
    m: &ManifestsReport,
) -> FencePlan {
    let seen = PhaseSeen {
        file: phase.file.as_ref(),
        malformed: phase.judgement.malformed(),
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
) -> Vec<Reason> {
    let mut v = Vec::new();
    if let Some(e) = state_error {
        v.push(Reason::other(format!("state directory: {e}")));
    }
    if let Some(who) = lock.held_by() {
        v.push(Reason::lock_held(&who));
    }
    if let Err(e) = &lock.probe {
        v.push(Reason::other(format!("lock: {e}")));
    }
    match &phase.judgement {
        PhaseJudgement::Pending => v.push(Reason::phase(phase.describe())),
        PhaseJudgement::Malformed(why) => v.push(Reason::other(format!("phase file: {why}"))),
        _ => {}
    }
    v.extend(m.reasons());
    for (view, who) in [
        (&m.runbook_staging, Stager::Runbook),
        (&m.agent_staging, Stager::NodeAgent),
    ] {
        let staged: Vec<_> = view
            .entries
            .iter()
            .filter(|n| !view.unexpected.contains(n))
            .collect();
        if !staged.is_empty() && view.error.is_none() {
            // Already named per manifest above; say the directory is not empty.
            v.push(Reason::staging_not_empty(who, &view.path));
        } else if !view.unexpected.is_empty() && who == Stager::NodeAgent {
            v.push(Reason::staging_not_empty(who, &view.path));
        }
    }
    v
}

/// An operation the node never saw: said so, with the IDs it knows that
/// are nearest (a typo is likelier than a lost receipt).
fn unknown_id(
    s: &NodeSnapshot,
    id: Option<&OperationId>,
    asked: Option<&Option<ReceiptLookup>>,
    receipts: &Receipts,
) -> Option<String> {
    match (id, asked) {
        (Some(i), Some(None)) if !matches!(&s.phase.file, Some(PhaseFile::V2(p)) if &p.operation_id == i) =>
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
fn fence_preview(s: &NodeSnapshot, r: Option<&ReceiptLookup>) -> FencePlan {
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
    asked: Option<&ReceiptLookup>,
    plan: &FencePlan,
    unknown: bool,
) {
    let r = match asked {
        None if unknown => "none: unknown to this node".to_string(),
        None => "none".to_string(),
        Some(ReceiptLookup::Found(r)) => format!(
            "{} at {} ({}): {}",
            r.outcome, r.finished_at, r.phase, r.message
        ),
        Some(ReceiptLookup::Malformed(m)) => format!("MALFORMED: {}", m.error),
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
    text::table(
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
    /// A renewal that died where it was (its phase file unfinished, no
    /// process holding the lock): `while restarting kube-apiserver (2 of 4)`.
    died: Option<String>,
    /// The lock held by a process that is not a renewal at work: `pid 4242
    /// (flock)`.
    lock_held: Option<String>,
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
        (doc::Severity::Clean, Some((Expiry::Due, words))) => {
            ("RENEWAL DUE".to_string(), words.clone())
        }
        (doc::Severity::Clean, _) => ("CLEAN".to_string(), String::new()),
        // The situation by name (SPEC 6, v1.3), not only NOT CLEAN.
        (doc::Severity::NotClean, _) if f.died.is_some() => (
            format!("RENEWAL DIED {}", f.died.clone().unwrap_or_default()),
            String::new(),
        ),
        (doc::Severity::NotClean, _) if f.lock_held.is_some() => (
            format!("LOCK HELD by {}", f.lock_held.clone().unwrap_or_default()),
            String::new(),
        ),
        (doc::Severity::NotClean, _) if !f.conflicts.is_empty() => {
            ("STAGING CONFLICT".to_string(), conflict_words(f.conflicts))
        }
        (doc::Severity::NotClean, _) => ("NOT CLEAN".to_string(), String::new()),
        (doc::Severity::ActionNeeded, _) => {
            let mut parts = Vec::new();
            parts.extend(f.died.as_ref().map(|d| format!("RENEWAL DIED {d}")));
            parts.extend(f.lock_held.as_ref().map(|h| format!("LOCK HELD by {h}")));
            // A renewal at work, and something else an operator must act
            // on: its work named, the pod it restarts not counted down.
            parts.extend(f.step.as_ref().map(|w| format!("RENEWAL IN PROGRESS {w}")));
            let down = down(f.step.as_ref().and(f.restarting));
            if !down.is_empty() {
                parts.push(format!("{down} down"));
            }
            // An expired leaf leads (SPEC 11): it is why the live findings
            // (an expired certificate served, etcd without quorum) are.
            parts.extend(expired.map(|w| format!("certificates expired: {w}")));
            // The first CA and its end; the problems and the step say the
            // rest.
            if let Some(w) = a.ca_walls.first() {
                let head = w.split(": renewing").next().unwrap_or(w);
                let more = match a.ca_walls.len() {
                    1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                parts.push(format!("{head}{more}: renewing cannot help"));
            }
            parts.extend(a.live.iter().cloned());
            parts.extend(a.kubelet_expired.iter().cloned());
            if !f.conflicts.is_empty() {
                parts.push(format!("STAGING CONFLICT: {}", conflict_words(f.conflicts)));
            }
            ("ACTION NEEDED".to_string(), parts.join("; "))
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
            ("RENEWAL IN PROGRESS".to_string(), parts.join("; "))
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
    reasons: &[Reason],
    s: &NodeSnapshot,
    restarting: Option<Component>,
) -> (Vec<Reason>, Vec<Reason>) {
    let after_last = s.phase.file.as_ref().is_some_and(|f| {
        f.state() == crate::rules::phase::PhaseState::RestartPending && f.next_component().is_none()
    });
    let at_work = progress::AtWork {
        staged: &s.manifests.runbook_staging.entries,
        restarting,
        before_restarts: restarting.is_none() && !after_last,
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
                .map(text::word)
                .unwrap_or_else(|| format!("MALFORMED: {}", r.error.clone().unwrap_or_default())),
            r.phase.as_ref().map(text::word).unwrap_or_default(),
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
    text::table(&mut t, &rows);
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
        text::table(&mut body, &rows);
        let mut lines = body.lines();
        out.push_str(lines.next().unwrap_or_default());
        out.push('\n');
        for (r, l) in listed[..shown].iter().zip(lines) {
            out.push_str(&format!("  {}\n{l}\n", text::escape(&r.operation_id)));
        }
    }
    if shown < count && which == ReceiptFilter::Recent {
        out.push_str(&format!(
            "({} of {count} shown; every one: --receipts all, the failures: --receipts failed)\n",
            shown
        ));
    }
}

/// On request (`--receipts all|failed`, `--wide`; SPEC 4 step 8 v1.3):
/// the leaves of the newest listed receipt that lists any, each with its
/// serial and end before and after.
fn text_last_leaves(out: &mut String, listed: &[doc::ReceiptSummary]) {
    let Some(r) = listed.iter().find(|r| !r.certificates.is_empty()) else {
        return;
    };
    out.push_str(&format!(
        "LEAVES RENEWED by {} ({}), serial and end before -> after:\n",
        text::escape(&r.operation_id),
        r.finished_at.as_ref().map(|t| t.0.as_str()).unwrap_or("?")
    ));
    let mut rows = vec![vec![
        "LEAF".to_string(),
        "SERIAL".to_string(),
        "ENDS".to_string(),
    ]];
    let short = |s: &str| {
        if s.len() > 12 {
            format!("{}..", &s[..12])
        } else {
            s.to_string()
        }
    };
    let day = |t: &str| t.get(..10).unwrap_or(t).to_string();
    for l in &r.certificates {
        rows.push(vec![
            text::word(&l.name),
            format!(
                "{} -> {}",
                l.serial_before
                    .as_deref()
                    .map(short)
                    .unwrap_or_else(|| "(none)".into()),
                short(&l.serial_after)
            ),
            format!(
                "{} -> {}",
                l.not_after_before
                    .as_ref()
                    .map(|t| day(&t.0))
                    .unwrap_or_else(|| "(none)".into()),
                day(&l.not_after_after.0)
            ),
        ]);
    }
    text::table(out, &rows);
}

/// Receipts listed in narrow text (the JSON lists the 20 most recent).
const NARROW_RECEIPTS: usize = 5;

/// What the operator view is asked, as it is judged: the operation,
/// whether an evidence bundle is asked for, which receipts are listed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    pub id: Option<&'a OperationId>,
    /// `--evidence PATH` is asked for (its result ends the text).
    pub evidence: bool,
    pub receipts: ReceiptFilter,
}

/// What the view read of the node besides its snapshot, and when.
pub struct Read {
    pub now: time::OffsetDateTime,
    /// Not a control plane: its one reason
    /// (`manifests::not_a_control_plane`).
    pub foreign: Option<String>,
    /// Manifests in both staging and `manifests/`, with their copies
    /// (`node::conflict::conflicts`).
    pub conflicts: Vec<doc::StagingConflict>,
}

/// The view up to the evidence.
pub struct Drafted {
    pub head: String,
    pub code: u8,
    pub text: String,
    pub document: doc::StatusDocument,
}

/// The node as the operator view judged it: the one read, the live
/// observation, the verdict and the advice, the asked operation.
pub struct Viewed<'a> {
    asked: Asked<'a>,
    s: &'a NodeSnapshot,
    receipts: &'a Receipts,
    observed: &'a Observation,
    judged: Judged,
    now: time::OffsetDateTime,
    threshold: u32,
    /// Not a control plane: its one reason, and nothing advised.
    foreign: Option<String>,
    reasons: Vec<Reason>,
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
    pub fn judge(
        g: &Global,
        asked: Asked<'a>,
        s: &'a NodeSnapshot,
        receipts: &'a Receipts,
        observed: &'a Observation,
        read: Read,
    ) -> Self {
        let Read {
            now,
            foreign,
            conflicts,
        } = read;
        let threshold = g.threshold_days;
        let judged = observed.judged();
        let reasons = match &foreign {
            Some(f) => vec![Reason::other(f.clone())],
            None => problems(s, receipts, &judged, observed.wall, (now, threshold)),
        };
        let cmd = advice::commands(g, s);
        let mut advice = advice::advise(s, &reasons, &conflicts, &cmd, now, threshold);
        let restarting = advice::work_at(s).and_then(|(_, c)| c);
        advice.with_live(&judged, observed.wall, restarting);
        advice.with_why(
            &judged,
            observed.crictl.as_deref(),
            observed.wall,
            restarting,
        );
        if foreign.is_some() {
            advice.severity = doc::Severity::NotClean;
            advice.not_active.clear();
            advice.next.clear();
            advice.warnings.clear();
        }
        if asked.evidence {
            // Asked for already: its result ends the text.
            advice.next.retain(|n| {
                !n.command
                    .as_deref()
                    .is_some_and(|c| c.contains(" --evidence "))
            });
        }
        let lookup = receipts.asked.as_ref();
        let unknown_id = unknown_id(s, asked.id, lookup, receipts);
        if let Some(u) = &unknown_id {
            advice.warnings.insert(0, u.clone());
        }
        advice
            .warnings
            .extend(unreadable_receipts(&receipts.recent));
        Viewed {
            asked,
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
            plan: lookup.map(|r| fence_preview(s, r.as_ref())),
            certificates: s.pki.certificates(now, threshold),
            certificate_authorities: s.pki.authorities(now, threshold),
            kubelet: s.kubelet.views(now, threshold),
        }
    }

    /// The reasons apart: a renewal at work's progress, and the problems
    /// shown as such (all of them otherwise).
    fn progress_and_problems(&self) -> (Vec<Reason>, Vec<Reason>) {
        // A renewal at work (its holder alive), whatever else the view
        // found: its own work is progress (SPEC 6, v1.3).
        match self.advice.in_progress {
            Some(_) => {
                let restarting = advice::work_at(self.s).unwrap_or_default().1;
                progress_apart(&self.reasons, self.s, restarting)
            }
            None => (Vec::new(), self.reasons.clone()),
        }
    }

    /// The headline over `problems` shown as problems.
    fn headline(&self, problems: usize) -> String {
        let (step, restarting) = advice::work_at(self.s).unwrap_or_default();
        let s = self.s;
        let at_work = self.advice.in_progress.is_some();
        // Died: the lock seen free (not merely not seen held).
        let free = matches!(
            s.lock.probe,
            Ok(crate::node::lock::Probe::Free | crate::node::lock::Probe::Absent)
        );
        let died = match (&s.phase.intent(), &s.phase.file) {
            (crate::node::inspect::RunbookIntent::Pending, Some(f)) if free && !at_work => {
                Some(format!("while {}", f.plain_step()))
            }
            _ => None,
        };
        let lock_held = match &s.lock.held {
            Some(crate::node::lock::HeldBy {
                holder: crate::node::lock::Holder::Process { pid, command, .. },
                ..
            }) if !at_work => Some(match command {
                Some(c) => format!("pid {pid} ({c})"),
                None => format!("pid {pid}"),
            }),
            Some(_) if !at_work => Some("a process this view cannot name".to_string()),
            _ => None,
        };
        let facts = HeadlineFacts {
            step: (!step.is_empty()).then_some(step),
            restarting,
            conflicts: &self.conflicts,
            died,
            lock_held,
        };
        headline(&self.advice, problems, &facts)
    }

    /// The text of a control plane's view, up to the evidence: the
    /// verdict and its lists, the conflicts, the node's files, the live
    /// node, the asked operation, the certificates, the receipts.
    fn text(&self, g: &Global, head: &str, progress: &[Reason], shown: &[Reason]) -> String {
        let (s, advice) = (self.s, &self.advice);
        let mut text = String::new();
        text.push_str(head);
        text.push('\n');
        if let Some(p) = &advice.in_progress {
            text.push_str(&format!("in progress: {p}\n"));
        }
        text::text_list(&mut text, "progress", &progress::words(progress));
        text::text_list(&mut text, "problems", &progress::words(shown));
        text::text_list(&mut text, "warnings", &advice.warnings);
        text.push('\n');
        // A conflict's copies and their diff on the first screen.
        crate::contract::screen::text_conflicts(&mut text, &self.conflicts, g.wide);
        crate::judge::text::text_node(&mut text, s, self.observed, &self.judged, g.wide);
        if let (Some(id), Some(asked), Some(plan)) =
            (self.asked.id, &self.receipts.asked, &self.plan)
        {
            text_operation(
                &mut text,
                id,
                asked.as_ref(),
                plan,
                self.unknown_id.is_some(),
            );
        }
        text::text_cert_tables(
            &mut text,
            &self.certificates,
            &self.certificate_authorities,
            self.threshold,
            g.wide,
        );
        text::text_kubelet(&mut text, &self.kubelet, s.kubelet.note.as_deref());
        text.push('\n');
        let receipts = self.receipts;
        text_receipts(
            &mut text,
            &receipts.recent,
            receipts.count,
            self.asked.receipts,
            g.term.width,
        );
        if g.wide || self.asked.receipts != ReceiptFilter::Recent {
            text_last_leaves(&mut text, &receipts.recent);
        }
        text
    }
}

impl Viewed<'_> {
    /// The view up to the evidence: the headline, the exit code, the text
    /// and the document.
    pub fn draft(&self, g: &Global) -> Drafted {
        let (progress, shown) = self.progress_and_problems();
        let head = self.headline(shown.len());
        let code = view_code(
            self.foreign.is_some(),
            &self.advice,
            self.reasons.is_empty(),
        );
        let text = match &self.foreign {
            Some(f) => format!("NODE: NOT CLEAN: {f}\n"),
            None => self.text(g, &head, &progress, &shown),
        };
        Drafted {
            document: self.document(code),
            head,
            code,
            text,
        }
    }

    /// The text's end, after the evidence: the verdict again (with the
    /// exit code, the evidence's included), and what to do, last: what a
    /// scrolled terminal still shows. The headline never contradicts the
    /// code (SPEC 6, v1.2): `viewed` is the draft's code, `code` the
    /// final one.
    pub fn close(&self, text: &mut String, head: String, viewed: u8, code: u8, g: &Global) {
        if self.foreign.is_some() {
            return;
        }
        let head = if code == viewed {
            head
        } else {
            format!("{head}; EVIDENCE NOT WRITTEN")
        };
        text.push('\n');
        let closing = crate::contract::screen::closing(&head, code, g.term.width);
        advice::render_closing(text, &closing, &self.advice.next, g.term.width);
    }

    /// The verdict's severity (the terminal's colour of the headline).
    pub fn severity(&self) -> doc::Severity {
        self.advice.severity
    }
}

impl Viewed<'_> {
    /// The status document, with the view's exit code (a bundle that is
    /// written carries it too).
    fn document(&self, code: u8) -> doc::StatusDocument {
        let (s, m, receipts) = (self.s, &self.s.manifests, self.receipts);
        let clean = self.reasons.is_empty();
        doc::StatusDocument {
            mode: doc::StatusMode::Status,
            runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
            operation_id: self.asked.id.cloned(),
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
                format!(
                    "node is not clean: {}",
                    advice::first_of(&progress::words(&self.reasons), 3)
                )
            })),
            reasons: progress::words(&self.reasons),
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
            receipts_listed: listed_word(self.asked.receipts).to_string(),
            receipt: receipts.asked.clone().flatten(),
            fencing: self.plan.as_ref().map(plan_view),
            manifests: m.views(),
            staging: m.staging(),
            stray_manifests: m.strays.clone(),
            ca_sha256: s.pki.ca_sha256_view(),
            certificates: self.certificates.clone(),
            certificate_authorities: self.certificate_authorities.clone(),
            kubelet_certificates: self.kubelet.clone(),
            live: Some(crate::judge::live::view(self.observed, &self.judged)),
            state_error: s.state_error.clone(),
            evidence: None,
            duration_ms: 0,
            // As printed: the bundle's status.json carries it too (a bundle
            // that is written leaves the code as it is).
            exit_code: code,
        }
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
    (now, s_threshold): (time::OffsetDateTime, u32),
) -> Vec<Reason> {
    let mut reasons = not_clean_reasons(s.state_error.as_deref(), &s.lock, &s.phase, &s.manifests);
    reasons.extend(s.pki.expired_reasons(now).into_iter().map(Reason::other));
    // An ended CA has the expiry's own problem and step (rotate it first).
    let ca_ended = s
        .pki
        .cas
        .iter()
        .filter_map(|c| c.cert.as_ref())
        .any(|c| crate::rules::expiry::is_expired(now, c.not_after));
    if !ca_ended {
        reasons.extend(
            s.pki
                .ca_walls(now, s_threshold, false)
                .into_iter()
                .map(Reason::other),
        );
    }
    reasons.extend(s.kubelet.expired(now).into_iter().map(Reason::other));
    reasons.extend(s.kubelet.unreadable().into_iter().map(Reason::other));
    reasons.extend(s.kubelet.hostile.clone().map(Reason::other));
    if let Some(e) = &receipts.error {
        reasons.push(Reason::other(format!("receipts directory: {e}")));
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
    } else if !advice.not_active.is_empty()
        || advice.expired
        || !advice.ca_walls.is_empty()
        || !advice.live.is_empty()
    {
        exit::OPERATOR_MUST_ACT
    } else if clean {
        exit::OK
    } else {
        exit::FAILED
    }
}

/// The evidence bundle at the end of the view's text: where it is, what
/// it holds and what it left out, or why it was not written.
pub fn text_evidence(out: &mut String, ev: &doc::EvidenceView) {
    match ev {
        doc::EvidenceView::Written(w) => {
            out.push_str(&format!(
                "EVIDENCE: {} ({} files, {} bytes)\n  sha256 {}\n  receipts {} ({} left out), {} credential values redacted\n",
                text::escape(&w.path),
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
            text::text_list(out, "evidence skipped", &skipped);
        }
        doc::EvidenceView::NotWritten(n) => {
            out.push_str(&format!(
                "EVIDENCE NOT WRITTEN: {}\n",
                text::escape(&n.error)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    //! SPEC 6 and 7: the operator view's verdict from hand-made snapshots
    //! and observations: its severity, its headline and its exit code
    //! (clean 0; a manifest not active, an expired certificate or a live
    //! finding an operator must act on 4; any other unclean state 1;
    //! RENEWAL DUE clean), and a headline that never contradicts the code.
    use super::*;
    use crate::judge::advice::test_node::*;
    use crate::node::inspect::state_files::{legacy, v2};
    use crate::rules::agent::AgentIntent;
    use crate::rules::live::{Containers, Health, Observed, Port, Served, Unseen, Written};
    use crate::rules::phase::PhaseState;
    use doc::Severity;
    use std::path::Path;
    use std::time::Duration;

    /// The view's verdict.
    struct Verdict {
        severity: Severity,
        drafted: Drafted,
    }

    fn healthy(c: Component) -> Observed {
        Observed {
            name: c.name().to_string(),
            containers: Ok(Containers::Running {
                id: format!("{c}-1"),
                since: Some(NOW - time::Duration::hours(1)),
                restarts: 0,
                previous: None,
            }),
            health: Some(Ok(Health::Healthy)),
            ports: Vec::new(),
            newest: None,
            quorum: None,
            allowance: None,
        }
    }

    /// The four running and healthy, except what `change` does to one.
    fn observed(change: impl Fn(&mut Observed)) -> Observation {
        Observation {
            wall: NOW,
            budget: Duration::from_secs(1),
            took: Duration::ZERO,
            crictl: Some(vec!["/usr/bin/crictl".to_string()]),
            pods: Component::ALL
                .into_iter()
                .map(|c| {
                    let mut o = healthy(c);
                    change(&mut o);
                    o
                })
                .collect(),
        }
    }

    /// A change to one component's observation, and its name.
    type Change = (&'static str, fn(&mut Observed));

    fn all_healthy() -> Observation {
        observed(|_| {})
    }

    fn view_of(
        n: &TestNode,
        asked: Asked<'_>,
        receipts: &Receipts,
        o: &Observation,
        read: Read,
    ) -> Verdict {
        let g = Global::for_tests(Path::new("/"));
        let v = Viewed::judge(&g, asked, &n.0, receipts, o, read);
        Verdict {
            severity: v.severity(),
            drafted: v.draft(&g),
        }
    }

    fn read() -> Read {
        Read {
            now: NOW,
            foreign: None,
            conflicts: Vec::new(),
        }
    }

    fn view_live(n: &TestNode, o: &Observation) -> Verdict {
        let receipts = n.0.receipts.clone().unwrap_or_default();
        view_of(n, Asked::default(), &receipts, o, read())
    }

    fn view(n: &TestNode) -> Verdict {
        view_live(n, &all_healthy())
    }

    /// `(severity, head, code)`, the document agreeing with them.
    fn verdict(v: &Verdict) -> (Severity, &str, u8) {
        let d = &v.drafted;
        assert_eq!(d.document.exit_code, d.code);
        assert_eq!(d.document.severity, v.severity);
        assert_eq!(d.document.clean, d.document.reasons.is_empty());
        assert!(d.text.starts_with(&format!("{}\n", d.head)), "{}", d.text);
        (v.severity, d.head.as_str(), d.code)
    }

    /// SPEC 6: a clean node (lock free, no unfinished phase, all four
    /// active, nothing staged, the four running and healthy, no leaf
    /// expired) is clean: exit 0, and the headline counts the warnings.
    #[test]
    fn a_clean_node_is_clean_and_exits_0() {
        let v = view(&TestNode::clean());
        assert_eq!(verdict(&v), (Severity::Clean, "NODE: CLEAN", 0));
        let d = &v.drafted.document;
        assert!(d.clean);
        assert_eq!(d.outcome, doc::Cleanliness::Clean);
        assert_eq!(d.message.0, "node is clean");
        assert!(d.next_steps.is_empty() && d.warnings.is_empty());

        let pending = TestNode::clean().agent(AgentIntent::Pending {
            phase: "renewing".into(),
            operation_id: None,
        });
        let v = view(&pending);
        assert_eq!(verdict(&v), (Severity::Clean, "NODE: CLEAN (1 warning)", 0));
    }

    /// SPEC 6 and 10 ("Expiry severity"): a leaf due within the threshold
    /// is RENEWAL DUE, which is clean: exit 0, with its step.
    #[test]
    fn renewal_due_is_clean_and_exits_0() {
        let v = view(&TestNode::clean().leaf_ends("apiserver", DUE));
        assert_eq!(
            verdict(&v),
            (
                Severity::Clean,
                "NODE: RENEWAL DUE: apiserver in 13 days (2026-12-13) (1 warning)",
                0
            )
        );
        assert!(v.drafted.document.clean);
        assert_eq!(v.drafted.document.next_steps.len(), 1);
    }

    /// SPEC 6 (v1.1) and 7: one of the four not in `manifests/` (staged or
    /// missing) is ACTION NEEDED, exit 4, naming the pod that is down.
    #[test]
    fn a_manifest_not_active_exits_4() {
        for n in [
            TestNode::clean().staged(Component::KubeApiserver),
            TestNode::clean().agent_staged(Component::KubeApiserver),
            TestNode::clean().missing(Component::KubeApiserver),
        ] {
            let v = view(&n);
            let (severity, head, code) = verdict(&v);
            assert_eq!((severity, code), (Severity::ActionNeeded, 4), "{head}");
            assert!(
                head.starts_with("NODE: ACTION NEEDED: kube-apiserver down ("),
                "{head}"
            );
            assert!(!v.drafted.document.clean);
        }
    }

    /// SPEC 6 (v1.2) and 10: an expired leaf, or the kubelet's expired
    /// client certificate, is ACTION NEEDED, exit 4, whatever else.
    #[test]
    fn an_expired_certificate_exits_4() {
        let v = view(&TestNode::clean().leaf_ends("apiserver", EXPIRED));
        assert_eq!(
            verdict(&v),
            (
                Severity::ActionNeeded,
                "NODE: ACTION NEEDED: certificates expired: apiserver expired 2026-11-28 (2 days ago) (1 problem)",
                4
            )
        );
        let v = view(&TestNode::clean().kubelet_client_ends(EXPIRED));
        let (severity, head, code) = verdict(&v);
        assert_eq!((severity, code), (Severity::ActionNeeded, 4));
        assert!(
            head.contains("kubelet client certificate expired 2026-11-28"),
            "{head}"
        );
    }

    /// SPEC 6 and 7: every other unclean state exits 1 (the controller
    /// releases the lock and retries): unfinished work with all four
    /// active, a lock held by a process that is not the runbook, a
    /// malformed phase file, a refused state directory, a staging
    /// conflict with all four active (v1.1: active means in `manifests/`).
    #[test]
    fn any_other_unclean_state_exits_1() {
        let cases = [
            (
                "died",
                TestNode::clean().phase(v2("op-1", PhaseState::Renewing, None), None),
            ),
            (
                "legacy",
                TestNode::clean().phase(legacy(PhaseState::Renewing, None), None),
            ),
            ("stranger", TestNode::clean().held_by_stranger()),
            ("malformed", TestNode::clean().malformed_phase()),
            ("state", TestNode::clean().state_refused()),
            (
                "both",
                TestNode::clean().both(Component::KubeApiserver, "runbook"),
            ),
        ];
        for (name, n) in cases {
            let v = view(&n);
            let (severity, head, code) = verdict(&v);
            assert_eq!((severity, code), (Severity::NotClean, 1), "{name}: {head}");
            // The headline names the situation (SPEC 6, v1.3).
            let named = match name {
                "died" => {
                    "NODE: RENEWAL DIED while renewing the certificates (before any restart) ("
                }
                "legacy" => "NODE: RENEWAL DIED while ",
                "stranger" => "NODE: LOCK HELD by pid ",
                _ => "NODE: NOT CLEAN (",
            };
            assert!(head.starts_with(named), "{name}: {head}");
        }
        let n = TestNode::clean().both(Component::KubeApiserver, "agent");
        let receipts = Receipts::default();
        let v = view_of(
            &n,
            Asked::default(),
            &receipts,
            &all_healthy(),
            Read {
                conflicts: vec![conflict(Component::KubeApiserver, "agent", false)],
                ..read()
            },
        );
        let (severity, head, code) = verdict(&v);
        assert_eq!((severity, code), (Severity::NotClean, 1), "{head}");
        assert!(
            head.starts_with(
                "NODE: STAGING CONFLICT: kube-apiserver.yaml in both directories (they differ)"
            ),
            "{head}"
        );
    }

    /// SPEC 6 (v1.2) and 10: the live node decides too: not running,
    /// unhealthy or serving an expired certificate is ACTION NEEDED (exit
    /// 4); needing a restart, serving a certificate that is not its
    /// file's, or not checked is not clean (exit 1).
    #[test]
    fn live_findings_exit_4_or_1_as_spec_10_weighs_them() {
        let etcd = |f: fn(&mut Observed)| {
            observed(move |o| {
                if o.name == "etcd" {
                    f(o)
                }
            })
        };
        let four: [Change; 3] = [
            ("not running", |o| o.containers = Ok(Containers::Absent)),
            ("unhealthy", |o| {
                o.health = Some(Ok(Health::Unhealthy("503".into())))
            }),
            ("serves expired", |o| {
                o.ports = vec![Port {
                    port: 2379,
                    file: "/etc/kubernetes/pki/etcd/server.crt".into(),
                    served: Ok(Served::Expired(EXPIRED)),
                }]
            }),
        ];
        for (name, f) in four {
            let v = view_live(&TestNode::clean(), &etcd(f));
            let (severity, head, code) = verdict(&v);
            assert_eq!((severity, code), (Severity::ActionNeeded, 4), "{name}");
            assert!(
                head.starts_with("NODE: ACTION NEEDED: etcd "),
                "{name}: {head}"
            );
        }
        let one: [Change; 3] = [
            ("restart needed", |o| {
                o.newest = Some(Ok(Written {
                    file: "/etc/kubernetes/pki/etcd/server.crt".into(),
                    at: NOW - time::Duration::minutes(10),
                }))
            }),
            ("serves other", |o| {
                o.ports = vec![Port {
                    port: 2379,
                    file: "/etc/kubernetes/pki/etcd/server.crt".into(),
                    served: Ok(Served::Other),
                }]
            }),
            ("not checked", |o| {
                o.health = Some(Err(Unseen::Probe("connection refused".into())))
            }),
        ];
        for (name, f) in one {
            let v = view_live(&TestNode::clean(), &etcd(f));
            assert_eq!(
                verdict(&v),
                (Severity::NotClean, "NODE: NOT CLEAN (1 problem)", 1),
                "{name}"
            );
        }
        // No runtime: said once, never assumed healthy.
        let v = view_live(
            &TestNode::clean(),
            &observed(|o| o.containers = Err(Unseen::Runtime("crictl: not found".into()))),
        );
        assert_eq!(verdict(&v).2, 1);
        assert_eq!(
            v.drafted.document.reasons,
            ["containers not checked: crictl: not found"]
        );
    }

    /// Renewal op-1's work, restarting kube-apiserver (2 of 4), its
    /// manifest staged (a holder, or none, is the test's).
    fn apiserver_staged_by_op_1() -> TestNode {
        TestNode::clean()
            .phase(
                v2(
                    "op-1",
                    PhaseState::RestartPending,
                    Some(Component::KubeApiserver),
                ),
                None,
            )
            .staged(Component::KubeApiserver)
    }

    /// SPEC 6 (v1.2): a renewal at work shows its progress, not problems:
    /// RENEWAL IN PROGRESS, its step, the component it restarts down by
    /// design (its live findings are progress too); exit 4 stays while a
    /// pod is down (SPEC 7). Another pod down is named.
    #[test]
    fn a_renewal_at_work_shows_its_progress_and_exit_4_stays() {
        let n = apiserver_staged_by_op_1().held_by_runbook("op-1");
        let apiserver_down = observed(|o| {
            if o.name == "kube-apiserver" {
                o.containers = Ok(Containers::Absent)
            }
        });
        let v = view_live(&n, &apiserver_down);
        assert_eq!(
            verdict(&v),
            (
                Severity::InProgress,
                "NODE: RENEWAL IN PROGRESS: restarting kube-apiserver (2 of 4); do not touch",
                4
            )
        );
        assert!(v
            .drafted
            .text
            .contains("\nin progress: renew op-1 (pid 4242)"));

        let v = view_live(&n.clone().missing(Component::Etcd), &apiserver_down);
        let (severity, head, code) = verdict(&v);
        assert_eq!((severity, code), (Severity::InProgress, 4));
        assert!(
            head.starts_with(
                "NODE: RENEWAL IN PROGRESS: restarting kube-apiserver (2 of 4); etcd down; do not touch"
            ),
            "{head}"
        );
    }

    /// SPEC 6 (v1.3): a renewal at work while another component crashes:
    /// ACTION NEEDED for that one, the renewal named as such (never "LOCK
    /// HELD"), its own work still progress, not problems; the crashed
    /// one's why-step, and no stop of a static pod while it works.
    #[test]
    fn a_renewal_at_work_beside_a_crashed_component_stays_its_progress() {
        let n = apiserver_staged_by_op_1().held_by_runbook("op-1");
        let mut o = observed(|o| match o.name.as_str() {
            "kube-apiserver" => o.containers = Ok(Containers::Absent),
            "kube-scheduler" => {
                o.containers = Ok(Containers::Exited {
                    id: "sched-2".into(),
                    exit: crate::rules::live::Exit {
                        code: Some(1),
                        finished: Some(NOW - time::Duration::seconds(5)),
                    },
                    restarts: 1,
                })
            }
            _ => {}
        });
        // kube-vip, started before admin.conf was renewed.
        let mut vip = healthy(Component::Etcd);
        vip.name = "kube-vip".into();
        vip.health = None;
        vip.newest = Some(Ok(crate::rules::live::Written {
            file: "/etc/kubernetes/admin.conf".into(),
            at: NOW - time::Duration::minutes(1),
        }));
        o.pods.push(vip);
        let v = view_live(&n, &o);
        let (severity, head, code) = verdict(&v);
        assert_eq!((severity, code), (Severity::ActionNeeded, 4), "{head}");
        assert!(
            head.starts_with("NODE: ACTION NEEDED: RENEWAL IN PROGRESS restarting kube-apiserver (2 of 4); kube-scheduler not running: exited 1 (its own error)"),
            "{head}"
        );
        assert!(
            !head.contains("LOCK HELD") && !head.contains("kube-apiserver down"),
            "{head}"
        );
        let text = &v.drafted.text;
        let problems = text.split("\nproblems:\n").nth(1).unwrap_or_default();
        let problems = problems.split("\n\n").next().unwrap_or_default();
        assert!(problems.contains("kube-scheduler not running"), "{text}");
        for own in [
            "renewal lock",
            "kube-apiserver manifest is staged",
            "unfinished while",
        ] {
            assert!(!problems.contains(own), "{own} is progress:\n{text}");
        }
        let steps = &v.drafted.document.next_steps;
        let cmds: Vec<&str> = steps.iter().filter_map(|s| s.command.as_deref()).collect();
        assert!(
            cmds.iter()
                .any(|c| c.contains("/usr/bin/crictl logs --tail 40 sched-2")),
            "{steps:#?}"
        );
        assert!(!cmds.iter().any(|c| c.contains(" stop ")), "{steps:#?}");
        assert!(
            !cmds.iter().any(|c| c.contains("kube-apiserver$")),
            "{steps:#?}"
        );
    }

    /// The log shown is the container that says why: an unhealthy one's
    /// own (not one that exited days ago in its sandbox); a crash loop's
    /// the one before; the why-step comes after the step that mends the
    /// headline's situation, and kube-vip's stop last.
    #[test]
    fn the_log_shown_is_the_one_that_says_why_and_mending_comes_first() {
        let old = crate::rules::live::Previous {
            id: "kcm-old".into(),
            exit: crate::rules::live::Exit {
                code: Some(143),
                finished: Some(NOW - time::Duration::days(3)),
            },
        };
        let unhealthy = observed(move |o| {
            if o.name == "kube-controller-manager" {
                o.containers = Ok(Containers::Running {
                    id: "kcm-now".into(),
                    since: Some(NOW - time::Duration::days(3)),
                    restarts: 1,
                    previous: Some(old.clone()),
                });
                o.health = Some(Ok(Health::Unhealthy("HTTP 500".into())));
            }
        });
        let v = view_live(&TestNode::clean(), &unhealthy);
        let logs = |v: &Verdict| -> Vec<String> {
            v.drafted
                .document
                .next_steps
                .iter()
                .filter_map(|s| s.command.clone())
                .filter(|c| c.contains(" logs "))
                .collect()
        };
        assert_eq!(logs(&v).len(), 1, "{:#?}", v.drafted.document.next_steps);
        assert!(
            logs(&v)[0].contains("logs --tail 40 kcm-now"),
            "{:?}",
            logs(&v)
        );
        let pod = v
            .drafted
            .document
            .live
            .as_ref()
            .unwrap()
            .pods
            .iter()
            .find(|p| p.name == "kube-controller-manager")
            .unwrap()
            .clone();
        assert!(pod.logs.unwrap().ends_with(" kcm-now"));

        // A dead renewal left kube-apiserver staged; kube-scheduler crashes
        // since: the put-back first, the why-step after it.
        let n = apiserver_staged_by_op_1();
        let o = observed(|o| match o.name.as_str() {
            "kube-apiserver" => o.containers = Ok(Containers::Absent),
            "kube-scheduler" => o.health = Some(Ok(Health::Unhealthy("HTTP 500".into()))),
            _ => {}
        });
        let v = view_live(&n, &o);
        let steps = &v.drafted.document.next_steps;
        let at = |needle: &str| {
            steps
                .iter()
                .position(|s| s.command.as_deref().is_some_and(|c| c.contains(needle)))
                .unwrap_or_else(|| panic!("no {needle}: {steps:#?}"))
        };
        assert!(at("--fence") < at(" logs "), "{steps:#?}");
        assert!(
            v.drafted
                .head
                .starts_with("NODE: ACTION NEEDED: RENEWAL DIED while restarting kube-apiserver"),
            "{}",
            v.drafted.head
        );
    }

    /// RENEWAL DIED only when the lock is seen free: a lock that could not
    /// be probed says nothing of whether the renewal lives.
    #[test]
    fn a_renewal_is_said_dead_only_with_the_lock_seen_free() {
        let mut n = TestNode::clean().phase(v2("op-1", PhaseState::Renewing, None), None);
        let v = view(&n);
        let (_, head, _) = verdict(&v);
        assert!(
            head.starts_with("NODE: RENEWAL DIED while renewing"),
            "{head}"
        );
        n.0.lock.probe = Err(std::sync::Arc::new(crate::node::fsx::FsError::Symlink {
            path: "/var/lib/nvke/k8s-cert-renewal/lock".into(),
        }));
        let v = view(&n);
        let (_, head, _) = verdict(&v);
        assert!(!head.contains("RENEWAL DIED"), "{head}");
    }

    /// SPEC 12 (v1.3) and 6: a node that is not a control plane is one
    /// verdict, exit 1, never ACTION NEEDED for pods that never existed,
    /// and nothing is advised.
    #[test]
    fn not_a_control_plane_is_one_verdict_exit_1() {
        let mut n = TestNode::clean();
        for c in Component::ALL {
            n = n.missing(c);
        }
        let why =
            "not a kubeadm control-plane node: none of the four static pod manifests is anywhere";
        let receipts = Receipts::default();
        let v = view_of(
            &n,
            Asked::default(),
            &receipts,
            &all_healthy(),
            Read {
                foreign: Some(why.into()),
                ..read()
            },
        );
        assert_eq!(v.severity, Severity::NotClean);
        assert_eq!(v.drafted.code, 1);
        assert_eq!(v.drafted.text, format!("NODE: NOT CLEAN: {why}\n"));
        assert_eq!(v.drafted.document.reasons, [why]);
        assert!(v.drafted.document.next_steps.is_empty());
    }

    /// The exit code's rule itself (SPEC 6, 7): not a control plane 1;
    /// else 4 when an operator must act; else 0 clean, 1 not clean.
    #[test]
    fn the_view_code_follows_spec_6_and_7() {
        let s = TestNode::clean().0;
        let cmd = advice::commands(&Global::for_tests(Path::new("/")), &s);
        let base = advice::advise::<&str>(&s, &[], &[], &cmd, NOW, 30);
        let with = |f: fn(&mut advice::Advice)| {
            let mut a = base.clone();
            f(&mut a);
            a
        };
        let down = with(|a| a.not_active = vec![Component::Etcd]);
        let expired = with(|a| a.expired = true);
        let live = with(|a| a.live = vec!["etcd not running".into()]);
        assert_eq!(view_code(false, &base, true), exit::OK);
        assert_eq!(view_code(false, &base, false), exit::FAILED);
        for a in [&down, &expired, &live] {
            assert_eq!(view_code(false, a, false), exit::OPERATOR_MUST_ACT);
            assert_eq!(view_code(true, a, false), exit::FAILED);
        }
        assert_eq!((exit::OK, exit::FAILED, exit::OPERATOR_MUST_ACT), (0, 1, 4));
    }

    /// SPEC 6 (v1.2): the headline never contradicts the code: CLEAN and
    /// RENEWAL DUE are 0, ACTION NEEDED 4, NOT CLEAN and CONFLICT 1.
    #[test]
    fn the_headline_never_contradicts_the_code() {
        let nodes = [
            TestNode::clean(),
            TestNode::clean().leaf_ends("etcd-server", DUE),
            TestNode::clean().staged(Component::Etcd),
            TestNode::clean().leaf_ends("etcd-server", EXPIRED),
            TestNode::clean()
                .leaf_ends("etcd-server", EXPIRED)
                .staged(Component::Etcd),
            TestNode::clean().kubelet_client_ends(EXPIRED),
            TestNode::clean().malformed_phase(),
            TestNode::clean().held_by_stranger().staged(Component::Etcd),
            TestNode::clean().phase(
                legacy(PhaseState::RestartPending, Some(Component::Etcd)),
                None,
            ),
            TestNode::clean().both(Component::Etcd, "agent"),
        ];
        for n in &nodes {
            let v = view(n);
            let (_, head, code) = verdict(&v);
            let want = if head.starts_with("NODE: CLEAN") || head.starts_with("NODE: RENEWAL DUE") {
                0
            } else if head.starts_with("NODE: ACTION NEEDED") {
                4
            } else {
                assert!(
                    [
                        "NOT CLEAN",
                        "STAGING CONFLICT",
                        "RENEWAL DIED while ",
                        "LOCK HELD by "
                    ]
                    .iter()
                    .any(|h| head.starts_with(&format!("NODE: {h}"))),
                    "{head}"
                );
                1
            };
            assert_eq!(code, want, "{head}");
        }
    }

    /// SPEC 6 (v1.1): with `--evidence` asked for, its step is not offered
    /// again; the others stay.
    #[test]
    fn evidence_asked_for_is_not_offered_again() {
        let n = TestNode::clean().staged(Component::KubeApiserver);
        let receipts = Receipts::default();
        let asked = Asked {
            evidence: true,
            ..Asked::default()
        };
        let v = view_of(&n, asked, &receipts, &all_healthy(), read());
        let steps = &v.drafted.document.next_steps;
        assert_eq!(steps.len(), 1, "{steps:#?}");
        assert!(steps[0].command.as_deref().is_some_and(
            |c| c.ends_with(" mv -n nvke-cert-renewal-staging/kube-apiserver.yaml manifests/")
        ));
    }

    /// SPEC 6: with an ID, the view says what a fencing check would do; an
    /// ID the node never saw is said (with the nearest known), and does
    /// not make a clean node unclean.
    #[test]
    fn an_asked_operation_gets_its_fencing_plan_and_an_unknown_one_is_said() {
        let id = OperationId::parse("op-2").unwrap();
        let receipts = Receipts {
            asked: Some(None),
            known_ids: vec!["op-1".into()],
            ..Receipts::default()
        };
        let asked = Asked {
            id: Some(&id),
            ..Asked::default()
        };
        let v = view_of(&TestNode::clean(), asked, &receipts, &all_healthy(), read());
        assert_eq!(verdict(&v).2, 0);
        let d = &v.drafted.document;
        assert!(
            d.warnings[0].starts_with("operation op-2 is unknown to this node"),
            "{:?}",
            d.warnings
        );
        assert!(matches!(
            d.fencing,
            Some(doc::FencingPlan::Abandon { ref restore, .. }) if restore.is_empty()
        ));
        // The state directory refused: a fencing check is unconfirmed.
        let v = view_of(
            &TestNode::clean().state_refused(),
            asked,
            &receipts,
            &all_healthy(),
            read(),
        );
        assert!(matches!(
            v.drafted.document.fencing,
            Some(doc::FencingPlan::Refuse { .. })
        ));
    }
}
