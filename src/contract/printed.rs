//! A document as it is printed (SPEC 7): the mode builds it, the entry
//! point stamps its trailer (`durationMs`, `exitCode`: the one place that
//! knows the process's duration and exit code), and it is written once as
//! one line, keys sorted, with no control character in any string
//! (issue 25: text from outside the runbook reaches a JSON consumer as
//! `message` always did).

use super::*;

/// A printed document: one of the contract's result documents.
pub trait Printed: std::fmt::Debug {
    /// Set the trailer every result document ends with.
    fn stamp(&mut self, duration_ms: u64, exit_code: u8);
    /// The document as a JSON value, as built (for the line and for tests).
    fn to_json(&self) -> serde_json::Value;
}

macro_rules! printed {
    ($($t:ty),* $(,)?) => {
        $(
            impl Printed for $t {
                fn stamp(&mut self, duration_ms: u64, exit_code: u8) {
                    self.duration_ms = duration_ms;
                    self.exit_code = exit_code;
                }
                fn to_json(&self) -> serde_json::Value {
                    to_json(self)
                }
            }
        )*
    };
}

printed!(
    UsageErrorDocument,
    VersionDocument,
    RenewResult,
    RenewReplay,
    RenewEarlyFailure,
    CheckDocument,
    StatusDocument,
    FenceDocument,
);

/// The line a printed document is written as: JSON, keys sorted, every
/// string (keys too) made terminal-safe, newline-terminated.
pub fn line(doc: &dyn Printed) -> Vec<u8> {
    let mut v = doc.to_json();
    crate::rules::opid::escape_json_strings(&mut v);
    json_line(&v)
}

/// `--help --output json`: the usage text as it is (its own, no outside
/// text in it).
pub fn help_line(doc: &HelpDocument) -> Vec<u8> {
    json_line(&to_json(doc))
}

fn json_line(v: &serde_json::Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailer_is_stamped_and_strings_are_escaped() {
        let mut d = UsageErrorDocument::new(None, ArgumentsOutcome::UsageError, "x");
        d.stamp(42, 2);
        let v: serde_json::Value = serde_json::from_slice(&line(&d)).unwrap();
        assert_eq!(v["durationMs"], 42);
        assert_eq!(v["exitCode"], 2);
        let mut v = VersionDocument::current();
        v.git_commit = "a\u{1b}[31mb".into();
        let l = String::from_utf8(line(&v)).unwrap();
        assert!(l.ends_with("}\n") && !l.contains('\u{1b}'), "{l}");
        assert!(l.contains(r"a\\x1b[31mb"), "{l}");
    }
}
