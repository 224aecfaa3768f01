//! Which page `--help` prints: the page of the one mode the command line
//! names, else the full page.

use super::grammar::Cli;
use super::page::{self, help, ModePage};
use super::{check, renew, status};
use clap::Parser;
use std::ffi::OsString;

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

impl HelpPage {
    #[cfg(test)]
    pub(super) const ALL: [HelpPage; 5] = [
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

    /// The page's texts, kept beside its mode's grammar.
    pub(super) fn page(self) -> ModePage {
        match self {
            HelpPage::Status => status::PAGE,
            HelpPage::Check => check::PAGE,
            HelpPage::Renew => renew::PAGE,
            HelpPage::RecoverExpired => renew::RECOVER_EXPIRED_PAGE,
            HelpPage::LegacyV1 => renew::LEGACY_V1_PAGE,
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

/// One mode's page (SPEC 6 v1.2), laid out from the texts kept beside
/// its mode's grammar.
pub fn mode_help(page: HelpPage) -> String {
    page::mode_page(&page.page())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::cli::grammar::HELP_WIDTH;

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
}
