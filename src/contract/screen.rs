//! Text for people on a terminal (SPEC 7, issue "The 3 a.m. view"): every
//! line within the terminal's width (`COLUMNS`, else the tty's, else 80;
//! `--wide`: no limit), long lines wrapped at words with their column kept
//! (never cut), commands wrapped at arguments with shell continuations so a
//! wrapped command still pastes, and colour only on a tty without
//! `NO_COLOR`.

use crate::contract::Severity;
use std::io::IsTerminal;

/// The width when nothing says otherwise.
pub const DEFAULT_WIDTH: usize = 80;
/// `COLUMNS` outside this range is ignored (a typo, or a pipe's 0).
const WIDTH_RANGE: std::ops::RangeInclusive<usize> = 40..=1000;

/// Where text output goes: its width (None: `--wide`) and whether to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    pub width: Option<usize>,
    pub color: bool,
}

impl Term {
    /// From the environment and stdout: `COLUMNS`, else the tty's width,
    /// else 80; colour when stdout is a tty, `NO_COLOR` is unset or empty
    /// (no-color.org) and `TERM` is not `dumb`.
    pub fn detect(wide: bool) -> Term {
        let stdout = std::io::stdout();
        let tty = stdout.is_terminal();
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let width = env("COLUMNS")
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|w| WIDTH_RANGE.contains(w))
            .or_else(|| {
                terminal_size::terminal_size_of(&stdout)
                    .map(|(w, _)| w.0 as usize)
                    .filter(|w| WIDTH_RANGE.contains(w))
            })
            .unwrap_or(DEFAULT_WIDTH);
        Term {
            width: (!wide).then_some(width),
            color: tty && env("NO_COLOR").is_none() && env("TERM").as_deref() != Some("dumb"),
        }
    }

    /// The text fitted to the width, and the verdict lines (those starting
    /// with `headline_prefix`) coloured by severity when colour is on.
    pub fn render(&self, text: &str, headline_prefix: &str, severity: Severity) -> String {
        let fitted = fit(text, self.width);
        if !self.color {
            return fitted;
        }
        let code = match severity {
            Severity::Clean => "32",
            Severity::NotClean => "33",
            Severity::ActionNeeded => "1;31",
            Severity::InProgress => "1;36",
        };
        fitted
            .lines()
            .map(|l| {
                if l.starts_with(headline_prefix) {
                    format!("\x1b[{code}m{l}\x1b[0m\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    }
}

/// Every line of `text` within `width` characters (None: unchanged).
pub fn fit(text: &str, width: Option<usize>) -> String {
    fit_with(text, width, false)
}

/// As [`fit`], every continuation at its line's own indentation (prose
/// such as `--help`, where a value column means nothing).
pub fn fit_keeping_indent(text: &str, width: usize) -> String {
    fit_with(text, Some(width), true)
}

fn fit_with(text: &str, width: Option<usize>, keep_indent: bool) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        for l in wrap_line(line, width, keep_indent) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Where a wrapped line continues: under the value of a `KEY  value` row,
/// under the text of a `- item`, else two past the line's indent; never
/// more than half the width.
fn continuation_indent(line: &str, width: usize) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let lead = chars.iter().take_while(|c| **c == ' ').count();
    let digits = chars[lead..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let indent = if chars[lead..].starts_with(&['-', ' ']) {
        lead + 2
    } else if digits > 0 && chars[lead + digits..].starts_with(&['.', ' ']) {
        lead + digits + 2
    } else {
        // A column gap (two or more spaces after text) marks a column: the
        // last one in the line's first half is where its text continues.
        let mut found = None;
        let mut k = lead + 1;
        while k + 1 < chars.len() && k < width / 2 {
            if chars[k] == ' ' && chars[k + 1] == ' ' {
                let mut e = k;
                while e < chars.len() && chars[e] == ' ' {
                    e += 1;
                }
                if e <= width / 2 {
                    found = Some(e);
                }
                k = e;
            } else {
                k += 1;
            }
        }
        found.unwrap_or(lead + 2)
    };
    indent.min(width / 2)
}

fn wrap_line(line: &str, width: usize, keep_indent: bool) -> Vec<String> {
    // A coloured verdict line was fitted before it was coloured (escaped
    // text never carries ESC: only the runbook's own colour does).
    if line.chars().count() <= width || line.contains('\x1b') {
        return vec![line.to_string()];
    }
    // A command's continuation stays with its last word.
    if let Some(body) = line.strip_suffix(" \\") {
        let mut out = wrap_line(body, width.saturating_sub(2).max(1), keep_indent);
        if let Some(last) = out.last_mut() {
            last.push_str(" \\");
        }
        return out;
    }
    let indent = if keep_indent {
        line.chars().take_while(|c| *c == ' ').count()
    } else {
        continuation_indent(line, width)
    };
    let mut out = Vec::new();
    let mut rest: Vec<char> = line.chars().collect();
    let mut floor = indent.min(rest.iter().take_while(|c| **c == ' ').count());
    loop {
        if rest.len() <= width {
            out.push(rest.iter().collect::<String>());
            break;
        }
        // The last space at or before the width, past the line's indent;
        // else the first one after it: a word longer than the width (a
        // 200-character operation ID) is never broken, it may be pasted.
        let cut = (floor + 1..=width)
            .rev()
            .find(|&k| rest[k] == ' ')
            .or_else(|| (width + 1..rest.len()).find(|&k| rest[k] == ' '));
        let (head, tail) = match cut {
            Some(k) => (&rest[..k], &rest[k..]),
            None => {
                out.push(rest.iter().collect::<String>());
                break;
            }
        };
        out.push(head.iter().collect::<String>().trim_end().to_string());
        let tail: Vec<char> = tail.iter().copied().skip_while(|c| *c == ' ').collect();
        if tail.is_empty() {
            break;
        }
        // A word too long for the column (an operation ID, a path) starts
        // further left rather than being broken: it may be pasted.
        let word = tail.iter().take_while(|c| **c != ' ').count();
        let at = if indent + word <= width {
            indent
        } else {
            width.saturating_sub(word).min(2)
        };
        rest = std::iter::repeat_n(' ', at).chain(tail).collect();
        floor = at;
    }
    out
}

/// A word as a shell reads it: quoted when it holds anything but
/// `A-Za-z0-9` and `-_./:=@,+%`.
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A command line of `words` (already quoted for the shell), indented,
/// within `width` by breaking between words with ` \` continuations:
/// pasted, it is still one command.
pub fn command_lines(words: &[String], indent: usize, width: Option<usize>) -> Vec<String> {
    let pad = " ".repeat(indent);
    let Some(width) = width else {
        return vec![format!("{pad}{}", words.join(" "))];
    };
    let mut lines = Vec::new();
    let mut cur = pad.clone();
    for (k, w) in words.iter().enumerate() {
        let fresh = cur.trim().is_empty();
        // Room for " word", and for a trailing " \" unless it is the last.
        let tail = if k + 1 == words.len() { 0 } else { 2 };
        let len = w.chars().count();
        if !fresh && cur.chars().count() + 1 + len + tail > width {
            lines.push(format!("{cur} \\"));
            // Continued two further in, or at the margin when the word
            // (an operation ID, a path) would not fit there.
            let at = if indent + 2 + len + tail <= width {
                indent + 2
            } else {
                0
            };
            cur = format!("{}{w}", " ".repeat(at));
        } else if fresh {
            cur.push_str(w);
        } else {
            cur.push(' ');
            cur.push_str(w);
        }
    }
    lines.push(cur);
    lines
}

/// The verdict again with the exit code, which is never split from it:
/// on the same line when it fits, else on the next.
pub(crate) fn closing(head: &str, code: u8, width: Option<usize>) -> String {
    let tail = format!("[exit {code}]");
    let Some(w) = width else {
        return format!("{head} {tail}\n");
    };
    // Wrapped here, so the code stays whole, after the headline's last word.
    let mut lines = wrap_line(head, w, false);
    match lines.last_mut() {
        Some(last) if last.chars().count() + 1 + tail.len() <= w => {
            last.push(' ');
            last.push_str(&tail);
        }
        _ => lines.push(tail),
    }
    lines.join("\n") + "\n"
}

/// The copies of each staging conflict, compared.
pub(crate) fn text_conflicts(
    out: &mut String,
    conflicts: &[crate::contract::StagingConflict],
    wide: bool,
) {
    for k in conflicts {
        let verdict = match k.identical {
            Some(true) => "IDENTICAL",
            Some(false) => "DIFFER",
            None => "UNREADABLE",
        };
        let who = if k.staging == "agent" {
            "agent"
        } else {
            "runbook"
        };
        out.push_str(&format!(
            "CONFLICT {}: active and staged ({who}) copies {verdict}\n",
            k.component
        ));
        for (label, c, newer) in [
            ("active", &k.active, "active"),
            ("staged", &k.staged, "staged"),
        ] {
            out.push_str(&format!("  {label}  {}\n", c.path));
            match (&c.sha256, c.size, &c.error) {
                (Some(h), Some(n), _) => {
                    let when = c
                        .modified_at
                        .as_ref()
                        .map(|t| format!(", modified {}", t.0))
                        .unwrap_or_default();
                    let mark = if k.newer.as_deref() == Some(newer) {
                        " (newer)"
                    } else {
                        ""
                    };
                    out.push_str(&format!("    {n} bytes{when}{mark}\n"));
                    out.push_str(&format!("    sha256 {}\n", h.0));
                }
                (_, _, Some(e)) => out.push_str(&format!(
                    "    UNREADABLE: {}\n",
                    crate::contract::text::escape(e)
                )),
                _ => out.push_str("    UNREADABLE\n"),
            }
        }
        let shown = if wide {
            k.diff.len()
        } else {
            k.diff.len().min(24)
        };
        for l in &k.diff[..shown] {
            out.push_str(&format!("  {}\n", crate::contract::text::escape(l)));
        }
        if shown < k.diff.len() {
            out.push_str(&format!(
                "  ({} more diff lines: --wide, or diff -u the two paths)\n",
                k.diff.len() - shown
            ));
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_left_alone_and_wide_never_wraps() {
        assert_eq!(fit("a  b\n", Some(80)), "a  b\n");
        let long = "x ".repeat(100);
        assert_eq!(fit(&long, None), long);
    }

    #[test]
    fn a_row_wraps_under_its_value_column_and_nothing_is_lost() {
        let line = format!("LOCK        {}", "word ".repeat(30).trim_end());
        let out = fit(&line, Some(40));
        for l in out.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
        for l in out.lines().skip(1) {
            assert!(l.starts_with("            word"), "{l:?}");
        }
        let words: usize = out.lines().map(|l| l.matches("word").count()).sum();
        assert_eq!(words, 30);
    }

    #[test]
    fn prose_wraps_at_spaces_keeping_its_indent() {
        let line = format!("    {}", "word ".repeat(30));
        let out = fit_keeping_indent(line.trim_end(), 40);
        for l in out.lines() {
            assert!(l.len() <= 40 && l.starts_with("    word"), "{l:?}");
        }
        assert_eq!(out.split_whitespace().count(), 30);
        // A word longer than the width is kept whole.
        assert_eq!(
            fit_keeping_indent(&format!("  {} b", "a".repeat(50)), 40),
            format!("  {}\n  b\n", "a".repeat(50))
        );
    }

    #[test]
    fn a_word_too_long_for_the_column_moves_left_instead_of_breaking() {
        let id = "x".repeat(65);
        let out = fit(
            &format!("PHASE FILE                        V2 operation {id} restarting"),
            Some(80),
        );
        assert!(
            out.lines().any(|l| l.starts_with(&format!("  {id}"))),
            "{out}"
        );
        assert!(out.lines().all(|l| l.chars().count() <= 80));
    }

    #[test]
    fn a_list_item_wraps_under_its_text_and_a_long_word_is_never_broken() {
        let out = fit(
            &format!("  - {} and more text after it", "a".repeat(100)),
            Some(40),
        );
        let ls: Vec<&str> = out.lines().collect();
        // The word stays whole on a line of its own (past the width: it
        // may be pasted); the rest wraps as usual.
        assert!(ls.iter().any(|l| l.trim() == "a".repeat(100)), "{out}");
        assert!(ls
            .iter()
            .filter(|l| !l.contains('a'))
            .all(|l| l.chars().count() <= 40));
        assert_eq!(out.matches('a').count(), 100 + 2);
    }

    #[test]
    fn a_long_command_breaks_between_words_with_continuations() {
        let id = "renew-k8s-certs-2026-12-01T03:00:00Z-0123456789abcdef0123456789ab";
        let words: Vec<String> = [
            "nvke-cert-runbook",
            "--status-only",
            "--operation-id",
            id,
            "--fence",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let ls = command_lines(&words, 4, Some(80));
        assert!(ls.len() > 1);
        assert!(ls.iter().all(|l| l.chars().count() <= 80), "{ls:?}");
        assert!(ls[..ls.len() - 1].iter().all(|l| l.ends_with(" \\")));
        let joined: String = ls
            .iter()
            .map(|l| l.trim_end_matches('\\').trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, words.join(" "));
        assert_eq!(command_lines(&words, 2, None).len(), 1);
    }

    #[test]
    fn words_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(
            shell_word("/etc/kubernetes/manifests/etcd.yaml"),
            "/etc/kubernetes/manifests/etcd.yaml"
        );
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn colour_marks_only_the_verdict_lines() {
        let t = Term {
            width: Some(80),
            color: true,
        };
        let out = t.render(
            "NODE: NOT CLEAN\nbody\nNODE: NOT CLEAN (again)\n",
            "NODE:",
            Severity::NotClean,
        );
        assert_eq!(out.matches("\x1b[33m").count(), 2);
        assert!(out.contains("\nbody\n"));
        let plain = Term {
            width: Some(80),
            color: false,
        };
        assert!(!plain
            .render("NODE: x\n", "NODE:", Severity::Clean)
            .contains('\x1b'));
    }
}
