//! The evidence bundle written: its manifest (`evidence.json`), the
//! gzipped tar in memory, then created once at PATH, never replacing, and
//! never inside a directory the bundle reads; what the view reports.

use super::collect::{collected_dirs, gather, logs_named, member_text, receipts_first};
use super::tar::tar;
use super::{doc, Bundle, INTERRUPTED, SKIPS_LISTED, TOP};
use crate::node::conflict::DIFF_LINES;
use crate::node::fsx::{self, FsError, Root};
use crate::node::paths::{self, STATE_FILE_MODE};
use crate::rules::opid::OperationId;
use crate::rules::textdiff;
use sha2::{Digest, Sha256};
use std::io::Write;

/// Why the bundle was not written (the view's `error`).
#[derive(Debug, thiserror::Error)]
enum NotWritten {
    /// A signal came between entries or before the archive got its name.
    #[error("{}", INTERRUPTED)]
    Interrupted,
    #[error("{0}")]
    Fs(#[from] FsError),
    #[error("the directory of {path} does not exist")]
    NoDirectory { path: String },
    #[error("{dir} is a directory the bundle reads; write it elsewhere")]
    ReadByBundle { dir: String },
    #[error("{path} already exists; it is never replaced")]
    Exists { path: String },
    #[error("cannot compress the bundle: {0}")]
    Compress(std::io::Error),
}

/// Why the running binary could not be hashed (the manifest's
/// `binaryError`).
#[derive(Debug, thiserror::Error)]
enum BinaryUnread {
    #[error("{0}")]
    Open(FsError),
    #[error("failed to read /proc/self/exe: {0}")]
    Read(std::io::Error),
}

/// The running binary's sha256 (hex), or why it could not be read.
fn binary_sha256() -> Result<String, BinaryUnread> {
    let mut f = fsx::open_running_binary().map_err(BinaryUnread::Open)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(BinaryUnread::Read)?;
    Ok(hex(&h.finalize()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// The gzipped tar of the bundle, its manifest (`evidence.json`) first.
fn archive(b: &Bundle, now: &doc::Timestamp, mtime: i64) -> Result<Vec<u8>, NotWritten> {
    let (binary_sha256, binary_error) = match binary_sha256() {
        Ok(s) => (Some(doc::Sha256Hex(s)), None),
        Err(e) => (None, Some(e.to_string())),
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
        .map_err(NotWritten::Compress)
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

/// A staging conflict's diff as the bundle carries it: a line diff of the
/// two copies as the bundle holds them (each read as YAML and redacted, so
/// a diff window never shows a credential the structure hid), or why there
/// is none.
fn conflict_diff(root: &Root, c: &doc::StagingConflict) -> Vec<String> {
    let copy = |path: &str| {
        member_text(root, path)
            .map_err(|why| format!("(not compared in the bundle: {path}: {why})"))
    };
    match (copy(&c.active.path), copy(&c.staged.path)) {
        (Ok(a), Ok(b)) if a == b => vec![
            "(the copies differ only in what the bundle does not keep: comments, quotes, layout)"
                .to_string(),
        ],
        (Ok(a), Ok(b)) => textdiff::unified(&a, &b, &c.active.path, &c.staged.path, DIFF_LINES),
        (Err(why), _) | (_, Err(why)) => vec![why],
    }
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
            error: error.to_string(),
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

fn try_write(
    root: &Root,
    rel: &str,
    status: &doc::StatusDocument,
    asked: Option<&OperationId>,
    stop: &dyn Fn() -> bool,
) -> Result<Written, NotWritten> {
    if stop() {
        return Err(NotWritten::Interrupted);
    }
    let path = paths::node(rel);
    let (dir, name) = root
        .open_parent(rel)?
        .ok_or_else(|| NotWritten::NoDirectory { path: path.clone() })?;
    let here = dir.identity()?;
    if collected_dirs(root)
        .iter()
        .any(|d| d.identity().is_ok_and(|id| id == here))
    {
        return Err(NotWritten::ReadByBundle {
            dir: dir.path().to_string(),
        });
    }
    if dir.stat_entry(name)?.is_some() {
        return Err(NotWritten::Exists { path });
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
    // A staging conflict's diff quotes both copies of a manifest: in the
    // bundle it is made again from the copies as the bundle holds them
    // (redacted; the printed document keeps the node's, as the screen
    // keeps the holder's command line).
    for c in &mut shown.conflicts {
        if !c.diff.is_empty() {
            c.diff = conflict_diff(root, c);
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
    if bundle.stopping() {
        return Err(NotWritten::Interrupted);
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
            FsError::Exists { path } => NotWritten::Exists { path },
            e => NotWritten::Fs(e),
        })?;
    if !created {
        return Err(NotWritten::Interrupted);
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
