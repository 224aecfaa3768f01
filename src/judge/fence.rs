//! The fencing check's answer (SPEC 6): confirmed or unconfirmed, why,
//! what was put back and left, as the document and the text print it. The
//! check itself, under the lock, is `modes::fence`.

use crate::contract as doc;
use crate::contract::text;
use crate::node::fence::PutBack;
use crate::node::manifests::ManifestsReport;
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
    unconfirmed_after(code, reason, message, PutBack::default())
}

/// Unconfirmed, after the put-back (what it restored and left is reported).
pub fn unconfirmed_after(
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

/// Confirmed: by the receipt that exists (`existing-receipt`) or the one
/// this check recorded (`abandoned`).
pub fn confirmed(
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
