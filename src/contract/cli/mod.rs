//! The command line of SPEC section 1: clap derive types, and the pure
//! validation that turns them into an [`Invocation`] (or a usage error).
//!
//! One file per mode holds what the mode makes of its flags beside its
//! help page (`renew`, `check`, `status`); below them the grammar clap
//! reads (`grammar`), the settings every mode shares (`global`), the modes
//! as values (`mode`), usage errors (`usage`) and the layout of a page
//! (`page`); above them which page `--help` prints (`help`) and, here,
//! [`validate`].

mod check;
mod global;
mod grammar;
mod help;
mod mode;
mod page;
mod renew;
mod status;
mod usage;

pub use global::{
    is_host_root, program_name, valid_endpoint, Global, DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_HEALTH_TIMEOUT, DEFAULT_LOCK_TIMEOUT, DEFAULT_PROBE_TIMEOUT, DEFAULT_SETTLE,
    DEFAULT_STOP_TIMEOUT, DEFAULT_THRESHOLD_DAYS, MAX_TIMEOUT, PROGRAM,
};
pub use grammar::{Cli, LogFormat, OutputFormat, ReceiptFilter, HELP_WIDTH};
pub use help::{help_after_operation_id, help_for, mode_help, HelpPage};
pub use mode::Mode;
pub use page::help;
pub use renew::{parse_expect_ca, Request};
pub use usage::{clap_error_message, guess_mode, wants_json, UsageError};

use crate::contract::ModeName;
use crate::rules::opid::OperationId;
use usage::usage;

#[derive(Debug, Clone)]
pub struct Invocation {
    pub mode: Mode,
    pub global: Global,
}

/// Turn the parsed command line into an invocation, or a usage error.
pub fn validate(cli: Cli) -> Result<Invocation, UsageError> {
    let mode_name = mode_name(&cli)?;
    let m = mode_name;
    let global = global::read(&cli, m)?;
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
/// The mode, its own options parsed (each mode's in its own file).
fn mode(
    cli: &Cli,
    m: Option<ModeName>,
    mode_name: ModeName,
    operation_id: Option<OperationId>,
) -> Result<Mode, UsageError> {
    match mode_name {
        ModeName::Renew => renew::mode(cli, m, operation_id),
        ModeName::LegacyV1 => Ok(renew::legacy_mode(cli)),
        ModeName::Check => check::mode(cli, m),
        ModeName::Status => status::mode(cli, m, operation_id),
        ModeName::Version => Ok(Mode::Version),
    }
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
    use super::*;
    use clap::Parser;
    use help::HelpPage;
    use page::{arg, GLOBAL_IDS};

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
}
