//! The evidence bundle of `--status-only --evidence PATH` (SPEC 6, v1.1): a
//! gzipped tar of what the guide asks an operator to hand off, sanitized.
//!
//! What goes in, under `nvke-evidence/`: `evidence.json` (this bundle's
//! manifest: the runbook's version and commit, the running binary's sha256,
//! every member with its size and sha256, what was skipped and why), then
//! `status.json` (the status document), `state/phase`, `state/owner`, the
//! receipts of `state/completed/` (below), the logs of the operations named
//! (`state/log/<ID>.log`), and every file of the runbook's staging directory
//! (`staging/`), the node agent's (`agent-staging/`) and `manifests/`.
//!
//! Never anything else: only regular files of those directories, read
//! without following a symlink and without opening a device or FIFO
//! ([`Dir::read_copy`]), one link only (a hard link's content lives
//! elsewhere too), each capped in size, names from a safe alphabet, and no
//! content that looks like a private key or a kubeconfig ([`refusal`]).
//! Each file left out is recorded with its reason.
//!
//! v1.2: no credential either. v1.3: every member from `manifests/` and
//! the staging directories is read as YAML (or JSON) within the bounds and
//! written back with each credential value replaced by `<redacted
//! sha256:HEX>`, wherever it stood ([`crate::rules::redact`], where the
//! rule is written); a file that does not read (over a bound, not YAML, a
//! duplicate key) is left out and listed with why, never copied as it is.
//! A staging conflict's diff in the bundle's `status.json` is made again
//! from the two copies as the bundle holds them. `completed/` goes in as
//! the asked operation's receipt, then the
//! ones the status document lists, then the rest newest first (by mtime, as
//! the view lists them), at most [`DIR_ENTRIES_MAX`]; the bundle counts the
//! receipts it holds and those it left out.
//!
//! The archive is built in memory, then created once
//! ([`Dir::create_once_unless`]: a 0600 temp file beside it, fsynced, linked
//! without replacing): an existing file or symlink at PATH is never
//! replaced, and nothing half-written is left there. A `stop` callback (the
//! view's signal flag) is asked between entries and once more before the
//! temp file is named: when it says stop, the temp file is removed and
//! nothing is left at PATH or beside it.
//!
//! One concern a file: here, what the bundle admits (the content rules,
//! the caps, the redaction: [`Bundle::add`] and its skips); `collect`, what
//! it reads from the node and in which order; `write`, its manifest, the
//! archive and its one creation at PATH; `tar`, the tar format by hand.

mod collect;
mod tar;
mod write;

pub use write::write;

use crate::contract as doc;

/// The directory every member is under.
pub const TOP: &str = "nvke-evidence";
/// A file larger than this is skipped (logs: [`LOG_MAX`]).
pub const MEMBER_MAX: u64 = 1024 * 1024;
/// An operation log larger than this is skipped.
pub const LOG_MAX: u64 = 8 * 1024 * 1024;
/// Once the members add up to this (uncompressed), the rest are skipped.
pub const TOTAL_MAX: u64 = 32 * 1024 * 1024;
/// Entries looked at per directory; the rest are skipped, counted.
pub const DIR_ENTRIES_MAX: usize = 1000;
/// Skips listed by name; the rest are counted in one last entry.
pub const SKIPS_LISTED: usize = 100;
/// Why a bundle cut short by `stop` was not written.
pub const INTERRUPTED: &str =
    "interrupted by a signal (SIGTERM, SIGINT or SIGHUP): no bundle written, nothing left behind";

/// Why a file's content is refused (`None`: none of these). A private key
/// (PEM, OpenSSH or PuTTY, or PEM in base64 as kubeconfigs and Secrets
/// carry it) or a kubeconfig (`kind: Config`, `client-key-data`, a
/// top-level `users:`, in YAML or JSON).
pub fn refusal(bytes: &[u8]) -> Option<&'static str> {
    const KEY_MARKS: [&[u8]; 2] = [b"PRIVATE KEY-----", b"PuTTY-User-Key-File-"];
    if KEY_MARKS.iter().any(|m| contains(bytes, m)) {
        return Some("looks like a private key");
    }
    let text = String::from_utf8_lossy(bytes);
    if text.lines().any(kubeconfig_line) {
        return Some("looks like a kubeconfig");
    }
    if base64_needles(b"PRIVATE KEY-----")
        .iter()
        .any(|n| contains(bytes, n))
    {
        return Some("looks like a base64-encoded private key");
    }
    None
}

/// The members that come from directories other software writes to.
const STAGING_PREFIX: &str = "nvke-evidence/staging/";
const AGENT_STAGING_PREFIX: &str = "nvke-evidence/agent-staging/";
const MANIFESTS_PREFIX: &str = "nvke-evidence/manifests/";

/// Every file the bundle collects is text (JSON, YAML, log lines); one in
/// manifests/ or a staging directory that is not may be a key in DER,
/// PKCS#12 or compressed form, which no marker finds: refused whole.
fn not_text(bytes: &[u8]) -> Option<&'static str> {
    (bytes.contains(&0) || std::str::from_utf8(bytes).is_err())
        .then_some("not text (a binary file may hold a key in DER or compressed form)")
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The base64 text of `needle` at each of the three byte alignments: only
/// the characters that depend on the needle's bytes alone.
fn base64_needles(needle: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    (0..3usize)
        .map(|pad| {
            let mut input = vec![0u8; pad];
            input.extend_from_slice(needle);
            let enc = base64::engine::general_purpose::STANDARD.encode(&input);
            let first = (8 * pad).div_ceil(6);
            let end = 8 * (pad + needle.len()) / 6;
            enc.as_bytes()[first..end].to_vec()
        })
        .collect()
}

/// One line of a kubeconfig, in YAML or JSON: with blanks and quotes gone,
/// a key `kind:Config`, `client-key-data:` or `users:` at the line's start
/// or after `{` or `,`.
fn kubeconfig_line(line: &str) -> bool {
    let flat: String = line
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .collect();
    let key_at = |key: &str| {
        flat.match_indices(key).any(|(i, _)| {
            let before_ok = i == 0 || matches!(flat.as_bytes()[i - 1], b'{' | b',' | b'-');
            let after = flat.as_bytes().get(i + key.len()).copied();
            let after_ok =
                !key.ends_with("Config") || !after.is_some_and(|c| c.is_ascii_alphanumeric());
            before_ok && after_ok
        })
    };
    key_at("kind:Config") || key_at("client-key-data:") || key_at("users:")
}

/// Whether a directory entry's name can be a member's name as it is.
fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'.' | b'_' | b'-' | b':' | b'@' | b'+' | b'=' | b',' | b'~'
                )
        })
}

/// A node path for a skip record: printable ASCII kept, the rest escaped.
fn shown(path: &str) -> String {
    path.chars()
        .map(|c| {
            if (c.is_ascii_graphic() && c != '\\') || c == ' ' {
                c.to_string()
            } else {
                c.escape_default().to_string()
            }
        })
        .collect()
}

/// One file of the bundle.
#[derive(Debug)]
struct Member {
    name: String,
    source: Option<String>,
    bytes: Vec<u8>,
    mtime: u64,
}

/// What is gathered: the members in archive order, the skips.
struct Bundle<'a> {
    members: Vec<Member>,
    skipped: Vec<doc::EvidenceSkip>,
    total: u64,
    /// Receipts in the bundle, and those of `completed/` left out.
    receipts: u64,
    receipts_left_out: u64,
    /// Credential values replaced in manifests ([`crate::rules::redact`]).
    redacted: u64,
    /// Asked between entries: a signal came (the bundle is then abandoned).
    stop: &'a dyn Fn() -> bool,
    stopped: bool,
}

impl<'a> Bundle<'a> {
    fn new(stop: &'a dyn Fn() -> bool) -> Bundle<'a> {
        Bundle {
            members: Vec::new(),
            skipped: Vec::new(),
            total: 0,
            receipts: 0,
            receipts_left_out: 0,
            redacted: 0,
            stop,
            stopped: false,
        }
    }

    /// Whether to stop now (asked once per entry; once true, stays true).
    fn stopping(&mut self) -> bool {
        self.stopped = self.stopped || (self.stop)();
        self.stopped
    }

    fn skip(&mut self, path: &str, reason: impl Into<String>) {
        // A name is recorded as found, unless it looks like key material
        // itself: then only its directory.
        let path = match refusal(path.as_bytes()) {
            None => shown(path),
            Some(why) => format!(
                "{}/(a name that {why})",
                shown(path.rsplit_once('/').map_or("", |(d, _)| d))
            ),
        };
        self.skipped.push(doc::EvidenceSkip {
            path,
            reason: reason.into(),
        });
    }

    /// Add a member after the content check and the total cap.
    fn add(&mut self, name: String, source: Option<String>, bytes: Vec<u8>, mtime: i64) {
        let shown_as = source.clone().unwrap_or_else(|| name.clone());
        let (bytes, redacted) = match admit(foreign(&name), bytes) {
            Ok(kept) => kept,
            Err(why) => {
                tracing::info!("evidence: {} left out: {why}", shown(&shown_as));
                return self.skip(&shown_as, why);
            }
        };
        if redacted > 0 {
            tracing::info!(
                "evidence: {redacted} credential value(s) of {} redacted",
                shown(&shown_as)
            );
        }
        let size = bytes.len() as u64;
        if self.total + size > TOTAL_MAX {
            return self.skip(
                &shown_as,
                format!("the bundle's limit of {TOTAL_MAX} bytes is reached"),
            );
        }
        self.redacted += redacted as u64;
        self.total += size;
        self.members.push(Member {
            name,
            source,
            bytes,
            mtime: mtime.max(0) as u64,
        });
    }
}

/// Whether a member comes from a directory other software writes to
/// (`manifests/` and the two staging directories).
fn foreign(name: &str) -> bool {
    [MANIFESTS_PREFIX, STAGING_PREFIX, AGENT_STAGING_PREFIX]
        .iter()
        .any(|p| name.starts_with(p))
}

/// What the bundle keeps of a file's bytes, with how many credential
/// values it replaced, or why the file is left out. Every file: not a
/// private key or a kubeconfig ([`refusal`]). A foreign one (`manifests/`,
/// the staging directories; the runbook's own state files are kept even
/// when a crash left NULs at their end, when they matter most): text,
/// read as YAML within the bounds and written back with every credential
/// replaced ([`crate::rules::redact`], SPEC 6 v1.3); one that does not
/// read is left out, never copied as it is.
fn admit(foreign: bool, bytes: Vec<u8>) -> Result<(Vec<u8>, usize), String> {
    if let Some(why) = refusal(&bytes).or_else(|| foreign.then(|| not_text(&bytes)).flatten()) {
        return Err(why.to_string());
    }
    if !foreign {
        return Ok((bytes, 0));
    }
    match crate::rules::redact::redact(&bytes) {
        Ok(r) => Ok((r.text.into_bytes(), r.count)),
        Err(e) => Err(format!("not redacted, so left out: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::tar::{pax_path, tar, BLOCK};
    use super::*;
    use crate::node::fsx::{Root, Trust};
    use crate::node::paths::MANIFESTS_DIR;

    #[test]
    fn private_keys_are_refused_in_any_dress() {
        let pem = b"-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n";
        assert_eq!(refusal(pem), Some("looks like a private key"));
        assert_eq!(
            refusal(b"x: -----BEGIN OPENSSH PRIVATE KEY-----"),
            Some("looks like a private key")
        );
        assert_eq!(
            refusal(b"PuTTY-User-Key-File-3: ssh-ed25519"),
            Some("looks like a private key")
        );
        use base64::Engine as _;
        for prefix in ["", "a", "ab", "abc"] {
            let mut inner = prefix.as_bytes().to_vec();
            inner.extend_from_slice(pem);
            let b64 = base64::engine::general_purpose::STANDARD.encode(&inner);
            let doc = format!("data:\n  tls.key: {b64}\n");
            assert_eq!(
                refusal(doc.as_bytes()),
                Some("looks like a base64-encoded private key"),
                "prefix {prefix:?}"
            );
        }
        assert_eq!(refusal(b"-----BEGIN CERTIFICATE-----\nMIIB\n"), None);
        assert_eq!(refusal(b"PRIVATE KEY is a phrase"), None);
    }

    #[test]
    fn binary_content_is_refused_and_text_passes() {
        // A PKCS#8 EC key in DER (SEQUENCE, INTEGER 0, ...), gzip, a NUL in text.
        let der = [
            0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86,
        ];
        let gzip = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00];
        for bytes in [&der[..], &gzip[..], b"phase: ok\0\n"] {
            assert!(not_text(bytes).is_some(), "{bytes:?}");
        }
        for text in ["", "{\"phase\":\"completed\"}\n", "kind: Pod # caf\u{e9}\n"] {
            assert_eq!(not_text(text.as_bytes()), None, "{text:?}");
        }
    }

    #[test]
    fn kubeconfigs_are_refused_as_yaml_or_json() {
        let yaml = "apiVersion: v1\nclusters: []\ncontexts: []\nkind: Config\n";
        assert_eq!(refusal(yaml.as_bytes()), Some("looks like a kubeconfig"));
        let users = "apiVersion: v1\nusers:\n- name: admin\n";
        assert_eq!(refusal(users.as_bytes()), Some("looks like a kubeconfig"));
        let key_data = "    client-key-data: AAAA\n";
        assert_eq!(
            refusal(key_data.as_bytes()),
            Some("looks like a kubeconfig")
        );
        let json = r#"{"apiVersion":"v1","kind":"Config","clusters":[]}"#;
        assert_eq!(refusal(json.as_bytes()), Some("looks like a kubeconfig"));
        let quoted = "\"kind\": 'Config'\n";
        assert_eq!(refusal(quoted.as_bytes()), Some("looks like a kubeconfig"));
        // A static pod manifest, a ConfigMap, and flags naming kubeconfigs pass.
        let pod = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - command:\n    - --kubeconfig=/etc/kubernetes/scheduler.conf\n    - --authentication-kubeconfig=/etc/kubernetes/scheduler.conf\n";
        assert_eq!(refusal(pod.as_bytes()), None);
        assert_eq!(refusal(b"kind: ConfigMap\n"), None);
        assert_eq!(refusal(b"{\"reason\":\"the users: list\"}"), None);
    }

    #[test]
    fn the_fixture_node_files_pass_and_its_keys_and_kubeconfigs_do_not() {
        let fix = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nodes/rsa");
        let root = Root::open(&fix).unwrap();
        let read = |rel: &str| {
            root.read_file(rel, MEMBER_MAX, Trust::TypeOnly)
                .unwrap()
                .unwrap()
        };
        for m in [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-vip",
        ] {
            let bytes = read(&format!("{MANIFESTS_DIR}/{m}.yaml"));
            assert_eq!(refusal(&bytes), None, "{m}.yaml");
        }
        for conf in ["admin", "super-admin", "controller-manager", "scheduler"] {
            let bytes = read(&format!("etc/kubernetes/{conf}.conf"));
            assert!(refusal(&bytes).is_some(), "{conf}.conf");
        }
        for key in ["ca", "apiserver", "sa", "front-proxy-ca"] {
            let bytes = read(&format!("etc/kubernetes/pki/{key}.key"));
            assert_eq!(
                refusal(&bytes),
                Some("looks like a private key"),
                "{key}.key"
            );
        }
    }

    #[test]
    fn names_outside_the_alphabet_are_not_members() {
        for ok in [
            "etcd.yaml",
            ".kube-apiserver.yaml.swp",
            "op-1@x:2.json",
            "a+b=c,d~",
        ] {
            assert!(safe_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a\nb",
            "é.yaml",
            "a\\b",
            "x\u{1b}[2J",
        ] {
            assert!(!safe_name(bad), "{bad:?}");
        }
        assert_eq!(shown("/m/a\nb\u{1b}"), "/m/a\\nb\\u{1b}");
    }

    #[test]
    fn tar_headers_are_valid_ustar_with_pax_for_long_names() {
        let long = format!("{TOP}/state/completed/{}.json", "a".repeat(150));
        let t = tar(&[("nvke-evidence/x", b"hi", 7), (&long, b"", 0)]);
        assert_eq!(t.len() % BLOCK, 0);
        let h = &t[..BLOCK];
        assert_eq!(&h[..15], b"nvke-evidence/x");
        assert_eq!(&h[100..108], b"0000600\0");
        assert_eq!(&h[108..116], b"0000000\0");
        assert_eq!(&h[124..136], b"00000000002\0");
        assert_eq!(&h[136..148], b"00000000007\0");
        assert_eq!(h[156], b'0');
        assert_eq!(&h[257..263], b"ustar\0");
        let mut blank = h.to_vec();
        blank[148..156].copy_from_slice(b"        ");
        let sum: u64 = blank.iter().map(|&b| u64::from(b)).sum();
        let stored = std::str::from_utf8(&h[148..154]).unwrap();
        assert_eq!(u64::from_str_radix(stored, 8).unwrap(), sum);
        assert_eq!(&t[BLOCK..BLOCK + 2], b"hi");
        let pax = &t[2 * BLOCK..3 * BLOCK];
        assert_eq!(pax[156], b'x');
        let rec = pax_path(&long);
        assert_eq!(&t[3 * BLOCK..3 * BLOCK + rec.len()], rec.as_slice());
        let len: usize = std::str::from_utf8(&rec[..rec.iter().position(|&b| b == b' ').unwrap()])
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(len, rec.len());
        assert!(t[t.len() - 2 * BLOCK..].iter().all(|&b| b == 0));
    }
}
