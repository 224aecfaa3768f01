//! A renewal: `--operation-id ID` (V2), `--operation-id ID
//! --recover-expired` (SPEC 11) and `--legacy-v1`; the [`Request`] the
//! renewal driver takes, and the three help pages.

use super::grammar::Cli;
use super::mode::Mode;
use super::page::ModePage;
use super::usage::{usage, UsageError};
use crate::contract::ModeName;
use crate::rules::opid::OperationId;
use crate::rules::phase::CA_KEYS;
use std::collections::BTreeMap;

/// The globals a renewal uses (V2, recovery and legacy alike; a page names
/// one that is among its options there only).
const RENEW_GLOBALS: &[&str] = &[
    "root",
    "output",
    "log_format",
    "lock_timeout",
    "stop_timeout",
    "health_timeout",
    "command_timeout",
    "settle",
    "kubeadm",
    "crictl",
    "kubeadm_config",
    "runtime_endpoint",
];

/// The exit codes of a renewal.
const RENEW_EXIT_CODES: &str = "\
Exit codes: 0 renewed or unchanged; 1 failed or refused, manifests in place;
  2 usage error; 3 lock held; 4 a pod is down: an operator must act; 5 fenced";

/// `--operation-id ID --help`.
pub(super) const PAGE: ModePage = ModePage {
    usage: "--operation-id ID [--force]",
    options: &[
        "operation_id",
        "force",
        "threshold_days",
        "expect_ca_sha256",
        "deadline",
    ],
    globals: RENEW_GLOBALS,
    examples: "\
Examples (an operator's first, then the controller's):
  nvke-cert-runbook --check                  first: would it renew, and why
  nvke-cert-runbook --operation-id manual-2026-12-01       renew by hand
  nvke-cert-runbook --operation-id manual-2026-12-01 --force
                                   renew whatever the expiry
  nvke-cert-runbook --output json --operation-id cycle-2026-12-01 \\
      --deadline 2026-12-01T10:00:00Z --expect-ca-sha256 ca.crt=HEX
                                   the controller's renewal",
    exit_codes: RENEW_EXIT_CODES,
};

/// `--recover-expired --help`.
pub(super) const RECOVER_EXPIRED_PAGE: ModePage = ModePage {
    usage: "--recover-expired",
    options: &[
        "recover_expired",
        "operation_id",
        "kubeadm_config",
        "expect_ca_sha256",
        "deadline",
    ],
    globals: RENEW_GLOBALS,
    examples: "\
Examples (an operator's path: the controller never takes it):
  nvke-cert-runbook --operation-id recover-1@cp-1 --recover-expired \\
      --kubeadm-config /root/kubeadm-config.yaml
                                   renew a node whose certificates expired
  nvke-cert-runbook --status-only  what is left to do on this node
  nvke-cert-runbook --check        on every control-plane node, once each one
                                   whose certificates expired is recovered",
    exit_codes: RENEW_EXIT_CODES,
};

/// `--legacy-v1 --help`.
pub(super) const LEGACY_V1_PAGE: ModePage = ModePage {
    usage: "--legacy-v1",
    options: &["legacy_v1", "force", "threshold_days", "deadline"],
    globals: RENEW_GLOBALS,
    examples: "\
Examples (an operator's first, then the controller's):
  nvke-cert-runbook --legacy-v1              renew the V1-compatible way
  nvke-cert-runbook --legacy-v1 --force      whatever the expiry
  nvke-cert-runbook --output json --legacy-v1    as a V1 controller runs it",
    exit_codes: "\
Exit codes: 0 renewed or unchanged; 1 failed or refused, manifests in place;
  2 usage error; 3 lock held; 4 a pod is down: an operator must act",
};

/// The renewal asked for (`Mode::Renew`, `Mode::LegacyV1`), as the
/// renewal driver (`modes::runbook::run`) takes it.
#[derive(Debug, Clone)]
pub enum Request {
    /// `--operation-id ID`: a receipt for every outcome.
    V2 {
        id: OperationId,
        force: bool,
        /// CA key (`ca.crt`, ...) to the lowercase hex it must have.
        expect_ca: BTreeMap<String, String>,
        /// `--recover-expired` (SPEC 11): the recovery's table of steps.
        recovery: bool,
    },
    /// `--legacy-v1`: no receipts.
    Legacy { force: bool },
}

impl Request {
    /// The operation ID of a V2 renewal.
    pub fn id(&self) -> Option<&OperationId> {
        match self {
            Request::V2 { id, .. } => Some(id),
            Request::Legacy { .. } => None,
        }
    }

    pub(crate) fn force(&self) -> bool {
        match self {
            Request::V2 { force, .. } | Request::Legacy { force } => *force,
        }
    }

    /// `--recover-expired` was asked for (SPEC 11).
    pub(crate) fn recovery(&self) -> bool {
        matches!(self, Request::V2 { recovery: true, .. })
    }

    pub(crate) fn mode(&self) -> crate::contract::RenewMode {
        match self {
            Request::V2 { .. } => crate::contract::RenewMode::Renew,
            Request::Legacy { .. } => crate::contract::RenewMode::LegacyV1,
        }
    }

    /// The mode the lock owner file records.
    pub(crate) fn owner_mode(&self) -> crate::contract::OwnerMode {
        match self {
            Request::V2 { .. } => crate::contract::OwnerMode::Renew,
            Request::Legacy { .. } => crate::contract::OwnerMode::LegacyV1,
        }
    }
}
/// Parse `NAME=HEX` pairs into a map; HEX is normalized to lowercase.
pub fn parse_expect_ca(
    mode: Option<ModeName>,
    pairs: &[String],
) -> Result<BTreeMap<String, String>, UsageError> {
    let mut map = BTreeMap::new();
    for pair in pairs {
        let Some((name, hex)) = pair.split_once('=') else {
            return Err(usage(
                mode,
                format!("--expect-ca-sha256 {pair:?} is not NAME=HEX"),
            ));
        };
        if !CA_KEYS.contains(&name) {
            return Err(usage(
                mode,
                format!("--expect-ca-sha256: unknown CA {name:?} (one of ca.crt, etcd/ca.crt, front-proxy-ca.crt)"),
            ));
        }
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(usage(
                mode,
                format!("--expect-ca-sha256 {name}: {hex:?} is not 64 hex digits"),
            ));
        }
        let hex = hex.to_ascii_lowercase();
        if let Some(prev) = map.insert(name.to_string(), hex.clone()) {
            if prev != hex {
                return Err(usage(
                    mode,
                    format!("--expect-ca-sha256 {name} given twice with different values"),
                ));
            }
        }
    }
    Ok(map)
}

/// `--operation-id ID`: a V2 renewal, its expected CAs parsed.
pub(super) fn mode(
    cli: &Cli,
    m: Option<ModeName>,
    operation_id: Option<OperationId>,
) -> Result<Mode, UsageError> {
    match operation_id {
        Some(operation_id) => Ok(Mode::Renew {
            operation_id,
            force: cli.force,
            expect_ca_sha256: parse_expect_ca(m, &cli.expect_ca_sha256)?,
            recover_expired: cli.recover_expired,
        }),
        None => Err(usage(m, "a V2 renewal needs --operation-id ID")),
    }
}

/// `--legacy-v1`.
pub(super) fn legacy_mode(cli: &Cli) -> Mode {
    Mode::LegacyV1 { force: cli.force }
}
