//! The redacted documents written back as YAML: block style as kubeadm
//! writes a manifest (a sequence under a key at the key's indent, two
//! spaces a level, `{}` and `[]` for empty collections), every scalar on
//! one line, plain where it reads back as the same string in YAML 1.1 and
//! 1.2 alike, JSON-style double quotes otherwise. Deterministic: the same
//! nodes give the same bytes. Comments, anchors and tags are not kept
//! (aliases are expanded where they stood).

use crate::rules::yaml::Node;
use std::fmt::Write as _;

/// Longest key written as an implicit key (YAML allows 1024 characters);
/// a longer one, or a collection, is written after `? `.
const IMPLICIT_KEY_MAX: usize = 1000;

/// Every document of a stream: one as it is, several each after `---`.
pub fn documents(docs: &[Node]) -> String {
    let mut out = String::new();
    for d in docs {
        if docs.len() > 1 {
            out.push_str("---\n");
        }
        block(&mut out, d, 0, false);
    }
    out
}

/// A float that reads back as the same float (never as an integer).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    // `{:?}` is the shortest text that reads back as `f`; YAML 1.1 also
    // wants a `.` in the mantissa and a sign in the exponent.
    let s = format!("{f:?}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, ""));
    let mant = if mant.contains('.') {
        mant.to_string()
    } else {
        format!("{mant}.0")
    };
    match exp {
        "" => mant,
        e if e.starts_with('-') => format!("{mant}e{e}"),
        e => format!("{mant}e+{e}"),
    }
}

/// A node at `indent`; `inline`: its first line follows a `- ` already written.
fn block(out: &mut String, n: &Node, indent: usize, inline: bool) {
    match n {
        Node::Seq(items) if !items.is_empty() => seq(out, items, indent, inline),
        Node::Map(pairs) if !pairs.is_empty() => map(out, pairs, indent, inline),
        _ => {
            if !inline {
                pad(out, indent);
            }
            out.push_str(&scalar(n));
            out.push('\n');
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn seq(out: &mut String, items: &[Node], indent: usize, inline: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline {
            pad(out, indent);
        }
        out.push_str("- ");
        block(out, item, indent + 2, true);
    }
}

fn map(out: &mut String, pairs: &[(Node, Node)], indent: usize, inline: bool) {
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 || !inline {
            pad(out, indent);
        }
        let key = key(k);
        let explicit = key.len() > IMPLICIT_KEY_MAX || matches!(k, Node::Seq(_) | Node::Map(_));
        if explicit {
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            pad(out, indent);
        } else {
            out.push_str(&key);
        }
        out.push(':');
        match v {
            Node::Map(p) if !p.is_empty() => {
                out.push('\n');
                map(out, p, indent + 2, false);
            }
            // A sequence under a key at the key's indent, as kubeadm
            // writes it (after `? KEY` it must go deeper).
            Node::Seq(s) if !s.is_empty() => {
                out.push('\n');
                seq(out, s, if explicit { indent + 2 } else { indent }, false);
            }
            _ => {
                out.push(' ');
                out.push_str(&scalar(v));
                out.push('\n');
            }
        }
    }
}

/// A key on one line: a scalar as a scalar, a collection in flow style.
fn key(k: &Node) -> String {
    match k {
        Node::Seq(_) | Node::Map(_) => {
            let mut s = String::new();
            flow(&mut s, k);
            s
        }
        _ => scalar(k),
    }
}

/// A collection on one line, every string quoted (flow context).
fn flow(out: &mut String, n: &Node) {
    match n {
        Node::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow(out, item);
            }
            out.push(']');
        }
        Node::Map(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow(out, k);
                out.push_str(": ");
                flow(out, v);
            }
            out.push('}');
        }
        Node::Str(s) => quoted(out, s),
        other => out.push_str(&scalar(other)),
    }
}

/// A scalar (or an empty collection) on one line.
fn scalar(n: &Node) -> String {
    match n {
        Node::Null => "null".into(),
        Node::Bool(b) => b.to_string(),
        Node::Int(s) => s.clone(),
        Node::Float(f) => float(*f),
        Node::Str(s) if plain(s) => s.clone(),
        Node::Str(s) => {
            let mut out = String::with_capacity(s.len() + 2);
            quoted(&mut out, s);
            out
        }
        Node::Seq(_) => "[]".into(),
        Node::Map(_) => "{}".into(),
    }
}

/// `s` in double quotes, escaped as JSON escapes it (YAML reads JSON's
/// escapes), and every character YAML does not print escaped too.
fn quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20
                || (0x7f..=0x9f).contains(&(c as u32))
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ) =>
            {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether `s` can be written plain in block context and read back as this
/// string by any YAML reader: printable ASCII, no indicator first, no
/// `: ` or ` #`, and nothing a resolver would type (null, a boolean of YAML
/// 1.1 or 1.2, a number, a 1.1 sexagesimal or date).
fn plain(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    if !b.iter().all(|c| (0x20..0x7f).contains(c)) || first == b' ' || last == b' ' {
        return false;
    }
    let indicator = match first {
        b'-' => b.len() == 1 || b[1] == b' ',
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' => true,
        _ => false,
    };
    !(indicator || s.contains(": ") || s.contains(" #") || last == b':' || typed(s))
}

/// Whether a plain `s` would be read as something other than a string.
fn typed(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "~" | "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "<<" | "="
    ) {
        return true;
    }
    let t = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    if matches!(t, ".inf" | ".nan") {
        return true;
    }
    let digits = |r: &str, ok: fn(u8) -> bool| {
        !r.is_empty() && r.bytes().all(|c| ok(c) || c == b'_') && r.bytes().any(ok)
    };
    for (prefix, ok) in [
        ("0x", (|c: u8| c.is_ascii_hexdigit()) as fn(u8) -> bool),
        ("0o", |c| (b'0'..=b'7').contains(&c)),
        ("0b", |c| c == b'0' || c == b'1'),
    ] {
        if t.strip_prefix(prefix).is_some_and(|r| digits(r, ok)) {
            return true;
        }
    }
    let dec = |c: u8| c.is_ascii_digit();
    // A float of 1.1 or 1.2 (`1.`, `.5`, `1e3`, `1_000.5`) or an integer.
    let (mant, exp) = match t.find('e') {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e), dec));
    let mant_ok = match mant.split_once('.') {
        Some((i, f)) => {
            (i.is_empty() || digits(i, dec))
                && (f.is_empty() || digits(f, dec))
                && (!i.is_empty() || !f.is_empty())
        }
        None => digits(mant, dec),
    };
    if mant_ok && exp_ok {
        return true;
    }
    // 1.1's base 60 (`1:20`, `190:20:30.15`) and dates (`2001-12-14...`).
    let mut parts = t.split(':');
    let head = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    if !rest.is_empty()
        && digits(head, dec)
        && rest.iter().enumerate().all(|(i, p)| {
            let p = if i + 1 == rest.len() {
                p.split_once('.').map_or(*p, |(a, _)| a)
            } else {
                p
            };
            !p.is_empty() && p.len() <= 2 && p.bytes().all(dec)
        })
    {
        return true;
    }
    let b = t.as_bytes();
    b.len() >= 6
        && b[..4].iter().all(|c| c.is_ascii_digit())
        && b[4] == b'-'
        && b[5].is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_str() -> impl Strategy<Value = String> {
        let special = prop::sample::select(vec![
            ' ', '-', ':', '#', '"', '\'', '\\', '\n', '\t', '[', '{', ',', '*', '&', '!', '|',
            '>', '%', '@', '`', '?', '~', '.', '0', '1', 'e', 'x', 'y', 'n', '_', '+', '<', '=',
            '\u{85}', '\u{2028}', '\u{feff}', 'é',
        ]);
        prop::collection::vec(prop_oneof![3 => special, 1 => any::<char>()], 0..10)
            .prop_map(String::from_iter)
    }

    fn arb_node() -> impl Strategy<Value = Node> {
        let leaf = prop_oneof![
            Just(Node::Null),
            any::<bool>().prop_map(Node::Bool),
            any::<i64>().prop_map(|i| Node::Int(i.to_string())),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Node::Float),
            arb_str().prop_map(Node::Str),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Node::Seq),
                prop::collection::vec((arb_str(), inner), 0..6).prop_map(|pairs| {
                    let mut seen = std::collections::HashSet::new();
                    Node::Map(
                        pairs
                            .into_iter()
                            .filter(|(k, _)| seen.insert(k.clone()))
                            .map(|(k, v)| (Node::Str(k), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        /// Whatever the strings hold, the text reads back as the same
        /// documents, and writing it again gives the same bytes.
        #[test]
        fn every_tree_reads_back_as_itself(docs in prop::collection::vec(arb_node(), 1..3)) {
            // The reader leaves null documents out; a document is a mapping here.
            let docs: Vec<Node> = docs.into_iter().map(|d| Node::Map(vec![(Node::Str("k".into()), d)])).collect();
            let text = documents(&docs);
            let back = crate::rules::yaml::parse_documents(text.as_bytes())
                .map_err(|e| TestCaseError::fail(format!("{e}:\n{text}")))?;
            prop_assert_eq!(&back, &docs, "{}", text);
            prop_assert_eq!(documents(&back), text);
        }
    }

    #[test]
    fn plain_only_where_it_reads_back_as_the_string() {
        for s in [
            "10.0.0.10",
            "3.5.15-0",
            "--token=x",
            "kube-apiserver",
            "/etc/kubernetes/pki/sa.pub",
            "registry.k8s.io/etcd:3.5.15-0@sha256:ab",
            "<redacted sha256:00ff>",
            "a b",
            "1e",
            "0x",
            "+",
            "Node,RBAC",
            "--controllers=*,bootstrapsigner",
        ] {
            assert!(plain(s), "{s}");
        }
        for s in [
            "",
            " a",
            "a ",
            "-",
            "- a",
            "true",
            "True",
            "yes",
            "N",
            "off",
            "~",
            "null",
            "<<",
            "6443",
            "+1",
            "-1",
            "0755",
            "1_000",
            "1.5",
            ".5",
            "1.",
            "1e3",
            "1E-3",
            "0x1F",
            "0o17",
            "0b101",
            ".inf",
            "-.Inf",
            ".NaN",
            "12:30",
            "1:20:30.5",
            "2001-12-14",
            "a: b",
            "a #b",
            "a:",
            "#a",
            "&a",
            "*a",
            "!a",
            "|",
            ">",
            "'a",
            "\"a",
            "%a",
            "@a",
            "`a",
            "[a",
            "{a",
            "?a",
            ":a",
            "a\nb",
            "é",
            "a\tb",
        ] {
            assert!(!plain(s), "{s:?}");
        }
    }

    #[test]
    fn quotes_escape_what_yaml_does_not_print() {
        let mut out = String::new();
        quoted(&mut out, "a\"b\\c\nd\u{1}\u{85}\u{2028}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001\\u0085\\u2028é\"");
        assert_eq!(float(1.0), "1.0");
        assert_eq!(float(1.1), "1.1");
        assert_eq!(float(1e300), "1.0e+300");
        assert_eq!(float(-2.5e-7), "-2.5e-7");
        assert_eq!(float(f64::NEG_INFINITY), "-.inf");
    }
}
