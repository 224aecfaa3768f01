//! Node file I/O under `--root`, without following symlinks.
//!
//! Every path is walked component by component from a directory fd with
//! `O_NOFOLLOW`, so a symlink anywhere below the root is refused, never
//! followed. Files are opened `O_NONBLOCK` (a planted FIFO cannot hang us),
//! checked with `fstat` (type, owner, mode) and read with a size cap.
//!
//! The three write disciplines of SPEC section 3 live here too:
//! [`Dir::replace`] (phase file, owner), [`Dir::create_once`] (receipts) and
//! [`move_noreplace`] (manifests into and out of staging).

use nix::errno::Errno;
use nix::fcntl::{openat, renameat, renameat2, OFlag, RenameFlags};
use nix::sys::stat::{fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{fsync, linkat, unlinkat, UnlinkatFlags};
use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Default cap for reading a small state file (phase, receipt, owner, agent state).
pub const SMALL_FILE_MAX: u64 = 64 * 1024;
/// Cap for certificates, kubeconfigs and manifests.
pub const NODE_FILE_MAX: u64 = 1024 * 1024;

/// What a path was found to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    Device,
    Other,
}

impl Kind {
    fn of(st: &FileStat) -> Kind {
        let fmt = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        match fmt {
            SFlag::S_IFREG => Kind::File,
            SFlag::S_IFDIR => Kind::Dir,
            SFlag::S_IFLNK => Kind::Symlink,
            SFlag::S_IFIFO => Kind::Fifo,
            SFlag::S_IFSOCK => Kind::Socket,
            SFlag::S_IFCHR | SFlag::S_IFBLK => Kind::Device,
            _ => Kind::Other,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::File => "regular file",
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::Fifo => "FIFO",
            Kind::Socket => "socket",
            Kind::Device => "device",
            Kind::Other => "special file",
        }
    }
}

/// How strictly an object is vetted before use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Runbook state, staging, manifests: root-owned (when we are root) and
    /// not writable by group or others.
    Strict,
    /// PKI, kubeconfigs, agent state: only "no symlink, right type".
    TypeOnly,
}

/// A refusal or failure that names the node path (as seen under the root).
#[derive(Debug)]
pub enum FsError {
    Symlink {
        path: String,
    },
    WrongType {
        path: String,
        expected: Kind,
        found: Kind,
    },
    NotRootOwned {
        path: String,
        uid: u32,
    },
    Writable {
        path: String,
        mode: u32,
    },
    TooLarge {
        path: String,
        max: u64,
    },
    /// A file written in place (the operation log) that has other names:
    /// writing it would write them too.
    HardLinked {
        path: String,
        links: u64,
    },
    Exists {
        path: String,
    },
    Io {
        path: String,
        op: &'static str,
        errno: Errno,
    },
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::Symlink { path } => write!(f, "{path} is a symlink; refusing to follow it"),
            FsError::WrongType {
                path,
                expected,
                found,
            } => write!(
                f,
                "{path} is a {}, expected a {}",
                found.as_str(),
                expected.as_str()
            ),
            FsError::NotRootOwned { path, uid } => {
                write!(f, "{path} is owned by uid {uid}, not root; refusing it")
            }
            FsError::Writable { path, mode } => write!(
                f,
                "{path} is writable by group or others (mode {:04o}); refusing it",
                mode & 0o7777
            ),
            FsError::TooLarge { path, max } => {
                write!(f, "{path} is larger than {max} bytes; refusing to read it")
            }
            FsError::HardLinked { path, links } => write!(
                f,
                "{path} has {links} hard links; refusing to write through it"
            ),
            FsError::Exists { path } => write!(f, "{path} already exists"),
            FsError::Io { path, op, errno } => write!(f, "failed to {op} {path}: {}", errno.desc()),
        }
    }
}

impl std::error::Error for FsError {}

impl FsError {}

pub type FsResult<T> = Result<T, FsError>;

fn node_path(rel: &str) -> String {
    let rel = rel.trim_matches('/');
    if rel.is_empty() {
        "/".to_string()
    } else {
        format!("/{rel}")
    }
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

fn components(rel: &str) -> impl Iterator<Item = &str> {
    rel.split('/').filter(|c| !c.is_empty() && *c != ".")
}

fn running_as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Vet an fstat result against what we expect.
pub fn vet_stat(path: &str, st: &FileStat, expected: Kind, trust: Trust) -> FsResult<()> {
    let found = Kind::of(st);
    if found == Kind::Symlink {
        return Err(FsError::Symlink {
            path: path.to_string(),
        });
    }
    if found != expected {
        return Err(FsError::WrongType {
            path: path.to_string(),
            expected,
            found,
        });
    }
    if trust == Trust::Strict {
        if running_as_root() && st.st_uid != 0 {
            return Err(FsError::NotRootOwned {
                path: path.to_string(),
                uid: st.st_uid,
            });
        }
        if st.st_mode & 0o022 != 0 {
            return Err(FsError::Writable {
                path: path.to_string(),
                mode: st.st_mode,
            });
        }
    }
    Ok(())
}

/// The node root (`--root`): the one path we do follow as given.
#[derive(Debug)]
pub struct Root {
    host: PathBuf,
    fd: OwnedFd,
}

impl Root {
    pub fn open(host: &Path) -> FsResult<Root> {
        let fd = openat(
            nix::fcntl::AT_FDCWD,
            host,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| FsError::Io {
            path: host.display().to_string(),
            op: "open root directory",
            errno,
        })?;
        Ok(Root {
            host: host.to_path_buf(),
            fd,
        })
    }

    pub fn host_path(&self) -> &Path {
        &self.host
    }

    /// The root as a [`Dir`] (node path `/`).
    pub fn dir(&self) -> FsResult<Dir> {
        let fd = self.fd.try_clone().map_err(|e| FsError::Io {
            path: "/".into(),
            op: "duplicate root fd",
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(0)),
        })?;
        Ok(Dir {
            fd,
            rel: String::new(),
        })
    }

    /// Open an existing directory (every component a real directory).
    /// `Ok(None)` when some component does not exist.
    pub fn open_dir(&self, rel: &str, trust: Trust) -> FsResult<Option<Dir>> {
        let mut dir = self.dir()?;
        for c in components(rel) {
            match dir.open_subdir(c, Trust::TypeOnly)? {
                Some(d) => dir = d,
                None => return Ok(None),
            }
        }
        if trust == Trust::Strict {
            dir.vet_self(trust)?;
        }
        Ok(Some(dir))
    }

    /// Open a directory, creating missing components: intermediate ones with
    /// 0755, the last with `mode`.
    pub fn create_dir_all(&self, rel: &str, mode: u32, trust: Trust) -> FsResult<Dir> {
        let comps: Vec<&str> = components(rel).collect();
        let mut dir = self.dir()?;
        for (i, c) in comps.iter().enumerate() {
            let last = i + 1 == comps.len();
            let m = if last { mode } else { 0o755 };
            dir = match dir.open_subdir(c, Trust::TypeOnly)? {
                Some(d) => d,
                None => dir.mkdir(c, m)?,
            };
        }
        dir.vet_self(trust)?;
        Ok(dir)
    }

    /// Split `rel` into its parent directory and file name and open the parent.
    pub fn open_parent<'a>(&self, rel: &'a str) -> FsResult<Option<(Dir, &'a str)>> {
        let rel = rel.trim_matches('/');
        let (parent, name) = match rel.rsplit_once('/') {
            Some((p, n)) => (p, n),
            None => ("", rel),
        };
        Ok(self.open_dir(parent, Trust::TypeOnly)?.map(|d| (d, name)))
    }

    /// Read a whole regular file, capped at `max` bytes. `Ok(None)` when it
    /// (or a parent directory) does not exist.
    pub fn read_file(&self, rel: &str, max: u64, trust: Trust) -> FsResult<Option<Vec<u8>>> {
        match self.open_parent(rel)? {
            Some((dir, name)) => dir.read_file(name, max, trust),
            None => Ok(None),
        }
    }

    /// When a file was last written (its mtime, not following a symlink).
    /// `Ok(None)` when it (or a parent directory) does not exist.
    pub fn modified(&self, rel: &str) -> FsResult<Option<time::OffsetDateTime>> {
        let Some((dir, name)) = self.open_parent(rel)? else {
            return Ok(None);
        };
        Ok(dir.stat_entry(name)?.and_then(|st| {
            let nanos = i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec);
            time::OffsetDateTime::from_unix_timestamp_nanos(nanos).ok()
        }))
    }
}

/// What was read of a kernel file under the host's `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcText {
    pub bytes: Vec<u8>,
    /// False when the file held more than was read.
    pub complete: bool,
}

/// Read at most `max` bytes of `/proc/<rel>` (`locks`, `812/comm`): the
/// kernel's view of this machine, never a node file under `--root`. Opened
/// without following a symlink (`/proc/self` is never what is meant).
pub fn read_host_proc(rel: &str, max: usize) -> Result<ProcText, Errno> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
    let path = format!("/proc/{}", rel.trim_start_matches('/'));
    let fd = nix::fcntl::open(path.as_str(), flags, Mode::empty())?;
    let mut bytes = Vec::new();
    File::from(fd)
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc_eio())))?;
    let complete = bytes.len() <= max;
    bytes.truncate(max);
    Ok(ProcText { bytes, complete })
}

/// The numeric entries of a host `/proc` directory (`""`: the processes,
/// `"812/fd"`: a process's descriptors), at most `max`, in directory order.
/// The second value is false when there were more.
pub fn host_proc_numbers(rel: &str, max: usize) -> Result<(Vec<u32>, bool), Errno> {
    let path = format!("/proc/{}", rel.trim_start_matches('/'));
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut d = nix::dir::Dir::open(path.as_str(), flags, Mode::empty())?;
    let mut out = Vec::new();
    for entry in d.iter() {
        let entry = entry?;
        let Some(n) = entry
            .file_name()
            .to_str()
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if out.len() == max {
            return Ok((out, false));
        }
        out.push(n);
    }
    Ok((out, true))
}

/// The device and inode of what a process's descriptor is open on
/// (`/proc/PID/fd/N`, followed as the kernel's link to the open file: a
/// stat, never an open).
pub fn host_proc_fd_target(pid: u32, fd: u32) -> Result<(u64, u64), Errno> {
    let st = nix::sys::stat::stat(format!("/proc/{pid}/fd/{fd}").as_str())?;
    Ok((st.st_dev, st.st_ino))
}

/// An open directory below the root, with its node path for messages.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    rel: String,
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Dir {
    /// The node path of this directory, e.g. `/etc/kubernetes/manifests`.
    pub fn path(&self) -> String {
        node_path(&self.rel)
    }

    /// The node path of an entry, e.g. `/etc/kubernetes/manifests/etcd.yaml`.
    pub fn entry_path(&self, name: &str) -> String {
        node_path(&join(&self.rel, name))
    }

    fn io(&self, name: &str, op: &'static str, errno: Errno) -> FsError {
        FsError::Io {
            path: self.entry_path(name),
            op,
            errno,
        }
    }

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

    pub fn sync(&self) -> FsResult<()> {
        fsync(&self.fd).map_err(|e| FsError::Io {
            path: self.path(),
            op: "fsync directory",
            errno: e,
        })
    }

    /// Write `bytes` to a new dot-named temp file beside `name`, fsynced.
    fn write_temp(&self, name: &str, bytes: &[u8], mode: u32) -> FsResult<String> {
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

    /// The fsync after a change that is already done (a rename or link that
    /// succeeded): a failure is logged, never turned into "not done".
    fn sync_after_done(&self, name: &str) {
        if let Err(e) = self.sync() {
            tracing::warn!(
                "{} is in place, but {e}: it may not survive a power loss",
                self.entry_path(name)
            );
        }
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

    /// The permission bits of an entry (lstat).
    pub fn mode_of(&self, name: &str) -> FsResult<Option<u32>> {
        Ok(self.stat_entry(name)?.map(|st| st.st_mode & 0o7777))
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

// ---------------------------------------------------------------------------
// Writes that keep a file's owner and group: the rollback of SPEC section 4
// step 8 (v1.1) puts back bytes, mode, owner and group. A block of its own;
// the three disciplines above are unchanged.

impl Dir {
    /// [`Dir::replace`], landing with owner `uid` and group `gid` as well as
    /// `mode`. The temp file is chowned, its mode set again (a chown may
    /// clear set-id bits) and fsynced *before* the rename, so `name` never
    /// has another owner, not for a moment: a kubeadm-owned file is never
    /// seen root-owned. After an error, look, as [`Dir::replace`] does.
    pub fn replace_owned(
        &self,
        name: &str,
        bytes: &[u8],
        mode: u32,
        uid: u32,
        gid: u32,
        trust: Trust,
    ) -> FsResult<()> {
        if let Some(st) = self.stat_entry(name)? {
            vet_stat(&self.entry_path(name), &st, Kind::File, trust)?;
        }
        let tmp = self.write_temp(name, bytes, mode)?;
        if let Err((op, e)) = self.own_temp(&tmp, mode, uid, gid) {
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
    fn own_temp(
        &self,
        tmp: &str,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<(), (&'static str, Errno)> {
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

// ---------------------------------------------------------------------------
// Copies for the evidence bundle (`--status-only --evidence`, SPEC 6, v1.1):
// files read whole to be put elsewhere, and the running binary. A block of
// its own; nothing above changes.

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

/// The running executable, opened for reading: `/proc/self/exe`, a host
/// path, not under the root. Its link is the kernel's and is followed on
/// purpose: it names this very binary.
pub fn open_running_binary() -> FsResult<File> {
    let path = "/proc/self/exe";
    openat(
        nix::fcntl::AT_FDCWD,
        path,
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(|errno| FsError::Io {
        path: path.to_string(),
        op: "open",
        errno,
    })
}

fn errno_of(e: &std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc_eio()))
}

const fn libc_eio() -> i32 {
    5
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests plant and read files to check the layer
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn tmp() -> (tempfile::TempDir, Root) {
        let t = tempfile::tempdir().unwrap();
        let r = Root::open(t.path()).unwrap();
        (t, r)
    }

    #[test]
    fn symlinked_parent_is_refused_not_followed() {
        let (t, r) = tmp();
        std::fs::create_dir_all(t.path().join("real/x")).unwrap();
        std::fs::write(t.path().join("real/x/f"), b"hi").unwrap();
        symlink(t.path().join("real"), t.path().join("link")).unwrap();
        let err = r.read_file("link/x/f", 10, Trust::TypeOnly).unwrap_err();
        assert!(
            matches!(err, FsError::Symlink { ref path } if path == "/link"),
            "{err}"
        );
        assert_eq!(
            r.read_file("real/x/f", 10, Trust::TypeOnly)
                .unwrap()
                .unwrap(),
            b"hi"
        );
    }

    #[test]
    fn symlinked_file_fifo_and_oversize_are_refused() {
        let (t, r) = tmp();
        std::fs::write(t.path().join("f"), b"0123456789").unwrap();
        symlink("f", t.path().join("l")).unwrap();
        nix::unistd::mkfifo(&t.path().join("p"), Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(
            r.read_file("l", 100, Trust::TypeOnly),
            Err(FsError::Symlink { .. })
        ));
        assert!(matches!(
            r.read_file("p", 100, Trust::TypeOnly),
            Err(FsError::WrongType {
                found: Kind::Fifo,
                ..
            })
        ));
        assert!(matches!(
            r.read_file("f", 9, Trust::TypeOnly),
            Err(FsError::TooLarge { .. })
        ));
        assert_eq!(
            r.read_file("f", 10, Trust::TypeOnly)
                .unwrap()
                .unwrap()
                .len(),
            10
        );
        assert!(r
            .read_file("missing/f", 10, Trust::TypeOnly)
            .unwrap()
            .is_none());
    }

    #[test]
    fn strict_refuses_group_writable() {
        let (t, r) = tmp();
        std::fs::write(t.path().join("f"), b"x").unwrap();
        std::fs::set_permissions(t.path().join("f"), std::fs::Permissions::from_mode(0o664))
            .unwrap();
        assert!(matches!(
            r.read_file("f", 10, Trust::Strict),
            Err(FsError::Writable { .. })
        ));
        assert!(r.read_file("f", 10, Trust::TypeOnly).is_ok());
    }

    #[test]
    fn create_once_never_replaces_and_replace_does() {
        let (t, r) = tmp();
        let d = r.create_dir_all("a/b", 0o700, Trust::TypeOnly).unwrap();
        let mode = std::fs::metadata(t.path().join("a/b"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, 0o700);
        d.create_once("r.json", b"one", 0o600).unwrap();
        assert!(matches!(
            d.create_once("r.json", b"two", 0o600),
            Err(FsError::Exists { .. })
        ));
        assert_eq!(std::fs::read(t.path().join("a/b/r.json")).unwrap(), b"one");
        d.replace("p", b"1", 0o600, Trust::Strict).unwrap();
        d.replace("p", b"2", 0o600, Trust::Strict).unwrap();
        assert_eq!(std::fs::read(t.path().join("a/b/p")).unwrap(), b"2");
        // no temp files left behind
        assert_eq!(
            d.list().unwrap(),
            vec!["p".to_string(), "r.json".to_string()]
        );
        symlink("p", t.path().join("a/b/q")).unwrap();
        assert!(matches!(
            d.replace("q", b"3", 0o600, Trust::Strict),
            Err(FsError::Symlink { .. })
        ));
    }

    #[test]
    fn move_noreplace_conflicts_instead_of_overwriting() {
        let (t, r) = tmp();
        let a = r.create_dir_all("a", 0o755, Trust::TypeOnly).unwrap();
        let b = r.create_dir_all("b", 0o755, Trust::TypeOnly).unwrap();
        std::fs::write(t.path().join("a/m.yaml"), b"A").unwrap();
        std::fs::write(t.path().join("b/m.yaml"), b"B").unwrap();
        assert!(matches!(
            move_noreplace(&a, &b, "m.yaml"),
            Err(FsError::Exists { .. })
        ));
        assert_eq!(std::fs::read(t.path().join("b/m.yaml")).unwrap(), b"B");
        std::fs::remove_file(t.path().join("b/m.yaml")).unwrap();
        move_noreplace(&a, &b, "m.yaml").unwrap();
        assert_eq!(std::fs::read(t.path().join("b/m.yaml")).unwrap(), b"A");
        assert!(!t.path().join("a/m.yaml").exists());
    }
}
