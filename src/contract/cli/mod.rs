//! The command line of SPEC section 1: clap derive types, and the pure
//! validation that turns them into an [`Invocation`] (or a usage error).

use crate::contract::ModeName;
use crate::rules::clock::{self, Clock};
use crate::rules::opid::OperationId;
use crate::rules::phase::CA_KEYS;
use clap::{Parser, ValueEnum};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component as PathComponent, Path, PathBuf};
use std::time::Duration;

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
const USAGE: &str = "\
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

/// Raw command line. Validation that clap cannot express lives in [`validate`].
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

/// `--help` (and `-h`): clap's long help, wrapped to [`HELP_WIDTH`] columns
/// at spaces (clap's own wrapping needs its `wrap_help` feature, which asks
/// the terminal; this one is the same everywhere).
pub fn help() -> String {
    use clap::CommandFactory;
    let raw = Cli::command().render_long_help().to_string();
    let trimmed: Vec<&str> = raw.lines().map(str::trim_end).collect();
    crate::contract::screen::fit_keeping_indent(&trimmed.join("\n"), HELP_WIDTH)
}

/// The modes `--help` has a page of its own for (SPEC 6 v1.2, issue 28
/// item 3): `--status-only --help`, `--check --help`, and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelpPage {
    /// `--status-only` (the operator view, and the fencing check).
    Status,
    Check,
    /// `--operation-id ID`: a V2 renewal.
    Renew,
    /// `--operation-id ID --recover-expired` (SPEC 11).
    RecoverExpired,
    LegacyV1,
}

/// What one mode's page says besides clap's own texts: which of clap's
/// arguments it shows, its examples and its exit codes. The options' texts
/// are their doc comments above, never copied here.
struct ModePage {
    /// A word only the mode's entry of [`USAGE`] has.
    usage: &'static str,
    /// The mode's options (clap ids), each with its doc comment.
    options: &'static [&'static str],
    /// The global options the mode uses (clap ids), named only.
    globals: &'static [&'static str],
    /// An operator's examples first, then the controller's.
    examples: &'static str,
    /// The exit codes the mode can return, in two lines at most.
    exit_codes: &'static str,
}

/// The global options every mode accepts (whether or not it uses them):
/// a page names those its mode does not use as "also accepted".
const GLOBAL_IDS: &[&str] = &[
    "root",
    "output",
    "log_format",
    "threshold_days",
    "wide",
    "lock_timeout",
    "stop_timeout",
    "health_timeout",
    "command_timeout",
    "probe_timeout",
    "settle",
    "kubeadm",
    "crictl",
    "kubeadm_config",
    "runtime_endpoint",
];

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

impl HelpPage {
    #[cfg(test)]
    const ALL: [HelpPage; 5] = [
        HelpPage::Status,
        HelpPage::Check,
        HelpPage::Renew,
        HelpPage::RecoverExpired,
        HelpPage::LegacyV1,
    ];

    /// The page the command line asks for: the one mode it names
    /// (`--operation-id` alone is a renewal; with a mode flag it is that
    /// mode's), else none (the full page).
    fn of(cli: &Cli) -> Option<HelpPage> {
        let named: Vec<Option<HelpPage>> = [
            (cli.status_only, Some(HelpPage::Status)),
            (cli.check, Some(HelpPage::Check)),
            (cli.legacy_v1, Some(HelpPage::LegacyV1)),
            (cli.recover_expired, Some(HelpPage::RecoverExpired)),
            (cli.version, None),
        ]
        .into_iter()
        .filter_map(|(on, p)| on.then_some(p))
        .collect();
        match named.as_slice() {
            [one] => *one,
            [] if cli.operation_id.is_some() => Some(HelpPage::Renew),
            _ => None,
        }
    }

    fn page(self) -> ModePage {
        match self {
            HelpPage::Status => ModePage {
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
            },
            HelpPage::Check => ModePage {
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
            },
            HelpPage::Renew => ModePage {
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
            },
            HelpPage::RecoverExpired => ModePage {
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
            },
            HelpPage::LegacyV1 => ModePage {
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
            },
        }
    }
}

/// `--help` or `-h`.
fn is_help_flag(a: &OsString) -> bool {
    a == "--help" || a == "-h"
}

/// Whether a command line clap refused asks for help all the same:
/// `--operation-id --help` (clap takes the flag as the missing ID; it is
/// never taken as one).
pub fn help_after_operation_id(args: &[OsString], e: &clap::Error) -> bool {
    e.kind() == clap::error::ErrorKind::InvalidValue
        && args
            .windows(2)
            .skip(1)
            .any(|w| w[0] == "--operation-id" && is_help_flag(&w[1]))
}

/// What `--help` (or `-h`) prints, wherever it is on the command line: the
/// page of the one mode the rest of the line names ([`mode_help`]), else
/// the full page ([`help`]), also when the rest does not parse. Right
/// after `--operation-id` the flag stands for the missing ID: the
/// renewal's page.
pub fn help_for(args: &[OsString]) -> String {
    let mut rest: Vec<OsString> = Vec::with_capacity(args.len());
    for (k, a) in args.iter().enumerate() {
        if k == 0 || !is_help_flag(a) {
            rest.push(a.clone());
        } else if args[k - 1] == "--operation-id" {
            rest.push("ID".into());
        }
    }
    Cli::try_parse_from(&rest)
        .ok()
        .and_then(|cli| HelpPage::of(&cli))
        .map_or_else(help, mode_help)
}

/// One clap argument, by id (a page names only arguments that exist: a
/// unit test renders every page).
fn arg(cmd: &clap::Command, id: &str) -> clap::Arg {
    cmd.get_arguments()
        .find(|a| a.get_id() == id)
        .unwrap_or_else(|| panic!("no argument {id}"))
        .clone()
}

/// `--name`, and its value as `--help` shows it (`<PATH>`), or as the
/// usage lines do (`PATH`, `text|json`) when `brief`.
fn arg_spec(a: &clap::Arg, brief: bool) -> String {
    let long = format!("--{}", a.get_long().unwrap_or_default());
    if !a.get_action().takes_values() {
        return long;
    }
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    let name = a
        .get_value_names()
        .and_then(|n| n.first())
        .map_or_else(|| a.get_id().as_str().to_uppercase(), |n| n.to_string());
    match (brief, values.is_empty()) {
        (true, false) => format!("{long} {}", values.join("|")),
        (true, true) => format!("{long} {name}"),
        (false, _) => format!("{long} <{name}>"),
    }
}

/// An argument's text: its doc comment, with its values and default when
/// clap keeps them apart (`--receipts`).
fn arg_text(a: &clap::Arg) -> String {
    let mut text = a.get_help().map(ToString::to_string).unwrap_or_default();
    let possible = a.get_possible_values();
    let values: Vec<&str> = possible
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name())
        .collect();
    if a.get_action().takes_values() && !values.is_empty() {
        text.push_str(&format!(": {}", values.join(", ")));
    }
    if let Some(d) = a.get_default_values().first() {
        if a.get_action().takes_values() && !text.contains("[default:") {
            text.push_str(&format!(" [default: {}]", d.to_string_lossy()));
        }
    }
    text
}

/// `words` joined by `sep`, wrapped at [`HELP_WIDTH`]: the first line
/// after `first`, the others indented by `indent`.
fn wrap_words(first: &str, words: &[String], sep: &str, indent: usize) -> Vec<String> {
    let mut lines = vec![first.to_string()];
    for (k, w) in words.iter().enumerate() {
        let piece = if k + 1 < words.len() {
            format!("{w}{sep}")
        } else {
            w.clone()
        };
        let cur = lines.last_mut().expect("one line at least");
        // Where the line is only its indent, the word starts there.
        let blank = cur.trim().is_empty();
        let gap = usize::from(!blank && !cur.ends_with(' '));
        if blank || cur.chars().count() + gap + piece.chars().count() <= HELP_WIDTH {
            cur.push_str(&" ".repeat(gap));
            cur.push_str(&piece);
        } else {
            lines.push(format!("{}{piece}", " ".repeat(indent)));
        }
    }
    lines
}

/// The column an option's text starts at on a mode's page.
const OPTION_COLUMN: usize = 24;

/// One mode's page: its usage, its options with their texts, the global
/// options it uses (named), examples (an operator's first), its exit codes
/// and where the full page is; under 40 lines of [`HELP_WIDTH`] columns (a
/// unit test holds every page to it).
pub fn mode_help(page: HelpPage) -> String {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let p = page.page();
    let mut out: Vec<String> = Vec::new();
    // The mode's entry of the usage lines: its first line and those
    // continuing it.
    let mut entries: Vec<Vec<&str>> = Vec::new();
    for line in USAGE.lines() {
        if line.trim_start().starts_with("nvke-cert-runbook") {
            entries.push(vec![line.trim_start()]);
        } else if let Some(e) = entries.last_mut() {
            e.push(line);
        }
    }
    // Every entry of the mode (the status page: the view and the fence).
    let mine: Vec<&Vec<&str>> = entries
        .iter()
        .filter(|e| e.join(" ").contains(p.usage))
        .collect();
    assert!(!mine.is_empty(), "no usage line has {}", p.usage);
    for (i, entry) in mine.iter().enumerate() {
        let lead = if i == 0 { "Usage: " } else { "       " };
        out.push(format!("{lead}{}", entry[0]));
        out.extend(entry[1..].iter().map(|l| l.to_string()));
    }
    out.push(String::new());
    out.push("Options:".into());
    for id in p.options {
        let a = arg(&cmd, id);
        let spec = format!("  {}", arg_spec(&a, false));
        let words: Vec<String> = arg_text(&a)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let first = if spec.chars().count() + 2 <= OPTION_COLUMN {
            format!("{spec:<OPTION_COLUMN$}")
        } else {
            out.push(spec);
            " ".repeat(OPTION_COLUMN)
        };
        out.extend(wrap_words(&first, &words, "", OPTION_COLUMN));
    }
    let brief = |ids: Vec<&str>| -> Vec<String> {
        ids.into_iter()
            .map(|id| arg_spec(&arg(&cmd, id), true))
            .collect()
    };
    let used = brief(
        p.globals
            .iter()
            .copied()
            .filter(|id| !p.options.contains(id))
            .collect(),
    );
    out.extend(wrap_words("Global options used:", &used, ",", 2));
    let others = brief(
        GLOBAL_IDS
            .iter()
            .copied()
            .filter(|id| !p.options.contains(id) && !p.globals.contains(id))
            .collect(),
    );
    if !others.is_empty() {
        out.extend(wrap_words("Also accepted (see --help):", &others, ",", 2));
    }
    out.push(String::new());
    out.extend(p.examples.lines().map(str::to_string));
    out.push(String::new());
    out.extend(p.exit_codes.lines().map(str::to_string));
    out.push("Every option, the files and all exit codes: nvke-cert-runbook --help".into());
    out.join("\n") + "\n"
}

/// Settings every mode shares.
#[derive(Debug, Clone)]
pub struct Global {
    pub root: PathBuf,
    pub output: OutputFormat,
    pub log_format: LogFormat,
    pub threshold_days: u32,
    pub lock_timeout: Duration,
    pub stop_timeout: Duration,
    pub health_timeout: Duration,
    pub command_timeout: Duration,
    /// `--probe-timeout`: the live observation's budget (SPEC 10).
    pub probe_timeout: Duration,
    /// `--settle`: how old the last restart is before postflight's last
    /// check (SPEC 4 step 10).
    pub settle: Duration,
    pub kubeadm: Option<PathBuf>,
    pub crictl: Option<PathBuf>,
    /// Relative to the root (no leading slash).
    pub kubeadm_config: Option<String>,
    /// `--runtime-endpoint`, as given (validated).
    pub runtime_endpoint: Option<String>,
    /// `--deadline`: the controller's activity deadline, and as given.
    pub deadline: Option<(time::OffsetDateTime, String)>,
    pub clock: Clock,
    /// `--wide`: text output in full, not fitted to the terminal.
    pub wide: bool,
    /// Where text goes: its width (None with `--wide`) and colour, read
    /// from the environment and stdout once, at start.
    pub term: crate::contract::screen::Term,
    /// How next steps name the runbook: `argv[0]` when it is a path (a bare
    /// name may not be on the operator's PATH), else the program's name
    /// ([`program_name`]; set by the entry point, which has the arguments).
    pub program: String,
}

/// How next steps name the runbook, from the arguments it was run with.
pub fn program_name(args: &[OsString]) -> String {
    args.first()
        .and_then(|a| a.clone().into_string().ok())
        .filter(|a| a.contains('/'))
        .unwrap_or_else(|| PROGRAM.to_string())
}

/// The program's name, as installed.
pub const PROGRAM: &str = "nvke-cert-runbook";

#[cfg(test)]
impl Global {
    /// The unit tests' options: a root, JSON output, 1 s timeouts, the
    /// fixtures' clock (2026-11-30), no tool or endpoint named.
    pub(crate) fn for_tests(root: &std::path::Path) -> Global {
        Global {
            root: root.to_path_buf(),
            output: OutputFormat::Json,
            log_format: LogFormat::Text,
            threshold_days: 30,
            lock_timeout: Duration::from_secs(1),
            stop_timeout: Duration::from_secs(1),
            health_timeout: Duration::from_secs(1),
            command_timeout: Duration::from_secs(1),
            probe_timeout: Duration::from_secs(1),
            settle: Duration::ZERO,
            kubeadm: None,
            crictl: None,
            kubeadm_config: None,
            runtime_endpoint: None,
            deadline: None,
            clock: crate::rules::clock::Clock::fixed(
                time::macros::datetime!(2026-11-30 00:00:00 UTC),
            ),
            wide: false,
            term: crate::contract::screen::Term {
                width: Some(crate::contract::screen::DEFAULT_WIDTH),
                color: false,
            },
            program: PROGRAM.to_string(),
        }
    }
}

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

#[derive(Debug, Clone)]
pub struct Invocation {
    pub mode: Mode,
    pub global: Global,
}

pub const DEFAULT_THRESHOLD_DAYS: u32 = 30;
pub const DEFAULT_LOCK_TIMEOUT: u64 = 120;
pub const DEFAULT_STOP_TIMEOUT: u64 = 120;
pub const DEFAULT_HEALTH_TIMEOUT: u64 = 300;
pub const DEFAULT_COMMAND_TIMEOUT: u64 = 120;
/// Upper bound for every timeout: an hour.
pub const MAX_TIMEOUT: u64 = 3600;

/// A usage error: exit 2, nothing written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub message: String,
    /// The mode the caller seemed to ask for, when that much was clear.
    pub mode: Option<ModeName>,
}

fn usage(mode: Option<ModeName>, message: impl Into<String>) -> UsageError {
    UsageError {
        message: message.into(),
        mode,
    }
}

/// Whether the raw arguments ask for JSON output (so that even a usage error
/// clap itself reports is one JSON object on stdout).
pub fn wants_json(args: &[OsString]) -> bool {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let Some(a) = a.to_str() else { continue };
        if a == "--" {
            break;
        }
        if a == "--output" {
            if it.next().and_then(|v| v.to_str()) == Some("json") {
                return true;
            }
        } else if a == "--output=json" {
            return true;
        }
    }
    false
}

/// The one-line message of a command line clap refused: its first line,
/// with what its later lines would have said folded in (a similar option:
/// "did you mean --status-only?"; the allowed values of a bad value), since
/// a usage error is one line of text or one JSON message.
pub fn clap_error_message(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |k: ContextKind| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match e.kind() {
        ErrorKind::InvalidValue => {
            // "--output <OUTPUT>": the option's name.
            let arg = text(ContextKind::InvalidArg).unwrap_or_default();
            let arg = arg.split(' ').next().unwrap_or_default();
            let value = text(ContextKind::InvalidValue).unwrap_or_default();
            let mut msg = if value.is_empty() {
                format!("{arg} needs a value")
            } else {
                format!("{arg}: invalid value '{value}'")
            };
            if let Some(ContextValue::Strings(valid)) = e.get(ContextKind::ValidValue) {
                if !valid.is_empty() {
                    msg.push_str(&format!(" (one of: {})", valid.join(", ")));
                }
            }
            if let Some(s) = text(ContextKind::SuggestedValue) {
                msg.push_str(&format!("; did you mean '{s}'?"));
            }
            msg
        }
        ErrorKind::UnknownArgument => {
            let arg = text(ContextKind::InvalidArg).unwrap_or_default();
            let mut msg = format!("unexpected argument '{arg}' found");
            if let Some(s) = text(ContextKind::SuggestedArg) {
                msg.push_str(&format!("; did you mean {s}?"));
            }
            msg
        }
        _ => {
            let msg = e.to_string();
            let first = msg
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("usage error");
            first.trim_start_matches("error: ").to_string()
        }
    }
}

/// A guess at the mode from raw arguments, for usage errors clap reports.
pub fn guess_mode(args: &[OsString]) -> Option<ModeName> {
    let has = |flag: &str| args.iter().any(|a| a.to_str() == Some(flag));
    let modes: Vec<ModeName> = [
        ("--check", ModeName::Check),
        ("--status-only", ModeName::Status),
        ("--legacy-v1", ModeName::LegacyV1),
    ]
    .iter()
    .filter(|(f, _)| has(f))
    .map(|(_, m)| *m)
    .collect();
    match modes.as_slice() {
        [m] => Some(*m),
        [] if args
            .iter()
            .any(|a| a.to_str().is_some_and(|s| s.starts_with("--operation-id"))) =>
        {
            Some(ModeName::Renew)
        }
        _ => None,
    }
}

fn timeout(
    mode: Option<ModeName>,
    name: &str,
    v: Option<i64>,
    default: u64,
    min: u64,
) -> Result<Duration, UsageError> {
    let secs = match v {
        None => default,
        Some(n) if n >= min as i64 && n <= MAX_TIMEOUT as i64 => n as u64,
        Some(n) => {
            return Err(usage(
                mode,
                format!("--{name} {n} is out of range ({min}..={MAX_TIMEOUT} seconds)"),
            ))
        }
    };
    Ok(Duration::from_secs(secs))
}

/// `--settle`'s default (SPEC 4 step 10, v1.2) and its largest value.
pub const DEFAULT_SETTLE: u64 = 5;
const MAX_SETTLE: i64 = 600;

/// `--settle SECS`: 0..=600, default 5.
fn settle(mode: Option<ModeName>, v: Option<i64>) -> Result<Duration, UsageError> {
    match v {
        None => Ok(Duration::from_secs(DEFAULT_SETTLE)),
        Some(n) if (0..=MAX_SETTLE).contains(&n) => Ok(Duration::from_secs(n as u64)),
        Some(n) => Err(usage(
            mode,
            format!("--settle {n} is out of range (0..={MAX_SETTLE} seconds)"),
        )),
    }
}

impl Global {
    /// The time left until `--deadline`, when one was given: the deadline
    /// less this run's clock (`--now` in tests), zero when it has passed;
    /// with the deadline as the caller wrote it.
    pub fn deadline_left(&self) -> Option<(Duration, &str)> {
        self.deadline.as_ref().map(|(at, text)| {
            let left = *at - self.clock.now();
            (
                Duration::try_from(left).unwrap_or(Duration::ZERO),
                text.as_str(),
            )
        })
    }
}

/// `--probe-timeout`'s default: one probe of a component's endpoint.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// A `--runtime-endpoint` (or the kubelet's `containerRuntimeEndpoint`)
/// that can be passed on: not empty, at most 4 KiB, no whitespace or
/// control character.
pub fn valid_endpoint(e: &str) -> bool {
    !e.is_empty() && e.len() <= 4096 && !e.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// True when `p` names the filesystem root (`/`, `//`, `/.`, ...).
/// Whether `p` is the host's root directory however it is spelled (`/`,
/// `//`, `/..`, `/etc/..`, a symlink to `/`): the directory is compared
/// (device and inode, following symlinks), not the string (SPEC 1, v1.1).
pub fn is_host_root(p: &Path) -> bool {
    let lexical = p.has_root()
        && p.components()
            .all(|c| matches!(c, PathComponent::RootDir | PathComponent::CurDir));
    if lexical {
        return true;
    }
    use std::os::unix::fs::MetadataExt;
    #[allow(clippy::disallowed_methods)]
    // stat of --root and / (both followed): is it the host root?
    match (std::fs::metadata(p), std::fs::metadata("/")) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// An absolute path option taken under the root: returned relative to it.
fn node_path_option(mode: Option<ModeName>, name: &str, p: &Path) -> Result<String, UsageError> {
    let s = p
        .to_str()
        .ok_or_else(|| usage(mode, format!("--{name} is not valid UTF-8")))?;
    if !p.is_absolute() {
        return Err(usage(
            mode,
            format!("--{name} {s:?} must be an absolute node path"),
        ));
    }
    if p.components()
        .any(|c| matches!(c, PathComponent::ParentDir))
    {
        return Err(usage(mode, format!("--{name} {s:?} must not contain '..'")));
    }
    let rel = s.trim_start_matches('/').to_string();
    if rel.is_empty() || rel.ends_with('/') {
        return Err(usage(mode, format!("--{name} {s:?} must name a file")));
    }
    Ok(rel)
}

fn host_tool(
    mode: Option<ModeName>,
    name: &str,
    p: &Option<PathBuf>,
) -> Result<Option<PathBuf>, UsageError> {
    match p {
        None => Ok(None),
        Some(p) if p.is_absolute() => Ok(Some(p.clone())),
        Some(p) => Err(usage(
            mode,
            format!(
                "--{name} {:?} must be an absolute path",
                p.display().to_string()
            ),
        )),
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

/// Turn the parsed command line into an invocation, or a usage error.
pub fn validate(cli: Cli) -> Result<Invocation, UsageError> {
    let mode_name = mode_name(&cli)?;
    let m = mode_name;
    let global = global(&cli, m)?;
    let Some(mode_name) = mode_name else {
        return Err(usage(
            None,
            "no mode given: use --operation-id ID, --legacy-v1, --check or --status-only (see --help)",
        ));
    };
    if mode_name == ModeName::Version {
        return Ok(Invocation {
            mode: Mode::Version,
            global,
        });
    }

    let operation_id = mode_options(&cli, m, mode_name)?;
    let mode = mode(&cli, m, mode_name, operation_id)?;
    Ok(Invocation { mode, global })
}

/// The mode the command line asks for (None: none named), after the
/// combinations no mode allows: two modes, `--version` with a mode,
/// `--recover-expired` outside a V2 renewal.
fn mode_name(cli: &Cli) -> Result<Option<ModeName>, UsageError> {
    let mode_flags = [
        (cli.check, "--check", ModeName::Check),
        (cli.status_only, "--status-only", ModeName::Status),
        (cli.legacy_v1, "--legacy-v1", ModeName::LegacyV1),
    ];
    let chosen: Vec<_> = mode_flags.iter().filter(|(on, _, _)| *on).collect();
    if chosen.len() > 1 {
        let names: Vec<_> = chosen.iter().map(|(_, f, _)| *f).collect();
        return Err(usage(
            None,
            format!(
                "{} are mutually exclusive: choose one mode",
                names.join(" and ")
            ),
        ));
    }
    if cli.version && (!chosen.is_empty() || cli.operation_id.is_some() || cli.recover_expired) {
        return Err(usage(None, "--version takes no mode"));
    }
    let mode_name: Option<ModeName> = if cli.version {
        Some(ModeName::Version)
    } else if let Some((_, _, m)) = chosen.first() {
        Some(*m)
    } else if cli.operation_id.is_some() || cli.recover_expired {
        Some(ModeName::Renew)
    } else {
        None
    };
    let m = mode_name;
    if cli.recover_expired {
        if let Some((_, flag, _)) = chosen.first() {
            return Err(usage(
                m,
                format!("--recover-expired does not go with {flag}: it is a renewal (--operation-id ID --recover-expired)"),
            ));
        }
        if cli.force {
            return Err(usage(
                m,
                "--force does not go with --recover-expired: a recovery renews every leaf whatever its expiry",
            ));
        }
        if cli.operation_id.is_none() {
            return Err(usage(m, "--recover-expired needs --operation-id ID"));
        }
    }
    Ok(m)
}

/// The settings every mode shares, checked (`m`: the mode asked for, named
/// in a usage error).
fn global(cli: &Cli, m: Option<ModeName>) -> Result<Global, UsageError> {
    let threshold_days = match cli.threshold_days {
        None => DEFAULT_THRESHOLD_DAYS,
        Some(n) if (7..=90).contains(&n) => n as u32,
        Some(n) => {
            return Err(usage(
                m,
                format!("--threshold-days {n} is out of range (7..=90)"),
            ))
        }
    };
    let root_is_host = is_host_root(&cli.root);
    if !cli.root.is_absolute() {
        return Err(usage(
            m,
            format!(
                "--root {:?} must be an absolute path",
                cli.root.display().to_string()
            ),
        ));
    }
    let clock = match &cli.now {
        None => Clock::real(),
        Some(_) if root_is_host => {
            return Err(usage(
                m,
                "--now is refused when --root is / (it is for tests on a fixture root)",
            ))
        }
        Some(s) => Clock::fixed(
            clock::parse_rfc3339(s, false).map_err(|e| usage(m, format!("--now: {e}")))?,
        ),
    };
    let global = Global {
        root: cli.root.clone(),
        output: cli.output,
        log_format: cli.log_format,
        threshold_days,
        lock_timeout: timeout(m, "lock-timeout", cli.lock_timeout, DEFAULT_LOCK_TIMEOUT, 0)?,
        stop_timeout: timeout(m, "stop-timeout", cli.stop_timeout, DEFAULT_STOP_TIMEOUT, 1)?,
        health_timeout: timeout(
            m,
            "health-timeout",
            cli.health_timeout,
            DEFAULT_HEALTH_TIMEOUT,
            1,
        )?,
        command_timeout: timeout(
            m,
            "command-timeout",
            cli.command_timeout,
            DEFAULT_COMMAND_TIMEOUT,
            1,
        )?,
        probe_timeout: timeout(
            m,
            "probe-timeout",
            cli.probe_timeout,
            DEFAULT_PROBE_TIMEOUT.as_secs(),
            1,
        )?,
        settle: settle(m, cli.settle)?,
        kubeadm: host_tool(m, "kubeadm", &cli.kubeadm)?,
        crictl: host_tool(m, "crictl", &cli.crictl)?,
        kubeadm_config: cli
            .kubeadm_config
            .as_deref()
            .map(|p| node_path_option(m, "kubeadm-config", p))
            .transpose()?,
        runtime_endpoint: match &cli.runtime_endpoint {
            None => None,
            Some(e) if valid_endpoint(e) => Some(e.clone()),
            Some(e) => {
                return Err(usage(
                    m,
                    format!("--runtime-endpoint {e:?} is not a usable endpoint (empty, or with whitespace or control characters)"),
                ))
            }
        },
        deadline: match &cli.deadline {
            None => None,
            Some(d) => Some((
                clock::parse_rfc3339(d, false).map_err(|e| usage(m, format!("--deadline: {e}")))?,
                d.clone(),
            )),
        },
        clock,
        wide: cli.wide,
        term: crate::contract::screen::Term::detect(cli.wide),
        program: PROGRAM.to_string(),
    };
    Ok(global)
}

/// The operation ID, after the options the mode does not take.
fn mode_options(
    cli: &Cli,
    m: Option<ModeName>,
    mode_name: ModeName,
) -> Result<Option<OperationId>, UsageError> {
    let operation_id = cli
        .operation_id
        .as_deref()
        .map(|s| OperationId::parse(s).map_err(|e| usage(m, format!("--operation-id: {e}"))))
        .transpose()?;

    let not_here = |flag: &str| {
        usage(
            m,
            format!("{flag} does not go with {}", mode_flag(mode_name)),
        )
    };
    if cli.fence && mode_name != ModeName::Status {
        return Err(usage(
            m,
            "--fence goes only with --status-only --operation-id ID",
        ));
    }
    if cli.force && mode_name == ModeName::Status {
        return Err(not_here("--force"));
    }
    if !cli.expect_ca_sha256.is_empty() && mode_name != ModeName::Renew {
        return Err(not_here("--expect-ca-sha256"));
    }
    if cli.agent_state.is_some() && mode_name != ModeName::Check {
        return Err(not_here("--agent-state"));
    }
    let operator_view = mode_name == ModeName::Status && !cli.fence;
    if cli.evidence.is_some() && !operator_view {
        return Err(usage(
            m,
            "--evidence goes only with --status-only (not with --fence)",
        ));
    }
    if cli.deadline.is_some() && (operator_view || mode_name == ModeName::Check) {
        return Err(usage(
            m,
            "--deadline goes only with a renewal and --status-only --operation-id ID --fence",
        ));
    }
    if cli.receipts != ReceiptFilter::Recent && !operator_view {
        return Err(usage(
            m,
            "--receipts goes only with --status-only (not with --fence)",
        ));
    }
    if operation_id.is_some() && matches!(mode_name, ModeName::Check | ModeName::LegacyV1) {
        return Err(not_here("--operation-id"));
    }
    Ok(operation_id)
}

/// The mode, its own options parsed.
fn mode(
    cli: &Cli,
    m: Option<ModeName>,
    mode_name: ModeName,
    operation_id: Option<OperationId>,
) -> Result<Mode, UsageError> {
    Ok(match (mode_name, operation_id) {
        (ModeName::Renew, Some(operation_id)) => Mode::Renew {
            operation_id,
            force: cli.force,
            expect_ca_sha256: parse_expect_ca(m, &cli.expect_ca_sha256)?,
            recover_expired: cli.recover_expired,
        },
        (ModeName::Renew, None) => return Err(usage(m, "a V2 renewal needs --operation-id ID")),
        (ModeName::LegacyV1, _) => Mode::LegacyV1 { force: cli.force },
        (ModeName::Check, _) => Mode::Check {
            force: cli.force,
            agent_state: cli
                .agent_state
                .as_deref()
                .map(|p| node_path_option(m, "agent-state", p))
                .transpose()?,
        },
        (ModeName::Status, operation_id) => match (cli.fence, operation_id) {
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
        },
        (ModeName::Version, _) => Mode::Version,
    })
}

fn mode_flag(mode: ModeName) -> &'static str {
    match mode {
        ModeName::Check => "--check",
        ModeName::Status => "--status-only",
        ModeName::LegacyV1 => "--legacy-v1",
        ModeName::Renew | ModeName::Version => "a V2 renewal (--operation-id)",
    }
}

#[cfg(test)]
mod tests {

    /// Next steps name the runbook by the path it was run from, never by a
    /// bare name the operator's PATH may not hold.
    #[test]
    fn next_steps_name_the_program_by_its_path() {
        let name = |a: &[&str]| program_name(&a.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(
            name(&["/usr/local/bin/nvke-cert-runbook", "--check"]),
            "/usr/local/bin/nvke-cert-runbook"
        );
        assert_eq!(name(&["./nvke-cert-runbook"]), "./nvke-cert-runbook");
        assert_eq!(name(&["nvke-cert-runbook"]), PROGRAM);
        assert_eq!(name(&[]), PROGRAM);
    }

    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, UsageError> {
        let mut v = vec!["nvke-cert-runbook"];
        v.extend_from_slice(args);
        let cli = Cli::try_parse_from(v).map_err(|e| usage(None, e.to_string()))?;
        validate(cli)
    }

    #[test]
    fn modes_are_mutually_exclusive_and_required() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["--check", "--status-only"]).is_err());
        assert!(parse(&["--check", "--legacy-v1"]).is_err());
        assert!(parse(&["--legacy-v1", "--operation-id", "a"]).is_err());
        assert!(parse(&["--check", "--operation-id", "a"]).is_err());
        assert!(matches!(
            parse(&["--check"]).unwrap().mode,
            Mode::Check { .. }
        ));
        assert!(matches!(
            parse(&["--operation-id", "op-1"]).unwrap().mode,
            Mode::Renew { .. }
        ));
        assert!(matches!(
            parse(&["--legacy-v1"]).unwrap().mode,
            Mode::LegacyV1 { .. }
        ));
        assert!(matches!(
            parse(&["--status-only", "--operation-id", "x", "--fence"])
                .unwrap()
                .mode,
            Mode::Fence { .. }
        ));
    }

    #[test]
    fn options_only_where_they_belong() {
        assert!(parse(&["--status-only", "--fence"]).is_err());
        assert!(parse(&["--check", "--fence"]).is_err());
        assert!(parse(&["--status-only", "--force"]).is_err());
        assert!(parse(&[
            "--check",
            "--expect-ca-sha256",
            &format!("ca.crt={}", "a".repeat(64))
        ])
        .is_err());
        assert!(parse(&["--status-only", "--agent-state", "/x"]).is_err());
        assert!(parse(&["--check", "--agent-state", "relative/x"]).is_err());
        assert!(parse(&["--check", "--agent-state", "/x/../y"]).is_err());
    }

    #[test]
    fn ranges_and_now() {
        assert!(parse(&["--check", "--threshold-days", "6"]).is_err());
        assert!(parse(&["--check", "--threshold-days", "91"]).is_err());
        assert_eq!(
            parse(&["--check", "--threshold-days", "90"])
                .unwrap()
                .global
                .threshold_days,
            90
        );
        assert!(parse(&["--check", "--lock-timeout", "-1"]).is_err());
        assert!(parse(&["--check", "--lock-timeout", "0"]).is_ok());
        assert!(parse(&["--check", "--stop-timeout", "0"]).is_err());
        assert!(parse(&["--check", "--now", "2026-11-30T00:00:00Z"]).is_err());
        assert!(parse(&["--check", "--root", "//", "--now", "2026-11-30T00:00:00Z"]).is_err());
        for host in ["/..", "/etc/..", "/./", "/etc/../."] {
            assert!(
                parse(&["--check", "--root", host, "--now", "2026-11-30T00:00:00Z"]).is_err(),
                "{host} is the host root"
            );
        }
        let t = tempfile::tempdir().unwrap();
        let link = t.path().join("hostroot");
        std::os::unix::fs::symlink("/", &link).unwrap();
        assert!(parse(&[
            "--check",
            "--root",
            link.to_str().unwrap(),
            "--now",
            "2026-11-30T00:00:00Z"
        ])
        .is_err());
        assert!(parse(&[
            "--check",
            "--root",
            "/tmp/x",
            "--now",
            "2026-11-30T00:00:00Z"
        ])
        .is_ok());
        assert!(parse(&["--check", "--root", "/tmp/x", "--now", "tomorrow"]).is_err());
        assert!(parse(&["--check", "--root", "rel"]).is_err());
        assert!(parse(&["--check", "--kubeadm", "kubeadm"]).is_err());
    }

    #[test]
    fn expect_ca_pairs() {
        let hex = "A".repeat(64);
        let inv = parse(&[
            "--operation-id",
            "op",
            "--expect-ca-sha256",
            &format!("etcd/ca.crt={hex}"),
        ])
        .unwrap();
        let Mode::Renew {
            expect_ca_sha256, ..
        } = inv.mode
        else {
            panic!()
        };
        assert_eq!(expect_ca_sha256["etcd/ca.crt"], "a".repeat(64));
        for bad in [
            "ca.crt",
            "ca.key=00",
            "ca.crt=xyz",
            &format!("sa.pub={hex}"),
            &format!("ca.crt={}", "a".repeat(63)),
        ] {
            assert!(
                parse(&["--operation-id", "op", "--expect-ca-sha256", bad]).is_err(),
                "{bad}"
            );
        }
        let two = [
            format!("ca.crt={}", "a".repeat(64)),
            format!("ca.crt={}", "b".repeat(64)),
        ];
        assert!(parse(&[
            "--operation-id",
            "op",
            "--expect-ca-sha256",
            &two[0],
            "--expect-ca-sha256",
            &two[1]
        ])
        .is_err());
    }

    /// Issue 14: `--help` fits 80 columns and names every exit code of
    /// SPEC 7, the files and the examples.
    #[test]
    fn help_fits_80_columns_with_exit_codes_files_and_examples() {
        let h = help();
        for line in h.lines() {
            assert!(line.chars().count() <= 80, "over 80 columns: {line:?}");
        }
        for code in 0..=5 {
            assert!(
                h.lines().any(|l| l.starts_with(&format!("  {code}  "))),
                "exit code {code} not named:\n{h}"
            );
        }
        for needle in [
            "Exit codes:",
            "/var/lib/nvke/k8s-cert-renewal/",
            "completed/<ID>.json",
            "/etc/kubernetes/nvke-cert-renewal-staging/",
            "/etc/kubernetes/nvke-cert-renewal-manifests/",
            "/etc/kubernetes/manifests/",
            "k8s-cert-renewal-state.json",
            "--status-only --receipts failed",
            "--evidence /root/evidence.tgz",
            "--fence",
            "Modes (choose one):",
            "Status options:",
            "Timeouts (seconds):",
            "Tools:",
        ] {
            assert!(h.contains(needle), "{needle:?} missing:\n{h}");
        }
        // `-h` is the same help.
        let e = Cli::try_parse_from(["x", "-h"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
    }

    /// Issue 28 item 3: every mode's page fits 80 columns in under 40
    /// lines, and ends pointing to the full page.
    #[test]
    fn every_mode_page_fits_80_columns_under_40_lines() {
        for page in HelpPage::ALL {
            let h = mode_help(page);
            for line in h.lines() {
                assert!(
                    line.chars().count() <= HELP_WIDTH,
                    "{page:?}: over 80 columns: {line:?}"
                );
            }
            let n = h.lines().count();
            assert!(n < 40, "{page:?}: {n} lines:\n{h}");
            for needle in [
                "Usage: nvke-cert-runbook",
                "Options:",
                "Examples",
                "Exit codes: ",
            ] {
                assert!(h.contains(needle), "{page:?}: {needle:?} missing:\n{h}");
            }
            let last = h.lines().last().unwrap_or_default();
            assert!(
                last.ends_with("nvke-cert-runbook --help"),
                "{page:?}: {last}"
            );
        }
    }

    /// A value `validate` takes for an option (by its value name).
    fn sample_value(a: &clap::Arg) -> String {
        let name = a
            .get_value_names()
            .and_then(|n| n.first())
            .map_or_else(|| a.get_id().as_str().to_uppercase(), |n| n.to_string());
        match name.as_str() {
            "ID" => "op-2".into(),
            "N" => "30".into(),
            "NAME=HEX" => format!("ca.crt={}", "a".repeat(64)),
            "PATH" => "/x/y".into(),
            "WHICH" => "all".into(),
            "DIR" => "/".into(),
            "OUTPUT" | "LOG_FORMAT" => "json".into(),
            "SECS" => "5".into(),
            "RFC3339" => "2026-12-01T00:00:00Z".into(),
            "URL" => "unix:///run/containerd/containerd.sock".into(),
            other => panic!("no sample value for {other} (--{:?})", a.get_long()),
        }
    }

    /// The options `validate` accepts with a page's mode: each visible
    /// option added to the mode's command lines (the status page: the
    /// operator view, one operation's, and the fencing check).
    fn accepted(page: HelpPage) -> std::collections::BTreeSet<String> {
        use clap::CommandFactory;
        let lines: &[&[&str]] = match page {
            HelpPage::Status => &[
                &["--status-only"],
                &["--status-only", "--operation-id", "op-1"],
                &["--status-only", "--operation-id", "op-1", "--fence"],
            ],
            HelpPage::Check => &[&["--check"]],
            HelpPage::Renew => &[&["--operation-id", "op-1"]],
            HelpPage::RecoverExpired => &[&["--operation-id", "op-1", "--recover-expired"]],
            HelpPage::LegacyV1 => &[&["--legacy-v1"]],
        };
        let cmd = Cli::command();
        let mut ids = std::collections::BTreeSet::new();
        for line in lines {
            for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                let Some(long) = a.get_long() else { continue };
                let long = format!("--{long}");
                let mut args: Vec<String> = line.iter().map(|s| s.to_string()).collect();
                if !args.contains(&long) {
                    args.push(long);
                    if a.get_action().takes_values() {
                        args.push(sample_value(a));
                    }
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    // Accepted, and still this mode (`--status-only` added
                    // to a renewal makes it another).
                    let same = parse(&args).is_ok_and(|inv| {
                        page == match inv.mode {
                            Mode::Status { .. } | Mode::Fence { .. } => HelpPage::Status,
                            Mode::Check { .. } => HelpPage::Check,
                            Mode::Renew {
                                recover_expired: true,
                                ..
                            } => HelpPage::RecoverExpired,
                            Mode::Renew { .. } => HelpPage::Renew,
                            Mode::LegacyV1 { .. } => HelpPage::LegacyV1,
                            Mode::Version => return false,
                        }
                    });
                    if !same {
                        continue;
                    }
                }
                ids.insert(a.get_id().to_string());
            }
        }
        ids
    }

    /// Issue 28 item 3: a mode's page names exactly the options its mode
    /// accepts (`validate` decides; the page cannot disagree with it), the
    /// mode's own with their text, the global ones by name.
    #[test]
    fn every_option_a_mode_accepts_is_on_its_page() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        for page in HelpPage::ALL {
            let p = page.page();
            let shown: std::collections::BTreeSet<String> = p
                .options
                .iter()
                .chain(p.globals)
                .chain(GLOBAL_IDS)
                .map(|s| s.to_string())
                .collect();
            assert_eq!(accepted(page), shown, "{page:?}: accepted vs on its page");
            let h = mode_help(page);
            for id in &shown {
                let long = format!("--{}", arg(&cmd, id).get_long().unwrap());
                let named = h.match_indices(&long).any(|(i, _)| {
                    !h[i + long.len()..]
                        .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                });
                assert!(named, "{page:?}: {long} accepted, not on its page:\n{h}");
            }
            for id in p.options {
                let text = arg(&cmd, id).get_help().unwrap().to_string();
                let first: String = text.split(' ').take(3).collect::<Vec<_>>().join(" ");
                assert!(h.contains(&first), "{page:?}: {id}'s text missing:\n{h}");
            }
        }
    }

    /// Issue 28 item 3: `--help` with one mode's flag, in either order, is
    /// that mode's page; alone, or with two modes, the full page.
    /// `--help` right after `--operation-id` is never taken as the ID.
    #[test]
    fn help_with_a_mode_flag_in_either_order() {
        let h = |args: &[&str]| {
            let mut v = vec![OsString::from("nvke-cert-runbook")];
            v.extend(args.iter().map(OsString::from));
            help_for(&v)
        };
        let full = help();
        assert_eq!(h(&["--help"]), full);
        assert_eq!(h(&["-h", "--output", "json"]), full);
        assert_eq!(h(&["--check", "--status-only", "--help"]), full);
        assert_eq!(h(&["--version", "--help"]), full);
        assert_eq!(h(&["--help", "--bogus"]), full);
        for (args, page) in [
            (&["--status-only", "--help"][..], HelpPage::Status),
            (&["--help", "--status-only"], HelpPage::Status),
            (
                &["--status-only", "--operation-id", "x", "--fence", "-h"],
                HelpPage::Status,
            ),
            (
                &["--status-only", "--operation-id", "--help"],
                HelpPage::Status,
            ),
            (&["--check", "--help"], HelpPage::Check),
            (&["-h", "--check", "--threshold-days", "5"], HelpPage::Check),
            (&["--operation-id", "x", "--help"], HelpPage::Renew),
            (&["--help", "--operation-id", "x"], HelpPage::Renew),
            (&["--operation-id", "--help"], HelpPage::Renew),
            (&["--recover-expired", "--help"], HelpPage::RecoverExpired),
            (
                &["--operation-id", "x", "--recover-expired", "--help"],
                HelpPage::RecoverExpired,
            ),
            (&["--legacy-v1", "--help"], HelpPage::LegacyV1),
            (&["--help", "--legacy-v1"], HelpPage::LegacyV1),
        ] {
            assert_eq!(h(args), mode_help(page), "{args:?}");
        }
        // clap takes the flag after --operation-id for its missing value:
        // that is still a request for help.
        let args: Vec<OsString> = ["x", "--operation-id", "--help"]
            .iter()
            .map(OsString::from)
            .collect();
        let e = Cli::try_parse_from(&args).unwrap_err();
        assert!(help_after_operation_id(&args, &e));
        let args: Vec<OsString> = ["x", "--operation-id"].iter().map(OsString::from).collect();
        let e = Cli::try_parse_from(&args).unwrap_err();
        assert!(!help_after_operation_id(&args, &e));
    }

    /// The exit codes each page names are those the embedded manifest
    /// lists for its mode (the status page: status and the fencing check).
    #[cfg(feature = "schema")]
    #[test]
    fn mode_pages_name_the_exit_codes_of_their_modes() {
        let manifest = crate::contract::schema::manifest_template();
        let codes_of = |names: &[&str]| -> std::collections::BTreeSet<u64> {
            manifest["modes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| names.contains(&m["name"].as_str().unwrap()))
                .flat_map(|m| m["exitCodes"].as_array().unwrap().iter())
                .map(|c| c.as_u64().unwrap())
                .collect()
        };
        for page in HelpPage::ALL {
            let modes: &[&str] = match page {
                HelpPage::Status => &["status", "fence"],
                HelpPage::Check => &["check"],
                HelpPage::Renew | HelpPage::RecoverExpired => &["renew"],
                HelpPage::LegacyV1 => &["legacy-v1"],
            };
            let text = page.page().exit_codes;
            let named: std::collections::BTreeSet<u64> = text
                .split([' ', ','])
                .filter(|w| w.len() == 1)
                .filter_map(|w| w.parse().ok())
                .collect();
            assert_eq!(named, codes_of(modes), "{page:?}: {text}");
        }
    }

    fn clap_message(args: &[&str]) -> String {
        let mut v = vec!["nvke-cert-runbook"];
        v.extend_from_slice(args);
        clap_error_message(&Cli::try_parse_from(v).unwrap_err())
    }

    /// Issue 14: a mistyped option names the one meant, and a bad value
    /// the allowed ones, in the one line a usage error has.
    #[test]
    fn usage_errors_suggest_and_list_allowed_values() {
        for typo in ["--status", "--staus-only", "--statusonly"] {
            assert_eq!(
                clap_message(&[typo]),
                format!("unexpected argument '{typo}' found; did you mean --status-only?")
            );
        }
        assert_eq!(
            clap_message(&["--check", "--xyzzy"]),
            "unexpected argument '--xyzzy' found"
        );
        assert_eq!(
            clap_message(&["--check", "--output", "yaml"]),
            "--output: invalid value 'yaml' (one of: text, json)"
        );
        assert_eq!(
            clap_message(&["--check", "--log-format=jsn"]),
            "--log-format: invalid value 'jsn' (one of: text, json); did you mean 'json'?"
        );
        assert_eq!(
            clap_message(&["--status-only", "--receipts", "bogus"]),
            "--receipts: invalid value 'bogus' (one of: recent, all, failed)"
        );
        assert_eq!(
            clap_message(&["--check", "--output"]),
            "--output needs a value (one of: text, json)"
        );
        // A value with no fixed list has no empty one.
        assert_eq!(
            clap_message(&["--operation-id"]),
            "--operation-id needs a value"
        );
    }

    #[test]
    fn json_is_detected_before_parsing() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(wants_json(&a(&["x", "--bogus", "--output", "json"])));
        assert!(wants_json(&a(&["x", "--output=json"])));
        assert!(!wants_json(&a(&["x", "--output", "text"])));
        assert_eq!(
            guess_mode(&a(&["x", "--check", "--bogus"])),
            Some(ModeName::Check)
        );
    }
}
