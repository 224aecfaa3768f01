//! Moving one manifest into the runbook's staging directory and back
//! (RENAME_NOREPLACE, both directories fsynced; EEXIST is a conflict, never
//! an overwrite).

use crate::node::fsx::{self, Dir, FsError, Root, Trust, NODE_FILE_MAX};
use crate::node::paths::{MANIFESTS_DIR, STAGING_DIR};
use crate::rules::component::Component;

/// The manifests directory and the runbook's staging directory, opened
/// without following symlinks and vetted (root-owned, not group/other
/// writable). The staging directory is created (0700) when missing.
pub struct Dirs {
    pub manifests: Dir,
    pub staging: Dir,
}

impl Dirs {
    pub fn open(root: &Root, create_staging: bool) -> Result<Dirs, FsError> {
        let manifests = root
            .open_dir(MANIFESTS_DIR, Trust::Strict)?
            .ok_or_else(|| FsError::Io {
                path: crate::node::paths::node(MANIFESTS_DIR),
                op: "open",
                errno: nix::errno::Errno::ENOENT,
            })?;
        let staging = match root.open_dir(STAGING_DIR, Trust::Strict)? {
            Some(d) => d,
            None if create_staging => root.create_dir_all(STAGING_DIR, 0o700, Trust::Strict)?,
            None => {
                return Err(FsError::Io {
                    path: crate::node::paths::node(STAGING_DIR),
                    op: "open",
                    errno: nix::errno::Errno::ENOENT,
                })
            }
        };
        Ok(Dirs { manifests, staging })
    }

    /// Put `c`'s staged manifest back. An active copy that appeared
    /// meanwhile: identical bytes drop the staged copy; different bytes
    /// leave both and return `Restore::Conflict` naming both paths. Reached
    /// only through [`StagingGuard`] and [`put_back`].
    fn unstage(&self, c: Component) -> Result<Restore, FsError> {
        let name = c.manifest_file();
        match fsx::move_noreplace(&self.staging, &self.manifests, &name) {
            Ok(()) => Ok(Restore::Restored),
            Err(FsError::Exists { .. }) => {
                let active = self
                    .manifests
                    .read_file(&name, NODE_FILE_MAX, Trust::Strict)?;
                let staged = self
                    .staging
                    .read_file(&name, NODE_FILE_MAX, Trust::Strict)?;
                if active.is_some() && active == staged {
                    self.staging.remove_file(&name)?;
                    Ok(Restore::DroppedIdenticalCopy)
                } else {
                    Ok(Restore::Conflict(format!(
                        "{} differs from the active {}; both kept: an operator must keep exactly one",
                        self.staging.entry_path(&name),
                        self.manifests.entry_path(&name)
                    )))
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// SPEC section 2: the staging directory is on the manifests' filesystem,
/// and manifests move by rename(2), which cannot cross mounts. Checked in the
/// preflight, before anything changes (otherwise kubeadm would renew first
/// and the first move fail with EXDEV); a missing staging directory is judged
/// by its parent, where it will be created. `None` when they match, or when
/// a directory cannot be opened (that is refused elsewhere, naming it).
pub fn mount_mismatch(root: &Root) -> Option<String> {
    let manifests = root.open_dir(MANIFESTS_DIR, Trust::TypeOnly).ok()??;
    let (dir, rel) = match root.open_dir(STAGING_DIR, Trust::TypeOnly).ok()? {
        Some(d) => (d, STAGING_DIR),
        None => {
            let parent = STAGING_DIR.rsplit_once('/').map_or("", |(p, _)| p);
            (root.open_dir(parent, Trust::TypeOnly).ok()??, parent)
        }
    };
    (!fsx::same_mount(&manifests, &dir)).then(|| {
        format!(
            "{} is not on the same filesystem (mount) as {}: manifests move by rename(2), which cannot cross mounts; nothing was changed",
            crate::node::paths::node(rel),
            crate::node::paths::node(MANIFESTS_DIR)
        )
    })
}

/// The way back for the manifests a run moves (SPEC 3 "Move a manifest"):
/// the only way a manifest goes back. It records the manifest as out from
/// the moment its move is tried; [`StagingGuard::unstage`] is the run's own
/// way back after the container stopped; [`StagingGuard::restore`], on a
/// failed run's way out (under the lock, before the receipt), looks where
/// the manifest is and puts it back, saying what it saw. There is no
/// `Drop`, which would move it back at an unreported moment, outside the
/// failure path's order. A manifest found staged (left by an interrupted
/// run) goes back with [`StagingGuard::put_back_left`], or [`put_back`]
/// when what is seen afterwards is the answer (the fencing check).
#[must_use = "a staged manifest goes back through its guard"]
#[derive(Debug, Default)]
pub struct StagingGuard {
    /// The manifest out (from the moment its move is tried).
    out: Option<Component>,
    /// A manifest that could not be put back, and why.
    not_restored: Option<String>,
}

impl StagingGuard {
    /// Move `c`'s manifest out of the manifests directory into staging;
    /// it counts as out even when the move fails (the failure path looks).
    pub fn stage(&mut self, dirs: &Dirs, c: Component) -> Result<(), FsError> {
        self.out = Some(c);
        fsx::move_noreplace(&dirs.manifests, &dirs.staging, &c.manifest_file())
    }

    /// Put the manifest out back. Back (or an identical staged copy
    /// dropped): no longer out. Both copies kept because they differ: not
    /// out either, but recorded as not restored. An error: still out, for
    /// [`StagingGuard::restore`] to look at.
    pub fn unstage(&mut self, dirs: &Dirs) -> Result<Restore, FsError> {
        let Some(c) = self.out else {
            return Ok(Restore::Restored);
        };
        let r = dirs.unstage(c)?;
        if let Restore::Conflict(msg) = &r {
            self.not_restored = Some(msg.clone());
        }
        self.out = None;
        Ok(r)
    }

    /// The manifest out, if any: what a failure in the middle of a restart
    /// names.
    pub fn out(&self) -> Option<Component> {
        self.out
    }

    /// Why a manifest could not be put back, if one could not.
    pub fn not_restored(&self) -> Option<&str> {
        self.not_restored.as_deref()
    }

    /// A failed run's way back: the manifest out, if it is still staged,
    /// goes back ([`put_back_if_staged`]). Whether it is now active, and
    /// what to say (None when nothing was out).
    pub fn restore(&mut self, root: &Root) -> Option<(bool, Option<String>)> {
        self.out.take().map(|c| put_back_if_staged(root, c))
    }

    /// A manifest an interrupted run left staged, found by the preflight
    /// while its active copy is missing: back, as [`StagingGuard::unstage`]
    /// moves it.
    pub fn put_back_left(dirs: &Dirs, c: Component) -> Result<Restore, FsError> {
        dirs.unstage(c)
    }
}

/// Put `c`'s manifest back if it is staged, looking before and after (SPEC
/// 3, v1.1: a place is what was observed). Returns whether `c` is now
/// active with no differing staged copy, and what to say about it (None
/// when there was nothing to do). The failure path's, and the last resort's
/// for every component.
pub fn put_back_if_staged(root: &Root, c: Component) -> (bool, Option<String>) {
    let (active, staged, error) = crate::node::manifests::placement(root)
        .manifests
        .get(&c)
        .map(|v| (v.active, v.runbook_staged, v.error.clone()))
        .unwrap_or((false, false, None));
    if let Some(e) = error {
        return (
            false,
            Some(format!("{c} manifest cannot be inspected: {e}")),
        );
    }
    match (active, staged) {
        (true, false) => return (true, None),
        (false, false) => {
            return (
                false,
                Some(format!(
                    "{c} manifest is neither in {} nor in {}",
                    crate::node::paths::node(MANIFESTS_DIR),
                    crate::node::paths::node(STAGING_DIR)
                )),
            )
        }
        _ => {}
    }
    match put_back(root, c) {
        PutBack::Restored => {
            tracing::info!(component = c.name(), "put the staged manifest back");
            (true, Some(format!("{c} manifest put back")))
        }
        PutBack::Conflict(msg) => (false, Some(msg)),
        PutBack::Failed(why) => (false, Some(format!("putting {c} back FAILED: {why}"))),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    Restored,
    DroppedIdenticalCopy,
    Conflict(String),
}

/// Where [`put_back`] left a staged manifest, as observed after the move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutBack {
    /// In `manifests/`, no staged copy left (moved back, or an identical
    /// staged copy dropped).
    Restored,
    /// Both copies kept: they differ (the message names both paths).
    Conflict(String),
    /// Not in place after the attempt: why.
    Failed(String),
}

/// Put `c`'s staged manifest back into `manifests/` ([`Dirs::unstage`]:
/// no replace, fsynced), then look where it is (SPEC 3, v1.1: a move that
/// failed after its rename is done; one that "succeeded" is believed only
/// when the manifest is seen in place). Used by the renewal's failure path
/// and the fencing check alike.
pub fn put_back(root: &Root, c: Component) -> PutBack {
    let moved = Dirs::open(root, false).and_then(|d| d.unstage(c));
    let in_place = crate::node::manifests::placement(root)
        .manifests
        .get(&c)
        .is_some_and(|v| v.active && !v.runbook_staged && v.error.is_none());
    match moved {
        Ok(Restore::Conflict(msg)) => PutBack::Conflict(msg),
        _ if in_place => PutBack::Restored,
        Ok(_) => PutBack::Failed("it is not in place after the move".into()),
        Err(e) => PutBack::Failed(e.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read and plant files in their temp node
mod tests {
    //! SPEC 2 and 3 "Move a manifest": renameat2 RENAME_NOREPLACE between
    //! `manifests/` and the runbook's staging directory; EEXIST is a
    //! conflict, never an overwrite; identical bytes drop the staged copy,
    //! different bytes keep both; nothing followed through a symlink.
    use super::*;
    use crate::tools::runtime::double::node_tree;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    fn paths(t: &Path, c: Component) -> (PathBuf, PathBuf) {
        (
            t.join(MANIFESTS_DIR).join(c.manifest_file()),
            t.join(STAGING_DIR).join(c.manifest_file()),
        )
    }

    /// The one put-back the renewal and the fencing check share: the
    /// answer is where the manifest is seen afterwards.
    #[test]
    fn put_back_reports_what_it_sees_afterwards() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        Dirs::open(&root, true).unwrap(); // creates the staging directory
        let c = Component::KubeScheduler;
        let (active, staged) = paths(t.path(), c);
        // Left staged by a run that died.
        std::fs::rename(&active, &staged).unwrap();
        assert_eq!(put_back(&root, c), PutBack::Restored);
        assert!(active.is_file() && !staged.exists());
        // An identical staged copy is dropped: restored.
        std::fs::copy(&active, &staged).unwrap();
        assert_eq!(put_back(&root, c), PutBack::Restored);
        assert!(!staged.exists());
        // A differing one: both kept.
        std::fs::write(&staged, b"other").unwrap();
        assert!(matches!(put_back(&root, c), PutBack::Conflict(_)));
        assert!(active.is_file() && staged.is_file());
        // Neither copy: not in place.
        std::fs::remove_file(&staged).unwrap();
        std::fs::remove_file(&active).unwrap();
        assert!(matches!(put_back(&root, c), PutBack::Failed(_)));
    }

    #[test]
    fn a_manifest_moves_into_staging_and_back_and_nothing_else_moves() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let dirs = Dirs::open(&root, true).unwrap();
        let staging = std::fs::metadata(t.path().join(STAGING_DIR)).unwrap();
        assert_eq!(staging.permissions().mode() & 0o7777, 0o700);
        let (active, staged) = paths(t.path(), Component::Etcd);
        let bytes = std::fs::read(&active).unwrap();
        let mut guard = StagingGuard::default();
        guard.stage(&dirs, Component::Etcd).unwrap();
        assert_eq!(guard.out(), Some(Component::Etcd));
        assert!(!active.exists());
        assert_eq!(std::fs::read(&staged).unwrap(), bytes);
        assert_eq!(guard.unstage(&dirs).unwrap(), Restore::Restored);
        assert_eq!((guard.out(), guard.not_restored()), (None, None));
        assert_eq!(guard.restore(&root), None, "nothing is out any more");
        assert_eq!(std::fs::read(&active).unwrap(), bytes);
        assert!(!staged.exists());
        let mut left: Vec<String> = std::fs::read_dir(t.path().join(MANIFESTS_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "etcd.yaml",
                "kube-apiserver.yaml",
                "kube-controller-manager.yaml",
                "kube-scheduler.yaml",
                "kube-vip.yaml"
            ]
        );
    }

    /// EEXIST is a conflict, never an overwrite: a copy already in staging
    /// keeps its bytes, and the active manifest stays where it is.
    #[test]
    fn a_staged_copy_is_never_overwritten() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let dirs = Dirs::open(&root, true).unwrap();
        let (active, staged) = paths(t.path(), Component::KubeApiserver);
        let bytes = std::fs::read(&active).unwrap();
        std::fs::write(&staged, b"an older copy\n").unwrap();
        let mut guard = StagingGuard::default();
        let r = guard.stage(&dirs, Component::KubeApiserver);
        assert!(matches!(r, Err(FsError::Exists { .. })), "{r:?}");
        assert_eq!(std::fs::read(&active).unwrap(), bytes);
        assert_eq!(std::fs::read(&staged).unwrap(), b"an older copy\n");
        // A move tried counts as out: the failure path looks, finds both
        // copies, different, and keeps both, saying so.
        assert_eq!(guard.out(), Some(Component::KubeApiserver));
        let (restored, note) = guard.restore(&root).expect("the manifest was out");
        assert!(!restored);
        assert!(note.unwrap().contains("both kept"));
        assert_eq!(std::fs::read(&active).unwrap(), bytes);
        assert_eq!(std::fs::read(&staged).unwrap(), b"an older copy\n");
    }

    /// SPEC 4 "Failure": EEXIST with identical bytes drops the staged copy.
    #[test]
    fn putting_back_over_an_identical_active_copy_drops_the_staged_one() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let dirs = Dirs::open(&root, true).unwrap();
        let (active, staged) = paths(t.path(), Component::KubeScheduler);
        let bytes = std::fs::read(&active).unwrap();
        std::fs::write(&staged, &bytes).unwrap();
        assert_eq!(
            dirs.unstage(Component::KubeScheduler).unwrap(),
            Restore::DroppedIdenticalCopy
        );
        assert!(!staged.exists());
        assert_eq!(std::fs::read(&active).unwrap(), bytes);
    }

    /// SPEC 4 "Failure": different bytes leave both and name both paths.
    #[test]
    fn putting_back_over_a_different_active_copy_keeps_both_and_names_them() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let dirs = Dirs::open(&root, true).unwrap();
        let (active, staged) = paths(t.path(), Component::KubeScheduler);
        let bytes = std::fs::read(&active).unwrap();
        std::fs::write(&staged, b"another version\n").unwrap();
        match dirs.unstage(Component::KubeScheduler).unwrap() {
            Restore::Conflict(m) => {
                assert!(
                    m.contains("/etc/kubernetes/nvke-cert-renewal-staging/kube-scheduler.yaml")
                        && m.contains("/etc/kubernetes/manifests/kube-scheduler.yaml"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&active).unwrap(), bytes);
        assert_eq!(std::fs::read(&staged).unwrap(), b"another version\n");
    }

    /// Only a renewal creates the staging directory; the put-back of the
    /// fencing check never does.
    #[test]
    fn without_create_a_missing_staging_directory_is_an_error() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        assert!(Dirs::open(&root, false).is_err());
        assert!(!t.path().join(STAGING_DIR).exists());
    }

    /// SPEC 3: a staging directory that is a symlink is refused, and
    /// nothing lands where it points.
    #[test]
    fn a_symlinked_staging_directory_is_refused() {
        let t = node_tree("rsa");
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, t.path().join(STAGING_DIR)).unwrap();
        let root = Root::open(t.path()).unwrap();
        let r = Dirs::open(&root, true);
        assert!(matches!(r, Err(FsError::Symlink { .. })), "{:?}", r.err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    /// SPEC 2: staging must be on the manifests' filesystem (rename(2)
    /// cannot cross mounts); a missing staging directory is judged by its
    /// parent. The mounted case needs root and mount(8): skipped otherwise.
    #[test]
    #[allow(clippy::print_stderr)] // says when it skips
    fn staging_on_another_mount_is_found_before_anything_changes() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        assert_eq!(mount_mismatch(&root), None, "missing: judged by its parent");
        let staging = t.path().join(STAGING_DIR);
        std::fs::create_dir(&staging).unwrap();
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(mount_mismatch(&root), None);
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "mode=0700,size=64k", "nvke-staging"])
            .arg(&staging)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipped the mounted case: mount -t tmpfs failed (needs root)");
            return;
        }
        struct Unmount(PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg(&self.0).status();
            }
        }
        let _unmount = Unmount(staging.clone());
        match mount_mismatch(&root) {
            Some(m) => assert!(
                m.starts_with(
                    "/etc/kubernetes/nvke-cert-renewal-staging is not on the same filesystem"
                ),
                "{m}"
            ),
            None => panic!("a tmpfs at the staging directory was not noticed"),
        }
    }

    /// A run stopped between its move out and its way back: the failure
    /// path puts the manifest back and says so; a manifest whose way back
    /// found a differing active copy is recorded as not restored.
    #[test]
    fn the_guard_is_the_way_back_on_the_failure_path() {
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let dirs = Dirs::open(&root, true).unwrap();
        let (active, staged) = paths(t.path(), Component::KubeScheduler);
        let bytes = std::fs::read(&active).unwrap();
        let mut guard = StagingGuard::default();
        guard.stage(&dirs, Component::KubeScheduler).unwrap();
        assert_eq!(
            guard.restore(&root),
            Some((true, Some("kube-scheduler manifest put back".to_string())))
        );
        assert_eq!(std::fs::read(&active).unwrap(), bytes);
        assert!(!staged.exists());
        assert_eq!(guard.out(), None);

        guard.stage(&dirs, Component::KubeScheduler).unwrap();
        std::fs::write(&active, b"written meanwhile\n").unwrap();
        match guard.unstage(&dirs).unwrap() {
            Restore::Conflict(msg) => assert_eq!(guard.not_restored(), Some(msg.as_str())),
            other => panic!("{other:?}"),
        }
        assert_eq!(guard.out(), None);
        assert_eq!(std::fs::read(&staged).unwrap(), bytes);
    }
}
