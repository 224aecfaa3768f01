//! What the evidence bundle reads from the node, in archive order: the
//! state files, the receipts (the asked one first, then newest first), the
//! operation logs named, the staging directories and `manifests/`; each
//! file without following a symlink, each directory bounded.

use super::{
    admit, doc, safe_name, Bundle, AGENT_STAGING_PREFIX, DIR_ENTRIES_MAX, LOG_MAX,
    MANIFESTS_PREFIX, MEMBER_MAX, STAGING_PREFIX, TOP,
};
use crate::node::fsx::{Dir, FsError, Root, Trust};
use crate::node::paths::{
    self, AGENT_STAGING_DIR, COMPLETED_DIR, LOG_DIR, MANIFESTS_DIR, OWNER_FILE, PHASE_FILE,
    STAGING_DIR,
};
use crate::node::statedir::StateDir;
use crate::rules::opid::OperationId;
use std::collections::BTreeMap;

impl Bundle<'_> {
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
pub(super) fn receipts_first(
    status: &doc::StatusDocument,
    asked: Option<&OperationId>,
) -> Vec<String> {
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
pub(super) fn gather<'a>(
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

/// A manifest copy (a node path in `manifests/` or a staging directory)
/// as the bundle holds it: read and admitted as a member is (a regular
/// file of one link, within the cap, redacted), or why it is not there.
pub(super) fn member_text(root: &Root, path: &str) -> Result<String, String> {
    let rel = path.trim_start_matches('/');
    let (dir, name) = match root.open_parent(rel) {
        Ok(Some(found)) => found,
        Ok(None) => return Err("absent".into()),
        Err(e) => return Err(e.to_string()),
    };
    let copy = match dir.read_copy(name, MEMBER_MAX) {
        Ok(Some(c)) if c.links > 1 => return Err(format!("has {} hard links", c.links)),
        Ok(Some(c)) => c,
        Ok(None) => return Err("absent".into()),
        Err(e) => return Err(e.to_string()),
    };
    let (bytes, _) = admit(true, copy.bytes)?;
    String::from_utf8(bytes).map_err(|_| "not text".to_string())
}

/// The directories the bundle reads: the bundle is never written into one.
pub(super) fn collected_dirs(root: &Root) -> Vec<Dir> {
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
