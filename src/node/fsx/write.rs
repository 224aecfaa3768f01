//! Durable writes (SPEC 3): a new directory with its exact mode, a file
//! replaced atomically ([`Dir::replace`]: temp file, fsync, rename over,
//! fsync of the directory), a file created once and never replaced
//! ([`Dir::create_once`]), and the append-only log. After any error, look
//! where the file is before reporting anything.

use super::{errno_of, vet_stat, Dir, FsError, FsResult, Kind, Trust};
use nix::errno::Errno;
use nix::fcntl::{openat, renameat, renameat2, OFlag, RenameFlags};
use nix::sys::stat::{fstat, mkdirat, Mode};
use nix::unistd::{linkat, unlinkat, UnlinkatFlags};
use std::fs::File;
use std::io::Write;

impl Dir {
    /// Create a subdirectory with exactly `mode` and fsync this directory.
    pub fn mkdir(&self, name: &str, mode: u32) -> FsResult<Dir> {
        match mkdirat(&self.fd, name, Mode::from_bits_truncate(mode)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(self.io(name, "create directory", e)),
        }
        let d = self
            .open_subdir(name, Trust::TypeOnly)?
            .ok_or_else(|| self.io(name, "open new directory", Errno::ENOENT))?;
        // The umask may have narrowed the mode; set it exactly.
        nix::sys::stat::fchmod(&d.fd, Mode::from_bits_truncate(mode))
            .map_err(|e| self.io(name, "chmod", e))?;
        self.sync()?;
        Ok(d)
    }

    /// Write `bytes` to a new dot-named temp file beside `name`, fsynced.
    pub(super) fn write_temp(&self, name: &str, bytes: &[u8], mode: u32) -> FsResult<String> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut attempt = 0u32;
        loop {
            let tmp = format!(".{name}.tmp-{}-{attempt}", std::process::id());
            match openat(
                &self.fd,
                tmp.as_str(),
                flags,
                Mode::from_bits_truncate(mode),
            ) {
                Ok(fd) => {
                    let result = (|| -> Result<(), (&'static str, Errno)> {
                        nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(mode))
                            .map_err(|e| ("chmod", e))?;
                        let mut f = File::from(fd);
                        f.write_all(bytes).map_err(|e| ("write", errno_of(&e)))?;
                        f.sync_all().map_err(|e| ("fsync", errno_of(&e)))?;
                        Ok(())
                    })();
                    if let Err((op, e)) = result {
                        let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                        return Err(self.io(&tmp, op, e));
                    }
                    return Ok(tmp);
                }
                Err(Errno::EEXIST) if attempt < 100 => attempt += 1,
                Err(e) => return Err(self.io(&tmp, "create", e)),
            }
        }
    }

    /// Replace `name` atomically: temp file, fsync, rename over, fsync dir.
    /// An existing `name` must be a regular file (never a symlink or dir).
    ///
    /// After an error, look (SPEC 3, v1.1): a rename that succeeded is done
    /// even when the directory fsync after it fails (logged, not an error);
    /// a rename that reported an error is done when `name` now holds exactly
    /// `bytes` and the temp name is gone.
    pub fn replace(&self, name: &str, bytes: &[u8], mode: u32, trust: Trust) -> FsResult<()> {
        if let Some(st) = self.stat_entry(name)? {
            vet_stat(&self.entry_path(name), &st, Kind::File, trust)?;
        }
        let tmp = self.write_temp(name, bytes, mode)?;
        if let Err(e) = renameat(&self.fd, tmp.as_str(), &self.fd, name) {
            let tmp_gone = matches!(self.stat_entry(&tmp), Ok(None));
            if tmp_gone && self.holds(name, bytes) {
                tracing::warn!(
                    "renaming into {} reported {} but it is in place: done",
                    self.entry_path(name),
                    e.desc()
                );
            } else {
                let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                return Err(self.io(name, "rename into place", e));
            }
        }
        self.sync_after_done(name);
        Ok(())
    }

    /// Whether `name` is a regular file holding exactly `bytes` (looked at
    /// after an error; any error reading it means "not seen").
    fn holds(&self, name: &str, bytes: &[u8]) -> bool {
        matches!(
            self.read_file(name, bytes.len() as u64 + 1, Trust::TypeOnly),
            Ok(Some(b)) if b == bytes
        )
    }

    /// Create `name` once: temp file, fsync, link to its final name without
    /// replacing (RENAME_NOREPLACE, or link(2) where that is unsupported),
    /// remove the temp name, fsync dir. `FsError::Exists` when it exists.
    ///
    /// After an error, look (SPEC 3, v1.1): a link that reported an error
    /// but whose name now holds exactly `bytes` with the temp name gone is
    /// done; a succeeded link is done whatever the fsync after it says.
    pub fn create_once(&self, name: &str, bytes: &[u8], mode: u32) -> FsResult<()> {
        self.create_once_unless(name, bytes, mode, &|| false)
            .map(|_| ())
    }

    /// [`Dir::create_once`], asking `stop` once the temp file is written and
    /// fsynced, before it gets its name: `Ok(false)` when `stop` says so,
    /// the temp file removed and nothing at `name` (a signal during
    /// `--evidence`). `Ok(true)`: created.
    pub fn create_once_unless(
        &self,
        name: &str,
        bytes: &[u8],
        mode: u32,
        stop: &dyn Fn() -> bool,
    ) -> FsResult<bool> {
        let tmp = self.write_temp(name, bytes, mode)?;
        if stop() {
            self.remove_file(&tmp)?;
            return Ok(false);
        }
        let res = match renameat2(
            &self.fd,
            tmp.as_str(),
            &self.fd,
            name,
            RenameFlags::RENAME_NOREPLACE,
        ) {
            Err(Errno::EINVAL) | Err(Errno::ENOSYS) => {
                let r = linkat(
                    &self.fd,
                    tmp.as_str(),
                    &self.fd,
                    name,
                    nix::fcntl::AtFlags::empty(),
                );
                let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                r
            }
            other => other,
        };
        match res {
            Ok(()) => {
                self.sync_after_done(name);
                Ok(true)
            }
            Err(Errno::EEXIST) => {
                let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                Err(FsError::Exists {
                    path: self.entry_path(name),
                })
            }
            Err(e) => {
                let tmp_gone = matches!(self.stat_entry(&tmp), Ok(None));
                if tmp_gone && self.holds(name, bytes) {
                    tracing::warn!(
                        "creating {} reported {} but it is in place: done",
                        self.entry_path(name),
                        e.desc()
                    );
                    self.sync_after_done(name);
                    return Ok(true);
                }
                let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                Err(self.io(name, "create", e))
            }
        }
    }

    /// Open (creating with `mode`) a regular file for appending.
    pub fn open_append(&self, name: &str, mode: u32) -> FsResult<File> {
        let flags = OFlag::O_WRONLY
            | OFlag::O_APPEND
            | OFlag::O_CREAT
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | OFlag::O_NONBLOCK;
        let fd = match openat(&self.fd, name, flags, Mode::from_bits_truncate(mode)) {
            Ok(fd) => fd,
            Err(Errno::ELOOP) => {
                return Err(FsError::Symlink {
                    path: self.entry_path(name),
                })
            }
            Err(e) => return Err(self.io(name, "open", e)),
        };
        let st = fstat(&fd).map_err(|e| self.io(name, "stat", e))?;
        vet_stat(&self.entry_path(name), &st, Kind::File, Trust::Strict)?;
        if st.st_nlink > 1 {
            return Err(FsError::HardLinked {
                path: self.entry_path(name),
                links: st.st_nlink as u64,
            });
        }
        Ok(File::from(fd))
    }
}
