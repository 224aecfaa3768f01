//! Events the node offers, so that waits need not poll a tool (SPEC 4
//! "Waits", v1.1: event-driven where the node offers an event):
//!
//! - a pidfd (`pidfd_open(2)`, Linux 5.3) becomes readable the moment a
//!   process exits: the old container's process, whose host PID `crictl
//!   inspect` reports;
//! - the kubelet links every container it starts into
//!   `/var/log/containers/<pod>_<namespace>_<container>-<id>.log` right after
//!   `StartContainer` returns (kuberuntime_container.go, `startContainer`,
//!   "Symlink container logs to the legacy container log location"; only
//!   when the container's log file exists): an inotify watch on that
//!   directory sees a new container of a component the moment it runs.
//!
//! Both are wake-up hints only: what the runbook reports is always what a
//! crictl listing then shows.

use crate::tools::signals::Cancel;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A process watched through its pidfd.
#[derive(Debug)]
pub struct PidFd(OwnedFd);

/// How a wait on a pidfd ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Exited,
    TimedOut,
    Cancelled,
}

impl PidFd {
    /// Open a pidfd for `pid` (None: no such process, or no pidfd support;
    /// the caller then polls).
    pub fn open(pid: u32) -> Option<PidFd> {
        let pid = i32::try_from(pid).ok().filter(|p| *p > 0)?;
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new file
        // descriptor or -1; it touches no memory of ours. The descriptor is
        // owned by the OwnedFd alone from here on.
        #[allow(unsafe_code)] // the documented exception (lib.rs): pidfd_open(2)
        let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return None;
        }
        let fd = i32::try_from(fd).ok()?;
        // SAFETY: `fd` was just returned by the kernel and is ours alone.
        #[allow(unsafe_code)] // the documented exception (lib.rs): adopting its fd
        Some(PidFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Wait until the process exits, `until` passes, or cancellation
    /// (checked every 100 ms: a flag, not a tool call).
    pub fn wait(&self, until: Instant, cancel: &Cancel) -> Waited {
        wait_on(self.0.as_fd(), until, cancel, |readable| readable)
    }
}

/// Poll `fd` for input in slices of at most 100 ms (checking the cancel
/// flag between them) until `seen(readable)` says the event came, `until`
/// passes, or cancellation. A poll error counts as readable: "look now".
fn wait_on(
    fd: BorrowedFd<'_>,
    until: Instant,
    cancel: &Cancel,
    mut seen: impl FnMut(bool) -> bool,
) -> Waited {
    loop {
        if cancel.is_cancelled() {
            return Waited::Cancelled;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Waited::TimedOut;
        }
        let slice = left.min(Duration::from_millis(100));
        let ms = u16::try_from(slice.as_millis().max(1)).unwrap_or(100);
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        let readable = match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(n) => n > 0,
            Err(nix::errno::Errno::EINTR) => false,
            Err(_) => true,
        };
        if seen(readable) {
            return Waited::Exited;
        }
    }
}

/// An inotify watch on the kubelet's `/var/log/containers` (under the
/// root): new container links.
pub struct NewContainers {
    ino: nix::sys::inotify::Inotify,
    trusted: bool,
}

impl NewContainers {
    /// Watch `dir` (None when it does not exist or cannot be watched: the
    /// caller polls). A symlink is not followed. `trusted`: this kubelet is
    /// seen to link its containers there (the old container has its link),
    /// so a wait may sleep until the event; otherwise the watch only wakes
    /// a poll early (kubelets built without the legacy links exist).
    pub fn watch(dir: &std::path::Path, trusted: bool) -> Option<NewContainers> {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        ino.add_watch(
            dir,
            AddWatchFlags::IN_CREATE
                | AddWatchFlags::IN_MOVED_TO
                | AddWatchFlags::IN_ONLYDIR
                | AddWatchFlags::IN_DONT_FOLLOW,
        )
        .ok()?;
        Some(NewContainers { ino, trusted })
    }

    /// Whether the wait may rely on the event (see `watch`).
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// The name of the kubelet's link for container `id` ends so.
    pub fn link_suffix(id: &str) -> String {
        format!("-{id}.log")
    }

    /// Whether the kubelet's container log directory holds container
    /// `id`'s link (names only, walked without following a symlink).
    pub fn linked(root: &crate::node::fsx::Root, id: &str) -> bool {
        if id.is_empty() {
            return false;
        }
        let suffix = Self::link_suffix(id);
        let mut found = false;
        if let Ok(Some(d)) = root.open_dir(
            crate::node::paths::CONTAINER_LOGS_DIR,
            crate::node::fsx::Trust::TypeOnly,
        ) {
            let _ = d.for_each_name(|n| found |= n.ends_with(&suffix));
        }
        found
    }

    /// Wait until a link for a new container of `container` in kube-system
    /// appears (`*_kube-system_<container>-*.log`), `until` passes, or
    /// cancellation. `Exited` means "seen".
    pub fn wait(&self, container: &str, until: Instant, cancel: &Cancel) -> Waited {
        let needle = format!("_kube-system_{container}-");
        wait_on(self.ino.as_fd(), until, cancel, |readable| {
            readable
                && self.ino.read_events().is_ok_and(|events| {
                    events.iter().any(|e| {
                        e.name
                            .as_ref()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.contains(&needle) && n.ends_with(".log"))
                    })
                })
        })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests run real child processes and plant links
mod tests {
    use super::*;

    #[test]
    fn a_new_container_link_wakes_the_watch() {
        let t = tempfile::tempdir().unwrap();
        let w = NewContainers::watch(t.path(), true).unwrap();
        let c = Cancel::new();
        assert_eq!(
            w.wait("etcd", Instant::now() + Duration::from_millis(50), &c),
            Waited::TimedOut
        );
        // Another component's link is not ours.
        std::os::unix::fs::symlink(
            "/x",
            t.path()
                .join("kube-apiserver-cp-1_kube-system_kube-apiserver-abc.log"),
        )
        .unwrap();
        assert_eq!(
            w.wait("etcd", Instant::now() + Duration::from_millis(50), &c),
            Waited::TimedOut
        );
        std::os::unix::fs::symlink("/x", t.path().join("etcd-cp-1_kube-system_etcd-0123.log"))
            .unwrap();
        assert_eq!(
            w.wait("etcd", Instant::now() + Duration::from_secs(5), &c),
            Waited::Exited
        );
        assert!(NewContainers::watch(&t.path().join("absent"), true).is_none());
    }

    #[test]
    fn a_child_exit_is_seen_at_once_and_a_live_one_times_out() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let fd = PidFd::open(child.id()).expect("pidfd_open works here");
        let t0 = Instant::now();
        let w = fd.wait(Instant::now() + Duration::from_secs(5), &Cancel::new());
        assert_eq!(w, Waited::Exited);
        assert!(t0.elapsed() < Duration::from_secs(3));
        child.wait().unwrap();

        let mut live = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let fd = PidFd::open(live.id()).unwrap();
        assert_eq!(
            fd.wait(Instant::now() + Duration::from_millis(150), &Cancel::new()),
            Waited::TimedOut
        );
        let c = Cancel::new();
        c.cancel();
        assert_eq!(
            fd.wait(Instant::now() + Duration::from_secs(5), &c),
            Waited::Cancelled
        );
        live.kill().unwrap();
        live.wait().unwrap();
        assert!(PidFd::open(0).is_none());
    }
}
