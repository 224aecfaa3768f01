//! Version, git commit and contract version.

/// The runbook's version, carried by every JSON document and receipt.
pub const RUNBOOK_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit the binary was built from ("unknown" outside a checkout).
pub const GIT_COMMIT: &str = env!("NVKE_GIT_COMMIT");
/// The version of the contract (SPEC: CLI, files, exit codes) this binary honours.
pub const CONTRACT_VERSION: &str = "nvke-cert-runbook/contract/v1";

pub fn text() -> String {
    format!(
        "nvke-cert-runbook {RUNBOOK_VERSION} (commit {GIT_COMMIT}, contract {CONTRACT_VERSION})"
    )
}
