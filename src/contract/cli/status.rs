//! `--status-only`: the operator view (and its evidence bundle), one
//! operation's, and the fencing check (`--operation-id ID --fence`); their
//! options read, and their help page.

use super::global::node_path_option;
use super::grammar::Cli;
use super::mode::Mode;
use super::page::ModePage;
use super::usage::{usage, UsageError};
use crate::contract::ModeName;
use crate::rules::opid::OperationId;

/// `--status-only --help`: the view and the fencing check.
pub(super) const PAGE: ModePage = ModePage {
    usage: "--status-only",
    options: &[
        "status_only",
        "operation_id",
        "fence",
        "evidence",
        "receipts",
        "wide",
        "deadline",
    ],
    globals: &[
        "root",
        "output",
        "log_format",
        "threshold_days",
        "probe_timeout",
        "command_timeout",
        "crictl",
        "runtime_endpoint",
        "lock_timeout",
    ],
    examples: "\
Examples (an operator's first, then the controller's):
  nvke-cert-runbook --status-only                  the node at a glance
  nvke-cert-runbook --status-only --wide           every certificate in full
  nvke-cert-runbook --status-only --evidence /root/nvke-evidence.tgz
                                   also write the evidence bundle
  nvke-cert-runbook --status-only --operation-id cycle-2026-12-01 --fence
                                   the controller's termination check",
    exit_codes: "\
Exit codes: 0 clean or renewal due; 1 not clean; 4 action needed;
  --fence: 0 confirmed, 1 unconfirmed, 3 lock held; 2 usage error",
};

/// `--status-only`: the fencing check when `--fence` (which names its
/// operation), else the view, its evidence path a node path.
pub(super) fn mode(
    cli: &Cli,
    m: Option<ModeName>,
    operation_id: Option<OperationId>,
) -> Result<Mode, UsageError> {
    Ok(match (cli.fence, operation_id) {
        (true, Some(operation_id)) => Mode::Fence { operation_id },
        (true, None) => return Err(usage(m, "--fence needs --operation-id ID")),
        (false, operation_id) => Mode::Status {
            operation_id,
            evidence: cli
                .evidence
                .as_deref()
                .map(|p| node_path_option(m, "evidence", p))
                .transpose()?,
            receipts: cli.receipts,
        },
    })
}
