//! The read side of a [`Dir`]: subdirectories and files opened without
//! following a symlink (`O_NOFOLLOW | O_NONBLOCK`) and vetted with `fstat`,
//! reads capped in size, links read, names listed, entries stat'ed.

use super::{join, libc_eio, vet_stat, Dir, FsError, FsResult, Kind, Trust};
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode};
use std::fs::File;
use std::io::Read;

impl Dir {
    pub fn vet_self(&self, trust: Trust) -> FsResult<()> {
        let st = fstat(&self.fd).map_err(|e| FsError::Io {
            path: self.path(),
            op: "stat",
            errno: e,
        })?;
        vet_stat(&self.path(), &st, Kind::Dir, trust)
    }

    /// What `name` is (lstat), or None.
    pub fn kind_of(&self, name: &str) -> FsResult<Option<Kind>> {
        Ok(self.stat_entry(name)?.map(|st| Kind::of(&st)))
    }

    /// lstat of an entry, or None when it does not exist.
    pub fn stat_entry(&self, name: &str) -> FsResult<Option<FileStat>> {
        match fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(self.io(name, "stat", e)),
        }
    }

    /// Open a subdirectory without following a symlink. None if missing.
    pub fn open_subdir(&self, name: &str, trust: Trust) -> FsResult<Option<Dir>> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => {
                let d = Dir {
                    fd,
                    rel: join(&self.rel, name),
                };
                d.vet_self(trust)?;
                Ok(Some(d))
            }
            Err(Errno::ENOENT) => Ok(None),
            Err(Errno::ELOOP) | Err(Errno::ENOTDIR) => {
                let found = self.kind_of(name)?.unwrap_or(Kind::Other);
                if found == Kind::Symlink {
                    Err(FsError::Symlink {
                        path: self.entry_path(name),
                    })
                } else {
                    Err(FsError::WrongType {
                        path: self.entry_path(name),
                        expected: Kind::Dir,
                        found,
                    })
                }
            }
            Err(e) => Err(self.io(name, "open directory", e)),
        }
    }

    /// Open a regular file for reading without following a symlink and
    /// without blocking on a FIFO; vet it. None if missing.
    pub fn open_file(&self, name: &str, trust: Trust) -> FsResult<Option<File>> {
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY;
        let fd = match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(Errno::ELOOP) => {
                return Err(FsError::Symlink {
                    path: self.entry_path(name),
                })
            }
            Err(e) => return Err(self.io(name, "open", e)),
        };
        let st = fstat(&fd).map_err(|e| self.io(name, "stat", e))?;
        vet_stat(&self.entry_path(name), &st, Kind::File, trust)?;
        Ok(Some(File::from(fd)))
    }

    /// Read a regular file, at most `max` bytes (more is an error).
    pub fn read_file(&self, name: &str, max: u64, trust: Trust) -> FsResult<Option<Vec<u8>>> {
        let Some(file) = self.open_file(name, trust)? else {
            return Ok(None);
        };
        let mut buf = Vec::new();
        file.take(max + 1).read_to_end(&mut buf).map_err(|e| {
            self.io(
                name,
                "read",
                Errno::from_raw(e.raw_os_error().unwrap_or(libc_eio())),
            )
        })?;
        if buf.len() as u64 > max {
            return Err(FsError::TooLarge {
                path: self.entry_path(name),
                max,
            });
        }
        Ok(Some(buf))
    }

    /// The target of the symlink `name` (never followed), at most 4 KiB;
    /// `Ok(None)` when there is no entry of that name.
    pub fn read_link(&self, name: &str) -> FsResult<Option<String>> {
        match nix::fcntl::readlinkat(&self.fd, name) {
            Ok(t) => Ok(Some(t.to_string_lossy().into_owned())),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(self.io(name, "read the link", e)),
        }
    }

    /// Names in this directory (no `.`/`..`), sorted.
    pub fn list(&self) -> FsResult<Vec<String>> {
        let mut names = Vec::new();
        self.for_each_name(|n| names.push(n.to_string()))?;
        names.sort();
        Ok(names)
    }

    /// Every entry name but `.` and `..`, in directory order, without
    /// collecting them: memory stays constant however large the directory.
    pub fn for_each_name(&self, mut f: impl FnMut(&str)) -> FsResult<()> {
        let fd = openat(
            &self.fd,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| FsError::Io {
            path: self.path(),
            op: "open directory",
            errno: e,
        })?;
        let mut d = nix::dir::Dir::from_fd(fd).map_err(|e| FsError::Io {
            path: self.path(),
            op: "read directory",
            errno: e,
        })?;
        for entry in d.iter() {
            let entry = entry.map_err(|e| FsError::Io {
                path: self.path(),
                op: "read directory",
                errno: e,
            })?;
            let name = entry.file_name().to_string_lossy();
            if name != "." && name != ".." {
                f(&name);
            }
        }
        Ok(())
    }

    /// The permission bits of an entry (lstat).
    pub fn mode_of(&self, name: &str) -> FsResult<Option<u32>> {
        Ok(self.stat_entry(name)?.map(|st| st.st_mode & 0o7777))
    }
}
