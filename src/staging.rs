//! Moving one manifest into the runbook's staging directory and back
//! (RENAME_NOREPLACE, both directories fsynced; EEXIST is a conflict, never
//! an overwrite).

use crate::component::Component;
use crate::fsx::{self, Dir, FsError, Root, Trust, NODE_FILE_MAX};
use crate::paths::{MANIFESTS_DIR, STAGING_DIR};

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
                path: crate::paths::node(MANIFESTS_DIR),
                op: "open",
                errno: nix::errno::Errno::ENOENT,
            })?;
        let staging = match root.open_dir(STAGING_DIR, Trust::Strict)? {
            Some(d) => d,
            None if create_staging => root.create_dir_all(STAGING_DIR, 0o700, Trust::Strict)?,
            None => {
                return Err(FsError::Io {
                    path: crate::paths::node(STAGING_DIR),
                    op: "open",
                    errno: nix::errno::Errno::ENOENT,
                })
            }
        };
        Ok(Dirs { manifests, staging })
    }

    /// Move `c`'s manifest out of the manifests directory into staging.
    pub fn stage(&self, c: Component) -> Result<(), FsError> {
        fsx::move_noreplace(&self.manifests, &self.staging, &c.manifest_file())
    }

    /// Put `c`'s staged manifest back. An active copy that appeared
    /// meanwhile: identical bytes drop the staged copy; different bytes leave
    /// both and return `Restore::Conflict` naming both paths.
    pub fn unstage(&self, c: Component) -> Result<Restore, FsError> {
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
            crate::paths::node(rel),
            crate::paths::node(MANIFESTS_DIR)
        )
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    Restored,
    DroppedIdenticalCopy,
    Conflict(String),
}
