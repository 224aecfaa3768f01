//! Credentials out of the evidence bundle, by structure (SPEC 6, v1.3):
//! the bytes of a manifest in, its documents parsed with the bounded YAML
//! reader (JSON is YAML; [`crate::rules::yaml`], every bound of SPEC 10)
//! into its order-keeping tree ([`Node`]: pairs in the order written, a
//! duplicate key refused, aliases expanded where they stand),
//! every scalar that is a credential replaced by `<redacted sha256:HEX>`
//! (HEX the sha256 of the value's bytes, so two bundles of the same node
//! still compare), the documents written back as YAML ([`emit`]). Where a
//! value stands on the page (the next line, a flow list over two lines,
//! JSON with one argument a line, a plain scalar folded over lines) does
//! not matter: the parser has put it in its place. A file the reader
//! refuses (over a bound, not YAML, a duplicate key) is an error: the
//! bundle leaves it out and says why, never copies it as it is.
//!
//! A **credential name** (lower-cased) contains `password`, `passwd`,
//! `passphrase`, `token`, `secret` or `key`, or one of its parts (split at
//! `-`, `_`, `.`) ends in `pass` (kube-vip's `bgp_peerpass`), or it is
//! kube-vip's `bgp_peers` (each peer's `address:AS:password:multihop`).
//! A **credential key** (a mapping key, a name without dashes) is a
//! credential name or `Authorization` (any case), but not `key` itself nor
//! a name ending in `name` or `ref` (`secretKeyRef`, `secretName`:
//! references, not values).
//!
//! What is a credential, wherever it stands ([`Walk`]):
//!
//! 1. **Flags**: in a sequence (block, flow or JSON), an item `--NAME=V`,
//!    `-NAME=V` (V: the rest of the item, blanks and all), and the item
//!    after `--NAME` or `-NAME` alone, NAME a credential name (unless that
//!    item starts with `--`: then it is the next flag, and the first a
//!    boolean such as `--enable-bootstrap-token-auth`).
//! 2. **Env vars and headers**: the `value` of a mapping whose `name` is
//!    a credential name or `Authorization`; a `value` starting `Bearer ` or
//!    `Basic ` beside any `name` (an `httpHeaders` entry).
//! 3. **Keys**: the value of a credential key (`password: V`,
//!    `bgp_peerpass: V`); a sequence there is a list of credentials.
//! 4. **In a scalar's own words** ([`text`]): a shell command's
//!    `--NAME=V`, `NAME=V`, `--NAME V`; a header line's `Authorization:
//!    V`; `Bearer T` and `Basic T`; `NAME: V` and `"NAME": "V"` in an
//!    embedded config; the password of `scheme://user:PASSWORD@host`; any
//!    long base64 run (64 characters or more, mixed case and digits: a DER
//!    key or a JWT without PEM armour; hex digests are never mixed-case).
//!    A scalar of several lines, or one that opens `{` or `[`, is also
//!    read as a document of its own (two levels deep at most) and each
//!    credential found there replaced where it stands in the text.
//! 5. **Everywhere again**: a value found to be a credential is replaced
//!    at every other place it stands as a whole scalar (an anchor's value
//!    used by an alias in a credential's place, the anchor itself being
//!    anywhere).
//!
//! A value named by 1 to 3 is a whole scalar (a number too); it is kept
//! when it is not a credential by its shape: empty, null, `true` or
//! `false`, an absolute path (`/` first, no blank:
//! `--service-account-key-file=/etc/kubernetes/pki/sa.pub`,
//! `--tls-private-key-file=...`: an operator needs those), a Go duration
//! (`--service-account-max-token-expiration=48h`), or a mark already.
//! Redacting twice changes nothing.
//!
//! What comes out is the documents, not the text: comments, anchors, tags
//! and the choice of quotes are not kept; keys keep their order, numbers
//! their value. The same bytes in give the same bytes out.

mod emit;
mod text;

use crate::rules::yaml::{parse_documents, Node, YamlError};
use sha2::{Digest, Sha256};
use std::collections::HashSet;

pub use text::BASE64_MIN;

/// What every mark starts with.
const MARK_PREFIX: &str = "<redacted sha256:";

/// Documents embedded in scalars are read this deep (a config file in an
/// env var's value, a JSON annotation in it); deeper, their text only.
const EMBED_DEPTH: usize = 2;

/// An embedded document whose credentials would cost more than this to
/// find again in its text (credentials times bytes) is replaced whole.
const EMBED_WORK_MAX: usize = 16 << 20;

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
    format!("{MARK_PREFIX}{hex}>")
}

/// Whether `s` is a mark, exactly.
fn is_mark(s: &str) -> bool {
    s.strip_prefix(MARK_PREFIX)
        .and_then(|r| r.strip_suffix('>'))
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
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

/// Whether a mapping key (or a name without dashes) holds a credential
/// (see the module doc).
fn credential_key(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    (credential_name(name) || n == "authorization")
        && n != "key"
        && !n.ends_with("name")
        && !n.ends_with("ref")
}

/// A value that is not a credential by its shape (see the module doc).
fn kept(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || v.eq_ignore_ascii_case("true")
        || v.eq_ignore_ascii_case("false")
        || (v.starts_with('/') && !v.contains(char::is_whitespace))
        || duration(v)
        || is_mark(v)
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

/// A scalar's text as a credential would be hashed (`None`: a collection,
/// a null or a boolean, which hold no credential).
fn scalar_text(n: &Node) -> Option<String> {
    match n {
        Node::Int(s) | Node::Str(s) => Some(s.clone()),
        Node::Float(f) => Some(emit::float(*f)),
        _ => None,
    }
}

/// Redact every credential of a manifest (see the module doc): its
/// documents written back, or why they could not be read.
pub fn redact(bytes: &[u8]) -> Result<Redacted, YamlError> {
    let mut docs = parse_documents(bytes)?;
    let count = Walk::new(0).all(&mut docs);
    Ok(Redacted {
        text: emit::documents(&docs),
        count,
    })
}

/// One pass over a stream's documents: the values replaced, counted.
struct Walk {
    /// How deep in embedded documents this walk is.
    depth: usize,
    count: usize,
    /// Every value replaced, to be replaced wherever else it stands.
    found: HashSet<String>,
}

impl Walk {
    fn new(depth: usize) -> Walk {
        Walk {
            depth,
            count: 0,
            found: HashSet::new(),
        }
    }

    /// Every document, then every other place a value found stands (5).
    fn all(&mut self, docs: &mut [Node]) -> usize {
        for d in docs.iter_mut() {
            self.node(d);
        }
        if !self.found.is_empty() {
            for d in docs.iter_mut() {
                self.again(d);
            }
        }
        self.count
    }

    /// `n` replaced by the mark of `value`.
    fn replace(&mut self, n: &mut Node, value: String) {
        *n = Node::Str(mark(&value));
        self.count += 1;
        self.found.insert(value);
    }

    fn node(&mut self, n: &mut Node) {
        match n {
            Node::Seq(items) => self.seq(items),
            Node::Map(pairs) => self.map(pairs),
            Node::Str(_) => self.words(n),
            _ => {}
        }
    }

    /// A value in a credential's place (1 to 3): a scalar replaced unless
    /// kept; a sequence, each item; a mapping, by its own rules.
    fn credential(&mut self, n: &mut Node) {
        match n {
            Node::Seq(items) => {
                for item in items {
                    self.credential(item);
                }
            }
            Node::Map(_) => self.node(n),
            _ => match scalar_text(n) {
                Some(v) if !kept(&v) => self.replace(n, v),
                _ => self.node(n),
            },
        }
    }

    /// Rule 1 on a sequence's items, rule 4 on each.
    fn seq(&mut self, items: &mut [Node]) {
        for i in 0..items.len() {
            let takes_next = items[i].as_str().is_some_and(text::separate_flag);
            self.node(&mut items[i]);
            if takes_next {
                if let Some(next) = items.get_mut(i + 1) {
                    if !next.as_str().is_some_and(|s| s.starts_with("--")) {
                        self.credential(next);
                    }
                }
            }
        }
    }

    /// Rules 2 and 3 on a mapping's pairs, rule 4 on its keys.
    fn map(&mut self, pairs: &mut [(Node, Node)]) {
        let name = pairs
            .iter()
            .find(|(k, _)| k.as_str() == Some("name"))
            .and_then(|(_, v)| v.as_str());
        let named = name.is_some();
        let secret_name = name.is_some_and(credential_key);
        for (k, v) in pairs.iter_mut() {
            let scheme = v.as_str().is_some_and(|s| {
                let l = s.trim_start().to_ascii_lowercase();
                l.starts_with("bearer ") || l.starts_with("basic ")
            });
            let wanted = match k.as_str() {
                Some("value") => secret_name || (named && scheme),
                Some(key) => credential_key(key),
                None => false,
            };
            self.node(k);
            if wanted {
                self.credential(v);
            } else {
                self.node(v);
            }
        }
    }

    /// Rule 4 on a string scalar: a whole flag, an embedded document, its words.
    fn words(&mut self, n: &mut Node) {
        let Node::Str(s) = n else { return };
        if let Some(at) = text::whole_flag(s) {
            if !kept(&s[at..]) {
                let value = s[at..].to_string();
                *s = format!("{}{}", &s[..at], mark(&value));
                self.count += 1;
                self.found.insert(value);
                return;
            }
        }
        let mut spans = text::spans(s);
        match self.embedded(s) {
            Embedded::Values(values) => {
                for v in values {
                    text::occurrences(s, &v, &mut spans);
                }
                spans = text::merge(spans);
            }
            Embedded::Whole => spans = vec![(0, s.len())],
            Embedded::None => {}
        }
        if spans.is_empty() {
            return;
        }
        let mut out = String::with_capacity(s.len());
        let mut at = 0;
        for (a, z) in spans {
            out.push_str(&s[at..a]);
            let value = s[a..z].to_string();
            out.push_str(&mark(&value));
            self.count += 1;
            self.found.insert(value);
            at = z;
        }
        out.push_str(&s[at..]);
        *s = out;
    }

    /// The credentials of a document embedded in `s`, if it reads as a
    /// sequence or mapping within the bounds.
    fn embedded(&self, s: &str) -> Embedded {
        let t = s.trim_start();
        if self.depth >= EMBED_DEPTH || !(s.contains('\n') || t.starts_with(['{', '['])) {
            return Embedded::None;
        }
        let Ok(mut docs) = parse_documents(s.as_bytes()) else {
            return Embedded::None;
        };
        if !docs
            .iter()
            .any(|d| matches!(d, Node::Seq(_) | Node::Map(_)))
        {
            return Embedded::None;
        }
        let mut inner = Walk::new(self.depth + 1);
        inner.all(&mut docs);
        let values: Vec<String> = inner.found.into_iter().filter(|v| !v.is_empty()).collect();
        if values.len().saturating_mul(s.len()) > EMBED_WORK_MAX {
            Embedded::Whole
        } else {
            Embedded::Values(values)
        }
    }

    /// Rule 5: a whole scalar (a key too) that is a value found elsewhere.
    fn again(&mut self, n: &mut Node) {
        match n {
            Node::Seq(items) => {
                for item in items {
                    self.again(item);
                }
            }
            Node::Map(pairs) => {
                for (k, v) in pairs {
                    self.again(k);
                    self.again(v);
                }
            }
            _ => {
                if let Some(v) = scalar_text(n).filter(|v| self.found.contains(v)) {
                    *n = Node::Str(mark(&v));
                    self.count += 1;
                }
            }
        }
    }
}

/// What an embedded document gave.
enum Embedded {
    /// Not one (or not read): the text's own rules only.
    None,
    /// The credentials found in it.
    Values(Vec<String>),
    /// Too many to look for: the whole scalar is replaced.
    Whole,
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // reads the fixture manifests directly
mod tests {
    use super::*;

    fn red(text: &str) -> Redacted {
        redact(text.as_bytes()).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn r(text: &str) -> String {
        red(text).text
    }

    /// `out` holds none of `secrets` and the mark of each of `marked`.
    fn hides(out: &str, secrets: &[&str], marked: &[&str]) {
        for s in secrets {
            assert!(!out.contains(s), "{s:?} left in:\n{out}");
        }
        for m in marked {
            assert!(out.contains(&mark(m)), "no mark of {m:?} in:\n{out}");
        }
    }

    #[test]
    fn flags_in_a_block_sequence() {
        let out = r("command:\n- kube-apiserver\n- --etcd-password=a b # why\n- --token\n- s3cr3t\n- --v=2\n");
        assert_eq!(
            out,
            format!(
                "command:\n- kube-apiserver\n- --etcd-password={}\n- --token\n- {}\n- --v=2\n",
                mark("a b"),
                mark("s3cr3t")
            )
        );
        // A boolean flag: the next item is a flag, not its value.
        let boolean = "- --enable-bootstrap-token-auth\n- --v=2\n";
        assert_eq!(r(boolean), boolean);
        // A number is a value too.
        assert_eq!(
            r("- --token\n- 123456\n"),
            format!("- --token\n- {}\n", mark("123456"))
        );
    }

    #[test]
    fn a_flow_sequence_over_two_lines() {
        let out = r("args: [--v=2, --password,\n    FlowPass-1, \"--bgp-secret=x y\"]\n");
        assert_eq!(
            out,
            format!(
                "args:\n- --v=2\n- --password\n- {}\n- --bgp-secret={}\n",
                mark("FlowPass-1"),
                mark("x y")
            )
        );
    }

    #[test]
    fn json_with_one_argument_a_line() {
        let json = "{\n  \"apiVersion\": \"v1\",\n  \"spec\": {\n    \"containers\": [{\n      \"command\": [\n        \"kube-thing\",\n        \"--token\",\n        \"JsonToken-1\",\n        \"--client-secret\",\n        \"JsonSecret-2\"\n      ],\n      \"port\": 6443\n    }]\n  }\n}\n";
        let out = red(json);
        assert_eq!(out.count, 2);
        assert_eq!(
            out.text,
            format!(
                "apiVersion: v1\nspec:\n  containers:\n  - command:\n    - kube-thing\n    - --token\n    - {}\n    - --client-secret\n    - {}\n    port: 6443\n",
                mark("JsonToken-1"),
                mark("JsonSecret-2")
            )
        );
    }

    #[test]
    fn env_values_on_the_next_line_or_folded() {
        let vip = "env:\n- name: vip_arp\n  value: \"true\"\n- name: bgp_peerpass\n  value:\n    NextLine-1\n- name: VIP_PASSWORD\n  value: Cont-2a\n    Cont-2b\n- value: 'Before-3'\n  name: API_TOKEN\n- name: address\n  value: 10.0.0.10\n";
        let out = red(vip);
        assert_eq!(out.count, 3);
        assert_eq!(
            out.text,
            format!(
                "env:\n- name: vip_arp\n  value: \"true\"\n- name: bgp_peerpass\n  value: {}\n- name: VIP_PASSWORD\n  value: {}\n- value: {}\n  name: API_TOKEN\n- name: address\n  value: 10.0.0.10\n",
                mark("NextLine-1"),
                mark("Cont-2a Cont-2b"),
                mark("Before-3")
            )
        );
        // kube-vip's peers, each `address:AS:password:multihop`.
        let peers = "- name: bgp_peers\n  value: 10.0.0.1:65000:s3cr3t:false\n";
        hides(&r(peers), &["s3cr3t"], &["10.0.0.1:65000:s3cr3t:false"]);
        // A reference to a Secret is not a value; a key named `key` neither.
        let reference = "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      key: password\n      name: db-secret\n";
        assert_eq!(r(reference), reference);
    }

    #[test]
    fn authorization_headers_and_bearer_or_basic_values() {
        let probe = "livenessProbe:\n  httpGet:\n    httpHeaders: [{name: Authorization, value: \"Bearer abc\"},\n      {name: X-Other, value: Basic dXNlcjpwYXNz}, {name: Accept, value: json}]\n";
        let out = r(probe);
        hides(
            &out,
            &["abc", "dXNlcjpwYXNz"],
            &["Bearer abc", "Basic dXNlcjpwYXNz"],
        );
        assert!(out.contains("- name: Accept\n      value: json\n"), "{out}");
        // Any case; a header without a scheme; a mapping key.
        hides(
            &r("- name: authorization\n  value: tok-1\n"),
            &["tok-1"],
            &["tok-1"],
        );
        hides(
            &r("headers:\n  Authorization: tok-2\n"),
            &["tok-2"],
            &["tok-2"],
        );
        // In a shell command's words.
        let exec =
            "- curl\n- -H\n- 'Authorization: Bearer tok-3'\n- -H\n- 'X-Auth: bearer tok-4'\n";
        hides(&r(exec), &["tok-3", "tok-4"], &["Bearer tok-3", "tok-4"]);
    }

    #[test]
    fn url_userinfo_in_any_scalar() {
        let out = r("args:\n- --etcd-servers=https://root:Url-Pass-1@10.0.0.1:2379,https://b:2379\nnote: see http://u:Url-Pass-2@h/x\nplain: http://user@host/x:y@z\n");
        hides(
            &out,
            &["Url-Pass-1", "Url-Pass-2"],
            &["Url-Pass-1", "Url-Pass-2"],
        );
        assert!(out.contains("https://root:<redacted"), "{out}");
        assert!(out.contains("plain: http://user@host/x:y@z\n"), "{out}");
    }

    #[test]
    fn long_base64_anywhere_and_hex_digests_stay() {
        use base64::Engine as _;
        let der: Vec<u8> = (0u8..=120).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        assert!(b64.len() >= BASE64_MIN);
        let out = red(&format!("annotations:\n  x/blob: {b64}\n"));
        assert_eq!(
            out.text,
            format!("annotations:\n  x/blob: {}\n", mark(&b64))
        );
        assert_eq!(out.count, 1);
        let digest = format!(
            "image: registry.k8s.io/etcd:3.5.15-0@sha256:{}\n",
            "0123456789abcdef".repeat(4)
        );
        assert_eq!(r(&digest), digest);
    }

    #[test]
    fn a_credential_under_an_anchor_is_redacted_wherever_its_aliases_put_it() {
        // The anchor in a credential's place, its alias elsewhere.
        let a = "args: [--token, &t Anchor-1]\nnote: *t\nenv:\n- &e {name: DB_SECRET, value: Anchor-2}\nmore: [*e]\n";
        let out = r(a);
        hides(&out, &["Anchor-1", "Anchor-2"], &["Anchor-1", "Anchor-2"]);
        assert!(
            out.contains(&format!("note: {}\n", mark("Anchor-1"))),
            "{out}"
        );
        // The anchor anywhere, its alias in a credential's place.
        let b = "metadata:\n  annotations:\n    example.com/note: &pp Anchor-3\nspec:\n  env:\n  - name: bgp_peerpass\n    value: *pp\n";
        let out = red(b);
        hides(&out.text, &["Anchor-3"], &["Anchor-3"]);
        assert_eq!(out.count, 2, "{}", out.text);
    }

    #[test]
    fn a_duplicate_key_is_refused_and_named() {
        let dup = "{\"spec\": {\"containers\": [{\n  \"command\": [\"x\", \"--token=Dup-1\"],\n  \"command\": [\"x\"]\n}]}}\n";
        match redact(dup.as_bytes()) {
            Err(YamlError::Syntax(s)) => {
                assert!(s.contains("duplicate mapping key at line 3"), "{s}");
                assert!(!s.contains("Dup-1") && !s.contains("command"), "{s}");
            }
            other => panic!("{other:?}"),
        }
        let dup = "a: 1\nb:\n  c: 1\n  c: 2\n";
        assert!(
            matches!(redact(dup.as_bytes()), Err(YamlError::Syntax(s)) if s.contains("duplicate"))
        );
        // Not YAML at all: where, never what.
        match redact(b"key: [--token=Broken-2\n") {
            Err(YamlError::Syntax(s)) => assert!(!s.contains("Broken"), "{s}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ten_thousand_flow_items_are_read_and_more_nodes_than_the_bound_refused() {
        let items: Vec<String> = (0..10_000).map(|i| format!("--v{i}=x")).collect();
        let text = format!("args: [{}, --token, Many-1]\n", items.join(", "));
        let out = red(&text);
        assert_eq!(out.count, 1);
        hides(&out.text, &["Many-1"], &["Many-1"]);
        assert_eq!(out.text.lines().count(), 10_003);
        let over = format!(
            "args: [{}]\n",
            vec!["x"; crate::rules::yaml::MAX_NODES].join(",")
        );
        match redact(over.as_bytes()) {
            Err(YamlError::Bound(b)) => assert_eq!(b, "more than 100000 nodes"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_document_of_a_stream() {
        let out = red("a: 1\n---\n# a comment\nb:\n- --token\n- Doc-2\n---\n- --password=Doc-3\n");
        assert_eq!(
            out.text,
            format!(
                "---\na: 1\n---\nb:\n- --token\n- {}\n---\n- --password={}\n",
                mark("Doc-2"),
                mark("Doc-3")
            )
        );
        assert_eq!(out.count, 2);
        let many = "---\na: 1\n".repeat(17);
        assert!(
            matches!(redact(many.as_bytes()), Err(YamlError::Bound(b)) if b == "more than 16 documents")
        );
        assert_eq!(r(""), "");
        assert_eq!(r("# only a comment\n"), "");
    }

    #[test]
    fn embedded_config_files_and_json() {
        let block = "- name: CONFIG\n  value: |\n    password: Emb-1 # old\n    users:\n    - name: x\n      value: y\n    env:\n    - name: X_TOKEN\n      value:\n        Emb-2\n- name: USER\n  value: '{\"token\": \"Emb-3\", \"n\": 1}'\n";
        let out = r(block);
        hides(
            &out,
            &["Emb-1", "Emb-2", "Emb-3"],
            &["Emb-1", "Emb-2", "Emb-3"],
        );
        assert!(out.contains("- name: USER\n"), "{out}");
    }

    #[test]
    fn paths_booleans_durations_and_marks_stay() {
        let kept = "args:\n- --service-account-key-file=/etc/kubernetes/pki/sa.pub\n- --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n- --enable-bootstrap-token-auth=true\n- --service-account-max-token-expiration=48h\n- --token-ttl=1h30m0s\n- --controllers=*,bootstrapsigner,tokencleaner\nsecretName: etcd-certs\ntokenFile: /var/run/token\nkey: password\nautomountServiceAccountToken: false\npassword: null\n";
        let out = red(kept);
        assert_eq!(out.count, 0, "{}", out.text);
        assert_eq!(out.text, kept);
        let once = r("args:\n- --etcd-password=s3cr3t\npassword: x\n");
        let twice = red(&once);
        assert_eq!(twice.text, once, "idempotent");
        assert_eq!(twice.count, 0);
        // A mark that is not one exactly is a value.
        hides(
            &r("password: <redacted sha256:00>x\n"),
            &["<redacted sha256:00>x"],
            &[],
        );
    }

    /// kubeadm's manifests hold no credential and come out byte for byte:
    /// the emitter writes what kubeadm writes.
    #[test]
    fn the_fixture_manifests_come_out_unchanged() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut seen = 0;
        for variant in ["rsa", "ecdsa"] {
            let m = dir.join(format!("fixtures/nodes/{variant}/etc/kubernetes/manifests"));
            for e in std::fs::read_dir(&m).unwrap() {
                let path = e.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                let out = red(&text);
                assert_eq!(out.count, 0, "{}", path.display());
                assert_eq!(out.text, text, "{}", path.display());
                seen += 1;
            }
        }
        assert_eq!(seen, 10);
    }

    #[test]
    fn the_output_reads_back_as_the_same_documents() {
        let odd = "a: \"null\"\nb: \"0755\"\nc: \"1_000\"\nd: 1.5\ne: -3\nf: \"yes\"\ng: \"\"\nh: \"x: y\"\ni: \"#x\"\nj: \"line\\nbreak\\t\\u0001\"\n\"6443\": k\n\"a b\": [\"- x\", \"&y\", \"*z\"]\n? [1, {k: v}]\n: seq-key\nl: {}\nm: []\nn: ~\no: 2001-12-14\np: 12:30\nq: é\n";
        let docs = parse_documents(odd.as_bytes()).unwrap();
        let out = r(odd);
        let again = parse_documents(out.as_bytes()).unwrap();
        assert_eq!(again, docs, "{out}");
        assert_eq!(r(&out), out);
    }
}
