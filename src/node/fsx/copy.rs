//! Copies for the evidence bundle (`--status-only --evidence`, SPEC 6,
//! v1.1): files read whole to be put elsewhere, and a directory's identity.

use super::{errno_of, vet_stat, Dir, FsError, FsResult, Kind, Trust};
use nix::sys::stat::fstat;
use std::io::Read;

/// A regular file as read for a copy: its bytes and what `fstat` said of it.
#[derive(Debug)]
pub struct FileCopy {
    pub bytes: Vec<u8>,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Hard links: more than one means its content also lives elsewhere.
    pub links: u64,
}

impl Dir {
    /// Read `name` whole if it is a regular file of at most `max` bytes.
    /// `lstat` first, so a device, FIFO or socket is never even opened
    /// (`FsError::WrongType`) and a symlink never followed
    /// (`FsError::Symlink`); then `openat` with `O_NOFOLLOW | O_NONBLOCK`
    /// and `fstat` again (it may have been swapped). Larger than `max`:
    /// `FsError::TooLarge`, nothing read. `Ok(None)` when it is not there.
    pub fn read_copy(&self, name: &str, max: u64) -> FsResult<Option<FileCopy>> {
        let Some(st) = self.stat_entry(name)? else {
            return Ok(None);
        };
        vet_stat(&self.entry_path(name), &st, Kind::File, Trust::TypeOnly)?;
        let Some(file) = self.open_file(name, Trust::TypeOnly)? else {
            return Ok(None);
        };
        let st = fstat(&file).map_err(|e| self.io(name, "stat", e))?;
        if st.st_size < 0 || st.st_size as u64 > max {
            return Err(FsError::TooLarge {
                path: self.entry_path(name),
                max,
            });
        }
        let mut bytes = Vec::new();
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(name, "read", errno_of(&e)))?;
        if bytes.len() as u64 > max {
            return Err(FsError::TooLarge {
                path: self.entry_path(name),
                max,
            });
        }
        Ok(Some(FileCopy {
            bytes,
            mtime: st.st_mtime,
            links: st.st_nlink as u64,
        }))
    }

    /// (device, inode) of this directory: whether two opened directories
    /// are the same one, whatever path led to each.
    pub fn identity(&self) -> FsResult<(u64, u64)> {
        let st = fstat(&self.fd).map_err(|e| FsError::Io {
            path: self.path(),
            op: "stat",
            errno: e,
        })?;
        Ok((st.st_dev as u64, st.st_ino as u64))
    }
}
