//! The renewal lock: flock(2) on `state/lock` (never renamed or removed), and
//! `state/owner`, which names the holder for whoever waits.
//!
//! Shape of cargo's `util/flock.rs`: try once; if held, say "waiting for lock
//! held by ..." once on stderr, poll to a deadline, then a typed timeout.

use crate::contract::{LockOwnerFile, OperationId, OwnerMode, Timestamp};
use crate::node::fsx::{Dir, FsError, Trust};
use crate::node::paths::{LOCK_FILE, STATE_FILE_MODE};
use crate::node::statedir::StateDir;
use crate::rules::clock;
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode};
use serde::{Deserialize, Serialize};
use std::fs::{File, TryLockError};
use std::time::{Duration, Instant};

/// Poll interval while waiting for the lock.
const POLL: Duration = Duration::from_millis(25);

/// Who holds (or last held) the lock, as read from `state/owner`: a lenient
/// view of `contract::LockOwnerFile` (what this binary writes), taking any
/// mode string and ignoring unknown keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub pid: u32,
    #[serde(rename = "operationID")]
    pub operation_id: Option<String>,
    pub mode: String,
    pub started_at: String,
    #[serde(rename = "bootID")]
    pub boot_id: String,
}

/// What a written record reads back as (the tests compare the two).
#[cfg(test)]
impl From<LockOwnerFile> for Owner {
    fn from(o: LockOwnerFile) -> Self {
        let mode = match o.mode {
            OwnerMode::Renew => "renew",
            OwnerMode::LegacyV1 => "legacy-v1",
            OwnerMode::StatusFence => "status-fence",
        };
        Owner {
            pid: o.pid,
            operation_id: o.operation_id.map(|i| i.0),
            mode: mode.to_string(),
            started_at: o.started_at.0,
            boot_id: o.boot_id,
        }
    }
}

impl Owner {
    pub fn describe(&self) -> String {
        let op = self.operation_id.as_deref().unwrap_or("none");
        format!(
            "pid {} ({}, operation {op}, since {})",
            self.pid, self.mode, self.started_at
        )
    }
}

/// What `state/owner` says, parsed leniently (the shell runbook wrote its own
/// shape); the raw text is kept short and printable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerInfo {
    Absent,
    Known(Owner),
    Unparsed(String),
    Error(String),
}

impl OwnerInfo {
    pub fn describe(&self) -> String {
        match self {
            OwnerInfo::Absent => "an unknown process (no owner file)".to_string(),
            OwnerInfo::Known(o) => o.describe(),
            OwnerInfo::Unparsed(s) => format!("an unknown process (owner file says {s:?})"),
            OwnerInfo::Error(e) => format!("an unknown process ({e})"),
        }
    }
}

pub fn read_owner(state: &Dir) -> OwnerInfo {
    match StateDir::new(state).read_owner() {
        Ok(None) => OwnerInfo::Absent,
        Ok(Some(bytes)) => match serde_json::from_slice::<Owner>(&bytes) {
            Ok(o) => OwnerInfo::Known(o),
            Err(_) => {
                let text: String = String::from_utf8_lossy(&bytes)
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .take(120)
                    .collect();
                OwnerInfo::Unparsed(text.trim().to_string())
            }
        },
        Err(e) => OwnerInfo::Error(e.to_string()),
    }
}

/// This boot's ID (host path; "unknown" when unreadable).
pub fn boot_id() -> String {
    #[allow(clippy::disallowed_methods)] // the kernel's boot ID, not a node file
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("renewal lock {path} still held after {waited_secs}s by {holder}")]
    Timeout {
        path: String,
        waited_secs: u64,
        holder: String,
    },
    #[error("cancelled while waiting for the renewal lock")]
    Cancelled,
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// The held lock. Dropping it releases the flock (the file stays).
#[derive(Debug)]
pub struct LockGuard {
    file: File,
}

impl LockGuard {
    /// Record the holder in `state/owner` (replace discipline).
    pub fn write_owner(&self, state: &Dir, owner: &LockOwnerFile) -> Result<(), FsError> {
        let mut bytes = serde_json::to_vec(owner).unwrap_or_default();
        bytes.push(b'\n');
        StateDir::new(state).replace_owner(&bytes)
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn open_lock(state: &Dir, create: bool) -> Result<Option<File>, FsError> {
    let mut flags = OFlag::O_RDWR | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    if create {
        flags |= OFlag::O_CREAT;
    } else {
        flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    }
    let path = state.entry_path(LOCK_FILE);
    let fd = match openat(
        state,
        LOCK_FILE,
        flags,
        Mode::from_bits_truncate(STATE_FILE_MODE),
    ) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) if !create => return Ok(None),
        Err(Errno::ELOOP) => return Err(FsError::Symlink { path }),
        Err(e) => {
            return Err(FsError::Io {
                path,
                op: "open lock",
                errno: e,
            })
        }
    };
    let st = fstat(&fd).map_err(|e| FsError::Io {
        path: path.clone(),
        op: "stat",
        errno: e,
    })?;
    // Reuse the shared vetting through a fake read: type, owner and mode.
    crate::node::fsx::vet_stat(&path, &st, crate::node::fsx::Kind::File, Trust::Strict)?;
    if create {
        state.sync()?;
    }
    Ok(Some(File::from(fd)))
}

/// Take the lock, waiting at most `timeout`. `cancelled` is polled inside the
/// wait. Says "waiting for lock held by ..." once on stderr.
pub fn acquire(
    state: &Dir,
    timeout: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<LockGuard, LockError> {
    let file = open_lock(state, true)?.expect("lock opened with O_CREAT");
    let start = Instant::now();
    let mut said = false;
    loop {
        #[allow(clippy::disallowed_methods)] // the lock module: this is the flock
        match file.try_lock() {
            Ok(()) => return Ok(LockGuard { file }),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(LockError::Fs(FsError::Io {
                    path: state.entry_path(LOCK_FILE),
                    op: "flock",
                    errno: Errno::from_raw(e.raw_os_error().unwrap_or(5)),
                }))
            }
        }
        if !said {
            let holder = read_owner(state).describe();
            tracing::warn!(
                "waiting for lock {} held by {holder}",
                state.entry_path(LOCK_FILE)
            );
            said = true;
        }
        if cancelled() {
            return Err(LockError::Cancelled);
        }
        if start.elapsed() >= timeout {
            return Err(LockError::Timeout {
                path: state.entry_path(LOCK_FILE),
                waited_secs: timeout.as_secs(),
                holder: read_owner(state).describe(),
            });
        }
        std::thread::sleep(
            POLL.min(timeout.saturating_sub(start.elapsed()))
                .max(Duration::from_millis(1)),
        );
    }
}

/// The result of the read-only probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// No lock file (nothing ever ran, or no state dir).
    Absent,
    Free,
    Held,
}

/// Non-blocking probe: opens an existing lock file (never creates it) and
/// tries a shared flock, released at once.
pub fn probe(state: Option<&Dir>) -> Result<Probe, FsError> {
    let Some(state) = state else {
        return Ok(Probe::Absent);
    };
    let Some(file) = open_lock(state, false)? else {
        return Ok(Probe::Absent);
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            Ok(Probe::Free)
        }
        Err(TryLockError::WouldBlock) => Ok(Probe::Held),
        Err(TryLockError::Error(e)) => Err(FsError::Io {
            path: state.entry_path(LOCK_FILE),
            op: "flock",
            errno: Errno::from_raw(e.raw_os_error().unwrap_or(5)),
        }),
    }
}

/// The owner record for this process.
pub fn owner_for(
    operation_id: Option<&str>,
    mode: OwnerMode,
    now: time::OffsetDateTime,
) -> LockOwnerFile {
    LockOwnerFile {
        pid: std::process::id(),
        operation_id: operation_id.map(|i| OperationId(i.to_string())),
        mode,
        started_at: Timestamp(clock::rfc3339(now)),
        boot_id: boot_id(),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files in their temp state directory
mod tests {
    //! The lock's rules (SPEC 2, 3, 4 step 1 and 5): one holder at a time,
    //! a bounded wait that names the holder, a read-only probe that creates
    //! nothing, and no lock file followed through a symlink or trusted when
    //! others may write it.
    use super::*;
    use crate::node::fsx::Root;
    use crate::node::paths::{OWNER_FILE, STATE_DIR};
    use std::os::unix::fs::PermissionsExt;

    const NOW: time::OffsetDateTime = time::macros::datetime!(2026-11-30 00:00:00 UTC);

    /// A node root with its state directory (0700).
    fn state() -> (tempfile::TempDir, Dir) {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let state = root
            .create_dir_all(STATE_DIR, crate::node::paths::STATE_DIR_MODE, Trust::Strict)
            .unwrap();
        (t, state)
    }

    fn lock_path(t: &tempfile::TempDir) -> std::path::PathBuf {
        t.path().join(STATE_DIR).join(LOCK_FILE)
    }

    /// SPEC 4 step 1: a held lock is waited for at most the timeout, then
    /// refused naming the holder from `state/owner`.
    #[test]
    fn a_held_lock_times_out_naming_its_holder() {
        let (_t, state) = state();
        let held = acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        held.write_owner(&state, &owner_for(Some("op-1"), OwnerMode::Renew, NOW))
            .unwrap();
        let t0 = Instant::now();
        match acquire(&state, Duration::from_millis(300), &|| false) {
            Err(LockError::Timeout { holder, .. }) => assert!(
                holder.starts_with(&format!(
                    "pid {} (renew, operation op-1, since 2026-11-30T00:00:00Z)",
                    std::process::id()
                )),
                "{holder}"
            ),
            other => panic!("{other:?}"),
        }
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
    }

    /// Dropping the guard releases the lock; the lock file is never
    /// removed (SPEC 2: never renamed or removed).
    #[test]
    fn a_released_lock_can_be_taken_and_its_file_stays() {
        let (t, state) = state();
        drop(acquire(&state, Duration::from_secs(1), &|| false).unwrap());
        assert!(lock_path(&t).is_file());
        let again = acquire(&state, Duration::from_millis(100), &|| false);
        assert!(again.is_ok(), "{again:?}");
        drop(again);
        assert!(lock_path(&t).is_file());
    }

    /// A wait for the lock ends when the run is cancelled, long before the
    /// timeout.
    #[test]
    fn a_wait_for_the_lock_ends_on_cancel() {
        let (_t, state) = state();
        let _held = acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        let t0 = Instant::now();
        let r = acquire(&state, Duration::from_secs(30), &|| true);
        assert!(matches!(r, Err(LockError::Cancelled)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }

    /// SPEC 5: the probe opens an existing lock file without creating it,
    /// and tells a free lock from a held one.
    #[test]
    fn the_probe_creates_nothing_and_tells_free_from_held() {
        assert_eq!(probe(None).unwrap(), Probe::Absent);
        let (t, state) = state();
        assert_eq!(probe(Some(&state)).unwrap(), Probe::Absent);
        assert!(!lock_path(&t).exists(), "the probe created the lock file");
        let held = acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        assert_eq!(probe(Some(&state)).unwrap(), Probe::Held);
        drop(held);
        assert_eq!(probe(Some(&state)).unwrap(), Probe::Free);
        // The probe's shared lock is released at once.
        assert!(acquire(&state, Duration::from_millis(100), &|| false).is_ok());
    }

    /// SPEC 3: a lock file that is a symlink is refused, never followed
    /// (nothing is created where it points).
    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let (t, state) = state();
        let target = t.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, lock_path(&t)).unwrap();
        let r = acquire(&state, Duration::from_millis(100), &|| false);
        assert!(
            matches!(r, Err(LockError::Fs(FsError::Symlink { .. }))),
            "{r:?}"
        );
        assert!(matches!(probe(Some(&state)), Err(FsError::Symlink { .. })));
        assert!(!target.exists());
    }

    /// SPEC 3: a lock file writable by group or others is refused.
    #[test]
    fn a_lock_file_others_may_write_is_refused() {
        let (t, state) = state();
        std::fs::write(lock_path(&t), b"").unwrap();
        std::fs::set_permissions(lock_path(&t), std::fs::Permissions::from_mode(0o666)).unwrap();
        let r = acquire(&state, Duration::from_millis(100), &|| false);
        assert!(
            matches!(r, Err(LockError::Fs(FsError::Writable { .. }))),
            "{r:?}"
        );
    }

    /// `state/owner` is read leniently (the shell runbook wrote its own
    /// shape), shown short and printable, and never through a symlink.
    #[test]
    fn the_owner_record_is_read_leniently_and_shown_safely() {
        let (t, state) = state();
        let owner = t.path().join(STATE_DIR).join(OWNER_FILE);
        assert_eq!(read_owner(&state), OwnerInfo::Absent);
        let me = owner_for(Some("op-1"), OwnerMode::Renew, NOW);
        let guard = acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        guard.write_owner(&state, &me).unwrap();
        assert_eq!(read_owner(&state), OwnerInfo::Known(me.into()));
        std::fs::write(&owner, format!("PID=4242\n\x1b[31m{}", "x".repeat(500))).unwrap();
        match read_owner(&state) {
            OwnerInfo::Unparsed(s) => {
                assert!(s.starts_with("PID=4242"), "{s:?}");
                assert!(!s.chars().any(char::is_control), "{s:?}");
                assert!(s.chars().count() <= 120, "{} characters", s.chars().count());
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_file(&owner).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &owner).unwrap();
        assert!(
            matches!(read_owner(&state), OwnerInfo::Error(_)),
            "{:?}",
            read_owner(&state)
        );
    }

    /// The owner record names this process, this boot and the run's clock.
    #[test]
    fn the_owner_record_names_this_process_and_boot() {
        let o = Owner::from(owner_for(None, OwnerMode::StatusFence, NOW));
        assert_eq!(o.pid, std::process::id());
        assert_eq!(o.operation_id, None);
        assert_eq!(o.started_at, "2026-11-30T00:00:00Z");
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
        assert_eq!(o.boot_id, boot.trim());
        assert!(o.describe().contains("operation none"), "{}", o.describe());
    }
}
