//! `--check`: the read-only preflight, its options read, and its help page.

use super::global::node_path_option;
use super::grammar::Cli;
use super::mode::Mode;
use super::page::ModePage;
use super::usage::UsageError;
use crate::contract::ModeName;

/// `--check --help`.
pub(super) const PAGE: ModePage = ModePage {
    usage: "--check",
    options: &["check", "force", "threshold_days", "agent_state", "wide"],
    globals: &[
        "root",
        "output",
        "log_format",
        "probe_timeout",
        "command_timeout",
        "crictl",
        "runtime_endpoint",
    ],
    examples: "\
Examples (an operator's first, then the controller's):
  nvke-cert-runbook --check                  would a renewal run now, and why
  nvke-cert-runbook --check --wide           every certificate in full
  nvke-cert-runbook --check --force          as if the renewal were forced
  nvke-cert-runbook --check --output json    the controller's check (JSON)",
    exit_codes: "\
Exit codes: 0 decided (renew or unchanged); 1 the check failed; 2 usage error",
};

/// `--check`, its agent state file a node path.
pub(super) fn mode(cli: &Cli, m: Option<ModeName>) -> Result<Mode, UsageError> {
    Ok(Mode::Check {
        force: cli.force,
        agent_state: cli
            .agent_state
            .as_deref()
            .map(|p| node_path_option(m, "agent-state", p))
            .transpose()?,
    })
}
