//! Backups of `pki/` and the four kubeconfigs before kubeadm runs:
//! `state/backup/<ID>.partial/` (0700), renamed to `backup/<ID>/` once
//! complete; restored file by file; the three newest complete kept.

use crate::fsx::{Dir, FsError, Kind, Root, Trust, NODE_FILE_MAX};
use crate::paths::{PKI_DIR, STATE_DIR_MODE};

/// The kubeconfigs backed up with the PKI (those that exist).
pub const KUBECONFIGS: [&str; 4] = [
    "admin.conf",
    "super-admin.conf",
    "controller-manager.conf",
    "scheduler.conf",
];
/// Complete backups kept after a success.
pub const KEEP: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error("{0}")]
    Refused(String),
}

fn copy_tree(src: &Dir, dst: &Dir, count: &mut usize) -> Result<(), BackupError> {
    for name in src.list()? {
        match src.kind_of(&name)? {
            Some(Kind::Dir) => {
                let s = src.open_subdir(&name, Trust::TypeOnly)?.expect("listed");
                let mode = src.mode_of(&name)?.unwrap_or(0o755);
                let d = dst.mkdir(&name, mode)?;
                copy_tree(&s, &d, count)?;
            }
            Some(Kind::File) => {
                let bytes = src
                    .read_file(&name, NODE_FILE_MAX, Trust::TypeOnly)?
                    .expect("listed");
                let mode = src.mode_of(&name)?.unwrap_or(0o600);
                dst.create_once(&name, &bytes, mode)?;
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
/// backup taken before the first kubeadm) `<kind>/<name>/`. Returns the
/// number of files copied (0 when reused).
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
        BackupError::Refused(format!("{} does not exist", crate::paths::node(PKI_DIR)))
    })?;
    let mut count = 0;
    let pki_dst = dst.mkdir("pki", STATE_DIR_MODE)?;
    copy_tree(&pki, &pki_dst, &mut count)?;
    let kube = root
        .open_dir("etc/kubernetes", Trust::TypeOnly)?
        .expect("pki exists under it");
    for conf in KUBECONFIGS {
        if let Some(bytes) = kube.read_file(conf, NODE_FILE_MAX, Trust::TypeOnly)? {
            let mode = kube.mode_of(conf)?.unwrap_or(0o600);
            dst.create_once(conf, &bytes, mode)?;
            count += 1;
        }
    }
    dst.sync()?;
    parent.rename_noreplace(&partial, name)?;
    Ok(count)
}

fn restore_tree(src: &Dir, dst: &Dir, count: &mut usize) -> Result<(), BackupError> {
    for name in src.list()? {
        match src.kind_of(&name)? {
            Some(Kind::Dir) => {
                let s = src.open_subdir(&name, Trust::TypeOnly)?.expect("listed");
                let d = match dst.open_subdir(&name, Trust::TypeOnly)? {
                    Some(d) => d,
                    None => dst.mkdir(&name, src.mode_of(&name)?.unwrap_or(0o755))?,
                };
                restore_tree(&s, &d, count)?;
            }
            Some(Kind::File) => {
                let bytes = src
                    .read_file(&name, NODE_FILE_MAX, Trust::TypeOnly)?
                    .expect("listed");
                let current = dst
                    .read_file(&name, NODE_FILE_MAX, Trust::TypeOnly)
                    .ok()
                    .flatten();
                let mode = src.mode_of(&name)?.unwrap_or(0o600);
                if current.as_deref() != Some(&bytes[..]) || dst.mode_of(&name)? != Some(mode) {
                    dst.replace(&name, &bytes, mode, Trust::TypeOnly)?;
                    *count += 1;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Put every backed-up file back (only those that differ are rewritten).
/// Returns how many files were rewritten.
pub fn restore(root: &Root, state: &Dir, kind: &str, name: &str) -> Result<usize, BackupError> {
    let dir = state
        .open_subdir(kind, Trust::Strict)?
        .and_then(|p| p.open_subdir(name, Trust::Strict).transpose())
        .transpose()?
        .ok_or_else(|| BackupError::Refused(format!("backup {kind}/{name} does not exist")))?;
    let mut count = 0;
    let pki_src = dir
        .open_subdir("pki", Trust::Strict)?
        .ok_or_else(|| BackupError::Refused("backup has no pki/".into()))?;
    let pki = root.open_dir(PKI_DIR, Trust::TypeOnly)?.ok_or_else(|| {
        BackupError::Refused(format!("{} does not exist", crate::paths::node(PKI_DIR)))
    })?;
    restore_tree(&pki_src, &pki, &mut count)?;
    let kube = root
        .open_dir("etc/kubernetes", Trust::TypeOnly)?
        .expect("pki exists under it");
    for conf in KUBECONFIGS {
        if let Some(bytes) = dir.read_file(conf, NODE_FILE_MAX, Trust::Strict)? {
            let mode = dir.mode_of(conf)?.unwrap_or(0o600);
            if kube
                .read_file(conf, NODE_FILE_MAX, Trust::TypeOnly)?
                .as_deref()
                != Some(&bytes[..])
            {
                kube.replace(conf, &bytes, mode, Trust::TypeOnly)?;
                count += 1;
            }
        }
    }
    Ok(count)
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
}
