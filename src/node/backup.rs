//! Backups of `pki/` and the four kubeconfigs before kubeadm runs:
//! `state/backup/<ID>.partial/` (0700), renamed to `backup/<ID>/` once
//! complete; restored file by file; the three newest complete kept.
//!
//! # Mode, owner and group (SPEC 4 step 8, v1.1)
//!
//! A backup records each file's (and directory's) mode, owner and group,
//! and each file's modification time (v1.3, below), in a metadata record,
//! `backup/<ID>/metadata.json`, written with the copies (create-once,
//! root-owned, 0600) before `<ID>.partial` is renamed to `<ID>`: a complete
//! backup always has its record. A rollback puts back bytes, mode, owner,
//! group and modification time, and rewrites a file when any of them
//! differs; the replacement is chowned (and its time set) before its rename
//! ([`Dir::replace_owned`]), so a kubeadm-owned file is never root-owned,
//! not even for a moment.
//!
//! # Modification times (SPEC 4 step 8, v1.3)
//!
//! The record also holds each file's modification time (`mtime`,
//! `SEC.NNNNNNNNN`, from the same no-follow `fstatat`, relative to the
//! directory's descriptor, as its mode, owner and group). The operator view
//! judges "restart needed" by those times (SPEC 10): a rollback that left
//! kubeadm's times would tell an operator to restart healthy components. So
//! a rollback puts the time back too, and rewrites a file whose only
//! difference is its time (kubeadm rewrote the same bytes).
//!
//! The time is set with `futimens` on the temp file's descriptor after its
//! chown and chmod and before its fsync and rename: nothing writes to the
//! file after it, so the time holds, and the name never appears with
//! another time; a crash at any point leaves either kubeadm's file or the
//! whole restored one (bytes, owner, mode and time together). Setting it
//! after the rename would leave a window where a crash keeps the old bytes
//! under a new time: the false "restart needed" this fixes, until the next
//! rollback. Directories' times are not recorded (the rollback's own
//! renames change them).
//!
//! `mtime` is an optional field, the `format` unchanged: a record written
//! before v1.3 has no times and still restores bytes, mode, owner and
//! group; its rollback leaves each rewritten file the time of the write, as
//! before (logged). A binary older than v1.3 that resumes an operation this
//! one began (a downgrade mid-operation) refuses a record with times, naming
//! it, as it would refuse a new `format`: a bump would buy nothing, since
//! this binary reads both shapes either way.
//!
//! Why a record and not copies that carry the original's owner: SPEC 3
//! refuses a backup that is not root-owned or is writable by group or
//! others, and the state directory is read with `Trust::Strict`, which
//! refuses exactly that. A record keeps every file under `state/` root-owned,
//! so nothing in the state directory needs a looser trust to be read, and the
//! owner of a restored file comes from a file only root could have written
//! (the record is read `Trust::Strict`). The copies keep the original's mode,
//! as before, so a backup taken by an older version (no record) still
//! restores bytes and mode; it keeps the owner and group the file has now
//! (or ours, for a file that is gone). A record that exists and does not
//! parse refuses the rollback, naming it: an owner is never guessed from a
//! damaged record.

use crate::node::fsx::{Attrs, Dir, FsError, Kind, Root, Trust, NODE_FILE_MAX};
use crate::node::paths::{PKI_DIR, STATE_DIR_MODE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The kubeconfigs backed up with the PKI (those that exist).
pub const KUBECONFIGS: [&str; 4] = [
    "admin.conf",
    "super-admin.conf",
    "controller-manager.conf",
    "scheduler.conf",
];
/// Complete backups kept after a success.
pub const KEEP: usize = 3;
/// The metadata record inside `backup/<ID>/`: mode, owner and group of
/// every file and directory backed up, and each file's modification time,
/// keyed by its path in the backup.
pub const METADATA: &str = "metadata.json";
/// The record's `format`.
pub const METADATA_FORMAT: &str = "nvke-cert-runbook/backup-metadata/v1";

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error("{0}")]
    Refused(String),
}

/// Mode (permission bits, in octal), owner and group of one backed-up entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    /// The modification time (seconds, nanoseconds; v1.3): recorded for
    /// files, None for directories and in a record an older version wrote.
    mtime: Option<(i64, i64)>,
}

impl Meta {
    fn of(st: &nix::sys::stat::FileStat) -> Meta {
        Meta {
            mode: st.st_mode & 0o7777,
            uid: st.st_uid,
            gid: st.st_gid,
            mtime: Some((st.st_mtime, st.st_mtime_nsec)),
        }
    }

    /// Whether a file with `now` needs no rewrite to be this: mode, owner
    /// and group equal, and the time too when one is recorded.
    fn satisfied_by(&self, now: &Meta) -> bool {
        (self.mode, self.uid, self.gid) == (now.mode, now.uid, now.gid)
            && (self.mtime.is_none() || self.mtime == now.mtime)
    }

    fn attrs(&self) -> Attrs {
        Attrs {
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
            mtime: self.mtime,
        }
    }
}

/// One entry of the record as written: `{"mode": "0640", "uid": 1000,
/// "gid": 1000, "mtime": "1764460800.123456789"}` (`mtime` since v1.3,
/// files only; a record without it restores no time).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetaJson {
    mode: String,
    uid: u32,
    gid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtime: Option<String>,
}

impl From<Meta> for MetaJson {
    fn from(m: Meta) -> Self {
        MetaJson {
            mode: format!("{:04o}", m.mode),
            uid: m.uid,
            gid: m.gid,
            mtime: m.mtime.map(|(s, ns)| format!("{s}.{ns:09}")),
        }
    }
}

/// `SEC.NNNNNNNNN` as written by [`MetaJson::from`].
fn parse_mtime(t: &str) -> Option<(i64, i64)> {
    let (s, ns) = t.split_once('.')?;
    let ok = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    if !ok(s) || ns.len() != 9 || !ns.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((s.parse().ok()?, ns.parse().ok()?))
}

/// A record entry's mode that is not octal permission bits.
#[derive(Debug, thiserror::Error)]
#[error("bad mode {0:?}")]
struct BadMode(String);

/// Why the metadata record was refused.
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("unknown format {0:?}")]
    Format(String),
    #[error("{path}: {mode}")]
    Entry { path: String, mode: BadMode },
}

impl TryFrom<MetaJson> for Meta {
    type Error = BadMode;
    fn try_from(m: MetaJson) -> Result<Self, BadMode> {
        let mtime = match &m.mtime {
            None => None,
            Some(t) => Some(parse_mtime(t).ok_or_else(|| BadMode(format!("mtime {t}")))?),
        };
        match u32::from_str_radix(&m.mode, 8) {
            Ok(mode) if mode <= 0o7777 && !m.mode.is_empty() => Ok(Meta {
                mode,
                uid: m.uid,
                gid: m.gid,
                mtime,
            }),
            _ => Err(BadMode(m.mode)),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordJson {
    format: String,
    files: BTreeMap<String, MetaJson>,
    dirs: BTreeMap<String, MetaJson>,
}

/// The metadata record: paths relative to the backup (`pki/ca.crt`,
/// `pki/etcd`, `admin.conf`).
#[derive(Debug, Default)]
struct Record {
    files: BTreeMap<String, Meta>,
    dirs: BTreeMap<String, Meta>,
}

impl Record {
    fn render(&self) -> Vec<u8> {
        let conv = |m: &BTreeMap<String, Meta>| {
            m.iter()
                .map(|(k, v)| (k.clone(), MetaJson::from(*v)))
                .collect()
        };
        let j = RecordJson {
            format: METADATA_FORMAT.to_string(),
            files: conv(&self.files),
            dirs: conv(&self.dirs),
        };
        let mut out = serde_json::to_vec_pretty(&j).expect("serializable");
        out.push(b'\n');
        out
    }

    fn parse(bytes: &[u8]) -> Result<Record, RecordError> {
        let j: RecordJson = serde_json::from_slice(bytes)?;
        if j.format != METADATA_FORMAT {
            return Err(RecordError::Format(j.format));
        }
        let conv = |m: BTreeMap<String, MetaJson>| -> Result<BTreeMap<String, Meta>, RecordError> {
            let mut out = BTreeMap::new();
            for (k, v) in m {
                let meta = Meta::try_from(v).map_err(|mode| RecordError::Entry {
                    path: k.clone(),
                    mode,
                })?;
                out.insert(k, meta);
            }
            Ok(out)
        };
        Ok(Record {
            files: conv(j.files)?,
            dirs: conv(j.dirs)?,
        })
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

fn stat_of(dir: &Dir, name: &str) -> Result<Meta, BackupError> {
    let st = dir.stat_entry(name)?.ok_or_else(|| {
        BackupError::Refused(format!(
            "{} vanished while backing it up",
            dir.entry_path(name)
        ))
    })?;
    Ok(Meta::of(&st))
}

fn copy_tree(
    src: &Dir,
    dst: &Dir,
    rel: &str,
    record: &mut Record,
    count: &mut usize,
) -> Result<(), BackupError> {
    for name in src.list()? {
        match src.kind_of(&name)? {
            Some(Kind::Dir) => {
                let s = src.open_subdir(&name, Trust::TypeOnly)?.expect("listed");
                let meta = Meta {
                    mtime: None,
                    ..stat_of(src, &name)?
                };
                let d = dst.mkdir(&name, meta.mode)?;
                record.dirs.insert(join(rel, &name), meta);
                copy_tree(&s, &d, &join(rel, &name), record, count)?;
            }
            Some(Kind::File) => {
                let bytes = src
                    .read_file(&name, NODE_FILE_MAX, Trust::TypeOnly)?
                    .expect("listed");
                let meta = stat_of(src, &name)?;
                dst.create_once(&name, &bytes, meta.mode)?;
                record.files.insert(join(rel, &name), meta);
                *count += 1;
            }
            Some(k) => {
                return Err(BackupError::Refused(format!(
                    "{} is a {}; refusing to back it up or follow it",
                    src.entry_path(&name),
                    k.as_str()
                )))
            }
            None => {}
        }
    }
    Ok(())
}

/// Make (or reuse, when a complete one exists: a resumed run keeps the
/// backup taken before the first kubeadm) `<kind>/<name>/`, with its
/// metadata record. Returns the number of files copied (0 when reused).
pub fn create(root: &Root, state: &Dir, kind: &str, name: &str) -> Result<usize, BackupError> {
    let parent = match state.open_subdir(kind, Trust::Strict)? {
        Some(d) => d,
        None => state.mkdir(kind, STATE_DIR_MODE)?,
    };
    if parent.open_subdir(name, Trust::Strict)?.is_some() {
        return Ok(0);
    }
    let partial = format!("{name}.partial");
    parent.remove_tree(&partial)?;
    let dst = parent.mkdir(&partial, STATE_DIR_MODE)?;
    let pki = root.open_dir(PKI_DIR, Trust::TypeOnly)?.ok_or_else(|| {
        BackupError::Refused(format!(
            "{} does not exist",
            crate::node::paths::node(PKI_DIR)
        ))
    })?;
    let mut count = 0;
    let mut record = Record::default();
    let kube = root
        .open_dir("etc/kubernetes", Trust::TypeOnly)?
        .expect("pki exists under it");
    // The directory itself (`.`): the link's target when `pki` is an
    // accepted symlink (SPEC 12), whose files are backed up.
    record.dirs.insert(
        "pki".into(),
        Meta {
            mtime: None,
            ..stat_of(&pki, ".")?
        },
    );
    let pki_dst = dst.mkdir("pki", STATE_DIR_MODE)?;
    copy_tree(&pki, &pki_dst, "pki", &mut record, &mut count)?;
    for conf in KUBECONFIGS {
        if let Some(bytes) = kube.read_file(conf, NODE_FILE_MAX, Trust::TypeOnly)? {
            let meta = stat_of(&kube, conf)?;
            dst.create_once(conf, &bytes, meta.mode)?;
            record.files.insert(conf.to_string(), meta);
            count += 1;
        }
    }
    dst.create_once(METADATA, &record.render(), 0o600)?;
    dst.sync()?;
    parent.rename_noreplace(&partial, name)?;
    Ok(count)
}

/// Put one backed-up file back: rewritten (bytes, mode, owner, group and,
/// when recorded, modification time, all set before the rename) when any
/// of them differs.
fn restore_file(
    src: &Dir,
    dst: &Dir,
    name: &str,
    rel: &str,
    record: Option<&Record>,
    count: &mut usize,
) -> Result<(), BackupError> {
    // The copies are root-owned with the original's mode (`Trust::TypeOnly`
    // as when they were written); the record says whose they were.
    let Some(bytes) = src.read_file(name, NODE_FILE_MAX, Trust::TypeOnly)? else {
        return Ok(());
    };
    let now = dst.stat_entry(name)?;
    let want = match record.and_then(|r| r.files.get(rel)) {
        Some(m) => *m,
        // An older backup without a record: the copy's mode; the owner and
        // group the file has now, or ours for a file that is gone.
        None => Meta {
            mtime: None,
            mode: stat_of(src, name)?.mode,
            uid: now
                .as_ref()
                .map_or_else(|| nix::unistd::geteuid().as_raw(), |st| st.st_uid),
            gid: now
                .as_ref()
                .map_or_else(|| nix::unistd::getegid().as_raw(), |st| st.st_gid),
        },
    };
    let unchanged = now
        .as_ref()
        .is_some_and(|st| want.satisfied_by(&Meta::of(st)))
        && dst
            .read_file(name, NODE_FILE_MAX, Trust::TypeOnly)
            .ok()
            .flatten()
            .as_deref()
            == Some(&bytes[..]);
    if !unchanged {
        dst.replace_owned(name, &bytes, want.attrs(), Trust::TypeOnly)?;
        *count += 1;
    }
    Ok(())
}

fn restore_tree(
    src: &Dir,
    dst: &Dir,
    rel: &str,
    record: Option<&Record>,
    count: &mut usize,
) -> Result<(), BackupError> {
    for name in src.list()? {
        let path = join(rel, &name);
        match src.kind_of(&name)? {
            Some(Kind::Dir) => {
                let s = src.open_subdir(&name, Trust::TypeOnly)?.expect("listed");
                let d = match dst.open_subdir(&name, Trust::TypeOnly)? {
                    Some(d) => d,
                    None => match record.and_then(|r| r.dirs.get(&path)) {
                        Some(m) => {
                            let d = dst.mkdir(&name, m.mode)?;
                            d.set_owner(m.uid, m.gid)?;
                            d
                        }
                        None => dst.mkdir(&name, src.mode_of(&name)?.unwrap_or(0o755))?,
                    },
                };
                restore_tree(&s, &d, &path, record, count)?;
            }
            Some(Kind::File) => restore_file(src, dst, &name, &path, record, count)?,
            _ => {}
        }
    }
    Ok(())
}

/// Put every backed-up file back, with its mode, owner, group and
/// modification time (only those that differ in any of these are
/// rewritten). Returns how many files were rewritten.
pub fn restore(root: &Root, state: &Dir, kind: &str, name: &str) -> Result<usize, BackupError> {
    let dir = state
        .open_subdir(kind, Trust::Strict)?
        .and_then(|p| p.open_subdir(name, Trust::Strict).transpose())
        .transpose()?
        .ok_or_else(|| BackupError::Refused(format!("backup {kind}/{name} does not exist")))?;
    let record = match dir.read_file(METADATA, NODE_FILE_MAX, Trust::Strict)? {
        Some(bytes) => Some(Record::parse(&bytes).map_err(|e| {
            BackupError::Refused(format!(
                "{} is malformed ({e}); nothing put back: copy the backup back by hand, with its owners",
                dir.entry_path(METADATA)
            ))
        })?),
        None => {
            tracing::warn!(
                "{} has no {METADATA} (an older backup): restoring bytes and modes, keeping each file's current owner and group",
                dir.path()
            );
            None
        }
    };
    if record
        .as_ref()
        .is_some_and(|r| !r.files.is_empty() && r.files.values().all(|m| m.mtime.is_none()))
    {
        tracing::warn!(
            "{} has no modification times (a backup from before v1.3): a file put back keeps the time of its rewrite",
            dir.entry_path(METADATA)
        );
    }
    let mut count = 0;
    let pki_src = dir
        .open_subdir("pki", Trust::Strict)?
        .ok_or_else(|| BackupError::Refused("backup has no pki/".into()))?;
    let pki = root.open_dir(PKI_DIR, Trust::TypeOnly)?.ok_or_else(|| {
        BackupError::Refused(format!(
            "{} does not exist",
            crate::node::paths::node(PKI_DIR)
        ))
    })?;
    restore_tree(&pki_src, &pki, "pki", record.as_ref(), &mut count)?;
    let kube = root
        .open_dir("etc/kubernetes", Trust::TypeOnly)?
        .expect("pki exists under it");
    for conf in KUBECONFIGS {
        // The top-level copies were read `Trust::Strict` before; they are
        // still root-owned copies, vetted so here too.
        if dir.open_file(conf, Trust::Strict)?.is_some() {
            restore_file(&dir, &kube, conf, conf, record.as_ref(), &mut count)?;
        }
    }
    Ok(count)
}

/// A complete backup, open for reading: the certificates as they were
/// before kubeadm (SPEC 4 step 8, "Leaf by leaf", v1.3).
pub struct Opened(Dir);

/// `<kind>/<name>/`, when it exists.
pub fn open(state: &Dir, kind: &str, name: &str) -> Result<Option<Opened>, FsError> {
    Ok(state
        .open_subdir(kind, Trust::Strict)?
        .and_then(|p| p.open_subdir(name, Trust::Strict).transpose())
        .transpose()?
        .map(Opened))
}

impl Opened {
    /// The backed-up copy of a node file (`etc/kubernetes/pki/etcd/peer.crt`
    /// is `pki/etcd/peer.crt` in the backup); None when it has none.
    pub fn read(&self, node_rel: &str) -> Result<Option<Vec<u8>>, FsError> {
        let Some(rel) = node_rel.strip_prefix("etc/kubernetes/") else {
            return Ok(None);
        };
        let mut parts: Vec<&str> = rel.split('/').collect();
        let file = parts.pop().unwrap_or_default();
        let mut dir: Option<Dir> = None;
        for p in parts {
            let next = dir
                .as_ref()
                .unwrap_or(&self.0)
                .open_subdir(p, Trust::TypeOnly)?;
            match next {
                Some(d) => dir = Some(d),
                None => return Ok(None),
            }
        }
        // Copies keep their node file's mode (a 0664 leaf, a 0775 pki/etcd):
        // read as the rollback reads them, by type only, inside the backup
        // directory that was itself opened strictly.
        dir.as_ref()
            .unwrap_or(&self.0)
            .read_file(file, NODE_FILE_MAX, Trust::TypeOnly)
    }
}

/// Keep the `KEEP` newest complete backups (by mtime); remove older ones and
/// stale `.partial` directories. Never removes `current`.
pub fn prune(state: &Dir, kind: &str, current: &str) -> Result<Vec<String>, FsError> {
    let Some(parent) = state.open_subdir(kind, Trust::Strict)? else {
        return Ok(Vec::new());
    };
    let mut complete = Vec::new();
    let mut removed = Vec::new();
    for name in parent.list()? {
        if parent.kind_of(&name)? != Some(Kind::Dir) {
            continue;
        }
        if name.ends_with(".partial") {
            parent.remove_tree(&name)?;
            removed.push(name);
            continue;
        }
        let st = parent.stat_entry(&name)?.expect("listed");
        complete.push((st.st_mtime, st.st_mtime_nsec, name));
    }
    complete.sort_by(|a, b| b.cmp(a));
    for (_, _, name) in complete.into_iter().skip(KEEP) {
        if name != current {
            parent.remove_tree(&name)?;
            removed.push(name);
        }
    }
    Ok(removed)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests plant and read files in their temp node
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn node() -> (tempfile::TempDir, Root, Dir) {
        let t = tempfile::tempdir().unwrap();
        let k = t.path().join("etc/kubernetes");
        std::fs::create_dir_all(k.join("pki/etcd")).unwrap();
        std::fs::write(k.join("pki/ca.crt"), b"CA").unwrap();
        std::fs::write(k.join("pki/ca.key"), b"KEY").unwrap();
        std::fs::set_permissions(k.join("pki/ca.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::fs::write(k.join("pki/etcd/server.crt"), b"S1").unwrap();
        std::fs::write(k.join("admin.conf"), b"A1").unwrap();
        let root = Root::open(t.path()).unwrap();
        let state = root
            .create_dir_all("var/lib/nvke/k8s-cert-renewal", 0o700, Trust::TypeOnly)
            .unwrap();
        (t, root, state)
    }

    #[test]
    fn backup_then_restore_puts_bytes_and_modes_back() {
        let (t, root, state) = node();
        assert_eq!(create(&root, &state, "backup", "op").unwrap(), 4);
        let b = t.path().join("var/lib/nvke/k8s-cert-renewal/backup");
        assert!(b.join("op/pki/etcd/server.crt").is_file());
        assert!(!b.join("op.partial").exists());
        assert_eq!(
            std::fs::metadata(b.join("op/pki/ca.key"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        // A resumed run reuses the complete backup.
        assert_eq!(create(&root, &state, "backup", "op").unwrap(), 0);
        let k = t.path().join("etc/kubernetes");
        std::fs::write(k.join("pki/etcd/server.crt"), b"S2").unwrap();
        std::fs::write(k.join("admin.conf"), b"A2").unwrap();
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 2);
        assert_eq!(std::fs::read(k.join("pki/etcd/server.crt")).unwrap(), b"S1");
        assert_eq!(std::fs::read(k.join("admin.conf")).unwrap(), b"A1");
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 0);
    }

    /// SPEC 12: `pki` an accepted symlink to `ssl/` (kubespray): the backup
    /// copies the target's files and the rollback puts them back there; the
    /// link stays a link.
    #[test]
    fn backup_and_rollback_act_on_an_accepted_pki_links_target() {
        let (t, _, _) = node();
        let k = t.path().join("etc/kubernetes");
        std::fs::rename(k.join("pki"), k.join("ssl")).unwrap();
        std::os::unix::fs::symlink("ssl", k.join("pki")).unwrap();
        for d in [&k, &k.join("ssl")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let root = Root::open(t.path()).unwrap();
        let state = root
            .open_dir("var/lib/nvke/k8s-cert-renewal", Trust::TypeOnly)
            .unwrap()
            .unwrap();
        assert_eq!(create(&root, &state, "backup", "op").unwrap(), 4);
        let b = t.path().join("var/lib/nvke/k8s-cert-renewal/backup/op");
        assert_eq!(std::fs::read(b.join("pki/etcd/server.crt")).unwrap(), b"S1");
        assert_eq!(std::fs::read(b.join("pki/ca.key")).unwrap(), b"KEY");
        assert!(b.join("pki").is_dir() && !b.join("pki").is_symlink());
        let rec: serde_json::Value =
            serde_json::from_slice(&std::fs::read(b.join(METADATA)).unwrap()).unwrap();
        // The directory recorded is the target, not the link (0777).
        assert_eq!(rec["dirs"]["pki"]["mode"], "0755", "{rec:#}");

        std::fs::write(k.join("ssl/etcd/server.crt"), b"S2").unwrap();
        std::fs::remove_file(k.join("ssl/ca.key")).unwrap();
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 2);
        assert_eq!(std::fs::read(k.join("ssl/etcd/server.crt")).unwrap(), b"S1");
        assert_eq!(std::fs::read(k.join("ssl/ca.key")).unwrap(), b"KEY");
        assert_eq!(
            std::fs::metadata(k.join("ssl/ca.key"))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777,
            0o600
        );
        assert!(std::fs::symlink_metadata(k.join("pki"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_link(k.join("pki")).unwrap(),
            std::path::Path::new("ssl")
        );
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 0);

        // A refused link (outside /etc/kubernetes): neither is attempted.
        std::fs::remove_file(k.join("pki")).unwrap();
        std::fs::create_dir_all(t.path().join("srv/pki")).unwrap();
        std::os::unix::fs::symlink("../../srv/pki", k.join("pki")).unwrap();
        let root = Root::open(t.path()).unwrap();
        let err = create(&root, &state, "backup", "op2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "/etc/kubernetes/pki is a symlink to ../../srv/pki (/srv/pki), outside /etc/kubernetes: refused"
        );
        let err = restore(&root, &state, "backup", "op").unwrap_err();
        assert!(
            matches!(err, BackupError::Fs(FsError::PkiLink { .. })),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(t.path().join("srv/pki")).unwrap().count(),
            0
        );
    }

    #[test]
    fn a_symlink_in_pki_is_refused_not_followed() {
        let (t, root, state) = node();
        std::os::unix::fs::symlink("/etc/shadow", t.path().join("etc/kubernetes/pki/evil.crt"))
            .unwrap();
        assert!(matches!(
            create(&root, &state, "backup", "op"),
            Err(BackupError::Refused(_))
        ));
    }

    #[test]
    fn prune_keeps_three_newest_and_the_current() {
        let (t, root, state) = node();
        for i in 0..5 {
            create(&root, &state, "backup", &format!("op{i}")).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
        std::fs::create_dir(
            t.path()
                .join("var/lib/nvke/k8s-cert-renewal/backup/x.partial"),
        )
        .unwrap();
        let mut removed = prune(&state, "backup", "op4").unwrap();
        removed.sort();
        assert_eq!(removed, ["op0", "op1", "x.partial"]);
        let left = std::fs::read_dir(t.path().join("var/lib/nvke/k8s-cert-renewal/backup"))
            .unwrap()
            .count();
        assert_eq!(left, 3);
    }

    /// (uid, gid, permission bits) of a path.
    fn owner_mode(p: &std::path::Path) -> (u32, u32, u32) {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.uid(), m.gid(), m.mode() & 0o7777)
    }

    fn chown_mode(p: &std::path::Path, uid: u32, gid: u32, mode: u32) {
        std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// chown needs root (the suite runs as root, as the runbook does).
    fn root_only() -> bool {
        let root = nix::unistd::geteuid().is_root();
        if !root {
            eprintln!("skipped: chown needs root");
        }
        root
    }

    fn no_temp_files(dir: &std::path::Path) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            assert!(!name.starts_with('.'), "temp file left: {name}");
            if e.file_type().unwrap().is_dir() {
                no_temp_files(&e.path());
            }
        }
    }

    #[test]
    fn restore_puts_back_owner_group_and_mode_as_well_as_bytes() {
        if !root_only() {
            return;
        }
        let (t, root, state) = node();
        let k = t.path().join("etc/kubernetes");
        std::fs::write(k.join("pki/apiserver.key"), b"K1").unwrap();
        chown_mode(&k.join("pki/etcd/server.crt"), 1000, 1000, 0o640);
        chown_mode(&k.join("admin.conf"), 1000, 1000, 0o640);
        chown_mode(&k.join("pki/apiserver.key"), 1001, 1002, 0o600);
        assert_eq!(create(&root, &state, "backup", "op").unwrap(), 5);

        // Every file under state/ stays root-owned (SPEC 3); the record says
        // whose the originals are.
        let b = t.path().join("var/lib/nvke/k8s-cert-renewal/backup/op");
        assert_eq!(owner_mode(&b.join("pki/etcd/server.crt")), (0, 0, 0o640));
        assert_eq!(owner_mode(&b.join(METADATA)), (0, 0, 0o600));
        let mut rec: serde_json::Value =
            serde_json::from_slice(&std::fs::read(b.join(METADATA)).unwrap()).unwrap();
        assert_eq!(rec["format"], METADATA_FORMAT);
        // Times: `a_rollback_puts_back_each_files_modification_time`.
        for f in rec["files"].as_object_mut().unwrap().values_mut() {
            assert!(f.as_object_mut().unwrap().remove("mtime").is_some(), "{f}");
        }
        assert!(rec["dirs"]["pki/etcd"].get("mtime").is_none());
        assert_eq!(
            rec["files"]["pki/etcd/server.crt"],
            serde_json::json!({"mode": "0640", "uid": 1000, "gid": 1000})
        );
        assert_eq!(
            rec["files"]["admin.conf"],
            serde_json::json!({"mode": "0640", "uid": 1000, "gid": 1000})
        );
        assert_eq!(rec["dirs"]["pki/etcd"]["mode"], "0755");

        // kubeadm fails half-way: one file replaced root-owned with new bytes
        // and mode, one rewritten in place with a changed mode, one with the
        // same bytes but now root's.
        std::fs::remove_file(k.join("pki/etcd/server.crt")).unwrap();
        std::fs::write(k.join("pki/etcd/server.crt"), b"S2").unwrap();
        chown_mode(&k.join("pki/etcd/server.crt"), 0, 0, 0o644);
        std::fs::write(k.join("admin.conf"), b"A2").unwrap();
        std::fs::set_permissions(k.join("admin.conf"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::os::unix::fs::chown(k.join("pki/apiserver.key"), Some(0), Some(0)).unwrap();

        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 3);
        assert_eq!(std::fs::read(k.join("pki/etcd/server.crt")).unwrap(), b"S1");
        assert_eq!(
            owner_mode(&k.join("pki/etcd/server.crt")),
            (1000, 1000, 0o640)
        );
        assert_eq!(std::fs::read(k.join("admin.conf")).unwrap(), b"A1");
        assert_eq!(owner_mode(&k.join("admin.conf")), (1000, 1000, 0o640));
        assert_eq!(std::fs::read(k.join("pki/apiserver.key")).unwrap(), b"K1");
        assert_eq!(
            owner_mode(&k.join("pki/apiserver.key")),
            (1001, 1002, 0o600)
        );
        // Untouched files keep theirs; nothing half-done is left behind.
        assert_eq!(owner_mode(&k.join("pki/ca.key")), (0, 0, 0o600));
        no_temp_files(&k);
        // Everything matches now: nothing is rewritten.
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 0);
    }

    #[test]
    fn a_directory_made_again_gets_its_recorded_owner() {
        if !root_only() {
            return;
        }
        let (t, root, state) = node();
        let k = t.path().join("etc/kubernetes");
        chown_mode(&k.join("pki/etcd"), 1000, 1000, 0o750);
        chown_mode(&k.join("pki/etcd/server.crt"), 1000, 1000, 0o640);
        create(&root, &state, "backup", "op").unwrap();
        std::fs::remove_dir_all(k.join("pki/etcd")).unwrap();
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 1);
        assert_eq!(owner_mode(&k.join("pki/etcd")), (1000, 1000, 0o750));
        assert_eq!(
            owner_mode(&k.join("pki/etcd/server.crt")),
            (1000, 1000, 0o640)
        );
    }

    #[test]
    fn an_older_backup_without_a_record_keeps_the_current_owner() {
        if !root_only() {
            return;
        }
        let (t, root, state) = node();
        let k = t.path().join("etc/kubernetes");
        chown_mode(&k.join("pki/etcd/server.crt"), 1000, 1000, 0o640);
        create(&root, &state, "backup", "op").unwrap();
        let b = t.path().join("var/lib/nvke/k8s-cert-renewal/backup/op");
        std::fs::remove_file(b.join(METADATA)).unwrap();
        std::fs::write(k.join("pki/etcd/server.crt"), b"S2").unwrap();
        std::fs::set_permissions(
            k.join("pki/etcd/server.crt"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 1);
        assert_eq!(std::fs::read(k.join("pki/etcd/server.crt")).unwrap(), b"S1");
        // The copy's mode, the owner the file has now.
        assert_eq!(
            owner_mode(&k.join("pki/etcd/server.crt")),
            (1000, 1000, 0o640)
        );
    }

    /// SPEC 4 step 8 (v1.3): a rollback puts back each file's modification
    /// time with its bytes ("restart needed" is judged by it, SPEC 10): a
    /// file kubeadm rewrote, and one it rewrote with the same bytes (only
    /// its time differs), both land with the time they had.
    #[test]
    fn a_rollback_puts_back_each_files_modification_time() {
        let (t, root, state) = node();
        let k = t.path().join("etc/kubernetes");
        let then = std::time::UNIX_EPOCH + std::time::Duration::new(1_764_460_800, 123_456_789);
        let set = |p: &std::path::Path, at: std::time::SystemTime| {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(at)
                .unwrap();
        };
        let mtime = |p: &std::path::Path| std::fs::metadata(p).unwrap().modified().unwrap();
        for f in ["pki/etcd/server.crt", "admin.conf"] {
            set(&k.join(f), then);
        }
        create(&root, &state, "backup", "op").unwrap();
        // kubeadm: new bytes for one, the same bytes rewritten for the other.
        std::fs::write(k.join("pki/etcd/server.crt"), b"S2").unwrap();
        let admin = std::fs::read(k.join("admin.conf")).unwrap();
        std::fs::write(k.join("admin.conf"), &admin).unwrap();
        assert_ne!(mtime(&k.join("admin.conf")), then);
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 2);
        assert_eq!(std::fs::read(k.join("pki/etcd/server.crt")).unwrap(), b"S1");
        for f in ["pki/etcd/server.crt", "admin.conf"] {
            assert_eq!(mtime(&k.join(f)), then, "{f}");
        }
        // Nothing differs any more: a second rollback rewrites nothing.
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 0);
    }

    /// A record written before v1.3 (no `mtime`) is still read: the
    /// rollback puts back bytes and mode (owner and group: the test above),
    /// leaves the time of its write, and does not rewrite the file again
    /// for its time.
    #[test]
    fn a_record_without_times_restores_the_rest_and_leaves_the_times() {
        let (t, root, state) = node();
        let k = t.path().join("etc/kubernetes");
        let then = std::time::UNIX_EPOCH + std::time::Duration::new(1_764_460_800, 0);
        std::fs::set_permissions(k.join("admin.conf"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(k.join("admin.conf"))
            .unwrap()
            .set_modified(then)
            .unwrap();
        create(&root, &state, "backup", "op").unwrap();
        let b = t.path().join("var/lib/nvke/k8s-cert-renewal/backup/op");
        let mut rec: serde_json::Value =
            serde_json::from_slice(&std::fs::read(b.join(METADATA)).unwrap()).unwrap();
        for f in rec["files"].as_object_mut().unwrap().values_mut() {
            f.as_object_mut().unwrap().remove("mtime").unwrap();
        }
        std::fs::remove_file(b.join(METADATA)).unwrap();
        std::fs::write(b.join(METADATA), serde_json::to_vec(&rec).unwrap()).unwrap();
        std::fs::set_permissions(b.join(METADATA), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(k.join("admin.conf"), b"A2").unwrap();
        std::fs::set_permissions(k.join("admin.conf"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 1);
        assert_eq!(std::fs::read(k.join("admin.conf")).unwrap(), b"A1");
        assert_eq!(owner_mode(&k.join("admin.conf")).2, 0o640);
        let written = std::fs::metadata(k.join("admin.conf"))
            .unwrap()
            .modified()
            .unwrap();
        assert_ne!(written, then);
        assert_eq!(restore(&root, &state, "backup", "op").unwrap(), 0);
    }

    #[test]
    fn a_malformed_record_refuses_the_rollback_and_names_it() {
        let (t, root, state) = node();
        create(&root, &state, "backup", "op").unwrap();
        let b = t.path().join("var/lib/nvke/k8s-cert-renewal/backup/op");
        std::fs::remove_file(b.join(METADATA)).unwrap();
        std::fs::write(b.join(METADATA), b"{\"format\": \"x\"}").unwrap();
        std::fs::set_permissions(b.join(METADATA), std::fs::Permissions::from_mode(0o600)).unwrap();
        let k = t.path().join("etc/kubernetes");
        std::fs::write(k.join("pki/etcd/server.crt"), b"S2").unwrap();
        match restore(&root, &state, "backup", "op") {
            Err(BackupError::Refused(m)) => assert!(m.contains("metadata.json"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(k.join("pki/etcd/server.crt")).unwrap(), b"S2");
    }

    #[test]
    fn the_record_round_trips_and_rejects_bad_modes() {
        let mut r = Record::default();
        r.files.insert(
            "pki/a.crt".into(),
            Meta {
                mode: 0o640,
                uid: 1000,
                gid: 1001,
                mtime: Some((1_764_460_800, 5)),
            },
        );
        r.files.insert(
            "pki/older.crt".into(),
            Meta {
                mode: 0o600,
                uid: 0,
                gid: 0,
                mtime: None,
            },
        );
        let text = r.render();
        assert!(
            String::from_utf8_lossy(&text).contains("\"mtime\": \"1764460800.000000005\""),
            "{}",
            String::from_utf8_lossy(&text)
        );
        let back = Record::parse(&text).unwrap();
        assert_eq!(back.files, r.files);
        for bad in ["\"1\"", "\"1.5\"", "\"x.000000000\"", "\".000000000\"", "7"] {
            let text = format!(
                "{{\"format\": \"{METADATA_FORMAT}\", \"files\": {{\"a\": {{\"mode\": \"0600\", \"uid\": 0, \"gid\": 0, \"mtime\": {bad}}}}}, \"dirs\": {{}}}}"
            );
            assert!(Record::parse(text.as_bytes()).is_err(), "{bad}");
        }
        for bad in ["\"0x1\"", "\"\"", "\"17777\"", "\"-1\"", "\"9\""] {
            let text = format!(
                "{{\"format\": \"{METADATA_FORMAT}\", \"files\": {{\"a\": {{\"mode\": {bad}, \"uid\": 0, \"gid\": 0}}}}, \"dirs\": {{}}}}"
            );
            assert!(Record::parse(text.as_bytes()).is_err(), "{bad}");
        }
    }
}
