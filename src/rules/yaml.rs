//! YAML as the runbook reads it (SPEC v1.2 section 10, "Bounded reads"):
//! static pod manifests, the kubelet's configuration and kubeconfigs, parsed
//! by serde-saphyr under a budget, never expanded without one.
//!
//! One anchor and a few thousand aliases in a 58 KB file expanded to about
//! 10^8 nodes under serde_yaml (archived, 0.9.34+deprecated), and every mode
//! died of it. Here a file over a bound is [`YamlError::Bound`], which names
//! the bound: the callers refuse the file as hostile, naming it. The bounds
//! are far above any real kubeadm or kubelet file (the largest real-looking
//! manifests, in the tests below, use less than a tenth of each);
//! docs/decisions.md, "YAML within bounds", lists them.
//!
//! Pure: bytes in, a value out. For [`parse_value`] only the first
//! document counts, as the kubelet's own decoder (sigs.k8s.io/yaml) reads
//! a file; the others still count against the bounds. [`parse_documents`]
//! gives every one as written ([`Node`]: the evidence redactor leaves none
//! unread and keeps keys in order).

use serde_saphyr::budget::{Budget, BudgetBreach};

/// The largest file parsed: the node layer reads manifests and kubeconfigs
/// with the same cap (`fsx::NODE_FILE_MAX`).
pub const MAX_BYTES: usize = 1024 * 1024;
/// Nesting of sequences and mappings (a kubeadm manifest nests about 8 deep).
pub const MAX_DEPTH: usize = 64;
/// Alias uses (`*name`); kubeadm and the kubelet write none.
pub const MAX_ALIASES: usize = 256;
/// Anchors (`&name`); kubeadm and the kubelet write none.
pub const MAX_ANCHORS: usize = 256;
/// Nodes (scalars, sequences, mappings) in the whole stream, as written
/// (a kubeadm manifest has a few hundred).
pub const MAX_NODES: usize = 100_000;
/// Documents in the stream (a manifest has one).
pub const MAX_DOCUMENTS: usize = 16;
/// Events replayed by all aliases together (what an alias bomb multiplies).
pub const MAX_REPLAYED: usize = 100_000;
/// Bytes of scalar text in the stream, as written.
pub const MAX_SCALAR_BYTES: usize = 2 * MAX_BYTES;
/// Parser events in the whole stream.
pub const MAX_EVENTS: usize = 4 * MAX_NODES;

/// Why a YAML file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YamlError {
    /// Over a bound: hostile input. The text names the bound, e.g.
    /// `more than 256 aliases`.
    Bound(String),
    /// Not YAML (or not the expected shape): where it went wrong, never the
    /// text (a kubeconfig holds key data).
    Syntax(String),
}

impl YamlError {
    pub fn is_bound(&self) -> bool {
        matches!(self, YamlError::Bound(_))
    }
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            YamlError::Bound(b) => write!(f, "hostile YAML ({b}); refusing to read it"),
            YamlError::Syntax(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for YamlError {}

fn options() -> serde_saphyr::Options {
    let mut b = Budget::default();
    b.max_reader_input_bytes = Some(MAX_BYTES);
    b.max_events = MAX_EVENTS;
    b.max_aliases = MAX_ALIASES;
    b.max_anchors = MAX_ANCHORS;
    b.max_recorded_anchor_events = MAX_REPLAYED;
    b.max_recorded_anchor_bytes = MAX_SCALAR_BYTES;
    b.max_depth = MAX_DEPTH;
    // One past the bound, so that the budget's own count names it.
    b.flow_nesting_limit = MAX_DEPTH + 1;
    b.max_documents = MAX_DOCUMENTS;
    b.max_nodes = MAX_NODES;
    b.max_total_scalar_bytes = MAX_SCALAR_BYTES;
    b.max_merge_keys = MAX_ALIASES;
    // Aliases are bounded by their number above; a ratio to anchors would
    // add nothing a real file needs.
    b.enforce_alias_anchor_ratio = false;
    let mut o = serde_saphyr::Options::default();
    o.budget = Some(b);
    o.alias_limits.max_total_replayed_events = MAX_REPLAYED;
    o.alias_limits.max_replay_stack_depth = MAX_DEPTH;
    // Errors never quote the input (a kubeconfig holds key data).
    o.with_snippet = false;
    // Scalars typed as serde_yaml (YAML 1.2 core) typed them, as the code
    // before read them: `y`, `yes`, `on` are strings, not booleans (a
    // kubeconfig user named `y` stays a name); `0755` and `1_000` too.
    o.strict_booleans = true;
    o.leading_zero_numbers_as_strings = true;
    o.underscored_numbers_as_strings = true;
    o
}

/// The bound a breach names, in words.
fn breach(b: &BudgetBreach) -> String {
    use BudgetBreach as B;
    // The count stops at the first one over: say the bound.
    let over = |_: usize, what: &str, max: usize| format!("more than {max} {what}");
    match b {
        B::Aliases { aliases } => over(*aliases, "aliases", MAX_ALIASES),
        B::Anchors { anchors } => over(*anchors, "anchors", MAX_ANCHORS),
        B::Depth { depth } => over(*depth, "levels of nesting", MAX_DEPTH),
        B::Documents { documents } => over(*documents, "documents", MAX_DOCUMENTS),
        B::Nodes { nodes } => over(*nodes, "nodes", MAX_NODES),
        B::Events { events } => over(*events, "parser events", MAX_EVENTS),
        B::ScalarBytes { total_scalar_bytes } => {
            over(*total_scalar_bytes, "bytes of scalars", MAX_SCALAR_BYTES)
        }
        B::InputBytes { input_bytes } => over(*input_bytes, "bytes", MAX_BYTES),
        B::RecordedAnchorEvents {
            recorded_anchor_events,
        } => over(
            *recorded_anchor_events,
            "events copied for anchors",
            MAX_REPLAYED,
        ),
        B::RecordedAnchorBytes {
            recorded_anchor_bytes,
        } => over(
            *recorded_anchor_bytes,
            "bytes copied for anchors",
            MAX_SCALAR_BYTES,
        ),
        B::MergeKeys { merge_keys } => over(*merge_keys, "merge keys", MAX_ALIASES),
        other => format!("over a bound: {}", clean(&format!("{other:?}"))),
    }
}

/// At most 120 printable ASCII characters of a parser's own words.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_graphic() { c } else { ' ' })
        .take(120)
        .collect()
}

fn classify(e: &serde_saphyr::Error) -> YamlError {
    use serde_saphyr::Error as E;
    // The cause, under the wrappers that add where it was found.
    let mut e = e;
    for _ in 0..8 {
        e = match e {
            E::WithSnippet { error, .. } | E::AliasError { error, .. } => error,
            other => other,
        };
    }
    match e {
        E::Budget { breach: b, .. } => YamlError::Bound(breach(b)),
        E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => YamlError::Bound(format!(
            "its aliases replay more than {MAX_REPLAYED} events"
        )),
        E::IOError { .. } => YamlError::Bound(format!("more than {MAX_BYTES} bytes")),
        // The scanner's own flow-nesting limit (one past the budget's depth)
        // can stop a deep flow collection before the budget counts it.
        // (Matched on the parser's own words, not the error's Display,
        // which would link the snippet renderer into the binary.)
        E::ExternalMessage { msg, .. } if msg.contains("recursion limit exceeded") => {
            YamlError::Bound(format!("more than {MAX_DEPTH} levels of nesting"))
        }
        // A duplicate key (the parser's default policy refuses it): named,
        // never the key itself.
        E::DuplicateMappingKey { location, .. } => YamlError::Syntax(format!(
            "does not parse as YAML: a duplicate mapping key at line {}, column {}",
            location.line(),
            location.column()
        )),
        other => YamlError::Syntax(match other.location() {
            Some(l) => format!(
                "does not parse as YAML at line {}, column {}",
                l.line(),
                l.column()
            ),
            None => "does not parse as YAML".to_string(),
        }),
    }
}

/// The first document of a YAML stream as a plain value (an empty stream:
/// `Null`), within the bounds: the [`Node`] tree, as `serde_json::Value`
/// reads it (mappings by key; a key that is a sequence or mapping does
/// not read, as it never did).
pub fn parse_value(bytes: &[u8]) -> Result<serde_json::Value, YamlError> {
    match parse_documents(bytes)?.into_iter().next() {
        Some(doc) => to_json(doc),
        None => Ok(serde_json::Value::Null),
    }
}

/// Every document of a YAML stream (empty and null documents left out),
/// within the bounds, as written: the evidence redactor
/// (`rules::redact`) reads every one.
pub fn parse_documents(bytes: &[u8]) -> Result<Vec<Node>, YamlError> {
    if bytes.len() > MAX_BYTES {
        return Err(YamlError::Bound(format!(
            "{} bytes, more than {MAX_BYTES}",
            bytes.len()
        )));
    }
    serde_saphyr::from_slice_multiple_with_options(bytes, options()).map_err(|e| classify(&e))
}

/// One node of a YAML document: scalars typed as the parser typed them,
/// sequences in order, mappings as their pairs in the order written
/// (never a map that sorts or merges keys). The only type the parser
/// reads into: each type serde-saphyr's deserializer is instantiated for
/// costs about 40 KB of the static binary (docs/decisions.md, "Redaction
/// by structure"), so [`parse_value`] is made from this one. A duplicate
/// key never gets here (the parser's default `DuplicateKeyPolicy::Error`);
/// aliases are expanded, within the budget, where they stand.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    /// An integer, as its decimal digits (`-12`, `6443`).
    Int(String),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// The pairs in the order written.
    Map(Vec<(Node, Node)>),
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A node as `serde_json::Value` (what the readers of manifests,
/// kubeconfigs and the kubelet's configuration walk).
fn to_json(n: Node) -> Result<serde_json::Value, YamlError> {
    use serde_json::Value;
    Ok(match n {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Int(s) => s
            .parse::<serde_json::Number>()
            .map(Value::Number)
            .map_err(|_| {
                YamlError::Syntax("does not parse as YAML: an integer out of range".into())
            })?,
        Node::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        Node::Str(s) => Value::String(s),
        Node::Seq(items) => Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?),
        Node::Map(pairs) => {
            let mut m = serde_json::Map::new();
            for (k, v) in pairs {
                // A scalar key reads as its text, as a string-keyed map
                // read it before (`8080: x`, `true: x`).
                let k = match k {
                    Node::Str(k) | Node::Int(k) => k,
                    Node::Bool(b) => b.to_string(),
                    Node::Float(f) => f.to_string(),
                    _ => {
                        return Err(YamlError::Syntax(
                            "does not parse as YAML: a mapping key that is not a scalar".into(),
                        ))
                    }
                };
                m.insert(k, to_json(v)?);
            }
            Value::Object(m)
        }
    })
}

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> serde::de::Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML node")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        serde::Deserialize::deserialize(d)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v.to_string()))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(v.to_string()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = seq.next_element::<Node>()? {
            items.push(n);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut pairs = Vec::new();
        while let Some(pair) = map.next_entry::<Node, Node>()? {
            pairs.push(pair);
        }
        Ok(Node::Map(pairs))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // reads the fixture files directly
mod tests {
    use super::*;

    /// What `serde_json::Value` read straight from the parser (the code
    /// before [`Node`]): the value, or only whether it failed.
    fn straight(bytes: &[u8]) -> Result<serde_json::Value, ()> {
        serde_saphyr::from_slice_multiple_with_options::<serde_json::Value>(bytes, options())
            .map(|d| d.into_iter().next().unwrap_or(serde_json::Value::Null))
            .map_err(|_| ())
    }

    /// The readers of manifests, kubeconfigs and the kubelet's
    /// configuration see through [`Node`] what they saw before.
    #[test]
    fn parse_value_reads_as_the_value_read_straight() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nodes");
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for variant in ["rsa", "ecdsa"] {
            let k = dir.join(variant).join("etc/kubernetes");
            for sub in [k.clone(), k.join("manifests")] {
                for e in std::fs::read_dir(&sub).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_file() {
                        inputs.push(std::fs::read(p).unwrap());
                    }
                }
            }
        }
        assert!(inputs.len() >= 18, "{}", inputs.len());
        for odd in [
            "a: 18446744073709551615\nb: -9223372036854775808\nc: 1e3\nd: .5\ne: -0.0\n",
            "a: 0x1F\nb: 0o17\nc: 0755\nd: 1_000\ne: +12\nf: 99999999999999999999\n",
            "a: ~\nb: null\nc:\nd: true\ne: y\nf: 'true'\ng: !!str 12\n",
            "a: &x {k: v, l: [1, 2]}\nb: *x\nc:\n  <<: *x\n  k: w\n",
            "1: a\ntrue: b\n~: c\n1.5: d\n",
            "? [a, b]\n: c\n",
            "? {a: b}\n: c\n",
            "a: !!binary aGVsbG8=\nb: !custom x\n",
            "---\n---\na: 1\n---\nb: 2\n",
            "[1, 2, {a: b}]\n",
            "just a scalar\n",
            "a: .inf\n",
            "a: [\n",
            "{\"a\": 1, \"a\": 2}\n",
        ] {
            inputs.push(odd.as_bytes().to_vec());
        }
        let mut read = 0;
        for bytes in &inputs {
            let text = String::from_utf8_lossy(bytes);
            match (parse_value(bytes), straight(bytes)) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{text}");
                    read += 1;
                }
                (Err(_), Err(())) => {}
                (a, b) => panic!("{a:?} but straight {b:?}: {text}"),
            }
        }
        // Every fixture and all but six odd ones, which never read: keys
        // that are not strings (`1:`, `true:`, a sequence, a mapping),
        // `.inf`, an unclosed `[`, a duplicate key.
        assert_eq!(read, inputs.len() - 6);
    }

    /// The 56 KB file of issue 25: one anchor of 16,000 scalars and 6,000
    /// aliases of it, about 10^8 nodes once expanded (serde_yaml aborted
    /// at 2 GiB).
    fn issue_25_bomb() -> Vec<u8> {
        let mut s = format!("a: &a [{}]\nb: [", ["x"; 16_000].join(","));
        s.push_str(&["*a"; 6000].join(", "));
        s.push_str("]\n");
        s.into_bytes()
    }

    /// One anchor of ten scalars, `n` aliases of it.
    fn alias_bomb(n: usize) -> Vec<u8> {
        let mut s = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: [");
        for i in 0..n {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str("*a");
        }
        s.push_str("]\n");
        s.into_bytes()
    }

    /// Nine levels of ten aliases each of the level before: a few hundred
    /// bytes that expand to 10^9 scalars.
    fn laughs() -> Vec<u8> {
        let mut s = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..10 {
            let p = i - 1;
            s.push_str(&format!(
                "l{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
            ));
        }
        s.into_bytes()
    }

    fn bound(r: Result<serde_json::Value, YamlError>) -> String {
        match r {
            Err(YamlError::Bound(b)) => b,
            other => panic!("expected a bound, got {other:?}"),
        }
    }

    #[test]
    fn an_alias_bomb_is_refused_by_its_aliases() {
        let b = bound(parse_value(&alias_bomb(6000)));
        assert_eq!(b, "more than 256 aliases");
        let b = bound(parse_value(&issue_25_bomb()));
        // Its expansion is stopped at the node bound, before the aliases run out.
        assert_eq!(b, "more than 100000 nodes");
        // Within the bound, aliases are read as YAML means them.
        let v = parse_value(&alias_bomb(MAX_ALIASES)).unwrap();
        assert_eq!(v["b"].as_array().unwrap().len(), MAX_ALIASES);
        assert_eq!(v["b"][0][9], "x");
    }

    #[test]
    fn nested_laughs_are_refused_by_what_they_replay() {
        let b = bound(parse_value(&laughs()));
        assert!(b.contains("replay") || b.contains("copied"), "{b}");
    }

    /// Few aliases of one big scalar: bounded by the bytes they replay.
    #[test]
    fn aliases_of_a_big_scalar_are_bounded_by_their_bytes() {
        let mut s = format!("a: &a {}\nb: [", "x".repeat(900_000));
        s.push_str(&["*a"; 200].join(", "));
        s.push_str("]\n");
        let b = bound(parse_value(s.as_bytes()));
        assert_eq!(b, "more than 2097152 bytes of scalars");
    }

    #[test]
    fn depth_is_bounded_and_the_bound_itself_is_read() {
        let deep = |n: usize| format!("{}x{}", "[".repeat(n), "]".repeat(n)).into_bytes();
        assert!(parse_value(&deep(MAX_DEPTH)).is_ok());
        let b = bound(parse_value(&deep(MAX_DEPTH + 1)));
        assert!(b.contains("levels of nesting"), "{b}");
        // Block nesting too, and no stack overflow far past the bound.
        let mut block = String::new();
        for i in 0..500 {
            block.push_str(&" ".repeat(i));
            block.push_str("k:\n");
        }
        assert!(bound(parse_value(block.as_bytes())).contains("nesting"));
        assert_eq!(
            bound(parse_value(&deep(100_000))),
            "more than 64 levels of nesting"
        );
    }

    #[test]
    fn anchors_nodes_documents_and_size_are_bounded() {
        let anchors: String = (0..300).map(|i| format!("k{i}: &a{i} v\n")).collect();
        assert!(bound(parse_value(anchors.as_bytes())).contains("anchors"));
        let nodes: String = (0..MAX_NODES).map(|_| "- x\n").collect();
        assert!(bound(parse_value(nodes.as_bytes())).contains("nodes"));
        let docs = "---\nx: 1\n".repeat(1000);
        assert!(bound(parse_value(docs.as_bytes())).contains("documents"));
        let big = vec![b'x'; MAX_BYTES + 1];
        assert!(bound(parse_value(&big)).contains("bytes"));
    }

    /// Scalars are typed as serde_yaml typed them (YAML 1.2 core).
    #[test]
    fn scalars_are_typed_as_yaml_1_2_core() {
        let v = parse_value(
            b"a: y\nb: yes\nc: on\nd: true\ne: 0755\nf: 1_000\ng: 12\nh: ~\ni: False\n",
        )
        .unwrap();
        assert_eq!(v["a"], "y");
        assert_eq!(v["b"], "yes");
        assert_eq!(v["c"], "on");
        assert_eq!(v["d"], true);
        assert_eq!(v["e"], "0755");
        assert_eq!(v["f"], "1_000");
        assert_eq!(v["g"], 12);
        assert!(v["h"].is_null());
        assert_eq!(v["i"], false);
    }

    #[test]
    fn the_first_document_counts_and_errors_quote_nothing() {
        let v = parse_value(b"a: 1\n---\nb: 2\n").unwrap();
        assert_eq!(v["a"], 1);
        assert!(v.get("b").is_none());
        assert_eq!(parse_value(b"").unwrap(), serde_json::Value::Null);
        assert_eq!(parse_value(b"  \n").unwrap(), serde_json::Value::Null);
        match parse_value(b"key: [secret-key-data\n") {
            Err(YamlError::Syntax(s)) => {
                assert!(!s.contains("secret"), "{s}");
                assert!(s.starts_with("does not parse as YAML"), "{s}");
            }
            other => panic!("{other:?}"),
        }
        let e = YamlError::Bound("more than 6 aliases".into()).to_string();
        assert_eq!(e, "hostile YAML (more than 6 aliases); refusing to read it");
        assert!(!e.chars().any(char::is_control));
    }
}
