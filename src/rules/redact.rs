//! Credentials out of the evidence bundle (SPEC 6, v1.2): the text of a
//! manifest in, the same text out with every credential value replaced by
//! `<redacted sha256:HEX>`, HEX the sha256 of the value's bytes (two
//! bundles of the same node still compare). Line-based, on the text: no
//! YAML parser runs on the node's files here, and every line that holds no
//! credential comes out byte for byte as it went in.
//!
//! A **credential name** (lower-cased) contains `password`, `passwd`,
//! `passphrase`, `token`, `secret` or `key`, or one of its parts (split at
//! `-`, `_`, `.`) ends in `pass` (kube-vip's `bgp_peerpass`), or it is
//! kube-vip's `bgp_peers` (each peer's `address:AS:password:multihop`).
//!
//! What is redacted:
//!
//! 1. **Flags** `--NAME=VALUE` and `-NAME=VALUE` (after the line's start, a
//!    blank, a quote, `[`, `{`, `(` or `,`), and shell-style
//!    `UPPER_NAME=VALUE`, when NAME is a credential name.
//! 2. **Flags with a separate value**: `--NAME VALUE` on one line (`"--NAME",
//!    "VALUE"` too), and a sequence item `- --NAME` whose next item
//!    `- VALUE` is the value; a next word that starts with `-` is a flag,
//!    not a value.
//! 3. **Env vars**: `name: NAME` with a sibling `value: VALUE` (the same
//!    mapping, before or after it, block or flow style), NAME a credential
//!    name.
//! 4. **YAML keys** `NAME: VALUE` whose key is a credential name, except
//!    `key` itself and names ending in `name` or `ref` (`secretKeyRef`,
//!    `secretName`: references, not values); a block scalar (`|`, `>`) is
//!    redacted line by line.
//! 5. **Long base64**: anywhere, a run of at least `BASE64_MIN` (64)
//!    characters of `A-Z a-z 0-9 + / - _` (then any `=` padding) that holds
//!    an upper-case letter, a lower-case letter and a digit: a DER key or a
//!    JWT without PEM armour. Hex (digests, `sha256:...` image references)
//!    is never mixed-case, so it stays; so do flag names and paths, which
//!    a `.`, `=`, `:` or space breaks into short runs.
//! 6. **URL credentials**: the password of `scheme://user:PASSWORD@host`.
//!
//! A value named by 1 to 4 is kept when it is not a credential by its
//! shape: empty, `true` or `false`, an absolute path (`/` first, no blank:
//! `--service-account-key-file=/etc/kubernetes/pki/sa.pub`,
//! `--tls-private-key-file=...`: an operator needs those), a Go duration
//! (`--service-account-max-token-expiration=48h`), or already redacted.
//!
//! A value's end: a quoted value ends at its closing quote; a flag that is
//! a whole plain sequence item (`- --etcd-password=a b`) runs to the line's
//! end (a ` #` comment aside); otherwise at a blank or a quote, and inside
//! a flow collection (`[`, `{` earlier on the line) at `,`, `]`, `}`.

use sha2::{Digest, Sha256};

/// The shortest run of base64 characters redacted as a value of its own.
pub const BASE64_MIN: usize = 64;

/// The redacted text and how many values were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub count: usize,
}

/// What replaces `value`: `<redacted sha256:HEX>`.
pub fn mark(value: &str) -> String {
    let hex: String = Sha256::digest(value.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("<redacted sha256:{hex}>")
}

/// Whether a flag's, env var's or key's name says it holds a credential.
pub fn credential_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["password", "passwd", "passphrase", "token", "secret", "key"]
        .iter()
        .any(|w| n.contains(w))
        || n.split(['-', '_', '.']).any(|p| p.ends_with("pass"))
        || n.replace(['-', '_'], "") == "bgppeers"
}

/// A value that is not a credential by its shape (see the module doc).
fn kept(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || v.eq_ignore_ascii_case("true")
        || v.eq_ignore_ascii_case("false")
        || (v.starts_with('/') && !v.contains(char::is_whitespace))
        || duration(v)
        || v.starts_with("<redacted sha256:")
}

/// A Go duration: `48h`, `1h30m`, `10m0s`, `1.5s`, `300ms`.
fn duration(v: &str) -> bool {
    let b = v.as_bytes();
    let mut i = 0;
    let mut parts = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        if i == start {
            return false;
        }
        let unit = ["ns", "us", "µs", "ms", "h", "m", "s"]
            .iter()
            .find(|u| v[i..].starts_with(**u));
        match unit {
            Some(u) => i += u.len(),
            None => return false,
        }
        parts += 1;
    }
    parts > 0
}

fn b64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// Whether a run of base64 characters is a long base64 value.
fn long_base64(run: &str) -> bool {
    run.len() >= BASE64_MIN
        && run.bytes().any(|c| c.is_ascii_uppercase())
        && run.bytes().any(|c| c.is_ascii_lowercase())
        && run.bytes().any(|c| c.is_ascii_digit())
}

/// Byte ranges to replace, per line.
type Spans = Vec<Vec<(usize, usize)>>;

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A block-style `KEY: REST` on a line: (key column, key, start of REST).
/// `- KEY: REST` too; the key may be quoted.
fn yaml_key(line: &str) -> Option<(usize, &str, usize)> {
    let mut col = indent(line);
    let mut rest = &line[col..];
    while let Some(r) = rest.strip_prefix("- ") {
        let r2 = r.trim_start_matches(' ');
        col += rest.len() - r2.len();
        rest = r2;
    }
    let (key, after) = match rest.as_bytes().first() {
        Some(q @ (b'"' | b'\'')) => {
            let close = rest[1..].find(*q as char)? + 1;
            (&rest[1..close], close + 1)
        }
        _ => {
            let end = rest.find(':')?;
            (&rest[..end], end)
        }
    };
    if key.is_empty()
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return None;
    }
    let tail = &rest[after..];
    let tail = tail.strip_prefix(':')?;
    if !(tail.is_empty() || tail.starts_with(' ')) {
        return None;
    }
    let start = col + after + 1;
    let start = start + (line.len() - start - line[start..].trim_start().len());
    Some((col, key, start))
}

/// The span of a scalar starting at `start` of a block line: quoted, or
/// plain to the line's end (a ` #` comment aside). None: nothing there, or
/// a block scalar, flow collection, anchor or alias.
fn scalar_at(line: &str, start: usize) -> Option<(usize, usize)> {
    let rest = &line[start..];
    match rest.as_bytes().first()? {
        q @ (b'"' | b'\'') => {
            let end = rest[1..].find(*q as char).map_or(rest.len(), |e| e + 1);
            Some((start + 1, start + end))
        }
        b'|' | b'>' | b'[' | b'{' | b'&' | b'*' | b'#' => None,
        _ => {
            let end = rest.find(" #").unwrap_or(rest.len());
            Some((start, start + rest[..end].trim_end().len()))
        }
    }
}

/// Whether a block scalar indicator (`|`, `>-`, ...) starts at `start`.
fn block_scalar(line: &str, start: usize) -> bool {
    let rest = line[start..].split(" #").next().unwrap_or("").trim_end();
    rest.starts_with(['|', '>'])
        && rest[1..]
            .bytes()
            .all(|c| c.is_ascii_digit() || c == b'-' || c == b'+')
}

fn push(spans: &mut Spans, lines: &[&str], i: usize, (s, e): (usize, usize)) {
    if s < e && !kept(&lines[i][s..e]) {
        spans[i].push((s, e));
    }
}

/// The lines of a block scalar that starts after line `i` (indent above `col`).
fn push_block(spans: &mut Spans, lines: &[&str], i: usize, col: usize) {
    for (j, l) in lines.iter().enumerate().skip(i + 1) {
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) <= col {
            break;
        }
        let s = indent(l);
        spans[j].push((s, l.trim_end().len()));
    }
}

/// Rules 1 and 2 on one line.
fn flags(spans: &mut Spans, lines: &[&str], i: usize) {
    let line = lines[i];
    let b = line.as_bytes();
    let item_start = {
        let t = line.trim_start_matches(' ');
        t.strip_prefix("- ")
            .map(|r| line.len() - r.trim_start_matches(' ').len())
    };
    let mut k = 0;
    while k < b.len() {
        let boundary = k == 0
            || matches!(
                b[k - 1],
                b' ' | b'\t' | b'"' | b'\'' | b'[' | b'{' | b'(' | b','
            );
        if !boundary {
            k += 1;
            continue;
        }
        let quote = (k > 0 && matches!(b[k - 1], b'"' | b'\'')).then(|| b[k - 1]);
        let dashes = b[k..].iter().take(2).take_while(|&&c| c == b'-').count();
        let name_start = k + dashes;
        let mut n = name_start;
        while n < b.len() && (b[n].is_ascii_alphanumeric() || matches!(b[n], b'-' | b'_' | b'.')) {
            n += 1;
        }
        let name = &line[name_start..n];
        let env_like = dashes == 0
            && !name.is_empty()
            && name
                .bytes()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
        if name.is_empty()
            || !b[name_start].is_ascii_alphanumeric()
            || (dashes == 0 && !env_like)
            || !credential_name(name)
        {
            k = n.max(k + 1);
            continue;
        }
        let flow = line[..k].contains(['[', '{']);
        let plain_item = item_start == Some(k) && quote.is_none();
        if b.get(n) == Some(&b'=') {
            let s = n + 1;
            let e = value_end(line, s, quote, plain_item, flow);
            push(spans, lines, i, (s, e));
            k = e.max(s);
            continue;
        }
        if dashes == 0 {
            k = n;
            continue;
        }
        // A separate value: on this line, or the next sequence item.
        let mut s = n;
        if quote.is_some() && b.get(s) == quote.as_ref() {
            s += 1;
        }
        let after = &line[s..];
        let sep = after.len() - after.trim_start_matches([' ', '\t', ',']).len();
        if sep > 0 && s + sep < b.len() && b[s + sep] != b'#' {
            let mut vs = s + sep;
            let q = matches!(b[vs], b'"' | b'\'').then(|| b[vs]);
            if q.is_some() {
                vs += 1;
            }
            if b.get(vs) != Some(&b'-') {
                let e = value_end(line, vs, q, false, flow);
                push(spans, lines, i, (vs, e));
                k = e.max(vs);
                continue;
            }
        } else if matches!(line[s..].trim_end(), "" | "\"" | "'")
            && item_start.is_some_and(|st| st == k || st + 1 == k)
        {
            next_item_value(spans, lines, i);
        }
        k = n;
    }
}

/// The value of a flag written as its own sequence item: the next item.
fn next_item_value(spans: &mut Spans, lines: &[&str], i: usize) {
    let col = indent(lines[i]);
    let Some((j, l)) = lines
        .iter()
        .enumerate()
        .skip(i + 1)
        .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    else {
        return;
    };
    if indent(l) != col {
        return;
    }
    let Some(r) = l[col..].strip_prefix("- ") else {
        return;
    };
    let s = l.len() - r.trim_start_matches(' ').len();
    if l[s..].starts_with('-') {
        return;
    }
    if let Some(span) = scalar_at(l, s) {
        push(spans, lines, j, span);
    }
}

fn value_end(line: &str, s: usize, quote: Option<u8>, plain_item: bool, flow: bool) -> usize {
    let b = line.as_bytes();
    if let Some(q) = quote {
        return line[s..].find(q as char).map_or(b.len(), |e| s + e);
    }
    if plain_item && !flow {
        let end = line[s..].find(" #").map_or(b.len(), |e| s + e);
        return s + line[s..end].trim_end().len();
    }
    let stop = |c: u8| {
        c.is_ascii_whitespace()
            || c == b'"'
            || c == b'\''
            || (flow && matches!(c, b',' | b']' | b'}'))
    };
    (s..b.len()).find(|&j| stop(b[j])).unwrap_or(b.len())
}

/// Rules 3 (block style) and 4 on one line.
fn keys(spans: &mut Spans, lines: &[&str], i: usize) {
    let line = lines[i];
    let Some((col, key, start)) = yaml_key(line) else {
        return;
    };
    if key == "name" {
        if let Some((s, e)) = scalar_at(line, start) {
            if credential_name(&line[s..e]) {
                env_value(spans, lines, i, col);
            }
        }
        return;
    }
    let lower = key.to_ascii_lowercase();
    if !credential_name(key) || lower == "key" || lower.ends_with("name") || lower.ends_with("ref")
    {
        return;
    }
    if block_scalar(line, start) {
        push_block(spans, lines, i, col);
    } else if let Some(span) = scalar_at(line, start) {
        push(spans, lines, i, span);
    }
}

/// The `value:` sibling of the `name:` key at line `i`, column `col`.
fn env_value(spans: &mut Spans, lines: &[&str], i: usize, col: usize) {
    let sibling = |j: usize| -> Option<bool> {
        // Some(true): a key of this mapping; Some(false): deeper; None: outside.
        let l = lines[j];
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            return Some(false);
        }
        match yaml_key(l) {
            Some((c, _, _)) if c == col => Some(true),
            _ if indent(l) > col => Some(false),
            _ => None,
        }
    };
    let found = |j: usize, spans: &mut Spans| {
        if let Some((_, "value", start)) = yaml_key(lines[j]) {
            if block_scalar(lines[j], start) {
                push_block(spans, lines, j, col);
            } else if let Some(span) = scalar_at(lines[j], start) {
                push(spans, lines, j, span);
            }
        }
    };
    for (j, _) in lines.iter().enumerate().skip(i + 1) {
        match sibling(j) {
            Some(true) if indent(lines[j]) == col => found(j, spans),
            Some(true) => break, // a new item `- key:` at this column
            Some(false) => {}
            None => break,
        }
    }
    // Before it: up to the item's first line.
    if indent(lines[i]) == col {
        for j in (0..i).rev() {
            match sibling(j) {
                Some(true) => {
                    found(j, spans);
                    if indent(lines[j]) != col {
                        break;
                    }
                }
                Some(false) => {}
                None => break,
            }
        }
    }
}

/// Rule 3 in flow style: `{name: NAME, value: VALUE}` on one line.
fn flow_env(spans: &mut Spans, lines: &[&str], i: usize) {
    let line = lines[i];
    let Some(open) = line.find('{') else { return };
    let body = &line[open + 1..];
    let close = body.find('}').unwrap_or(body.len());
    let mut name_cred = false;
    let mut value_span = None;
    let mut off = open + 1;
    for part in body[..close].split(',') {
        if let Some(colon) = part.find(':') {
            let k = part[..colon].trim().trim_matches(['"', '\'']);
            let v = &part[colon + 1..];
            let vt = v.trim();
            let vs = off + colon + 1 + (v.len() - v.trim_start().len());
            let (s, e) = match vt.as_bytes().first() {
                Some(q @ (b'"' | b'\'')) => {
                    let inner = vt[1..].strip_suffix(*q as char).unwrap_or(&vt[1..]);
                    (vs + 1, vs + 1 + inner.len())
                }
                _ => (vs, vs + vt.len()),
            };
            match k {
                "name" => name_cred = credential_name(&line[s..e]),
                "value" => value_span = Some((s, e)),
                _ => {}
            }
        }
        off += part.len() + 1;
    }
    if let (true, Some(span)) = (name_cred, value_span) {
        push(spans, lines, i, span);
    }
}

/// Rule 4 in JSON or flow style: `"KEY": "VALUE"` anywhere on a line.
fn json_pairs(spans: &mut Spans, lines: &[&str], i: usize) {
    let line = lines[i];
    let b = line.as_bytes();
    let mut k = 0;
    while let Some(q) = line[k..].find('"').map(|q| k + q) {
        let Some(kend) = line[q + 1..].find('"').map(|e| q + 1 + e) else {
            return;
        };
        let key = &line[q + 1..kend];
        let mut v = kend + 1;
        while v < b.len() && b[v] == b' ' {
            v += 1;
        }
        if b.get(v) != Some(&b':') {
            k = kend + 1;
            continue;
        }
        v += 1;
        while v < b.len() && b[v] == b' ' {
            v += 1;
        }
        let lower = key.to_ascii_lowercase();
        let wanted = credential_name(key)
            && lower != "key"
            && !lower.ends_with("name")
            && !lower.ends_with("ref");
        if b.get(v) == Some(&b'"') {
            let mut e = v + 1;
            while e < b.len() && b[e] != b'"' {
                e += if b[e] == b'\\' { 2 } else { 1 };
            }
            let e = e.min(b.len());
            if wanted {
                push(spans, lines, i, (v + 1, e));
            }
            k = (e + 1).min(b.len());
        } else {
            k = v;
        }
    }
}

/// Rule 6 on one line: `scheme://user:PASSWORD@`.
fn url_passwords(spans: &mut Spans, lines: &[&str], i: usize) {
    let line = lines[i];
    let mut from = 0;
    while let Some(at) = line[from..].find("://").map(|a| from + a + 3) {
        let end = line[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '"' | '\'' | ',' | ']' | '}'))
            .map_or(line.len(), |e| at + e);
        let authority = &line[at..end];
        if let Some(amp) = authority.rfind('@') {
            if let Some(colon) = authority[..amp].find(':') {
                push(spans, lines, i, (at + colon + 1, at + amp));
            }
        }
        from = end.max(at);
    }
}

/// Rule 5 on one line, outside the spans already taken.
fn base64_runs(spans: &mut Spans, lines: &[&str], i: usize) {
    let b = lines[i].as_bytes();
    let mut k = 0;
    while k < b.len() {
        if !b64_char(b[k]) {
            k += 1;
            continue;
        }
        let s = k;
        while k < b.len() && b64_char(b[k]) {
            k += 1;
        }
        let run = &lines[i][s..k];
        let mut e = k;
        while e < b.len() && b[e] == b'=' && e - k < 2 {
            e += 1;
        }
        let taken = spans[i].iter().any(|&(a, z)| a < e && s < z);
        if long_base64(run) && !taken {
            spans[i].push((s, e));
        }
        k = e.max(k);
    }
}

/// Redact every credential value of `text` (see the module doc).
pub fn redact(text: &str) -> Redacted {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut spans: Spans = vec![Vec::new(); lines.len()];
    for i in 0..lines.len() {
        flags(&mut spans, &lines, i);
        keys(&mut spans, &lines, i);
        flow_env(&mut spans, &lines, i);
        json_pairs(&mut spans, &lines, i);
        url_passwords(&mut spans, &lines, i);
    }
    for i in 0..lines.len() {
        base64_runs(&mut spans, &lines, i);
    }
    let mut count = 0;
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut s = std::mem::take(&mut spans[i]);
        s.sort();
        // Overlaps merge into one value.
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (a, z) in s {
            match merged.last_mut() {
                Some(last) if a < last.1 => last.1 = last.1.max(z),
                _ => merged.push((a, z)),
            }
        }
        let mut at = 0;
        for (a, z) in merged {
            out.push_str(&line[at..a]);
            out.push_str(&mark(&line[a..z]));
            count += 1;
            at = z;
        }
        out.push_str(&line[at..]);
    }
    Redacted { text: out, count }
}

/// A unified diff of two manifests (`--- a`, `+++ b`, `@@ ... @@`, then
/// lines marked ` `, `-` or `+`), as the status document carries a staging
/// conflict: the marked lines redacted as one text without their marks
/// (so an env var's `value:` still finds its `name:`), marks and headers
/// kept.
pub fn redact_diff(diff: &[String]) -> Redacted {
    let body = |l: &str| !(l.starts_with("--- ") || l.starts_with("+++ ") || l.starts_with("@@"));
    let text: Vec<&str> = diff
        .iter()
        .map(|l| {
            if body(l) {
                let mut c = l.chars();
                c.next();
                c.as_str()
            } else {
                ""
            }
        })
        .collect();
    let r = redact(&text.join("\n"));
    let lines: Vec<String> = diff
        .iter()
        .zip(r.text.split('\n'))
        .map(|(l, red)| match l.chars().next() {
            Some(mark) if body(l) => format!("{mark}{red}"),
            _ => l.clone(),
        })
        .collect();
    Redacted {
        text: lines.join("\n"),
        count: r.count,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // reads the fixture manifests directly
mod tests {
    use super::*;

    fn r(text: &str) -> String {
        redact(text).text
    }

    #[test]
    fn flags_with_a_credential_name_lose_their_value() {
        let m = mark("s3cr3t");
        assert_eq!(
            r("    - --etcd-password=s3cr3t\n"),
            format!("    - --etcd-password={m}\n")
        );
        // A plain item runs to the line's end (a comment aside).
        assert_eq!(
            r("    - --etcd-password=a b # why\n"),
            format!("    - --etcd-password={} # why\n", mark("a b"))
        );
        assert_eq!(
            r("    - \"--token=s3cr3t\"\n"),
            format!("    - \"--token={m}\"\n")
        );
        assert_eq!(
            r("    command: [\"kube-vip\", \"--bgp-secret=s3cr3t\", \"-v\"]\n"),
            format!("    command: [\"kube-vip\", \"--bgp-secret={m}\", \"-v\"]\n")
        );
        assert_eq!(
            r("    args: [--api-key=s3cr3t, --v=2]\n"),
            format!("    args: [--api-key={m}, --v=2]\n")
        );
        assert_eq!(
            r("    - -c\n    - exec x --client-secret=s3cr3t --v=2\n"),
            format!("    - -c\n    - exec x --client-secret={m} --v=2\n")
        );
        assert_eq!(
            r("    - env ETCD_PASSWORD=s3cr3t etcd\n"),
            format!("    - env ETCD_PASSWORD={m} etcd\n")
        );
    }

    #[test]
    fn a_flags_separate_value_is_redacted_on_its_line_or_the_next_item() {
        let m = mark("s3cr3t");
        assert_eq!(
            r("    - exec x --token s3cr3t --v=2\n"),
            format!("    - exec x --token {m} --v=2\n")
        );
        assert_eq!(
            r("    args: [\"--token\", \"s3cr3t\"]\n"),
            format!("    args: [\"--token\", \"{m}\"]\n")
        );
        assert_eq!(
            r("    - --token\n    - s3cr3t\n    - --v=2\n"),
            format!("    - --token\n    - {m}\n    - --v=2\n")
        );
        assert_eq!(
            r("    - \"--password\"\n    - \"s3cr3t\"\n"),
            format!("    - \"--password\"\n    - \"{m}\"\n")
        );
        // A boolean flag: the next item is a flag, not its value.
        let boolean = "    - --enable-bootstrap-token-auth\n    - --v=2\n";
        assert_eq!(r(boolean), boolean);
    }

    #[test]
    fn env_vars_with_a_credential_name_lose_their_value() {
        let m = mark("s3cr3t");
        let vip = "    env:\n    - name: vip_arp\n      value: \"true\"\n    - name: bgp_peerpass\n      value: \"s3cr3t\"\n    - name: address\n      value: 10.0.0.10\n";
        assert_eq!(r(vip), vip.replace("\"s3cr3t\"", &format!("\"{m}\"")));
        let after =
            "    - value: s3cr3t\n      name: FOO_TOKEN\n    - name: BAR\n      value: plain\n";
        assert_eq!(r(after), after.replacen("s3cr3t", &m, 1));
        let secret = "    - name: DB_SECRET\n      value: s3cr3t # rotated\n";
        assert_eq!(r(secret), secret.replacen("s3cr3t", &m, 1));
        let flow = "    env: [{name: API_TOKEN, value: \"s3cr3t\"}, {name: A, value: b}]\n";
        assert_eq!(r(flow), flow.replacen("s3cr3t", &m, 1));
        let block = "    - name: X_PASSWORD\n      value: |\n        line one\n        line two\n    - name: Y\n";
        let out = r(block);
        assert!(
            !out.contains("line one") && !out.contains("line two"),
            "{out}"
        );
        assert!(out.contains("- name: Y"), "{out}");
        // A reference to a Secret is not a value.
        let reference = "    - name: DB_PASSWORD\n      valueFrom:\n        secretKeyRef:\n          name: db-secret\n          key: password\n";
        assert_eq!(r(reference), reference);
    }

    #[test]
    fn yaml_keys_with_a_credential_name_lose_their_value() {
        let m = mark("s3cr3t");
        assert_eq!(r("  password: s3cr3t\n"), format!("  password: {m}\n"));
        assert_eq!(
            r("  bgp_peerpass: 's3cr3t'\n"),
            format!("  bgp_peerpass: '{m}'\n")
        );
        assert_eq!(
            r("  \"token\": \"s3cr3t\",\n"),
            format!("  \"token\": \"{m}\",\n")
        );
        assert_eq!(
            r("{\"kind\":\"Pod\",\"etcdPassword\":\"s3cr3t\",\"n\":1}\n"),
            format!("{{\"kind\":\"Pod\",\"etcdPassword\":\"{m}\",\"n\":1}}\n")
        );
        let kept = "  secretName: etcd-certs\n  tokenFile: /var/run/token\n  key: password\n";
        assert_eq!(r(kept), kept);
    }

    #[test]
    fn long_base64_is_redacted_and_hex_digests_stay() {
        use base64::Engine as _;
        // A PKCS#8 EC key in DER, in base64 without PEM armour.
        let der: Vec<u8> = (0u8..=120).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        assert!(b64.len() >= BASE64_MIN);
        let doc = format!("  annotations:\n    x/blob: {b64}\n");
        let out = redact(&doc);
        assert_eq!(
            out.text,
            format!("  annotations:\n    x/blob: {}\n", mark(&b64))
        );
        assert_eq!(out.count, 1);
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&der);
        assert!(!r(&format!("    - {url}\n")).contains(&url));
        let digest = format!(
            "    image: registry.k8s.io/etcd:3.5.15-0@sha256:{}\n",
            "0123456789abcdef".repeat(4)
        );
        assert_eq!(r(&digest), digest);
        let short = "    - --feature-gates=AllAlpha1=false\n";
        assert_eq!(r(short), short);
    }

    #[test]
    fn paths_booleans_durations_and_redacted_values_stay() {
        let kept = "    - --service-account-key-file=/etc/kubernetes/pki/sa.pub\n    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n    - --enable-bootstrap-token-auth=true\n    - --service-account-max-token-expiration=48h\n    - --token-ttl=1h30m0s\n    - --controllers=*,bootstrapsigner,tokencleaner\n";
        assert_eq!(r(kept), kept);
        let once = r("    - --etcd-password=s3cr3t\n");
        assert_eq!(r(&once), once, "idempotent");
        assert_eq!(redact(&once).count, 0);
    }

    #[test]
    fn the_fixture_manifests_come_out_unchanged() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for variant in ["rsa", "ecdsa"] {
            let m = dir.join(format!("fixtures/nodes/{variant}/etc/kubernetes/manifests"));
            let Ok(entries) = std::fs::read_dir(&m) else {
                continue;
            };
            for e in entries {
                let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
                let out = redact(&text);
                assert_eq!(out.count, 0, "{variant}");
                assert_eq!(out.text, text);
            }
        }
    }

    /// Any text, however odd (multi-byte characters next to delimiters,
    /// unclosed quotes, stray escapes): no panic, the same lines.
    #[test]
    fn any_text_comes_out_with_its_lines() {
        let pieces = [
            "- ",
            "--token",
            "=",
            " ",
            "\"",
            "'",
            "name: ",
            "value: ",
            "X_SECRET",
            "\n",
            "\u{e9}",
            "[",
            "{",
            ",",
            "}",
            "]",
            " #",
            "|",
            "  ",
            "/etc",
            "Ab9+",
            "password: ",
            "\u{b5}s",
            "\\",
            ":",
            "-",
            "1h",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..5000 {
            let mut t = String::new();
            for _ in 0..next() % 60 {
                t.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let out = redact(&t);
            assert_eq!(out.text.split('\n').count(), t.split('\n').count(), "{t:?}");
        }
    }

    #[test]
    fn kube_vip_bgp_peers_and_url_passwords_are_redacted() {
        let peers = "    - name: bgp_peers\n      value: 10.0.0.1:65000:s3cr3t:false\n";
        assert_eq!(
            r(peers),
            peers.replace(
                "10.0.0.1:65000:s3cr3t:false",
                &mark("10.0.0.1:65000:s3cr3t:false")
            )
        );
        assert_eq!(
            r("    - --etcd-servers=https://root:s3cr3t@10.0.0.1:2379,https://b:2379\n"),
            format!(
                "    - --etcd-servers=https://root:{}@10.0.0.1:2379,https://b:2379\n",
                mark("s3cr3t")
            )
        );
        let plain = "    - --etcd-servers=https://127.0.0.1:2379\n    - http://user@host/x:y@z\n";
        assert_eq!(r(plain), plain);
    }

    #[test]
    fn a_diffs_lines_are_redacted_with_their_marks_kept() {
        let diff: Vec<String> = [
            "--- /etc/kubernetes/manifests/etcd.yaml",
            "+++ /etc/kubernetes/nvke-cert-renewal-staging/etcd.yaml",
            "@@ -3,3 +3,3 @@",
            "     - name: DB_TOKEN",
            "-      value: old-s3cr3t",
            "+      value: new-s3cr3t",
            "-    - --etcd-password=a",
            "+    - --etcd-password=b",
            "     - --v=2",
        ]
        .map(String::from)
        .to_vec();
        let out = redact_diff(&diff);
        assert_eq!(out.count, 4);
        let want = [
            diff[0].clone(),
            diff[1].clone(),
            diff[2].clone(),
            diff[3].clone(),
            format!("-      value: {}", mark("old-s3cr3t")),
            format!("+      value: {}", mark("new-s3cr3t")),
            format!("-    - --etcd-password={}", mark("a")),
            format!("+    - --etcd-password={}", mark("b")),
            diff[8].clone(),
        ];
        assert_eq!(out.text, want.join("\n"));
        let odd = [
            "\u{e9}--token=x".to_string(),
            String::new(),
            "(over 1000 lines)".into(),
        ];
        assert_eq!(
            redact_diff(&odd).text,
            format!("\u{e9}--token={}\n\n(over 1000 lines)", mark("x"))
        );
    }

    #[test]
    fn credential_names() {
        for n in [
            "etcd-password",
            "token",
            "FOO_TOKEN",
            "DB_SECRET",
            "api-key",
            "bgp_peerpass",
            "passwd",
            "bgp_peers",
        ] {
            assert!(credential_name(n), "{n}");
        }
        for n in ["secure-port", "v", "address", "kubeconfig", "vip_arp"] {
            assert!(!credential_name(n), "{n}");
        }
    }
}
