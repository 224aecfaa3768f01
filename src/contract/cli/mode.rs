//! The mode a command line asks for, each with its own options read.

use super::grammar::ReceiptFilter;
use crate::contract::ModeName;
use crate::rules::opid::OperationId;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub enum Mode {
    Renew {
        operation_id: OperationId,
        force: bool,
        /// CA key (`ca.crt`, ...) to lowercase hex.
        expect_ca_sha256: BTreeMap<String, String>,
        /// `--recover-expired` (SPEC 11): no health gate before renewal.
        recover_expired: bool,
    },
    LegacyV1 {
        force: bool,
    },
    Check {
        force: bool,
        /// Relative to the root; None: the default path.
        agent_state: Option<String>,
    },
    /// `--status-only` (the operator view, or one operation's).
    Status {
        operation_id: Option<OperationId>,
        /// `--evidence PATH`, relative to the root.
        evidence: Option<String>,
        receipts: ReceiptFilter,
    },
    /// `--status-only --operation-id ID --fence`: the fencing check always
    /// names its operation.
    Fence {
        operation_id: OperationId,
    },
    Version,
}

impl Mode {
    /// The mode's name in the documents (the fencing check is `status`).
    pub fn name(&self) -> ModeName {
        match self {
            Mode::Renew { .. } => ModeName::Renew,
            Mode::LegacyV1 { .. } => ModeName::LegacyV1,
            Mode::Check { .. } => ModeName::Check,
            Mode::Status { .. } | Mode::Fence { .. } => ModeName::Status,
            Mode::Version => ModeName::Version,
        }
    }
}
