//! Operation IDs (SPEC section 1). Pure.

use std::fmt;
use std::str::FromStr;

/// The longest operation ID, in characters (all allowed characters are ASCII,
/// so also in bytes).
pub const MAX_LEN: usize = 200;

/// Why a string is not an operation ID: one line that never echoes a
/// control character raw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpIdError {
    #[error("operation ID is empty")]
    Empty,
    #[error(
        "operation ID has a character that is not allowed, {escaped} at position {position} \
         (allowed: A-Z a-z 0-9 . _ : @ -)"
    )]
    BadChar { escaped: String, position: usize },
    #[error("operation ID is {0} characters long (at most {MAX_LEN})")]
    TooLong(usize),
    #[error("operation ID must not start with '.' or '-'")]
    BadStart,
    #[error("operation ID must not contain '..'")]
    DotDot,
}

/// A validated operation ID: 1..=200 characters of `A-Z a-z 0-9 . _ : @ -`,
/// not starting with `.` or `-`, never containing `..`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OperationId(String);

/// True for the characters an operation ID may contain.
pub fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '@' | '-')
}

impl OperationId {
    /// Validate; the error is a one-line reason that never echoes control
    /// characters raw (escape them).
    pub fn parse(s: &str) -> Result<OperationId, OpIdError> {
        if s.is_empty() {
            return Err(OpIdError::Empty);
        }
        if let Some((pos, c)) = s.chars().enumerate().find(|(_, c)| !is_id_char(*c)) {
            return Err(OpIdError::BadChar {
                escaped: escape_char(c),
                position: pos + 1,
            });
        }
        // Only ASCII from here: bytes == characters.
        if s.len() > MAX_LEN {
            return Err(OpIdError::TooLong(s.len()));
        }
        if s.starts_with('.') || s.starts_with('-') {
            return Err(OpIdError::BadStart);
        }
        if s.contains("..") {
            return Err(OpIdError::DotDot);
        }
        Ok(OperationId(s.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The receipt file name, `<ID>.json`.
    pub fn receipt_file(&self) -> String {
        format!("{}.json", self.0)
    }

    /// A fresh operation ID for a step an operator pastes (SPEC 6, v1.3):
    /// `PREFIX-YYYYMMDDTHHMMSSZ` at `now` (`manual-...`, `recover-...`).
    /// Never the controller's, never one a refusal just spent: a step that
    /// carries it does not replay a receipt.
    pub fn fresh(prefix: &str, now: time::OffsetDateTime) -> OperationId {
        let stamp = crate::rules::clock::stamp(now);
        OperationId::parse(&format!("{prefix}-{stamp}"))
            .unwrap_or_else(|e| unreachable!("a fresh ID is valid: {e}"))
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for OperationId {
    type Err = OpIdError;
    fn from_str(s: &str) -> Result<OperationId, OpIdError> {
        OperationId::parse(s)
    }
}

impl AsRef<str> for OperationId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl serde::Serialize for OperationId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for OperationId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OperationId, D::Error> {
        let s = String::deserialize(d)?;
        OperationId::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for OperationId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OperationId".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An operation ID: 1 to 200 characters of A-Z a-z 0-9 . _ : @ -, not starting with '.' or '-', never containing '..'.",
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "pattern": "^[A-Za-z0-9_:@]([A-Za-z0-9_:@-]|\\.[A-Za-z0-9_:@-])*\\.?$"
        })
    }
}

/// One character, quoted, as pure printable ASCII (`'a'`, `'\n'`, `'\u{2215}'`).
fn escape_char(c: char) -> String {
    format!("'{}'", c.escape_default())
}

/// Append `c` as text for a terminal (SPEC 7, v1.1): a C0/C1 control
/// character as `\xNN`, a line separator or bidirectional override as
/// `\u{NNNN}`, a backslash doubled (so an escape cannot be forged), any
/// other character as itself.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        c if (c as u32) < 0x100 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
        '\u{2028}'
        | '\u{2029}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Whether `c` is shown escaped by [`push_escaped`] (a backslash aside).
fn needs_escape(c: char) -> bool {
    ((c as u32) < 0x100 && c.is_control())
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` as one terminal-safe line when it holds a control, line-separator
/// or bidirectional character ([`push_escaped`], backslashes doubled so an
/// escape cannot be forged); else unchanged (so a clean string, the
/// common case, is never rewritten).
pub fn escape_if_needed(s: &str) -> Option<String> {
    if !s.chars().any(needs_escape) {
        return None;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Some(out)
}

/// Every string of a JSON document, keys too, made terminal-safe
/// ([`escape_if_needed`]; issue 25, SPEC 7): text from outside the runbook
/// (an agent's operation ID or phase, a process's command line, a file
/// name) reaches a JSON consumer that prints it with no control character
/// in it, as `message` always did.
pub fn escape_json_strings(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if let Some(e) = escape_if_needed(s) {
                *s = e;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(escape_json_strings),
        Value::Object(o) => {
            let bad: Vec<String> = o
                .keys()
                .filter(|k| escape_if_needed(k).is_some())
                .cloned()
                .collect();
            for k in bad {
                if let Some(val) = o.remove(&k) {
                    let e = escape_if_needed(&k).unwrap_or(k);
                    o.insert(e, val);
                }
            }
            o.values_mut().for_each(escape_json_strings);
        }
        _ => {}
    }
}

/// How many characters of input an error message may quote.
const EXCERPT_CHARS: usize = 40;

/// A short, quoted, escaped excerpt of untrusted text for an error message:
/// at most 40 characters of the input, every control and non-ASCII character
/// escaped (so the result is one line of printable ASCII), `...` when cut.
pub fn excerpt(s: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = s.chars();
    for c in chars.by_ref().take(EXCERPT_CHARS) {
        out.extend(c.escape_default());
    }
    out.push('"');
    if chars.next().is_some() {
        out.push_str("...");
    }
    out
}

/// `excerpt` for bytes that may not be UTF-8 (invalid sequences become U+FFFD).
pub fn excerpt_bytes(b: &[u8]) -> String {
    let head = &b[..b.len().min(EXCERPT_CHARS * 4)];
    let mut s = excerpt(&String::from_utf8_lossy(head));
    if head.len() < b.len() && !s.ends_with("...") {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25 item 6: every string of a document, keys too, is escaped
    /// when it holds a control or bidirectional character; clean strings
    /// (backslashes included) are left as they are.
    #[test]
    fn json_strings_lose_their_control_characters() {
        let mut v = serde_json::json!({
            "reasons": ["agent operation op-1\u{1b}[2J\r\nfake: ok", "clean \\ path"],
            "holder": {"commandLine": "sh -c x\u{202e}gpj.exe", "pid": 7},
            "key\u{7}": true,
            "n": null
        });
        escape_json_strings(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "reasons": ["agent operation op-1\\x1b[2J\\x0d\\x0afake: ok", "clean \\ path"],
                "holder": {"commandLine": "sh -c x\\u{202e}gpj.exe", "pid": 7},
                "key\\x07": true,
                "n": null
            })
        );
        fn clean(v: &serde_json::Value) -> bool {
            match v {
                serde_json::Value::String(s) => escape_if_needed(s).is_none(),
                serde_json::Value::Array(a) => a.iter().all(clean),
                serde_json::Value::Object(o) => {
                    o.keys().all(|k| escape_if_needed(k).is_none()) && o.values().all(clean)
                }
                _ => true,
            }
        }
        assert!(clean(&v));
    }

    fn err(s: &str) -> String {
        OperationId::parse(s).unwrap_err().to_string()
    }

    #[test]
    fn accepts_the_documented_charset() {
        for s in [
            "a",
            "Z",
            "0",
            "_",
            ":",
            "@",
            "cycle-2026-11-30T00:00:00Z@node-1",
            "a.b.c",
            "a-",
            "a.",
            "op_1:2@3-4.5",
            "ABCxyz019._:@-",
        ] {
            let id = OperationId::parse(s).unwrap();
            assert_eq!(id.as_str(), s);
            assert_eq!(id.to_string(), s);
            assert_eq!(id.receipt_file(), format!("{s}.json"));
        }
        let max = "a".repeat(200);
        assert_eq!(OperationId::parse(&max).unwrap().as_str(), max);
    }

    #[test]
    fn rejects_empty() {
        assert!(err("").contains("empty"));
    }

    #[test]
    fn rejects_too_long() {
        let e = err(&"a".repeat(201));
        assert!(e.contains("201") && e.contains("200"), "{e}");
        // A long invalid ID is not echoed.
        assert!(err(&"a".repeat(100_000)).len() < 100);
    }

    #[test]
    fn rejects_bad_start() {
        assert!(err(".a").contains("start"));
        assert!(err("-a").contains("start"));
        assert!(err(".").contains("start"));
        assert!(err("-").contains("start"));
    }

    #[test]
    fn rejects_dot_dot() {
        assert!(err("a..b").contains(".."));
        assert!(err("a..").contains(".."));
        assert!(OperationId::parse("..").is_err());
        assert!(err("a..b.c").contains(".."));
    }

    #[test]
    fn rejects_bad_characters_with_an_escaped_one_line_reason() {
        for s in [
            "a/b",
            "../x",
            "a\0b",
            "a\nb",
            "a\rb",
            "a b",
            "a\tb",
            "a\u{2215}b",   // division slash, looks like '/'
            "a\u{ff0e}b",   // fullwidth full stop
            "\u{0430}bc",   // Cyrillic a
            "a\u{200b}b",   // zero-width space
            "a\u{1b}[31mb", // terminal escape
            "a\\b",
            "a+b",
            "a%2fb",
            "a=b",
        ] {
            let e = err(s);
            assert!(
                !e.contains('\n') && !e.contains('\r') && !e.contains('\0'),
                "{e:?}"
            );
            assert!(e.chars().all(|c| c.is_ascii() && !c.is_control()), "{e:?}");
            assert!(e.contains("not allowed"), "{e}");
        }
        assert!(err("a\nb").contains("'\\n'"));
        assert!(err("a\0b").contains("'\\u{0}'"));
        assert!(err("a\u{2215}b").contains("\\u{2215}"));
    }

    #[test]
    fn serde_validates() {
        let id: OperationId = serde_json::from_str("\"op-1\"").unwrap();
        assert_eq!(id.as_str(), "op-1");
        assert!(serde_json::from_str::<OperationId>("\"a/b\"").is_err());
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"op-1\"");
        assert_eq!("op-2".parse::<OperationId>().unwrap().as_str(), "op-2");
    }

    #[test]
    fn excerpt_is_short_and_escaped() {
        assert_eq!(excerpt("abc"), "\"abc\"");
        assert_eq!(excerpt("a\nb"), "\"a\\nb\"");
        let long = excerpt(&"x".repeat(1000));
        assert!(long.len() < 50 && long.ends_with("..."), "{long}");
        let e = excerpt_bytes(&[0xff, b'a', 0x1b]);
        assert!(e.is_ascii() && !e.chars().any(|c| c.is_control()), "{e}");
        assert!(excerpt_bytes(&[b'a'; 1000]).ends_with("..."));
    }
}
