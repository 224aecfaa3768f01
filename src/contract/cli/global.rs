//! The settings every mode shares ([`Global`]), read from the command line
//! and checked: the root, the output, the timeouts, the tools, the clock.

use super::grammar::{Cli, LogFormat, OutputFormat};
use super::usage::{usage, UsageError};
use crate::contract::ModeName;
use crate::rules::clock::{self, Clock};
use std::ffi::OsString;
use std::path::{Component as PathComponent, Path, PathBuf};
use std::time::Duration;

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
pub const DEFAULT_THRESHOLD_DAYS: u32 = 30;
pub const DEFAULT_LOCK_TIMEOUT: u64 = 120;
pub const DEFAULT_STOP_TIMEOUT: u64 = 120;
pub const DEFAULT_HEALTH_TIMEOUT: u64 = 300;
pub const DEFAULT_COMMAND_TIMEOUT: u64 = 120;
/// Upper bound for every timeout: an hour.
pub const MAX_TIMEOUT: u64 = 3600;

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
pub(super) fn node_path_option(
    mode: Option<ModeName>,
    name: &str,
    p: &Path,
) -> Result<String, UsageError> {
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
/// The settings every mode shares, checked (`m`: the mode asked for, named
/// in a usage error).
pub(super) fn read(cli: &Cli, m: Option<ModeName>) -> Result<Global, UsageError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
