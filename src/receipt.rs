//! Receipts (SPEC section 3): `state/completed/<ID>.json`. Pure.

use crate::component::Component;
use crate::opid::OperationId;
use crate::outcome::{ManifestLocation, Outcome, Phase};
use std::collections::BTreeMap;

pub const RECEIPT_FORMAT: &str = "nvke-cert-runbook/receipt/v1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub operation_id: OperationId,
    pub outcome: Outcome,
    pub phase: Phase,
    /// At most 512 bytes, no control characters (enforced on render by
    /// truncating at a char boundary and replacing controls with spaces;
    /// on parse, a longer message or one with controls is malformed).
    pub message: String,
    pub failed_component: Option<Component>,
    /// All four components, always.
    pub manifests: BTreeMap<Component, ManifestLocation>,
    /// RFC 3339 UTC.
    pub finished_at: String,
    pub runbook_version: String,
    /// Keys among `phase::CA_KEYS`, values 64 lowercase hex; may be empty
    /// (CAs unreadable when the receipt was written).
    pub ca_sha256: BTreeMap<String, String>,
}

/// Parse strictly. `file_id` is the ID from the file name: a receipt whose
/// `operationID` differs is malformed.
pub fn parse_receipt(_bytes: &[u8], _file_id: &OperationId) -> Result<Receipt, String> {
    todo!()
}

/// Render (pretty JSON, trailing newline); round-trips through `parse_receipt`.
pub fn render_receipt(_r: &Receipt) -> Vec<u8> {
    todo!()
}

/// Sanitize a message for output and receipts: controls become spaces, at
/// most 512 bytes (cut at a char boundary, ending in "..." when cut).
pub fn bounded_message(_s: &str) -> String {
    todo!()
}
