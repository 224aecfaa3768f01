//! Renames without replacing (`renameat2(RENAME_NOREPLACE)`): within one
//! directory, and a manifest between two ([`move_noreplace`]: into and out
//! of staging), each followed by the fsync of the directories. After an
//! error, look where the entry is.

use super::{Dir, FsError, FsResult};
use nix::errno::Errno;
use nix::fcntl::{renameat2, RenameFlags};

impl Dir {
    /// Rename `from` to `to` in this directory without replacing; fsync.
    pub fn rename_noreplace(&self, from: &str, to: &str) -> FsResult<()> {
        match renameat2(&self.fd, from, &self.fd, to, RenameFlags::RENAME_NOREPLACE) {
            Ok(()) => {}
            Err(Errno::EEXIST) => {
                return Err(FsError::Exists {
                    path: self.entry_path(to),
                })
            }
            Err(e) => {
                // Look: done when `to` is there and `from` is gone.
                let arrived = matches!(self.stat_entry(to), Ok(Some(_)))
                    && matches!(self.stat_entry(from), Ok(None));
                if !arrived {
                    return Err(self.io(from, "rename", e));
                }
            }
        }
        self.sync_after_done(to);
        Ok(())
    }
}

/// Whether rename(2) can move an entry from `a` to `b` (one mount), asked
/// of the kernel without changing anything: renaming "." is always refused,
/// and Linux checks the mounts (EXDEV) before it refuses "." (EBUSY). A
/// bind mount of the same filesystem is a different mount, as for rename.
pub fn same_mount(a: &Dir, b: &Dir) -> bool {
    !matches!(
        renameat2(a, ".", b, ".", RenameFlags::RENAME_NOREPLACE),
        Err(Errno::EXDEV)
    )
}

/// Move `name` from `from` to `to` with RENAME_NOREPLACE, then fsync both
/// directories. EEXIST is `FsError::Exists` (a conflict, never an overwrite).
///
/// After an error, look (SPEC 3, v1.1): the rename is done when it
/// succeeded, whatever the fsyncs after it say (logged), and when it
/// reported an error but `to` now has the entry and `from` does not. The
/// caller then accounts for the file where it is, never where it meant it.
pub fn move_noreplace(from: &Dir, to: &Dir, name: &str) -> FsResult<()> {
    match renameat2(from, name, to, name, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => {}
        Err(Errno::EEXIST) => {
            return Err(FsError::Exists {
                path: to.entry_path(name),
            })
        }
        Err(e) => {
            let arrived = matches!(to.stat_entry(name), Ok(Some(_)))
                && matches!(from.stat_entry(name), Ok(None));
            if !arrived {
                return Err(FsError::Io {
                    path: format!("{} -> {}", from.entry_path(name), to.entry_path(name)),
                    op: if e == Errno::EXDEV {
                        "move (different filesystems)"
                    } else {
                        "move"
                    },
                    errno: e,
                });
            }
            tracing::warn!(
                "moving {} to {} reported {} but it is there: done",
                from.entry_path(name),
                to.path(),
                e.desc()
            );
        }
    }
    to.sync_after_done(name);
    from.sync_after_done(name);
    Ok(())
}
