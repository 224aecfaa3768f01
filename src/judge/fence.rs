//! The fencing check's answer (SPEC 6): confirmed or unconfirmed, why,
//! what was put back and left, as the document and the text print it. The
//! check itself, under the lock, is `modes::fence`.

use crate::contract as doc;
use crate::contract::text;
use crate::node::fence::{Abandoned, Recorded, Restoration};
use crate::node::lock::LockError;
use crate::node::manifests::ManifestsReport;
use crate::node::statedir::ReceiptError;
use crate::rules::component::Component;
use crate::rules::opid::OperationId;
use crate::rules::outcome::exit;
use crate::rules::receipt::{self, Receipt};

/// What the fencing check answers.
pub struct FenceOutcome {
    pub code: u8,
    pub termination: doc::Termination,
    pub action: doc::FenceAction,
    pub reason: doc::FenceReason,
    pub message: String,
    pub receipt: Option<Receipt>,
    pub restored: Vec<Component>,
    pub conflicts: Vec<String>,
    /// Abandoned an operation this node has no record of (no receipt, and
    /// no phase file, owner record or log names it): said on the verdict's
    /// line.
    pub never_seen: bool,
}

/// Unconfirmed, nothing put back.
pub fn unconfirmed(code: u8, reason: doc::FenceReason, message: String) -> FenceOutcome {
    unconfirmed_after(code, reason, message, Restoration::default())
}

/// Unconfirmed, after the put-back (what it restored and left is reported).
pub fn unconfirmed_after(
    code: u8,
    reason: doc::FenceReason,
    message: String,
    pb: Restoration,
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

/// Confirmed: by the receipt that exists (`existing-receipt`) or the one
/// this check recorded (`abandoned`).
pub fn confirmed(
    action: doc::FenceAction,
    message: String,
    receipt: Receipt,
    pb: Restoration,
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

/// The fencing check's document and text.
pub fn render(
    id: &OperationId,
    o: &FenceOutcome,
    m: &ManifestsReport,
) -> (doc::FenceDocument, String) {
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
    let mut text = format!(
        "FENCE {id}: {}{}\n",
        text::word(&o.termination).to_uppercase(),
        if o.never_seen {
            " (this node has no record of that operation: a mistyped ID? it is now recorded abandoned here)"
        } else {
            ""
        }
    );
    text::table(
        &mut text,
        &[
            vec!["action".to_string(), text::word(&o.action)],
            vec!["reason".to_string(), text::word(&o.reason)],
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
    (document, text)
}

/// The fencing check could not take the lock (`e`): unconfirmed, saying
/// why (its timeout, the deadline, a signal; `deadline_passed`: the
/// controller's `deadline` is past) and the receipt the operation has, if
/// any (`found`).
pub fn lock_refused(
    e: LockError,
    deadline_passed: bool,
    deadline: &str,
    found: Option<Receipt>,
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
        // The deadline, or the caller's SIGTERM/SIGINT (its context
        // ended): either way the caller's time is up.
        LockError::Cancelled { path, holder } if deadline_passed => (
            doc::FenceReason::Deadline,
            format!("renewal lock {path} still held by {holder} when the controller's deadline {deadline} passed"),
        ),
        LockError::Cancelled { path, holder } => (
            doc::FenceReason::Deadline,
            format!("renewal lock {path} still held by {holder} when a signal (SIGTERM/SIGINT) ended the wait"),
        ),
        e => return unconfirmed(exit::FAILED, doc::FenceReason::WriteFailed, e.to_string()),
    };
    let has = found
        .as_ref()
        .map(|r| {
            format!(
                " (operation {} has a receipt: outcome {})",
                r.operation_id, r.outcome
            )
        })
        .unwrap_or_default();
    let mut o = unconfirmed(
        exit::LOCK_TIMEOUT,
        reason,
        format!("{why}; termination unconfirmed{has}"),
    );
    o.receipt = found;
    o
}

/// `FencePlan::Confirm`: the operation has the receipt `r`; after the
/// put-back `pb`, confirmed, unless a write failed.
pub fn existing(id: &OperationId, r: Receipt, pb: Restoration) -> FenceOutcome {
    let has = format!(
        "operation {id} already has a receipt (outcome {}){}",
        r.outcome,
        pb.describe()
    );
    if pb.failed.is_some() {
        // A write failed: unconfirmed (SPEC 6), so the controller hands
        // the node to an operator instead of moving on with a pod down.
        let message = format!("termination unconfirmed: {has}");
        return unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb);
    }
    let message = format!("termination confirmed: {has}");
    confirmed(doc::FenceAction::ExistingReceipt, message, r, pb, false)
}

/// `FencePlan::Abandon`: the answer to how abandoning `id` went.
pub fn abandoned(id: &OperationId, done: Abandoned) -> FenceOutcome {
    match done {
        Abandoned::NotRecorded(why, pb) => {
            let message = format!("termination unconfirmed: {why}");
            unconfirmed_after(exit::FAILED, doc::FenceReason::WriteFailed, message, pb)
        }
        Abandoned::Recorded {
            recorded: r,
            receipt,
            message,
            pb,
            never_seen,
        } => recorded(id, r, (*receipt, message), pb, never_seen),
    }
}

/// The answer once the `abandoned` receipt `r` (with its `message`) was
/// written, or not (`recorded`).
fn recorded(
    id: &OperationId,
    recorded: Recorded,
    (r, message): (Receipt, String),
    pb: Restoration,
    never_seen: bool,
) -> FenceOutcome {
    let unconfirmed_because = |reason, why: String, pb: Restoration| {
        let message = format!("{why}{}", pb.describe());
        unconfirmed_after(exit::FAILED, reason, message, pb)
    };
    match recorded {
        Recorded::Written => confirmed(doc::FenceAction::Abandoned, message, r, pb, never_seen),
        Recorded::Existing(found) => {
            let message = format!(
                "termination confirmed: operation {id} already has a receipt (outcome {})",
                found.outcome
            );
            confirmed(
                doc::FenceAction::ExistingReceipt,
                message,
                *found,
                pb,
                false,
            )
        }
        Recorded::Malformed => unconfirmed_because(
            doc::FenceReason::MalformedReceipt,
            "termination unconfirmed: the receipt appeared malformed".into(),
            pb,
        ),
        Recorded::Failed(ReceiptError::Invalid(e)) => unconfirmed_because(
            doc::FenceReason::WriteFailed,
            format!("termination unconfirmed: {e}"),
            pb,
        ),
        Recorded::Failed(ReceiptError::Dir(e)) => unconfirmed_because(
            doc::FenceReason::WriteFailed,
            format!("receipts directory: {e}"),
            pb,
        ),
        Recorded::Failed(ReceiptError::Write(e)) => unconfirmed_because(
            doc::FenceReason::WriteFailed,
            format!("termination unconfirmed: writing the receipt failed: {e}"),
            pb,
        ),
    }
}
