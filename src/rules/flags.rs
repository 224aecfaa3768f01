//! Command-line flags as the control-plane components read them (SPEC 4,
//! v1.1: "flags as the component reads them"). Pure.
//!
//! - kube-apiserver, kube-controller-manager and kube-scheduler parse with
//!   spf13/pflag (through cobra): `--name=value`, or `--name value` as two
//!   items for a flag that takes a value; `--` ends the flags; a non-flag
//!   item is a positional argument and parsing goes on (interspersed);
//!   Kubernetes' `WordSepNormalizeFunc` makes `--secure_port` the same flag
//!   as `--secure-port`. Each occurrence sets the flag again: the last wins.
//! - etcd parses with Go's standard `flag` package: `-name` and `--name`
//!   alike, `=value` or the next item, and parsing stops at the first
//!   non-flag item or `--`. The last occurrence wins.
//!
//! We do not know every flag of every component, so whether an unknown
//! `--flag` without `=` takes the next item is guessed the way manifests are
//! written: it does when that item does not start with `-` (a bool flag is
//! written `--flag` or `--flag=true`, never followed by a bare value).

use std::collections::BTreeMap;

/// Which flag library parses the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// spf13/pflag with Kubernetes' word-separator normalization.
    Pflag,
    /// Go's standard `flag` package (etcd).
    GoFlag,
}

/// Why a command line would not start its component (the libraries'
/// words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("bad flag syntax: {0}")]
    BadSyntax(String),
    #[error("flag needs an argument: {0}")]
    NeedsArgument(String),
}

/// The flags of `argv` (without the program name) that `wanted` names
/// (given without dashes), each with its last value. A wanted flag with
/// nothing after it is an error, as in both libraries ("flag needs an
/// argument").
pub fn parse(
    argv: &[&str],
    syntax: Syntax,
    wanted: &[&str],
) -> Result<BTreeMap<String, String>, FlagError> {
    let norm = |n: &str| match syntax {
        Syntax::Pflag => n.replace('_', "-"),
        Syntax::GoFlag => n.to_string(),
    };
    let wanted: Vec<String> = wanted.iter().map(|w| norm(w)).collect();
    let mut found = BTreeMap::new();
    let mut i = 0;
    while i < argv.len() {
        let item = argv[i];
        i += 1;
        if item == "--" {
            break;
        }
        let name_part = match syntax {
            Syntax::Pflag => match item.strip_prefix("--") {
                Some(rest) => rest,
                // A short flag cluster (`-v`) or a positional item: none of
                // the flags we read has a shorthand.
                None => continue,
            },
            Syntax::GoFlag => {
                let Some(rest) = item.strip_prefix('-') else {
                    // The first non-flag item ends Go flag parsing.
                    break;
                };
                if rest.is_empty() {
                    break;
                }
                rest.strip_prefix('-').unwrap_or(rest)
            }
        };
        if name_part.is_empty() || name_part.starts_with('-') || name_part.starts_with('=') {
            // pflag: "bad flag syntax"; the component would not start.
            return Err(FlagError::BadSyntax(item.to_string()));
        }
        let (name, inline) = match name_part.split_once('=') {
            Some((n, v)) => (norm(n), Some(v)),
            None => (norm(name_part), None),
        };
        let is_wanted = wanted.contains(&name);
        let value = match inline {
            Some(v) => Some(v.to_string()),
            None if is_wanted => match argv.get(i) {
                Some(v) => {
                    i += 1;
                    Some(v.to_string())
                }
                None => return Err(FlagError::NeedsArgument(item.to_string())),
            },
            None => {
                // An unknown flag: it takes the next item when that is a
                // bare value (see the module doc).
                if argv.get(i).is_some_and(|v| !v.starts_with('-')) {
                    i += 1;
                }
                None
            }
        };
        if let (true, Some(v)) = (is_wanted, value) {
            found.insert(name, v);
        }
    }
    Ok(found)
}

/// An integer flag value as pflag's `IntVar` reads it (`strconv.ParseInt`
/// with base 0: `6443`, `0x192b`, `0o14453`, `014453`, `0b...`, `_`
/// between digits of a prefixed number).
pub fn parse_int(v: &str) -> Option<i64> {
    let (neg, body) = match v.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let (radix, digits, prefixed) =
        if let Some(d) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, d, true)
        } else if let Some(d) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (8, d, true)
        } else if let Some(d) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, d, true)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..], true)
        } else {
            (10, body, false)
        };
    if digits.is_empty() || digits.trim_start_matches('_').is_empty() || digits.ends_with('_') {
        return None;
    }
    if digits.contains("__") || (!prefixed && digits.contains('_')) {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    let n = i64::from_str_radix(&clean, radix).ok()?;
    Some(if neg { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(argv: &[&str], syntax: Syntax, flag: &str) -> Result<Option<String>, FlagError> {
        parse(argv, syntax, &[flag]).map(|m| m.get(flag).cloned())
    }

    #[test]
    fn pflag_both_forms_and_last_wins() {
        let p = Syntax::Pflag;
        assert_eq!(
            one(&["--secure-port=6444"], p, "secure-port"),
            Ok(Some("6444".into()))
        );
        assert_eq!(
            one(&["--secure-port", "6444"], p, "secure-port"),
            Ok(Some("6444".into()))
        );
        assert_eq!(
            one(
                &["--secure-port=6443", "--v=2", "--secure-port", "6445"],
                p,
                "secure-port"
            ),
            Ok(Some("6445".into()))
        );
        assert_eq!(
            one(&["--secure_port=7000"], p, "secure-port"),
            Ok(Some("7000".into())),
            "WordSepNormalizeFunc"
        );
        // The item after a value-taking flag is its value, whatever it looks like.
        assert_eq!(
            one(&["--secure-port", "--x"], p, "secure-port"),
            Ok(Some("--x".into()))
        );
        assert!(one(&["--secure-port"], p, "secure-port").is_err());
        assert!(one(&["---secure-port=1"], p, "secure-port").is_err());
    }

    #[test]
    fn pflag_positionals_interspersed_and_dash_dash_ends() {
        let p = Syntax::Pflag;
        assert_eq!(
            one(&["pos", "--secure-port=1"], p, "secure-port"),
            Ok(Some("1".into()))
        );
        assert_eq!(one(&["--", "--secure-port=1"], p, "secure-port"), Ok(None));
        // An unknown flag's bare value is not mistaken for our flag.
        assert_eq!(
            one(
                &["--advertise-address", "10.0.0.1", "--secure-port", "2"],
                p,
                "secure-port"
            ),
            Ok(Some("2".into()))
        );
        // A short flag is skipped.
        assert_eq!(
            one(&["-v", "--secure-port=3"], p, "secure-port"),
            Ok(Some("3".into()))
        );
    }

    #[test]
    fn go_flag_single_dash_and_stops_at_first_positional() {
        let g = Syntax::GoFlag;
        let f = "listen-client-urls";
        assert_eq!(one(&["-listen-client-urls=a"], g, f), Ok(Some("a".into())));
        assert_eq!(
            one(&["--listen-client-urls", "b"], g, f),
            Ok(Some("b".into()))
        );
        assert_eq!(
            one(&["--listen-client-urls=a", "-listen-client-urls=c"], g, f),
            Ok(Some("c".into()))
        );
        assert_eq!(one(&["x", "--listen-client-urls=a"], g, f), Ok(None));
        // No word-separator normalization in Go's flag package.
        assert_eq!(one(&["--listen_client_urls=a"], g, f), Ok(None));
    }

    #[test]
    fn ints_as_parseint_base_0() {
        assert_eq!(parse_int("6443"), Some(6443));
        assert_eq!(parse_int("0x192b"), Some(6443));
        assert_eq!(parse_int("0o14453"), Some(6443));
        assert_eq!(parse_int("014453"), Some(6443));
        assert_eq!(parse_int("0b1"), Some(1));
        assert_eq!(parse_int("0x_19_2b"), Some(6443));
        assert_eq!(parse_int("6_443"), None);
        assert_eq!(parse_int(""), None);
        assert_eq!(parse_int("x"), None);
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("-1"), Some(-1));
    }
}
