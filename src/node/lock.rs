//! The renewal lock: flock(2) on `state/lock` (never renamed or removed), and
//! `state/owner`, the record of the last runbook that took it. Who really
//! holds it comes from the host's `/proc/locks` (by the lock file's device
//! and inode), cross-checked with that record (SPEC 6, v1.1).
//!
//! Shape of cargo's `util/flock.rs`: try once; if held, say "waiting for lock
//! held by ..." once on stderr, poll to a deadline, then a typed timeout.

use crate::contract::{LockOwnerFile, OperationId, OwnerMode, Timestamp};
use crate::node::fsx::{self, Dir, FsError, ProcText, Trust};
use crate::node::paths::{LOCK_FILE, STATE_FILE_MODE};
use crate::node::statedir::StateDir;
use crate::rules::clock;
use crate::rules::proclocks::{self, FileId, LockPid};
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode};
use std::fs::{File, TryLockError};
use std::time::{Duration, Instant};

/// Poll interval while waiting for the lock.
const POLL: Duration = Duration::from_millis(25);

/// Who holds (or last held) the lock, as read from `state/owner`: the
/// contract's lenient view (any mode string, unknown keys ignored) of what
/// this binary writes (`contract::LockOwnerFile`) or the shell runbook wrote.
pub use crate::contract::LockOwner as Owner;

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
            operation_id: o.operation_id.map(|i| i.as_str().to_string()),
            mode: mode.to_string(),
            started_at: o.started_at.0,
            boot_id: o.boot_id,
        }
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

/// How much of `/proc/locks` is read (a line is about 50 bytes).
const PROC_LOCKS_MAX: usize = 4 << 20;
/// How much of a holder's `comm` and `cmdline` is read, and shown.
const COMM_MAX: usize = 64;
const CMDLINE_MAX: usize = 4096;
const CMDLINE_SHOWN: usize = 256;

/// How many processes, and descriptors in all, a search for the holder
/// looks at (a busy control-plane node has a few hundred processes and some
/// ten thousand descriptors).
const SCAN_PIDS_MAX: usize = 32_768;
const SCAN_FDS_MAX: usize = 262_144;

/// The process that really holds the flock: a process with a descriptor
/// open on the lock file (its device and inode, by a stat of
/// `/proc/PID/fd/N`) through which `/proc/PID/fdinfo/N` shows a flock
/// lock. `/proc/locks` (never under `--root`) gives the leads: the pid
/// that took the lock, which may have exited or been reused (SPEC 6, "The
/// lock holder").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// Verified. `command` (`comm`) and `command_line` are None when they
    /// could not be read (the process exited since).
    Process {
        pid: u32,
        command: Option<String>,
        command_line: Option<String>,
    },
    /// A process this pid namespace cannot see.
    NotVisible,
    /// `/proc/locks` names `pid`, but no process was found holding the lock
    /// through a descriptor: `why` says what was seen of `pid`.
    Claimed { pid: u32, why: String },
    /// Why the holder is unknown (`/proc/locks` unreadable, or no flock on
    /// the file there and no descriptor found holding it).
    Unknown(String),
}

impl Holder {
    /// A claim that could not be verified, as the views say it.
    pub fn unverified(&self) -> String {
        match self {
            Holder::Claimed { pid, why } => format!("unknown (pid {pid} claims it: {why})"),
            _ => String::new(),
        }
    }
}

/// The host's `/proc` as the holder search reads it (a fake in tests).
pub trait ProcView {
    /// At most `max` bytes of `/proc/<rel>`.
    fn read(&self, rel: &str, max: usize) -> Result<ProcText, Errno>;
    /// The numeric entries of `/proc/<rel>` (processes, descriptors), at
    /// most `max`; false when there were more.
    fn numbers(&self, rel: &str, max: usize) -> Result<(Vec<u32>, bool), Errno>;
    /// The device and inode a descriptor is open on.
    fn fd_target(&self, pid: u32, fd: u32) -> Result<(u64, u64), Errno>;
}

/// The real host `/proc`.
struct HostProc;

impl ProcView for HostProc {
    fn read(&self, rel: &str, max: usize) -> Result<ProcText, Errno> {
        fsx::read_host_proc(rel, max)
    }
    fn numbers(&self, rel: &str, max: usize) -> Result<(Vec<u32>, bool), Errno> {
        fsx::host_proc_numbers(rel, max)
    }
    fn fd_target(&self, pid: u32, fd: u32) -> Result<(u64, u64), Errno> {
        fsx::host_proc_fd_target(pid, fd)
    }
}

/// Who holds the flock on the lock file (`dev`, `ino`: its fstat), verified
/// through the holder's descriptors.
pub fn find_holder(file: LockFileId) -> Holder {
    find_holder_with(file, &HostProc)
}

/// The lock file as a stat names it (`st_dev`, `st_ino`), and as
/// `/proc/locks` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockFileId {
    pub dev: u64,
    pub ino: u64,
}

impl LockFileId {
    fn proc_locks(self) -> FileId {
        FileId {
            major: nix::sys::stat::major(self.dev),
            minor: nix::sys::stat::minor(self.dev),
            inode: self.ino,
        }
    }
}

/// What one process's descriptors say about the lock.
enum Seen {
    Holds,
    /// Open on the lock file without a lock, or not open on it.
    NotHolding,
    /// `/proc/PID` gone or unreadable.
    Unreadable(Errno),
}

/// Whether `pid` holds the lock through one of its descriptors; `budget`
/// counts the descriptors looked at.
fn process_holds(proc_: &dyn ProcView, pid: u32, file: LockFileId, budget: &mut usize) -> Seen {
    let fds = match proc_.numbers(&format!("{pid}/fd"), *budget) {
        Ok((fds, _)) => fds,
        Err(e) => return Seen::Unreadable(e),
    };
    for fd in fds {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        if proc_.fd_target(pid, fd).ok() != Some((file.dev, file.ino)) {
            continue;
        }
        if let Ok(t) = proc_.read(&format!("{pid}/fdinfo/{fd}"), FDINFO_MAX) {
            if proclocks::fdinfo_holds_flock(&String::from_utf8_lossy(&t.bytes)) {
                return Seen::Holds;
            }
        }
    }
    Seen::NotHolding
}

/// How much of one `fdinfo` is read (a few lines, one per lock).
const FDINFO_MAX: usize = 4096;

fn find_holder_with(file: LockFileId, proc_: &dyn ProcView) -> Holder {
    let id = file.proc_locks();
    // The leads, from /proc/locks (its reads are not one snapshot: a lock
    // taken or dropped elsewhere while it is read can hide a line, so a
    // missing line is no proof; the descriptors decide).
    let (claims, locks_note) = match proc_.read("locks", PROC_LOCKS_MAX) {
        Ok(t) => {
            let claims =
                proclocks::flock_claims(&String::from_utf8_lossy(&t.bytes), id, t.complete);
            let note = if t.complete {
                format!("no flock on {id} in /proc/locks")
            } else {
                format!(
                    "no flock on {id} in the first {} MiB of /proc/locks",
                    PROC_LOCKS_MAX >> 20
                )
            };
            (claims, note)
        }
        Err(e) => (Vec::new(), format!("/proc/locks: {}", e.desc())),
    };
    let mut budget = SCAN_FDS_MAX;
    let mut claimed: Option<(u32, String)> = None;
    for lead in &claims {
        let LockPid::Pid(pid) = *lead else { continue };
        match process_holds(proc_, pid, file, &mut budget) {
            Seen::Holds => return verified(proc_, pid),
            seen => {
                if claimed.is_none() {
                    let why = match seen {
                        Seen::Unreadable(Errno::ENOENT) => "it has exited".to_string(),
                        Seen::Unreadable(e) => format!("/proc/{pid}/fd: {}", e.desc()),
                        _ => "no descriptor of it holds the lock (a reused pid)".to_string(),
                    };
                    claimed = Some((pid, why));
                }
            }
        }
    }
    // No lead holds it: look at every process's descriptors (a child that
    // inherited the locked descriptor; a lock /proc/locks did not show).
    let scanned = match proc_.numbers("", SCAN_PIDS_MAX) {
        Ok((pids, all)) => {
            let mut whole = all;
            for pid in pids {
                if claims.contains(&LockPid::Pid(pid)) {
                    continue;
                }
                if budget == 0 {
                    whole = false;
                    break;
                }
                if let Seen::Holds = process_holds(proc_, pid, file, &mut budget) {
                    return verified(proc_, pid);
                }
            }
            whole
        }
        Err(_) => false,
    };
    let searched = if scanned {
        "no process here holds it through a descriptor"
    } else {
        "the search of the processes' descriptors was cut short"
    };
    match claimed {
        Some((pid, why)) => Holder::Claimed {
            pid,
            why: format!("{why}; {searched}"),
        },
        None if claims.contains(&LockPid::NotVisible) => Holder::NotVisible,
        None => Holder::Unknown(format!("{locks_note}; {searched}")),
    }
}

/// A verified holder, with what it runs.
fn verified(proc_: &dyn ProcView, pid: u32) -> Holder {
    let read_text = |name: &str, max: usize, shown: usize| {
        proc_
            .read(&format!("{pid}/{name}"), max)
            .ok()
            .map(|t| proclocks::printable_process_text(&t.bytes, shown))
            .filter(|s| !s.is_empty())
    };
    Holder::Process {
        pid,
        command: read_text("comm", COMM_MAX, COMM_MAX),
        command_line: read_text("cmdline", CMDLINE_MAX, CMDLINE_SHOWN),
    }
}

/// The lock as held: its real holder and what `state/owner` (the record of
/// the last runbook that took it) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldBy {
    pub holder: Holder,
    pub owner: OwnerInfo,
    /// `state/owner` names the holder's pid on this boot: the holder is the
    /// runbook that wrote it.
    pub owner_matches: bool,
}

impl HeldBy {
    pub fn new(holder: Holder, owner: OwnerInfo, boot: &str) -> HeldBy {
        let owner_matches = match (&holder, &owner) {
            (Holder::Process { pid, .. }, OwnerInfo::Known(o)) => {
                o.pid == *pid && o.boot_id == boot
            }
            _ => false,
        };
        HeldBy {
            holder,
            owner,
            owner_matches,
        }
    }

    /// Who holds the lock of `state` now (`file`: the lock file's device and
    /// inode, from the descriptor that found it held).
    pub fn read(state: &Dir, file: LockFileId) -> HeldBy {
        HeldBy::new(find_holder(file), read_owner(state), &boot_id())
    }

    /// What follows "held by": the real holder (its `comm`), then whether
    /// `state/owner` agrees. In documents (and so in an evidence bundle).
    pub fn describe(&self) -> String {
        self.describe_as(false)
    }

    /// As [`HeldBy::describe`], with the holder's full command line (SPEC
    /// 6, v1.2): the operator's screen only, never a document (its
    /// arguments may carry a secret).
    pub fn describe_full(&self) -> String {
        self.describe_as(true)
    }

    fn describe_as(&self, full: bool) -> String {
        let who = match &self.holder {
            Holder::Process {
                pid,
                command,
                command_line,
            } => {
                // The kernel's 15-byte comm when the command line is
                // empty (or not asked for).
                let what = command_line
                    .clone()
                    .filter(|c| full && !c.trim().is_empty())
                    .or_else(|| command.clone())
                    .unwrap_or_else(|| "exited; its descriptor lives on".to_string());
                if let (true, OwnerInfo::Known(o)) = (self.owner_matches, &self.owner) {
                    let op = o.operation_id.as_deref().unwrap_or("none");
                    // The runbook on record: named so, not by the kernel's
                    // 15-byte comm ("nvke-cert-runbo").
                    let what = if full { what.as_str() } else { "the runbook" };
                    return format!(
                        "pid {pid} ({what}: {}, operation {op}, since {})",
                        o.mode, o.started_at
                    );
                }
                format!("pid {pid} ({what})")
            }
            Holder::NotVisible => "a process outside this pid namespace".to_string(),
            Holder::Claimed { .. } => self.holder.unverified(),
            Holder::Unknown(why) => format!("an unknown process (holder unknown: {why})"),
        };
        let known = matches!(self.holder, Holder::Process { .. });
        let record = match &self.owner {
            OwnerInfo::Absent => "no owner record (state/owner absent)".to_string(),
            OwnerInfo::Known(o) if !known => {
                format!(
                    "state/owner names {}, not confirmed as the holder",
                    o.describe()
                )
            }
            OwnerInfo::Known(o) => match &self.holder {
                Holder::Process { pid, .. } if o.pid == *pid => format!(
                    "state/owner names {} from another boot: stale owner record",
                    o.describe()
                ),
                _ => format!(
                    "state/owner names {}, which does not hold it: stale owner record",
                    o.describe()
                ),
            },
            OwnerInfo::Unparsed(s) => {
                format!("state/owner is not a runbook record (owner file says {s:?})")
            }
            OwnerInfo::Error(e) => format!("state/owner: {e}"),
        };
        format!("{who}; {record}")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("renewal lock {path} still held after {waited_secs}s by {holder}")]
    Timeout {
        path: String,
        waited_secs: u64,
        holder: String,
    },
    /// A signal, or the controller's deadline, ended the wait.
    #[error("cancelled while waiting for the renewal lock {path} held by {holder}")]
    Cancelled { path: String, holder: String },
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

/// The lock file's device and inode, as a stat of it says.
fn file_id(st: &nix::sys::stat::FileStat) -> LockFileId {
    LockFileId {
        dev: st.st_dev,
        ino: st.st_ino,
    }
}

/// Open the lock file (and fstat that descriptor: its device and inode).
fn open_lock(state: &Dir, create: bool) -> Result<Option<(File, LockFileId)>, FsError> {
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
    Ok(Some((File::from(fd), file_id(&st))))
}

/// Take the lock, waiting at most `timeout`. `cancelled` is polled inside the
/// wait. Says "waiting for lock held by ..." once on stderr.
pub fn acquire(
    state: &Dir,
    timeout: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<LockGuard, LockError> {
    let (file, id) = open_lock(state, true)?.expect("lock opened with O_CREAT");
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
            let holder = HeldBy::read(state, id).describe();
            tracing::warn!(
                "waiting for lock {} held by {holder}",
                state.entry_path(LOCK_FILE)
            );
            said = true;
        }
        if cancelled() {
            return Err(LockError::Cancelled {
                path: state.entry_path(LOCK_FILE),
                holder: HeldBy::read(state, id).describe(),
            });
        }
        // At least a second try after a pause, even with a zero timeout: a
        // read-only run's probe holds the lock for an instant.
        if start.elapsed() >= timeout.max(MIN_WAIT) {
            return Err(LockError::Timeout {
                path: state.entry_path(LOCK_FILE),
                waited_secs: timeout.as_secs(),
                holder: HeldBy::read(state, id).describe(),
            });
        }
        std::thread::sleep(
            POLL.min(timeout.max(MIN_WAIT).saturating_sub(start.elapsed()))
                .max(Duration::from_millis(1)),
        );
    }
}

/// The least a lock wait lasts (`--lock-timeout 0` included): room for a
/// second try past another run's probe.
const MIN_WAIT: Duration = Duration::from_millis(20);

/// The result of the read-only probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// No lock file (nothing ever ran, or no state dir).
    Absent,
    Free,
    /// Held; the lock file's device and inode, from the probe's descriptor.
    Held(LockFileId),
}

/// Non-blocking probe: opens an existing lock file (never creates it) and
/// tries an exclusive flock, released at once. Exclusive, as the renewal
/// takes it, so a process that holds the lock shared (`flock -s`) reads as
/// a holder too: the renewal could not take it either. Another read-only
/// run's probe holds it for an instant only: a held lock is tried twice
/// more, 5 ms apart, before it is called held; and a renewal always tries
/// at least twice ([`acquire`]).
pub fn probe(state: Option<&Dir>) -> Result<Probe, FsError> {
    let Some(state) = state else {
        return Ok(Probe::Absent);
    };
    let Some((file, id)) = open_lock(state, false)? else {
        return Ok(Probe::Absent);
    };
    let mut tries = 0;
    #[allow(clippy::disallowed_methods)] // the lock module: this is the flock
    loop {
        tries += 1;
        return match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                Ok(Probe::Free)
            }
            Err(TryLockError::WouldBlock) if tries < 3 => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(TryLockError::WouldBlock) => Ok(Probe::Held(id)),
            Err(TryLockError::Error(e)) => Err(FsError::Io {
                path: state.entry_path(LOCK_FILE),
                op: "flock",
                errno: Errno::from_raw(e.raw_os_error().unwrap_or(5)),
            }),
        };
    }
}

/// The owner record for this process.
pub fn owner_for(
    operation_id: Option<&OperationId>,
    mode: OwnerMode,
    now: time::OffsetDateTime,
) -> LockOwnerFile {
    LockOwnerFile {
        pid: std::process::id(),
        operation_id: operation_id.cloned(),
        mode,
        started_at: Timestamp(clock::rfc3339(now)),
        boot_id: boot_id(),
    }
}

/// Why a renewal could not hold its state directory (SPEC 4 step 1).
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    /// The state directory could not be made or opened.
    #[error("state directory: {0}")]
    State(FsError),
    #[error("{0}")]
    Lock(LockError),
    /// `--legacy-v1` over an unfinished V2 phase file (its receipt-aware
    /// work is never resumed as legacy).
    #[error("--legacy-v1 refuses to run over the unfinished V2 operation {operation_id} ({}); nothing changed", state.as_str())]
    LegacyOverV2 {
        operation_id: OperationId,
        state: crate::rules::phase::PhaseState,
    },
    #[error("cannot record the lock owner: {0}")]
    Owner(FsError),
}

/// Why [`hold`] refused, with the lock when it was taken: a refusal after
/// the lock (the legacy refusal, the owner record) keeps it until the
/// caller has read the manifests for its report, as a renewal's failure
/// always does, and drops it then.
#[derive(Debug)]
pub struct Refused {
    pub error: HoldError,
    pub held: Option<LockGuard>,
}

impl From<HoldError> for Refused {
    fn from(error: HoldError) -> Self {
        Refused { error, held: None }
    }
}

/// A renewal's first step (SPEC 4 step 1): the state directory, the lock
/// (waited for until `timeout` or `cancelled`), the owner record and the
/// operation's log file (`operation`: None for `--legacy-v1`). A
/// `--legacy-v1` run over an unfinished V2 phase file is refused before
/// anything is written: no owner record, no log file (SPEC 4, v1.1).
pub fn hold(
    root: &fsx::Root,
    timeout: Duration,
    cancelled: &dyn Fn() -> bool,
    operation: Option<&OperationId>,
    mode: OwnerMode,
    now: time::OffsetDateTime,
) -> Result<(Dir, LockGuard), Refused> {
    let state = StateDir::create(root).map_err(HoldError::State)?;
    let guard = acquire(&state, timeout, cancelled).map_err(HoldError::Lock)?;
    if mode == OwnerMode::LegacyV1 {
        // Read under the lock; an unreadable or malformed file is left to
        // the phase-file step, which reports it.
        if let Ok(Some(crate::rules::phase::PhaseFile::V2(p))) = StateDir::new(&state).read_phase()
        {
            if p.state != crate::rules::phase::PhaseState::Done {
                let e = HoldError::LegacyOverV2 {
                    operation_id: p.operation_id,
                    state: p.state,
                };
                tracing::warn!("{e}");
                return Err(Refused {
                    error: e,
                    held: Some(guard),
                });
            }
        }
    }
    if let Err(e) = guard.write_owner(&state, &owner_for(operation, mode, now)) {
        return Err(Refused {
            error: HoldError::Owner(e),
            held: Some(guard),
        });
    }
    let log_name = match operation {
        Some(i) => format!("{i}.log"),
        None => "legacy-v1.log".to_string(),
    };
    match StateDir::new(&state)
        .logs_or_create()
        .and_then(|d| d.open_append(&log_name, STATE_FILE_MODE))
    {
        Ok(f) => crate::node::oplog::set_file(f),
        Err(e) => tracing::warn!("cannot open the operation log: {e}"),
    }
    Ok((state, guard))
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
        held.write_owner(
            &state,
            &owner_for(
                Some(&OperationId::parse("op-1").unwrap()),
                OwnerMode::Renew,
                NOW,
            ),
        )
        .unwrap();
        let t0 = Instant::now();
        match acquire(&state, Duration::from_millis(300), &|| false) {
            Err(LockError::Timeout { holder, .. }) => {
                assert!(
                    holder.starts_with(&format!("pid {} (", std::process::id())),
                    "{holder}"
                );
                assert!(
                    holder.ends_with(": renew, operation op-1, since 2026-11-30T00:00:00Z)"),
                    "{holder}"
                );
            }
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
        assert!(matches!(r, Err(LockError::Cancelled { .. })), "{r:?}");
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
        assert!(matches!(probe(Some(&state)).unwrap(), Probe::Held(_)));
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
        let me = owner_for(
            Some(&OperationId::parse("op-1").unwrap()),
            OwnerMode::Renew,
            NOW,
        );
        let guard = acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        guard.write_owner(&state, &me).unwrap();
        assert_eq!(read_owner(&state), OwnerInfo::Known(me.into()));
        // Another writer's keys are ignored, any mode is shown, and no
        // operation is none (the printed view keeps its own keys only).
        std::fs::write(
            &owner,
            r#"{"pid":7,"mode":"shell","startedAt":"then","bootID":"b","host":"cp-1"}"#,
        )
        .unwrap();
        match read_owner(&state) {
            OwnerInfo::Known(o) => {
                assert_eq!(
                    (o.pid, o.mode.as_str(), o.operation_id.as_deref()),
                    (7, "shell", None)
                );
                assert_eq!(o.describe(), "pid 7 (shell, operation none, since then)");
            }
            other => panic!("{other:?}"),
        }
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

    /// SPEC 6 (v1.1): the holder is found in /proc/locks by the lock file's
    /// device and inode, here this very process (through another
    /// descriptor); a record naming another pid is called stale.
    #[test]
    fn the_real_holder_is_found_by_device_and_inode() {
        let (_t, state) = state();
        let _held = acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        let Probe::Held(id) = probe(Some(&state)).unwrap() else {
            panic!("not held")
        };
        let me = std::process::id();
        match find_holder(id) {
            Holder::Process { pid, command, .. } => {
                assert_eq!(pid, me);
                assert!(command.is_some_and(|c| !c.is_empty()));
            }
            other => panic!("{other:?}"),
        }
        // Another inode on the same device holds nothing.
        let other = LockFileId {
            ino: id.ino + 1_000_000_007,
            ..id
        };
        assert!(matches!(find_holder(other), Holder::Unknown(_)));
        // The owner record names someone else: stale.
        let mut them = Owner::from(owner_for(
            Some(&OperationId::parse("op-7").unwrap()),
            OwnerMode::Renew,
            NOW,
        ));
        them.pid = 4242;
        let held = HeldBy::new(find_holder(id), OwnerInfo::Known(them.clone()), &boot_id());
        assert!(!held.owner_matches);
        let d = held.describe();
        assert!(d.starts_with(&format!("pid {me} (")), "{d}");
        assert!(
            d.ends_with(
                "; state/owner names pid 4242 (renew, operation op-7, since \
                 2026-11-30T00:00:00Z), which does not hold it: stale owner record"
            ),
            "{d}"
        );
        // Our pid, but another boot's record: stale too.
        them.pid = me;
        them.boot_id = "00000000-0000-4000-8000-000000000001".into();
        let held = HeldBy::new(find_holder(id), OwnerInfo::Known(them), &boot_id());
        assert!(!held.owner_matches);
        assert!(held
            .describe()
            .contains("from another boot: stale owner record"));
    }

    /// A fake host `/proc`: `/proc/locks`, and per process its comm and
    /// its descriptors (device and inode, fdinfo text).
    #[derive(Default)]
    struct FakeProc {
        locks: Option<String>,
        procs: Vec<(u32, &'static str, Vec<FakeFd>)>,
    }
    /// A descriptor: its number, the device and inode it is open on, its
    /// fdinfo.
    type FakeFd = (u32, (u64, u64), String);

    impl ProcView for FakeProc {
        fn read(&self, rel: &str, _max: usize) -> Result<ProcText, Errno> {
            let text = |s: String| {
                Ok(ProcText {
                    bytes: s.into_bytes(),
                    complete: true,
                })
            };
            if rel == "locks" {
                return self.locks.clone().map_or(Err(Errno::EACCES), text);
            }
            let mut parts = rel.split('/');
            let pid: u32 = parts.next().unwrap().parse().unwrap();
            let Some((_, comm, fds)) = self.procs.iter().find(|p| p.0 == pid) else {
                return Err(Errno::ENOENT);
            };
            match (parts.next(), parts.next()) {
                (Some("comm"), None) => text(format!("{comm}\n")),
                (Some("cmdline"), None) => text(format!("{comm}\0")),
                (Some("fdinfo"), Some(fd)) => {
                    let fd: u32 = fd.parse().unwrap();
                    let f = fds.iter().find(|f| f.0 == fd).ok_or(Errno::ENOENT)?;
                    text(f.2.clone())
                }
                _ => Err(Errno::ENOENT),
            }
        }
        fn numbers(&self, rel: &str, _max: usize) -> Result<(Vec<u32>, bool), Errno> {
            if rel.is_empty() {
                return Ok((self.procs.iter().map(|p| p.0).collect(), true));
            }
            let pid: u32 = rel.trim_end_matches("/fd").parse().unwrap();
            let p = self
                .procs
                .iter()
                .find(|p| p.0 == pid)
                .ok_or(Errno::ENOENT)?;
            Ok((p.2.iter().map(|f| f.0).collect(), true))
        }
        fn fd_target(&self, pid: u32, fd: u32) -> Result<(u64, u64), Errno> {
            let p = self
                .procs
                .iter()
                .find(|p| p.0 == pid)
                .ok_or(Errno::ENOENT)?;
            p.2.iter()
                .find(|f| f.0 == fd)
                .map(|f| f.1)
                .ok_or(Errno::ENOENT)
        }
    }

    /// The lock file of the fakes: fe:00, inode 77.
    const LOCK: LockFileId = LockFileId {
        dev: 0xfe00,
        ino: 77,
    };
    /// Its descriptor's fdinfo with the flock held through it (as captured
    /// on this project's test machine, Linux 6.18), and without.
    fn fdinfo(locked_by: Option<u32>) -> String {
        let mut t = "pos:\t0\nflags:\t0100000\nmnt_id:\t27\nino:\t77\n".to_string();
        if let Some(pid) = locked_by {
            t.push_str(&format!(
                "lock:\t1: FLOCK  ADVISORY  WRITE {pid} fe:00:77 0 EOF\n"
            ));
        }
        t
    }
    fn locks_line(pid: &str) -> Option<String> {
        Some(format!("1: FLOCK  ADVISORY  WRITE {pid} fe:00:77 0 EOF\n"))
    }

    /// /proc/locks unreadable and no descriptor found: the holder is
    /// unknown, said so, and the owner record is never taken for the
    /// holder; a holder that is not visible is said to be so.
    #[test]
    fn an_unknown_holder_is_never_the_owner_record() {
        let owner = || {
            OwnerInfo::Known(Owner::from(owner_for(
                Some(&OperationId::parse("op-7").unwrap()),
                OwnerMode::Renew,
                NOW,
            )))
        };
        let h = find_holder_with(LOCK, &FakeProc::default());
        assert_eq!(
            h,
            Holder::Unknown(
                "/proc/locks: Permission denied; no process here holds it through a descriptor"
                    .into()
            )
        );
        let held = HeldBy::new(h, owner(), &boot_id());
        assert!(!held.owner_matches);
        assert_eq!(
            held.describe(),
            format!(
                "an unknown process (holder unknown: /proc/locks: Permission denied; no process \
                 here holds it through a descriptor); state/owner names pid {} (renew, operation \
                 op-7, since 2026-11-30T00:00:00Z), not confirmed as the holder",
                std::process::id()
            )
        );
        let hidden = FakeProc {
            locks: locks_line("0"),
            ..FakeProc::default()
        };
        assert_eq!(find_holder_with(LOCK, &hidden), Holder::NotVisible);
    }

    /// Issue 25: the pid /proc/locks names is only a lead. flock(1) died
    /// and its child holds the lock: the child is named. The pid was
    /// reused by an unrelated process: that process is never named; the
    /// real holder is, or, when none is found, "unknown (pid N claims it)".
    #[test]
    fn the_holder_is_verified_through_its_descriptors() {
        // flock(1), pid 812, took the lock and exited; its child 900 holds
        // the descriptor. An unrelated 850 has the file open, unlocked.
        let orphaned = FakeProc {
            locks: locks_line("812"),
            procs: vec![
                (850, "cat", vec![(3, (0xfe00, 77), fdinfo(None))]),
                (
                    900,
                    "sleep",
                    vec![
                        (0, (0x5, 3), fdinfo(None)),
                        (3, (0xfe00, 77), fdinfo(Some(812))),
                    ],
                ),
            ],
        };
        match find_holder_with(LOCK, &orphaned) {
            Holder::Process { pid, command, .. } => {
                assert_eq!((pid, command.as_deref()), (900, Some("sleep")))
            }
            other => panic!("{other:?}"),
        }
        // 812 reused by bash, which has no descriptor of the lock file;
        // nobody else holds it either.
        let reused = FakeProc {
            locks: locks_line("812"),
            procs: vec![(812, "bash", vec![(3, (0xfe00, 78), fdinfo(Some(812)))])],
        };
        let h = find_holder_with(LOCK, &reused);
        assert_eq!(
            h,
            Holder::Claimed {
                pid: 812,
                why: "no descriptor of it holds the lock (a reused pid); no process here holds \
                      it through a descriptor"
                    .into()
            }
        );
        let held = HeldBy::new(h, OwnerInfo::Absent, &boot_id());
        assert_eq!(
            held.describe(),
            "unknown (pid 812 claims it: no descriptor of it holds the lock (a reused pid); no \
             process here holds it through a descriptor); no owner record (state/owner absent)"
        );
        // The claimed pid is gone: said so.
        let gone = FakeProc {
            locks: locks_line("812"),
            ..FakeProc::default()
        };
        assert!(matches!(
            find_holder_with(LOCK, &gone),
            Holder::Claimed { pid: 812, why } if why.starts_with("it has exited;")
        ));
        // /proc/locks missed the line (its reads are not one snapshot), or
        // names the upper file of an overlay: the descriptor decides.
        let missed = FakeProc {
            locks: Some(String::new()),
            procs: vec![(
                4242,
                "nvke-cert-runbo",
                vec![(7, (0xfe00, 77), fdinfo(Some(4242)))],
            )],
        };
        assert!(matches!(
            find_holder_with(LOCK, &missed),
            Holder::Process { pid: 4242, .. }
        ));
        let overlay = FakeProc {
            locks: Some("1: FLOCK  ADVISORY  WRITE 4242 00:2a:77 0 EOF\n".into()),
            ..missed
        };
        assert!(matches!(
            find_holder_with(LOCK, &overlay),
            Holder::Process { pid: 4242, .. }
        ));
    }

    /// The same with real processes: flock(1) takes the lock and runs a
    /// shell that keeps the descriptor; flock(1) is killed; /proc/locks
    /// still names it, the shell is named.
    #[test]
    fn a_dead_flock_s_child_is_the_holder() {
        let (t, state) = state();
        drop(acquire(&state, Duration::from_secs(1), &|| false).unwrap());
        let pidfile = t.path().join("child.pid");
        let mut flock = std::process::Command::new("flock")
            .arg("-x")
            .arg(lock_path(&t))
            .args(["sh", "-c", "echo $$ > \"$0\"; exec sleep 30"])
            .arg(&pidfile)
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let child: u32 = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no child");
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = flock.kill();
        let _ = flock.wait();
        let found = match probe(Some(&state)) {
            Ok(Probe::Held(id)) => find_holder(id),
            other => Holder::Unknown(format!("{other:?}")),
        };
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        match found {
            Holder::Process { pid, command, .. } => {
                assert_eq!((pid, command.as_deref()), (child, Some("sleep")))
            }
            other => panic!("{other:?}"),
        }
    }

    /// A process that holds the lock shared is a holder: the probe says
    /// held (a renewal could not take it) and names that process.
    #[test]
    fn a_shared_holder_is_a_holder() {
        let (t, state) = state();
        drop(acquire(&state, Duration::from_secs(1), &|| false).unwrap());
        assert!(matches!(probe(Some(&state)), Ok(Probe::Free)));
        // Held shared on a descriptor of its own (flock(2) locks belong to
        // the open file, not the process); dropped with the test, even on
        // a panic.
        let shared = std::fs::File::open(lock_path(&t)).unwrap();
        #[allow(clippy::disallowed_methods)] // the holder under test
        shared.try_lock_shared().unwrap();
        let id = match probe(Some(&state)) {
            Ok(Probe::Held(id)) => id,
            other => panic!("a shared holder reads as {other:?}"),
        };
        match find_holder(id) {
            Holder::Process { pid, .. } => assert_eq!(pid, std::process::id()),
            other => panic!("{other:?}"),
        }
        drop(shared);
        assert!(matches!(probe(Some(&state)), Ok(Probe::Free)));
    }

    /// SPEC 6 (v1.1), every exit 3: a wait that times out behind an
    /// unrelated process (flock(1)) names that process, and calls the
    /// owner record that names a runbook stale.
    #[test]
    fn a_timeout_behind_an_unrelated_holder_names_it() {
        let (t, state) = state();
        drop(acquire(&state, Duration::from_secs(1), &|| false).unwrap());
        let mut o = Owner::from(owner_for(
            Some(&OperationId::parse("op-7").unwrap()),
            OwnerMode::Renew,
            NOW,
        ));
        o.pid = 4242;
        std::fs::write(
            t.path().join(STATE_DIR).join(OWNER_FILE),
            serde_json::to_vec(&o).unwrap(),
        )
        .unwrap();
        // -o: the lock is flock(1)'s own, not its child's.
        let mut child = std::process::Command::new("flock")
            .arg("-o")
            .arg("-x")
            .arg(lock_path(&t))
            .args(["sleep", "30"])
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !matches!(probe(Some(&state)), Ok(Probe::Held(_))) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "flock never took it"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let r = acquire(&state, Duration::from_millis(100), &|| false);
        let _ = child.kill();
        let _ = child.wait();
        match r {
            Err(LockError::Timeout { holder, .. }) => assert_eq!(
                holder,
                format!(
                    "pid {} (flock); state/owner names pid 4242 (renew, operation op-7, since \
                     2026-11-30T00:00:00Z), which does not hold it: stale owner record",
                    child.id()
                )
            ),
            other => panic!("{other:?}"),
        }
    }
}
