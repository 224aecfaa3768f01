//! Removals: a regular file, or a directory tree without following a
//! symlink inside it; the directory fsynced after. After an error, look.

use super::{Dir, FsResult, Kind, Trust};
use nix::unistd::{unlinkat, UnlinkatFlags};

impl Dir {
    /// Remove a regular file and fsync the directory.
    /// After an error, look: a name that is gone is removed; a succeeded
    /// unlink is done whatever the fsync after it says.
    pub fn remove_file(&self, name: &str) -> FsResult<()> {
        if let Err(e) = unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir) {
            if !matches!(self.stat_entry(name), Ok(None)) {
                return Err(self.io(name, "remove", e));
            }
            tracing::warn!(
                "removing {} reported {} but it is gone: done",
                self.entry_path(name),
                e.desc()
            );
        }
        self.sync_after_done(name);
        Ok(())
    }

    /// Remove a directory tree below this one, never following a symlink
    /// (a symlink inside is removed as a link). Missing is fine.
    pub fn remove_tree(&self, name: &str) -> FsResult<()> {
        let Some(sub) = self.open_subdir(name, Trust::TypeOnly)? else {
            return Ok(());
        };
        for entry in sub.list()? {
            match sub.kind_of(&entry)? {
                Some(Kind::Dir) => sub.remove_tree(&entry)?,
                Some(_) => {
                    unlinkat(&sub.fd, entry.as_str(), UnlinkatFlags::NoRemoveDir)
                        .map_err(|e| sub.io(&entry, "remove", e))?;
                }
                None => {}
            }
        }
        unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir)
            .map_err(|e| self.io(name, "remove directory", e))?;
        self.sync()
    }
}
