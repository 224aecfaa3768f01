//! Writes that keep a file's owner and group: the rollback of SPEC section 4
//! step 8 (v1.1) puts back bytes, mode, owner and group. The durable
//! replace of `write`, with the temp file chowned before it gets its name.

use super::{vet_stat, Dir, FsError, FsResult, Kind, Trust};
use nix::errno::Errno;
use nix::fcntl::{openat, renameat, OFlag};
use nix::sys::stat::{fstat, Mode};
use nix::sys::time::TimeSpec;
use nix::unistd::{fsync, unlinkat, UnlinkatFlags};

/// What a replaced file lands with besides its bytes: permission bits,
/// owner, group, and (v1.3) the modification time (seconds, nanoseconds)
/// when one is given; None keeps the time of the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attrs {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: Option<(i64, i64)>,
}

impl Dir {
    /// [`Dir::replace`], landing with owner `uid` and group `gid` as well as
    /// `mode`, and with the modification time `mtime` when given (SPEC 4
    /// step 8, v1.3: "restart needed" is judged by it). The temp file is
    /// chowned, its mode set again (a chown may clear set-id bits), its
    /// time set, and fsynced *before* the rename, so `name` never has
    /// another owner or time, not for a moment: a kubeadm-owned file is
    /// never seen root-owned. After an error, look, as [`Dir::replace`]
    /// does.
    pub fn replace_owned(
        &self,
        name: &str,
        bytes: &[u8],
        attrs: Attrs,
        trust: Trust,
    ) -> FsResult<()> {
        if let Some(st) = self.stat_entry(name)? {
            vet_stat(&self.entry_path(name), &st, Kind::File, trust)?;
        }
        let tmp = self.write_temp(name, bytes, attrs.mode)?;
        if let Err((op, e)) = self.own_temp(&tmp, attrs) {
            let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
            return Err(self.io(&tmp, op, e));
        }
        if let Err(e) = renameat(&self.fd, tmp.as_str(), &self.fd, name) {
            // Look: done when the temp name is gone and `name` holds exactly
            // `bytes` (only our temp file could have put them there).
            let tmp_gone = matches!(self.stat_entry(&tmp), Ok(None));
            let in_place = matches!(
                self.read_file(name, bytes.len() as u64 + 1, Trust::TypeOnly),
                Ok(Some(b)) if b == bytes
            );
            if !(tmp_gone && in_place) {
                let _ = unlinkat(&self.fd, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                return Err(self.io(name, "rename into place", e));
            }
            tracing::warn!(
                "renaming into {} reported {} but it is in place: done",
                self.entry_path(name),
                e.desc()
            );
        }
        // The rename is done: a failing directory fsync is logged, never
        // turned into "not done".
        if let Err(e) = self.sync() {
            tracing::warn!(
                "{} is in place, but {e}: it may not survive a power loss",
                self.entry_path(name)
            );
        }
        Ok(())
    }

    /// chown, chmod and fsync a temp file this process just created
    /// (`O_EXCL`, dot-named), reopened without following a symlink.
    fn own_temp(&self, tmp: &str, attrs: Attrs) -> Result<(), (&'static str, Errno)> {
        let Attrs {
            mode,
            uid,
            gid,
            mtime,
        } = attrs;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = openat(&self.fd, tmp, flags, Mode::empty()).map_err(|e| ("open", e))?;
        let st = fstat(&fd).map_err(|e| ("stat", e))?;
        if Kind::of(&st) != Kind::File {
            return Err(("open", Errno::EINVAL));
        }
        nix::unistd::fchown(
            &fd,
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(gid)),
        )
        .map_err(|e| ("chown", e))?;
        nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(mode)).map_err(|e| ("chmod", e))?;
        if let Some((sec, nsec)) = mtime {
            // The time last, on the descriptor: nothing after it writes to
            // the file, so the name never appears with another time.
            let t = TimeSpec::new(sec, nsec);
            nix::sys::stat::futimens(&fd, &TimeSpec::UTIME_OMIT, &t)
                .map_err(|e| ("set the modification time of", e))?;
        }
        fsync(&fd).map_err(|e| ("fsync", e))
    }

    /// Give this directory owner `uid` and group `gid` (fchown on its own
    /// fd, never by a path) and fsync it: a directory the rollback had to
    /// create again gets the owner the backup recorded.
    pub fn set_owner(&self, uid: u32, gid: u32) -> FsResult<()> {
        let err = |op, errno| FsError::Io {
            path: self.path(),
            op,
            errno,
        };
        nix::unistd::fchown(
            &self.fd,
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(gid)),
        )
        .map_err(|e| err("chown", e))?;
        self.sync()
    }
}
