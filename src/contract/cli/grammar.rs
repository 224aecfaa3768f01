//! The command line as clap reads it (SPEC 1): one flat command whose
//! flags the modes share out, each flag's doc comment the text every help
//! page shows; the usage lines and what the full page says after the
//! options. What each mode makes of its flags is in its own file.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// Which receipts `--status-only` lists (`--receipts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReceiptFilter {
    /// The newest 20 (SPEC 6), plus the one asked about.
    #[default]
    Recent,
    /// Every receipt, newest first.
    All,
    /// Every receipt not a success, malformed ones included.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}
/// The usage lines of `--help` (SPEC 1), each within 80 columns.
pub(super) const USAGE: &str = "\
nvke-cert-runbook [GLOBAL] --operation-id ID [--force]
           [--threshold-days N] [--expect-ca-sha256 NAME=HEX]...
       nvke-cert-runbook [GLOBAL] --operation-id ID --recover-expired
           [--kubeadm-config PATH] [--expect-ca-sha256 NAME=HEX]...
       nvke-cert-runbook [GLOBAL] --legacy-v1 [--force] [--threshold-days N]
       nvke-cert-runbook [GLOBAL] --check [--force] [--threshold-days N]
           [--agent-state PATH] [--wide]
       nvke-cert-runbook [GLOBAL] --status-only [--operation-id ID]
           [--evidence PATH] [--receipts recent|all|failed] [--wide]
       nvke-cert-runbook [GLOBAL] --status-only --operation-id ID --fence
           [--deadline RFC3339]
       nvke-cert-runbook --version | --help";

/// What `--help` says after the options: the exit codes of SPEC 7, the
/// files, and examples (each line within 80 columns; a unit test holds it).
const AFTER_HELP: &str = "\
Exit codes:
  0  renewed or unchanged (or a replayed success); status: confirmed, or a
     clean node; check: decided
  1  failed, cancelled or refused, all four manifests active; status:
     unconfirmed or not clean; check: failed
  2  usage error; nothing written
  3  lock not acquired in time; nothing written
  4  a manifest is not active (a pod is down on this node): an operator must
     act
  5  replay of an abandoned or superseded receipt: this attempt was fenced;
     nothing done

Files (under --root):
  /var/lib/nvke/k8s-cert-renewal/          state dir (0700, root)
      lock  owner  phase                   the flock, its holder, the phase
      completed/<ID>.json                  receipts (never changed, removed)
      log/<ID>.log                         per-operation logs
      backup/<ID>/  backup-v1/<STARTED>/   backups of pki/ and kubeconfigs
  /etc/kubernetes/manifests/               the four static pod manifests
  /etc/kubernetes/nvke-cert-renewal-staging/     the runbook's staging dir
  /etc/kubernetes/nvke-cert-renewal-manifests/   the node agent's (read only)
  /var/lib/nvke/node-agent/k8s-cert-renewal-state.json   node agent state

Examples:
  nvke-cert-runbook --operation-id cycle-2026-12-01   renew under an ID
  nvke-cert-runbook --check                            read-only preflight
  nvke-cert-runbook --status-only                      the node at a glance
  nvke-cert-runbook --status-only --operation-id cycle-2026-12-01 --fence
                                   confirm a failed operation's termination
  nvke-cert-runbook --status-only --evidence /root/evidence.tgz
                                   also write the evidence bundle
  nvke-cert-runbook --status-only --receipts failed
                                   list every receipt that is not a success
  nvke-cert-runbook --operation-id recover-1@cp-1 --recover-expired \\
      --kubeadm-config /root/kubeadm-config.yaml
                                   renew a node whose certificates expired";

/// Raw command line. Validation that clap cannot express lives in
/// [`validate`](super::validate).
#[derive(Debug, Parser)]
#[command(
    name = "nvke-cert-runbook",
    about = "Renew the kubeadm leaf certificates of this control-plane node and \
             restart its static pods one at a time.",
    disable_version_flag = true,
    disable_help_flag = true,
    override_usage = USAGE,
    after_help = AFTER_HELP,
    max_term_width = HELP_WIDTH
)]
pub struct Cli {
    /// Renew (V2) under this operation ID; with --status-only: the operation
    /// asked about.
    #[arg(long, value_name = "ID", help_heading = "Modes (choose one)")]
    pub operation_id: Option<String>,
    /// Renew the V1-compatible way (legacy five-line phase file, no
    /// receipts).
    #[arg(long, help_heading = "Modes (choose one)")]
    pub legacy_v1: bool,
    /// Read-only preflight: report the state, decide renew, unchanged or
    /// failed.
    #[arg(long, help_heading = "Modes (choose one)")]
    pub check: bool,
    /// Report the node's renewal state (read-only unless --fence).
    #[arg(long, help_heading = "Modes (choose one)")]
    pub status_only: bool,
    /// Print the version, git commit and contract version.
    #[arg(long, help_heading = "Modes (choose one)")]
    pub version: bool,
    /// Print this help.
    #[arg(short = 'h', long, action = clap::ArgAction::HelpLong, help_heading = "Modes (choose one)")]
    pub help: Option<bool>,
    /// With --operation-id: renew a node whose leaf certificates have
    /// already expired, without the health gate before (SPEC 11); an
    /// operator's path.
    #[arg(long, help_heading = "Renew and check options")]
    pub recover_expired: bool,
    /// Renew regardless of expiry (renew, --legacy-v1, --check).
    #[arg(long, help_heading = "Renew and check options")]
    pub force: bool,
    /// A leaf expiring within N days needs renewal (7..=90) [default: 30].
    #[arg(long, value_name = "N", help_heading = "Renew and check options")]
    pub threshold_days: Option<i64>,
    /// Renew only: the sha256 a CA must have; NAME is ca.crt, etcd/ca.crt or
    /// front-proxy-ca.crt (repeatable).
    #[arg(
        long = "expect-ca-sha256",
        value_name = "NAME=HEX",
        help_heading = "Renew and check options"
    )]
    pub expect_ca_sha256: Vec<String>,
    /// --check only: the node agent's state file [default:
    /// /var/lib/nvke/node-agent/k8s-cert-renewal-state.json].
    #[arg(long, value_name = "PATH", help_heading = "Renew and check options")]
    pub agent_state: Option<PathBuf>,
    /// With --operation-id: the controller's termination check; abandons an
    /// operation that never finished.
    #[arg(long, help_heading = "Status options")]
    pub fence: bool,
    /// Also write the sanitized evidence bundle (gzipped tar, mode 0600,
    /// never replacing a file) to PATH, a node path under --root.
    #[arg(long, value_name = "PATH", help_heading = "Status options")]
    pub evidence: Option<PathBuf>,
    /// Which receipts to list.
    #[arg(
        long,
        value_enum,
        value_name = "WHICH",
        default_value = "recent",
        help_heading = "Status options"
    )]
    pub receipts: ReceiptFilter,
    /// Text output in full: every certificate and receipt, lines not fitted
    /// to the terminal (status and check).
    #[arg(long, help_heading = "Status options")]
    pub wide: bool,
    /// Every node path, and every path option, is taken under DIR.
    #[arg(long, value_name = "DIR", default_value = "/", help_heading = "Global")]
    pub root: PathBuf,
    /// json: exactly one JSON object on stdout, usage errors included.
    #[arg(long, value_enum, default_value = "text", help_heading = "Global")]
    pub output: OutputFormat,
    /// The logs on stderr (and in the operation's log file).
    #[arg(long, value_enum, default_value = "text", help_heading = "Global")]
    pub log_format: LogFormat,
    /// Fix "now" (RFC 3339) for tests; refused when --root is /.
    #[arg(long, hide = true, value_name = "RFC3339")]
    pub now: Option<String>,
    /// How long to wait for the renewal lock (0..=3600) [default: 120].
    #[arg(long, value_name = "SECS", help_heading = "Timeouts (seconds)")]
    pub lock_timeout: Option<i64>,
    /// How long an old container has to stop (1..=3600) [default: 120].
    #[arg(long, value_name = "SECS", help_heading = "Timeouts (seconds)")]
    pub stop_timeout: Option<i64>,
    /// How long a new container and the health gate have to pass (1..=3600)
    /// [default: 300].
    #[arg(long, value_name = "SECS", help_heading = "Timeouts (seconds)")]
    pub health_timeout: Option<i64>,
    /// How long any one subprocess may run (1..=3600) [default: 120].
    #[arg(long, value_name = "SECS", help_heading = "Timeouts (seconds)")]
    pub command_timeout: Option<i64>,
    /// Check and status: how long the look at the live node (runtime,
    /// health endpoints, served certificates) may take as a whole
    /// (1..=3600) [default: 3].
    #[arg(long, value_name = "SECS", help_heading = "Timeouts (seconds)")]
    pub probe_timeout: Option<i64>,
    /// Renew: postflight waits until the last restart is this old, then
    /// checks every restarted component still runs the container its
    /// restart started (0..=600) [default: 5].
    #[arg(long, value_name = "SECS", help_heading = "Timeouts (seconds)")]
    pub settle: Option<i64>,
    /// Renew and --fence: the controller's deadline (RFC 3339); nothing
    /// waits past it; a renewal that starts after it records `cancelled`.
    #[arg(long, value_name = "RFC3339", help_heading = "Timeouts (seconds)")]
    pub deadline: Option<String>,
    /// kubeadm to run: an absolute host path [default: looked up on the
    /// fixed PATH].
    #[arg(long, value_name = "PATH", help_heading = "Tools")]
    pub kubeadm: Option<PathBuf>,
    /// crictl to run: an absolute host path [default: looked up on the fixed
    /// PATH].
    #[arg(long, value_name = "PATH", help_heading = "Tools")]
    pub crictl: Option<PathBuf>,
    /// Passed to `kubeadm certs renew all --config` (a node path, under
    /// --root).
    #[arg(long, value_name = "PATH", help_heading = "Tools")]
    pub kubeadm_config: Option<PathBuf>,
    /// Passed to every crictl call as --runtime-endpoint [default: the
    /// kubelet's endpoint].
    #[arg(long, value_name = "URL", help_heading = "Tools")]
    pub runtime_endpoint: Option<String>,
}

/// The width `--help` is laid out for, whatever the terminal.
pub const HELP_WIDTH: usize = 80;
