//! What a refused command line, `--version` and `--help` print.

use super::*;
use serde::{Deserialize, Serialize};

/// `usage_error` (exit 2, nothing written) or `failed` (exit 1: `--root`
/// could not be opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsOutcome {
    UsageError,
    Failed,
}

/// Always `arguments`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsPhase {
    Arguments,
}

/// What any mode prints with `--output json` when its arguments are refused
/// (`usage_error`, exit 2) or `--root` cannot be opened (`failed`, exit 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(title = "nvke-cert-runbook usage error"))]
pub struct UsageErrorDocument {
    /// The mode the caller seemed to ask for; null when that was unclear.
    pub mode: Option<ModeName>,
    pub runbook_version: String,
    #[serde(rename = "operationID")]
    pub operation_id: Null,
    pub outcome: ArgumentsOutcome,
    pub phase: ArgumentsPhase,
    pub message: Message,
    pub replayed: ConstBool<false>,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

/// What `--version --output json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(title = "nvke-cert-runbook --version"))]
pub struct VersionDocument {
    pub mode: VersionMode,
    pub runbook_version: String,
    /// The git commit built from, or `unknown`.
    pub git_commit: String,
    /// The version of this contract (CLI, files, exit codes).
    pub contract_version: String,
    pub duration_ms: u64,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

/// What `--help --output json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(title = "nvke-cert-runbook --help"))]
pub struct HelpDocument {
    pub mode: HelpMode,
    pub runbook_version: String,
    /// The usage text.
    pub help: String,
    /// The process's exit code (v1.1): a caller that lost the exit status
    /// (a dropped SSH session) still has the answer.
    pub exit_code: u8,
}

impl UsageErrorDocument {
    /// A refused command line (`usage_error`) or an unusable `--root`
    /// (`failed`); the message is bounded here.
    pub fn new(mode: Option<ModeName>, outcome: ArgumentsOutcome, message: &str) -> Self {
        UsageErrorDocument {
            mode,
            runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
            operation_id: Null,
            outcome,
            phase: ArgumentsPhase::Arguments,
            message: Message::bounded(message),
            replayed: ConstBool,
            duration_ms: 0,
            exit_code: 0,
        }
    }
}

impl VersionDocument {
    /// This binary's version document.
    pub fn current() -> Self {
        VersionDocument {
            mode: VersionMode::Version,
            runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
            git_commit: crate::contract::version::GIT_COMMIT.to_string(),
            contract_version: crate::contract::version::CONTRACT_VERSION.to_string(),
            duration_ms: 0,
            exit_code: 0,
        }
    }
}

impl HelpDocument {
    pub fn new(help: String) -> Self {
        HelpDocument {
            mode: HelpMode::Help,
            runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
            help,
            exit_code: 0,
        }
    }
}

/// A document as the JSON value that is printed (keys sorted). Serializing
/// these types cannot fail: every map key is a string and every number is
/// an integer.
pub fn to_json(doc: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(doc).expect("the contract's documents serialize")
}
