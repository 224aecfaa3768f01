//! A network of its own for a runbook run on a fixture tree (tests/README.md,
//! "Hermetic"): the fixtures declare the kubeadm default ports (6443, 2379,
//! 10257, 10259) on loopback, so a run on the host's network would ask
//! whatever listens there (a live node, a simulated one, another test's
//! server) and its answer would change the result. As root (CI), the run
//! gets a new network namespace whose only interface is an up loopback:
//! every question is refused exactly as on a quiet host, whatever runs
//! beside. Not as root, the run keeps the host's network and says nothing:
//! the suite's root runs are the ones that prove it.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Whether runs get a network namespace of their own (root only).
pub fn isolated() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Run `cmd` in a new network namespace with only `lo`, up (as root with
/// the capability; else unchanged). The child fails to start, naming why,
/// if bringing `lo` up fails.
pub fn hermetic(cmd: &mut Command) -> &mut Command {
    if !isolated() {
        return cmd;
    }
    #[allow(unsafe_code)] // pre_exec has no safe form (as in src/tools/proc.rs)
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (unshare, socket, ioctl, close), with no allocation.
    unsafe {
        cmd.pre_exec(|| {
            match nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
                Ok(()) => loopback_up(),
                // Root without CAP_SYS_ADMIN (a default container): the
                // host's network, as without root.
                Err(nix::errno::Errno::EPERM) => Ok(()),
                Err(e) => Err(std::io::Error::from(e)),
            }
        })
    }
}

/// `ip link set lo up`, by the ioctl `ip` itself makes.
#[allow(unsafe_code)] // the ioctl has no safe form in nix
fn loopback_up() -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: a plain socket, an ifreq on the stack, closed on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        }
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if rc == 0 {
            Ok(())
        } else {
            Err(err)
        }
    }
}

/// A network namespace of a test's own, with addresses on its loopback
/// (a node's own address, SPEC 12): made with `ip netns add` (root only),
/// deleted on drop. Its stand-ins and runbook runs join it ([`join`]).
pub struct Named {
    name: String,
    file: std::fs::File,
}

impl Named {
    /// A new namespace, `lo` up with `addrs` (`10.0.0.11/32`,
    /// `fd00:10::11/128`) on it; None when not root (the caller skips).
    pub fn with_addresses(addrs: &[&str]) -> Option<Named> {
        if !isolated() {
            return None;
        }
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "nvke-shape-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().expect("ip");
            assert!(
                out.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        ip(&["netns", "add", &name]);
        let file = std::fs::File::open(format!("/run/netns/{name}")).expect("the netns file");
        let ns = Named { name, file };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        for a in addrs {
            // `nodad`: an IPv6 address usable at once.
            let mut args = vec!["-n", &ns.name, "addr", "add", a, "dev", "lo"];
            if a.contains(':') {
                args.push("nodad");
            }
            ip(&args);
        }
        Some(ns)
    }

    /// Run `cmd` in this namespace.
    pub fn join<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        use std::os::fd::AsRawFd;
        let fd = self.file.as_raw_fd();
        #[allow(unsafe_code)] // pre_exec has no safe form
        // SAFETY: setns(2) only, between fork and exec; the fd stays open in
        // the parent (self) for the child's whole fork.
        unsafe {
            cmd.pre_exec(move || {
                if nix::libc::setns(fd, nix::libc::CLONE_NEWNET) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            })
        }
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}
