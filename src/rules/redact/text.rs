//! Credentials inside one scalar's text: a shell command (`sh -c "exec x
//! --token=V"`), a header line, a URL, an embedded config file. The
//! structure has placed the scalar; these rules find the values in its
//! words. Every span is a byte range of the text (delimiters are ASCII,
//! so spans fall on character boundaries).

use super::{credential_key, credential_name, kept, MARK_PREFIX};

/// The shortest run of base64 characters redacted as a value of its own.
pub const BASE64_MIN: usize = 64;

/// A byte range of a text.
pub type Span = (usize, usize);

/// Where a value starts after its name.
#[derive(Clone, Copy, PartialEq)]
enum Sep {
    /// `NAME=V`, `--NAME=V`, `NAME = V`
    Eq,
    /// `NAME: V`, `"NAME": "V"`
    Colon,
    /// `--NAME V`, `"--NAME", "V"`
    Next,
}

/// The spans of every credential value in `s`, merged where they overlap.
pub fn spans(s: &str) -> Vec<Span> {
    let mut v = Vec::new();
    pairs(s, &mut v);
    urls(s, &mut v);
    schemes(s, &mut v);
    base64_runs(s, &mut v);
    merge(v)
}

/// Sorted, overlapping spans joined into one.
pub fn merge(mut v: Vec<Span>) -> Vec<Span> {
    v.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for (a, z) in v {
        match out.last_mut() {
            Some(last) if a < last.1 => last.1 = last.1.max(z),
            _ => out.push((a, z)),
        }
    }
    out
}

fn push(s: &str, v: &mut Vec<Span>, (a, z): Span) {
    if a < z && !kept(&s[a..z]) {
        v.push((a, z));
    }
}

fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')
}

/// The start of a whole-text flag's value: `--NAME=V`, `-NAME=V` or
/// `NAME=V` is the whole text, NAME a credential name (V runs to its end,
/// blanks and all, as a flag library reads one argument).
pub fn whole_flag(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let dashes = b.iter().take(2).take_while(|&&c| c == b'-').count();
    let n = dashes + b[dashes..].iter().take_while(|&&c| name_char(c)).count();
    let name = &s[dashes..n];
    let ok = b.get(n) == Some(&b'=')
        && name
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && if dashes == 0 {
            credential_key(name)
        } else {
            credential_name(name)
        };
    ok.then_some(n + 1)
}

/// Whether `s` is a flag alone whose value is the next argument:
/// `--NAME` or `-NAME`, NAME a credential name.
pub fn separate_flag(s: &str) -> bool {
    let name = s.strip_prefix("--").or_else(|| s.strip_prefix('-'));
    name.is_some_and(|n| {
        n.bytes().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && n.bytes().all(name_char)
            && credential_name(n)
    })
}

/// Whether a line of `s` up to `at` has opened a flow collection (then
/// `,`, `]` and `}` end a plain value).
fn in_flow(s: &str, at: usize) -> bool {
    let line = s[..at].rsplit('\n').next().unwrap_or("");
    line.contains(['[', '{'])
}

/// The end of a quoted value starting after its quote `q` at `v`.
fn close_quote(b: &[u8], v: usize, q: u8) -> usize {
    let mut e = v;
    while e < b.len() && b[e] != q && b[e] != b'\n' {
        e += if q == b'"' && b[e] == b'\\' { 2 } else { 1 };
    }
    e.min(b.len())
}

/// Named values: `--NAME=V`, `NAME=V`, `--NAME V`, `NAME: V`, `"NAME":
/// "V"`, NAME a credential name (or `Authorization`); a name without
/// dashes not `key` itself nor ending in `name` or `ref` (references).
fn pairs(s: &str, v: &mut Vec<Span>) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0
            || matches!(
                b[i - 1],
                b' ' | b'\t'
                    | b'\n'
                    | b'\r'
                    | b'"'
                    | b'\''
                    | b'['
                    | b'{'
                    | b'('
                    | b','
                    | b';'
                    | b'?'
                    | b'&'
            );
        if !boundary || !(b[i].is_ascii_alphanumeric() || b[i] == b'-') {
            i += 1;
            continue;
        }
        let dashes = b[i..].iter().take(2).take_while(|&&c| c == b'-').count();
        let ns = i + dashes;
        let n = ns + b[ns..].iter().take_while(|&&c| name_char(c)).count();
        if n == ns || !b[ns].is_ascii_alphanumeric() {
            i = n.max(i + 1);
            continue;
        }
        let name = &s[ns..n];
        let wanted = if dashes == 0 {
            credential_key(name)
        } else {
            credential_name(name)
        };
        if !wanted {
            i = n;
            continue;
        }
        let quote = (i > 0 && matches!(b[i - 1], b'"' | b'\'')).then(|| b[i - 1]);
        let query = i > 0 && matches!(b[i - 1], b'?' | b'&');
        let mut j = n;
        let closed = quote.is_some() && b.get(j) == quote.as_ref();
        if closed {
            j += 1;
        }
        let blanks = |k: usize| {
            k + b[k..]
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count()
        };
        let (sep, start) = if b.get(j) == Some(&b'=') {
            (Sep::Eq, if dashes == 0 { blanks(j + 1) } else { j + 1 })
        } else if dashes == 0 && b.get(blanks(j)) == Some(&b'=') && !closed {
            (Sep::Eq, blanks(blanks(j) + 1))
        } else if dashes == 0
            && b.get(j) == Some(&b':')
            && b.get(j + 1)
                .is_none_or(|c| matches!(c, b' ' | b'\t' | b'"' | b'\''))
        {
            (Sep::Colon, blanks(j + 1))
        } else if dashes > 0 && (matches!(b.get(j), Some(b' ' | b'\t')) || closed) {
            let k = j + b[j..]
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t' || (closed && c == b','))
                .count();
            (Sep::Next, if k > j { k } else { b.len() })
        } else {
            i = n;
            continue;
        };
        let Some(&first) = b.get(start) else {
            i = n;
            continue;
        };
        if sep == Sep::Next && matches!(first, b'-' | b'#' | b'\n') {
            i = n;
            continue;
        }
        let end = if s[start..].starts_with(MARK_PREFIX) {
            start + s[start..].find('>').map_or(b.len() - start, |e| e + 1)
        } else if matches!(first, b'"' | b'\'') {
            let e = close_quote(b, start + 1, first);
            push(s, v, (start + 1, e));
            e
        } else {
            let flow = in_flow(s, i);
            let line_end = s[start..].find('\n').map_or(b.len(), |e| start + e);
            let stop = |c: u8| {
                matches!(c, b'"' | b'\'')
                    || (flow && matches!(c, b',' | b']' | b'}'))
                    || (query && c == b'&')
                    || (sep != Sep::Colon && c.is_ascii_whitespace())
            };
            let mut e = (start..line_end).find(|&k| stop(b[k])).unwrap_or(line_end);
            if sep == Sep::Colon {
                e = s[start..e].find(" #").map_or(e, |c| start + c);
                e = start + s[start..e].trim_end().len();
            }
            push(s, v, (start, e));
            e
        };
        i = end.max(n);
    }
}

/// The password of `scheme://user:PASSWORD@host`.
fn urls(s: &str, v: &mut Vec<Span>) {
    let mut from = 0;
    while let Some(at) = s[from..].find("://").map(|a| from + a + 3) {
        let end = s[at..]
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '/' | '"' | '\'' | ',' | ']' | '}' | '?' | '#')
            })
            .map_or(s.len(), |e| at + e);
        let authority = &s[at..end];
        if let Some(amp) = authority.rfind('@') {
            if let Some(colon) = authority[..amp].find(':') {
                push(s, v, (at + colon + 1, at + amp));
            }
        }
        from = end.max(at);
    }
}

/// The credential after an HTTP authorization scheme: `Bearer T`, `Basic T`.
fn schemes(s: &str, v: &mut Vec<Span>) {
    let b = s.as_bytes();
    let lower = s.to_ascii_lowercase();
    for scheme in ["bearer ", "basic "] {
        for (at, _) in lower.match_indices(scheme) {
            if at > 0 && name_char(b[at - 1]) {
                continue;
            }
            let start = at + scheme.len();
            let start = start + b[start..].iter().take_while(|&&c| c == b' ').count();
            let end = (start..b.len())
                .find(|&k| b[k].is_ascii_whitespace() || matches!(b[k], b'"' | b'\'' | b','))
                .unwrap_or(b.len());
            if !s[start..].starts_with(MARK_PREFIX) {
                push(s, v, (start, end));
            }
        }
    }
}

fn b64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// Whether a run of base64 characters is a long base64 value: at least
/// [`BASE64_MIN`] of them, with an upper-case letter, a lower-case letter
/// and a digit (a DER key, a JWT's part; hex digests are never mixed-case,
/// and paths and flag names break into short runs at `.`, `=`, `:`).
fn long_base64(run: &str) -> bool {
    run.len() >= BASE64_MIN
        && run.bytes().any(|c| c.is_ascii_uppercase())
        && run.bytes().any(|c| c.is_ascii_lowercase())
        && run.bytes().any(|c| c.is_ascii_digit())
}

/// Long base64 runs (then any `=` padding) outside the spans found.
fn base64_runs(s: &str, v: &mut Vec<Span>) {
    let b = s.as_bytes();
    let mut k = 0;
    let taken = v.clone();
    while k < b.len() {
        if !b64_char(b[k]) {
            k += 1;
            continue;
        }
        let start = k;
        while k < b.len() && b64_char(b[k]) {
            k += 1;
        }
        let mut e = k;
        while e < b.len() && b[e] == b'=' && e - k < 2 {
            e += 1;
        }
        if long_base64(&s[start..k]) && !taken.iter().any(|&(a, z)| a < e && start < z) {
            v.push((start, e));
        }
        k = e.max(k);
    }
}

/// The spans of `value` in `s` where it stands as a word of its own (no
/// letter or digit either side): a credential found in an embedded
/// document, found again in the document's text.
pub fn occurrences(s: &str, value: &str, v: &mut Vec<Span>) {
    let b = s.as_bytes();
    for (at, _) in s.match_indices(value) {
        let end = at + value.len();
        let before = at == 0 || !b[at - 1].is_ascii_alphanumeric();
        let after = end == b.len() || !b[end].is_ascii_alphanumeric();
        if before && after {
            v.push((at, end));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(s: &str) -> Vec<&str> {
        spans(s).into_iter().map(|(a, z)| &s[a..z]).collect()
    }

    #[test]
    fn named_values_in_words() {
        assert_eq!(found("exec x --client-secret=s3 --v=2"), ["s3"]);
        assert_eq!(found("env ETCD_PASSWORD=s3 etcd"), ["s3"]);
        assert_eq!(found("exec x --token s3 --v=2"), ["s3"]);
        assert_eq!(
            found("x --enable-bootstrap-token-auth --v=2"),
            Vec::<&str>::new()
        );
        assert_eq!(found("password: a b # why\nuser: x"), ["a b"]);
        assert_eq!(found("[password = s3]"), ["s3"]);
        assert_eq!(found("{\"token\": \"j\\\"w\", \"n\": 1}"), ["j\\\"w"]);
        assert_eq!(found("{password: s3, user: x}"), ["s3"]);
        assert_eq!(found("[\"--token\", \"s3\"]"), ["s3"]);
        assert_eq!(found("GET /x?token=s3&v=2"), ["s3"]);
        assert_eq!(found("Authorization: Bearer abc"), ["Bearer abc"]);
        // References and paths are not values.
        for kept in [
            "secretName: x",
            "key: password",
            "tokenRef: y",
            "--key-file=/etc/k.key",
            "--ttl-token=48h",
            "--token=<redacted sha256:00ff>",
        ] {
            assert_eq!(found(kept), Vec::<&str>::new(), "{kept}");
        }
    }

    #[test]
    fn urls_schemes_and_base64() {
        assert_eq!(
            found("https://root:s3@10.0.0.1:2379,https://b:2379"),
            ["s3"]
        );
        assert_eq!(found("http://user@host/x:y@z"), Vec::<&str>::new());
        assert_eq!(found("curl -H \"X: bearer abc\" x"), ["abc"]);
        assert_eq!(found("Basic dXNlcjpwYXNz"), ["dXNlcjpwYXNz"]);
        let run = format!("{}Ab9", "x".repeat(70));
        assert_eq!(
            found(&format!("a {run}== b")),
            [format!("{run}==").as_str()]
        );
        let hex = "0123456789abcdef".repeat(4);
        assert_eq!(found(&format!("x@sha256:{hex}")), Vec::<&str>::new());
    }

    #[test]
    fn whole_and_separate_flags() {
        assert_eq!(whole_flag("--etcd-password=a b"), Some(16));
        assert_eq!(whole_flag("DB_TOKEN=x"), Some(9));
        assert_eq!(whole_flag("--v=2"), None);
        assert_eq!(whole_flag("secretName=x"), None);
        assert!(separate_flag("--token"));
        assert!(separate_flag("-password"));
        assert!(!separate_flag("--token=x"));
        assert!(!separate_flag("--v"));
        let mut v = Vec::new();
        occurrences("a s3 xs3 s3x s3", "s3", &mut v);
        assert_eq!(v, [(2, 4), (13, 15)]);
    }
}
