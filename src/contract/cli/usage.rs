//! A refused command line: the usage error (exit 2, nothing written), and
//! what is read from the raw arguments when clap itself refuses them.

use crate::contract::ModeName;
use std::ffi::OsString;

/// A usage error: exit 2, nothing written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub message: String,
    /// The mode the caller seemed to ask for, when that much was clear.
    pub mode: Option<ModeName>,
}

pub(super) fn usage(mode: Option<ModeName>, message: impl Into<String>) -> UsageError {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::cli::grammar::Cli;
    use clap::Parser;

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
