//! Reads of the host itself, never of a node file under `--root`: the
//! kernel's files under the host's `/proc`, and the running binary.

use super::{libc_eio, FsError, FsResult};
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io::Read;

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
