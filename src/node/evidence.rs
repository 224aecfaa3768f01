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
//! v1.2: no credential either. The text of every member from `manifests/`
//! and the staging directories goes through [`crate::rules::redact`]
//! (credential values become `<redacted sha256:HEX>`; the rule is written
//! there). `completed/` goes in as the asked operation's receipt, then the
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

use crate::contract as doc;
use crate::node::fsx::{self, Dir, FsError, Root, Trust};
use crate::node::paths::{
    self, AGENT_STAGING_DIR, COMPLETED_DIR, LOG_DIR, MANIFESTS_DIR, OWNER_FILE, PHASE_FILE,
    STAGING_DIR, STATE_FILE_MODE,
};
use crate::node::statedir::StateDir;
use crate::rules::opid::OperationId;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;

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
        // Foreign files land in manifests/ and the staging directories; the
        // runbook's own state files are kept even when a crash left NULs
        // at their end (an unsynced append), when they matter most.
        let foreign = [MANIFESTS_PREFIX, STAGING_PREFIX, AGENT_STAGING_PREFIX]
            .iter()
            .any(|p| name.starts_with(p));
        let content = refusal(&bytes).or_else(|| foreign.then(|| not_text(&bytes)).flatten());
        if let Some(why) = content {
            tracing::info!("evidence: {} left out: {why}", shown(&shown_as));
            return self.skip(&shown_as, why);
        }
        // Foreign files are text here (not_text above): their credentials
        // go out as `<redacted sha256:...>` (SPEC 6, v1.2).
        let bytes = match std::str::from_utf8(&bytes) {
            Ok(text) if foreign => {
                let r = crate::rules::redact::redact(text);
                if r.count > 0 {
                    tracing::info!(
                        "evidence: {} credential value(s) of {} redacted",
                        r.count,
                        shown(&shown_as)
                    );
                }
                self.redacted += r.count as u64;
                r.text.into_bytes()
            }
            _ => bytes,
        };
        let size = bytes.len() as u64;
        if self.total + size > TOTAL_MAX {
            return self.skip(
                &shown_as,
                format!("the bundle's limit of {TOTAL_MAX} bytes is reached"),
            );
        }
        self.total += size;
        self.members.push(Member {
            name,
            source,
            bytes,
            mtime: mtime.max(0) as u64,
        });
    }

    /// `dir/entry` as member `name`, if it is a regular file that passes.
    /// `absent`: record a missing file as a skip (a named log) or not.
    fn file(&mut self, dir: &Dir, entry: &str, name: String, max: u64, absent: bool) {
        if self.stopping() {
            return;
        }
        let path = dir.entry_path(entry);
        match dir.read_copy(entry, max) {
            Ok(Some(c)) if c.links > 1 => self.skip(
                &path,
                format!(
                    "has {} hard links: its content is also a file elsewhere",
                    c.links
                ),
            ),
            Ok(Some(c)) => self.add(name, Some(path), c.bytes, c.mtime),
            Ok(None) if absent => self.skip(&path, "absent"),
            Ok(None) => {}
            Err(FsError::Symlink { .. }) => self.skip(&path, "a symlink (never followed)"),
            Err(FsError::WrongType { found, .. }) => {
                self.skip(&path, format!("a {} (only regular files)", found.as_str()))
            }
            Err(FsError::TooLarge { max, .. }) => {
                self.skip(&path, format!("larger than {max} bytes"))
            }
            Err(e) => self.skip(&path, e.to_string()),
        }
    }

    /// Every entry of `dir` (sorted, at most [`DIR_ENTRIES_MAX`]) as
    /// `<prefix>/<name>`.
    fn dir_files(&mut self, dir: &Dir, prefix: &str) {
        let names = match dir.list() {
            Ok(n) => n,
            Err(e) => return self.skip(&dir.path(), e.to_string()),
        };
        for (i, entry) in names.iter().enumerate() {
            if self.stopping() {
                return;
            }
            if i == DIR_ENTRIES_MAX {
                self.skip(
                    &dir.path(),
                    format!(
                        "{} more entries not looked at (at most {DIR_ENTRIES_MAX} per directory)",
                        names.len() - i
                    ),
                );
                break;
            }
            if !safe_name(entry) {
                self.skip(
                    &dir.entry_path(entry),
                    "a name outside A-Z a-z 0-9 . _ - : @ + = , ~",
                );
                continue;
            }
            self.file(dir, entry, format!("{prefix}/{entry}"), MEMBER_MAX, false);
        }
    }

    /// `completed/`: the receipt of the operation asked about first, then
    /// those the status document lists, then the rest newest first (by
    /// modification time, then name, as the view lists them), at most
    /// [`DIR_ENTRIES_MAX`] looked at; every one not in the bundle is counted
    /// in `receipts_left_out`.
    fn receipts(&mut self, dir: &Dir, prefix: &str, first: &[String]) {
        use std::cmp::Reverse;
        let mut total = 0u64;
        // The newest DIR_ENTRIES_MAX names only, while the directory
        // streams by (100,000 receipts must not mean 100,000 names).
        let mut heap: std::collections::BinaryHeap<Reverse<(i64, i64, String)>> =
            Default::default();
        let mut present = std::collections::BTreeSet::new();
        let listed = dir.for_each_name(|name| {
            total += 1;
            if first.iter().any(|f| f == name) {
                present.insert(name.to_string());
                return;
            }
            let key = match dir.stat_entry(name) {
                Ok(Some(st)) => (st.st_mtime, st.st_mtime_nsec),
                _ => (i64::MIN, 0),
            };
            if heap.len() == DIR_ENTRIES_MAX
                && heap.peek().is_some_and(|min| {
                    (min.0 .0, min.0 .1, min.0 .2.as_str()) >= (key.0, key.1, name)
                })
            {
                return;
            }
            heap.push(Reverse((key.0, key.1, name.to_string())));
            if heap.len() > DIR_ENTRIES_MAX {
                heap.pop();
            }
        });
        if let Err(e) = listed {
            return self.skip(&dir.path(), e.to_string());
        }
        let mut newest: Vec<(i64, i64, String)> = heap.into_iter().map(|r| r.0).collect();
        newest.sort_by(|a, b| b.cmp(a));
        let mut order: Vec<String> = Vec::new();
        for f in first {
            if present.contains(f) && !order.contains(f) {
                order.push(f.clone());
            }
        }
        order.extend(newest.into_iter().map(|(_, _, n)| n));
        let looked = order.len().min(DIR_ENTRIES_MAX);
        let mut added = 0u64;
        for entry in &order[..looked] {
            if !safe_name(entry) {
                self.skip(
                    &dir.entry_path(entry),
                    "a name outside A-Z a-z 0-9 . _ - : @ + = , ~",
                );
                continue;
            }
            let before = self.members.len();
            self.file(dir, entry, format!("{prefix}/{entry}"), MEMBER_MAX, false);
            added += (self.members.len() - before) as u64;
        }
        let not_looked = total.saturating_sub(looked as u64);
        if not_looked > 0 && !self.stopped {
            self.skip(
                &dir.path(),
                format!(
                    "{not_looked} older entries left out (at most {DIR_ENTRIES_MAX} receipts, newest first)"
                ),
            );
        }
        self.receipts = added;
        self.receipts_left_out = total - added;
    }

    /// A directory under the root, if it is there.
    fn tree(&mut self, root: &Root, rel: &str, prefix: &str) {
        match root.open_dir(rel, Trust::TypeOnly) {
            Ok(Some(d)) => self.dir_files(&d, prefix),
            Ok(None) => {}
            Err(e) => self.skip(&paths::node(rel), e.to_string()),
        }
    }
}

/// The operation logs the status document names, each with whether its
/// absence is worth a skip record: the operation asked about, the phase
/// file's and the lock owner's (and the legacy run's log when the phase
/// file or the owner is legacy) are; a listed receipt's is not (an old
/// operation's log may be long gone).
pub fn logs_named(
    status: &doc::StatusDocument,
    asked: Option<&OperationId>,
) -> BTreeMap<String, bool> {
    let mut ids: Vec<(String, bool)> = Vec::new();
    ids.extend(asked.map(|i| (i.as_str().to_string(), true)));
    ids.extend(
        status
            .phase_file
            .operation_id
            .iter()
            .map(|i| (i.as_str().to_string(), true)),
    );
    let mut legacy = status.phase_file.format == Some(doc::PhaseFormat::LegacyFiveLine);
    // The owner record (shown whether or not the lock is held).
    if let Some(doc::OwnerView::Known(o)) = &status.lock.last_owner {
        ids.extend(o.operation_id.clone().map(|i| (i, true)));
        legacy |= o.mode == "legacy-v1";
    }
    ids.extend(
        status
            .receipts
            .iter()
            .map(|r| (r.operation_id.clone(), false)),
    );
    let mut logs = BTreeMap::new();
    for (id, wanted) in ids {
        if let Ok(id) = OperationId::parse(&id) {
            *logs.entry(format!("{}.log", id.as_str())).or_insert(false) |= wanted;
        }
    }
    if legacy {
        logs.insert("legacy-v1.log".to_string(), true);
    }
    logs
}

/// The receipt names that go first: the asked operation's, then the ones
/// the status document lists.
fn receipts_first(status: &doc::StatusDocument, asked: Option<&OperationId>) -> Vec<String> {
    asked
        .map(|i| i.as_str().to_string())
        .into_iter()
        .chain(status.receipts.iter().map(|r| r.operation_id.clone()))
        .filter_map(|id| OperationId::parse(&id).ok())
        .map(|id| format!("{}.json", id.as_str()))
        .collect()
}

/// Gather the members (evidence.json aside) in archive order; `stop` is
/// asked between entries.
fn gather<'a>(
    root: &Root,
    status_json: Vec<u8>,
    mtime: i64,
    logs: &BTreeMap<String, bool>,
    first: &[String],
    stop: &'a dyn Fn() -> bool,
) -> Bundle<'a> {
    let mut b = Bundle::new(stop);
    b.add(format!("{TOP}/status.json"), None, status_json, mtime);
    match StateDir::open(root) {
        Ok(Some(state)) => {
            for name in [PHASE_FILE, OWNER_FILE] {
                b.file(
                    &state,
                    name,
                    format!("{TOP}/state/{name}"),
                    MEMBER_MAX,
                    false,
                );
            }
            match state.open_subdir(COMPLETED_DIR, Trust::TypeOnly) {
                Ok(Some(d)) => b.receipts(&d, &format!("{TOP}/state/{COMPLETED_DIR}"), first),
                Ok(None) => {}
                Err(e) => b.skip(&state.entry_path(COMPLETED_DIR), e.to_string()),
            }
            match state.open_subdir(LOG_DIR, Trust::TypeOnly) {
                Ok(Some(d)) => {
                    for (log, wanted) in logs {
                        b.file(
                            &d,
                            log,
                            format!("{TOP}/state/{LOG_DIR}/{log}"),
                            LOG_MAX,
                            *wanted,
                        );
                    }
                }
                Ok(None) if logs.values().any(|w| *w) => {
                    b.skip(&state.entry_path(LOG_DIR), "absent")
                }
                Ok(None) => {}
                Err(e) => b.skip(&state.entry_path(LOG_DIR), e.to_string()),
            }
        }
        Ok(None) => {}
        Err(e) => b.skip(&paths::node(paths::STATE_DIR), e.to_string()),
    }
    b.tree(root, STAGING_DIR, STAGING_PREFIX.trim_end_matches('/'));
    b.tree(
        root,
        AGENT_STAGING_DIR,
        AGENT_STAGING_PREFIX.trim_end_matches('/'),
    );
    b.tree(root, MANIFESTS_DIR, MANIFESTS_PREFIX.trim_end_matches('/'));
    b
}

/// The running binary's sha256 (hex), or why it could not be read.
fn binary_sha256() -> Result<String, String> {
    let mut f = fsx::open_running_binary().map_err(|e| e.to_string())?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| format!("failed to read /proc/self/exe: {e}"))?;
    Ok(hex(&h.finalize()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

// ---------------------------------------------------------------------------
// The tar format (POSIX ustar, with a pax `path` record for names over 100
// bytes), written by hand: every header field is ours.

const BLOCK: usize = 512;

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let s = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&s.as_bytes()[s.len() - digits..]);
    field[digits] = 0;
}

/// One ustar header: mode 0600, uid/gid 0 (root/root), `kind` `0` (file) or
/// `x` (pax extended header).
fn header(name: &str, size: u64, mtime: u64, kind: u8) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let n = name.as_bytes();
    let n = &n[..n.len().min(100)];
    h[..n.len()].copy_from_slice(n);
    octal(&mut h[100..108], u64::from(STATE_FILE_MODE));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime.min(0o77777777777));
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[265..269].copy_from_slice(b"root");
    h[297..301].copy_from_slice(b"root");
    octal(&mut h[329..337], 0);
    octal(&mut h[337..345], 0);
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// A pax record `"<len> path=<name>\n"`, `<len>` counting itself.
fn pax_path(name: &str) -> Vec<u8> {
    let body = format!(" path={name}\n");
    let mut len = body.len() + 1;
    while format!("{len}").len() + body.len() != len {
        len = format!("{len}").len() + body.len();
    }
    format!("{len}{body}").into_bytes()
}

fn pad(out: &mut Vec<u8>) {
    let rem = out.len() % BLOCK;
    if rem != 0 {
        out.resize(out.len() + BLOCK - rem, 0);
    }
}

/// The tar of `files` (name, bytes, mtime), in order, with its end blocks.
fn tar(files: &[(&str, &[u8], u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, bytes, mtime) in files {
        if name.len() > 100 {
            let rec = pax_path(name);
            out.extend_from_slice(&header(
                &format!("{TOP}/PaxHeader"),
                rec.len() as u64,
                *mtime,
                b'x',
            ));
            out.extend_from_slice(&rec);
            pad(&mut out);
        }
        out.extend_from_slice(&header(name, bytes.len() as u64, *mtime, b'0'));
        out.extend_from_slice(bytes);
        pad(&mut out);
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    out
}

/// The gzipped tar of the bundle, its manifest (`evidence.json`) first.
fn archive(b: &Bundle, now: &doc::Timestamp, mtime: i64) -> Result<Vec<u8>, String> {
    let (binary_sha256, binary_error) = match binary_sha256() {
        Ok(s) => (Some(doc::Sha256Hex(s)), None),
        Err(e) => (None, Some(e)),
    };
    let manifest = doc::EvidenceManifest {
        format: doc::EvidenceFormat::V1,
        runbook_version: crate::contract::version::RUNBOOK_VERSION.to_string(),
        git_commit: crate::contract::version::GIT_COMMIT.to_string(),
        binary_sha256,
        binary_error,
        now: now.clone(),
        members: b
            .members
            .iter()
            .map(|m| doc::EvidenceMember {
                name: m.name.clone(),
                source: m.source.clone(),
                bytes: m.bytes.len() as u64,
                sha256: doc::Sha256Hex(sha256_hex(&m.bytes)),
            })
            .collect(),
        receipts: b.receipts,
        receipts_left_out: b.receipts_left_out,
        redacted: b.redacted,
        skipped: listed(&b.skipped),
    };
    let mut manifest_json = crate::contract::to_json(&manifest).to_string().into_bytes();
    manifest_json.push(b'\n');
    let manifest_name = format!("{TOP}/evidence.json");
    let mut files: Vec<(&str, &[u8], u64)> =
        vec![(&manifest_name, &manifest_json, mtime.max(0) as u64)];
    files.extend(
        b.members
            .iter()
            .map(|m| (m.name.as_str(), m.bytes.as_slice(), m.mtime)),
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar(&files))
        .and_then(|()| gz.finish())
        .map_err(|e| format!("cannot compress the bundle: {e}"))
}

/// At most [`SKIPS_LISTED`] skips, and one more that counts the rest.
fn listed(skipped: &[doc::EvidenceSkip]) -> Vec<doc::EvidenceSkip> {
    let mut v: Vec<_> = skipped.iter().take(SKIPS_LISTED).cloned().collect();
    if skipped.len() > SKIPS_LISTED {
        v.push(doc::EvidenceSkip {
            path: "...".to_string(),
            reason: format!("{} more skipped, not listed", skipped.len() - SKIPS_LISTED),
        });
    }
    v
}

/// The directories the bundle reads: the bundle is never written into one.
fn collected_dirs(root: &Root) -> Vec<Dir> {
    let state_dirs = [
        paths::STATE_DIR.to_string(),
        format!("{}/{COMPLETED_DIR}", paths::STATE_DIR),
        format!("{}/{LOG_DIR}", paths::STATE_DIR),
    ];
    [MANIFESTS_DIR, STAGING_DIR, AGENT_STAGING_DIR]
        .into_iter()
        .map(str::to_string)
        .chain(state_dirs)
        .filter_map(|rel| root.open_dir(&rel, Trust::TypeOnly).ok().flatten())
        .collect()
}

/// Write the bundle to `rel` (a node path under the root, from
/// `--evidence`): what the view reports. `status` is the status document
/// as printed without this field; `asked` the `--operation-id`. `stop` is
/// asked between entries and once more before the archive gets its name
/// (a signal, SPEC 6 v1.2): when it says stop, or on any error, nothing is
/// left at `rel` or beside it, and the view says why.
pub fn write(
    root: &Root,
    rel: &str,
    status: &doc::StatusDocument,
    asked: Option<&OperationId>,
    stop: &dyn Fn() -> bool,
) -> doc::EvidenceView {
    let path = paths::node(rel);
    match try_write(root, rel, status, asked, stop) {
        Ok(w) => doc::EvidenceView::Written(doc::EvidenceWritten {
            path,
            written: doc::ConstBool,
            sha256: doc::Sha256Hex(w.sha256),
            bytes: w.bytes,
            members: w.members,
            receipts: w.receipts,
            receipts_left_out: w.receipts_left_out,
            redacted: w.redacted,
            skipped: w.skipped,
        }),
        Err(error) => doc::EvidenceView::NotWritten(doc::EvidenceNotWritten {
            path,
            written: doc::ConstBool,
            error,
        }),
    }
}

/// What a written bundle reports.
struct Written {
    sha256: String,
    bytes: u64,
    members: u64,
    receipts: u64,
    receipts_left_out: u64,
    redacted: u64,
    skipped: Vec<doc::EvidenceSkip>,
}

/// Why a bundle cut short by `stop` was not written.
pub const INTERRUPTED: &str =
    "interrupted by a signal (SIGTERM, SIGINT or SIGHUP): no bundle written, nothing left behind";

fn try_write(
    root: &Root,
    rel: &str,
    status: &doc::StatusDocument,
    asked: Option<&OperationId>,
    stop: &dyn Fn() -> bool,
) -> Result<Written, String> {
    if stop() {
        return Err(INTERRUPTED.to_string());
    }
    let path = paths::node(rel);
    let (dir, name) = root
        .open_parent(rel)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the directory of {path} does not exist"))?;
    let here = dir.identity().map_err(|e| e.to_string())?;
    if collected_dirs(root)
        .iter()
        .any(|d| d.identity().is_ok_and(|id| id == here))
    {
        return Err(format!(
            "{} is a directory the bundle reads; write it elsewhere",
            dir.path()
        ));
    }
    if dir.stat_entry(name).map_err(|e| e.to_string())?.is_some() {
        return Err(format!("{path} already exists; it is never replaced"));
    }
    let mtime = crate::rules::clock::parse_rfc3339(&status.now.0, true)
        .map(|t| t.unix_timestamp())
        .unwrap_or(0);
    // The holder's command line may carry anything (a token passed as an
    // argument): the bundle keeps its pid and command name only.
    let mut shown = status.clone();
    if let Some(h) = shown.lock.holder.as_mut() {
        h.command_line = None;
    }
    // A staging conflict's diff quotes both copies of a manifest: redacted
    // as the manifests are (the printed document keeps it, as the screen
    // keeps the holder's command line).
    let mut diff_redacted = 0u64;
    for c in &mut shown.conflicts {
        let r = crate::rules::redact::redact_diff(&c.diff);
        if r.count > 0 {
            diff_redacted += r.count as u64;
            c.diff = r.text.split('\n').map(str::to_string).collect();
        }
    }
    // No control character in any string, as the printed document (issue
    // 25): the bundle's reader prints it too.
    let mut shown_json = crate::contract::to_json(&shown);
    crate::rules::opid::escape_json_strings(&mut shown_json);
    let mut status_json = shown_json.to_string().into_bytes();
    status_json.push(b'\n');
    let first = receipts_first(status, asked);
    let mut bundle = gather(
        root,
        status_json,
        mtime,
        &logs_named(status, asked),
        &first,
        stop,
    );
    bundle.redacted += diff_redacted;
    if bundle.stopping() {
        return Err(INTERRUPTED.to_string());
    }
    let gz = archive(&bundle, &status.now, mtime)?;
    let last_look = || {
        #[cfg(feature = "failpoints")]
        fail::fail_point!("evidence-before-link");
        stop()
    };
    let created = dir
        .create_once_unless(name, &gz, STATE_FILE_MODE, &last_look)
        .map_err(|e| match e {
            FsError::Exists { path } => format!("{path} already exists; it is never replaced"),
            e => e.to_string(),
        })?;
    if !created {
        return Err(INTERRUPTED.to_string());
    }
    Ok(Written {
        sha256: sha256_hex(&gz),
        bytes: gz.len() as u64,
        members: bundle.members.len() as u64 + 1,
        receipts: bundle.receipts,
        receipts_left_out: bundle.receipts_left_out,
        redacted: bundle.redacted,
        skipped: listed(&bundle.skipped),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
