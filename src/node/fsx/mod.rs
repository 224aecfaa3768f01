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
//!
//! One concern a file; [`Dir`]'s methods are spread over them by concern:
//!
//! - here: the vocabulary (kinds, trust, [`FsError`], the vetting of a
//!   stat), the [`Root`] walk, [`Dir`] itself and the fsync of a directory
//!   that every write discipline ends with;
//! - `read`: the read side of a [`Dir`]: no-follow opens of subdirectories
//!   and files, capped reads, links, listings, stats;
//! - `write`: durable writes: new directories, [`Dir::replace`],
//!   [`Dir::create_once`], the append-only log;
//! - `owned`: the rollback's writes that keep a file's owner and group;
//! - `rename`: renames without replacing, within a directory and between
//!   two ([`move_noreplace`]);
//! - `remove`: removals of a file or a tree, never following a symlink;
//! - `copy`: whole-file reads for the evidence bundle;
//! - `host`: the few reads of the host's own `/proc`, never under the root;
//! - `pkilink`: the one symlink accepted on a path, a `pki/` linked to a
//!   directory under `/etc/kubernetes` (SPEC 12, kubespray's `ssl/`),
//!   resolved once per [`Root`] and then walked no-follow like any path.

mod copy;
mod host;
mod owned;
pub use owned::Attrs;
mod pkilink;
mod read;
mod remove;
mod rename;
mod write;

pub use host::{
    host_proc_fd_target, host_proc_numbers, open_running_binary, read_host_proc, ProcText,
};
pub use rename::{move_noreplace, same_mount};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::unistd::fsync;
use std::fmt;
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
    /// `/etc/kubernetes/pki` is a symlink that is not accepted (SPEC 12):
    /// every walk under it is refused with the reason, never followed.
    PkiLink {
        /// The link's node path (`/etc/kubernetes/pki`).
        link: String,
        /// Its target as the link holds it (with the node path it names,
        /// when relative).
        target: String,
        /// Why it is refused, e.g. `outside /etc/kubernetes`.
        reason: String,
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
            FsError::PkiLink {
                link,
                target,
                reason,
            } => write!(f, "{link} is a symlink to {target}, {reason}: refused"),
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
    /// What `etc/kubernetes/pki` is, resolved at the first walk under it
    /// (`pkilink`): a plain directory, an accepted link's target, or why
    /// the link is refused.
    pki: std::sync::OnceLock<pkilink::PkiLink>,
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
            pki: std::sync::OnceLock::new(),
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
    /// `Ok(None)` when some component does not exist. A path under
    /// `etc/kubernetes/pki` is walked as the accepted link's target, or
    /// refused with the link's reason (`pkilink`).
    pub fn open_dir(&self, rel: &str, trust: Trust) -> FsResult<Option<Dir>> {
        self.walk_dir(&self.resolve_pki(rel)?, trust)
    }

    /// [`Root::open_dir`] of a path taken as it is (no `pki/` link).
    fn walk_dir(&self, rel: &str, trust: Trust) -> FsResult<Option<Dir>> {
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
        let rel = self.resolve_pki(rel)?;
        let comps: Vec<&str> = components(&rel).collect();
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

    /// Split `rel` into its parent directory and file name and open the
    /// parent (`etc/kubernetes/pki` itself is the entry `pki`, as lstat
    /// sees it; anything under it is in the link's target).
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

    pub fn sync(&self) -> FsResult<()> {
        fsync(&self.fd).map_err(|e| FsError::Io {
            path: self.path(),
            op: "fsync directory",
            errno: e,
        })
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
