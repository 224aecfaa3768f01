//! `/proc/locks`: who really holds a lock on a file (SPEC 6, "The lock
//! holder", v1.1).
//!
//! The format is the kernel's (`fs/locks.c`, `lock_get_status` and
//! `locks_show`), one lock per line:
//!
//! ```text
//! 1: FLOCK  ADVISORY  WRITE 22287 fe:00:10010672 0 EOF
//! 1: -> FLOCK  ADVISORY  WRITE 22291 fe:00:10010672 0 EOF
//! 2: OFDLCK ADVISORY  WRITE -1 fe:00:10010693 0 EOF
//! 3: POSIX  ADVISORY  WRITE 22294 fe:00:10010677 0 EOF
//! ```
//!
//! `ID: [pad ->] CLASS MODE TYPE PID MAJ:MIN:INODE START END`, the device's
//! major and minor in hex (`%02x`), the inode in decimal. A line whose class
//! is preceded by `->` is a request blocked behind the line above (older
//! kernels print `1: ->`, newer indent deeper waiters: `1:  ->`): a waiter,
//! never a holder. The pid is the holder's in the reader's pid namespace: 0
//! when it is not visible there (newer kernels leave such locks out
//! altogether), -1 for an open-file-description lock (OFDLCK), which no
//! process owns; a remote (NFS) lock may carry a negative value. A lock
//! without an inode prints `<none>:0` and matches no file.

/// A file as the kernel names it in `/proc/locks`: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub major: u64,
    pub minor: u64,
    pub inode: u64,
}

impl std::fmt::Display for FileId {
    /// As `/proc/locks` prints it: `fe:00:10010672`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x}:{:02x}:{}", self.major, self.minor, self.inode)
    }
}

/// The lock's class (the first word after the ID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockClass {
    /// flock(2): the runbook's lock.
    Flock,
    /// fcntl(2) process-associated record lock.
    Posix,
    /// fcntl(2) open-file-description lock.
    Ofd,
    /// A lease or delegation, a test-only ACCESS lock, or a class this
    /// parser does not know.
    Other,
}

/// Who a lock line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockPid {
    Pid(u32),
    /// 0 or negative: not visible in this pid namespace, remote, or an
    /// open-file-description lock (no owning process).
    NotVisible,
}

/// One lock line (holder or waiter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockLine {
    pub class: LockClass,
    /// A blocked request (`->`), not a held lock.
    pub waiter: bool,
    /// `WRITE` (exclusive); else `READ` (shared) or `UNLCK`.
    pub write: bool,
    pub pid: LockPid,
    pub file: FileId,
}

fn parse_file_id(s: &str) -> Option<FileId> {
    let mut parts = s.split(':');
    let (maj, min, ino) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some(FileId {
        major: u64::from_str_radix(maj, 16).ok()?,
        minor: u64::from_str_radix(min, 16).ok()?,
        inode: ino.parse().ok()?,
    })
}

/// One line of `/proc/locks`; `None` for a line this format does not
/// describe (or one with no inode, `<none>:0`).
pub fn parse_line(line: &str) -> Option<LockLine> {
    let (id, rest) = line.split_once(':')?;
    id.trim().parse::<u64>().ok()?;
    let mut words = rest.split_whitespace().peekable();
    let waiter = words.peek() == Some(&"->");
    if waiter {
        words.next();
    }
    let class = match words.next()? {
        "FLOCK" => LockClass::Flock,
        "POSIX" => LockClass::Posix,
        "OFDLCK" => LockClass::Ofd,
        _ => LockClass::Other,
    };
    // Mode (ADVISORY, MANDATORY, MSNFS, *NOINODE*; for a lease ACTIVE,
    // BREAKING or BREAKER), then the type.
    words.next()?;
    let write = match words.next()? {
        "WRITE" => true,
        "READ" | "UNLCK" | "RW" | "NONE" => false,
        _ => return None,
    };
    let pid: i64 = words.next()?.parse().ok()?;
    let file = parse_file_id(words.next()?)?;
    // START END ("0 EOF" or two numbers) close the line.
    words.next()?;
    words.next()?;
    if words.next().is_some() {
        return None;
    }
    let pid = match u32::try_from(pid) {
        Ok(p) if p > 0 => LockPid::Pid(p),
        _ => LockPid::NotVisible,
    };
    Some(LockLine {
        class,
        waiter,
        write,
        pid,
        file,
    })
}

/// The flock(2) holders of `file`, in the kernel's order: waiters, POSIX,
/// OFD locks and leases on the same file are left out (on Linux they never
/// block a flock), and so is every other file (device and inode both
/// match). `complete` is false when the text was cut short: its last,
/// possibly partial, line is not read.
pub fn flock_holders(text: &str, file: FileId, complete: bool) -> Vec<LockPid> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    // The text after the last newline is partial when cut short, and empty
    // otherwise.
    if !complete || lines.last() == Some(&"") {
        lines.pop();
    }
    lines
        .into_iter()
        .filter_map(parse_line)
        .filter(|l| l.class == LockClass::Flock && !l.waiter && l.file == file)
        .map(|l| l.pid)
        .collect()
}

/// The pids `/proc/locks` names as flock(2) holders of `file`, to be
/// verified ([`fdinfo_holds_flock`]): a line naming the same inode on
/// another device counts too, after the exact matches, because on overlayfs
/// (a container's root) the kernel names the upper file's device, not the
/// one a stat of the lock file gives. A claim is only a lead: the pid is
/// the one that took the lock, which may have exited (its descriptor passed
/// to a child) or been reused.
pub fn flock_claims(text: &str, file: FileId, complete: bool) -> Vec<LockPid> {
    let mut exact = flock_holders(text, file, complete);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if !complete || lines.last() == Some(&"") {
        lines.pop();
    }
    for l in lines.into_iter().filter_map(parse_line) {
        if l.class == LockClass::Flock
            && !l.waiter
            && l.file.inode == file.inode
            && l.file != file
            && !exact.contains(&l.pid)
        {
            exact.push(l.pid);
        }
    }
    exact
}

/// Whether a descriptor's `/proc/PID/fdinfo/N` shows a flock(2) lock held
/// through it. The kernel (`fs/proc/fd.c`, `show_fd_locks`) lists, after
/// `pos:`, `flags:` and `mnt_id:`, one `lock:` line per lock held by that
/// open file description, in the `/proc/locks` format:
///
/// ```text
/// lock:\t1: FLOCK  ADVISORY  WRITE 22287 fe:00:10010672 0 EOF
/// ```
///
/// Only locks of the descriptor's own file are listed, so the line's device
/// and pid are not compared: the caller has matched the file by a stat of
/// the descriptor, and the pid is only the process that took the lock.
pub fn fdinfo_holds_flock(text: &str) -> bool {
    text.lines()
        .filter_map(|l| l.strip_prefix("lock:"))
        .filter_map(parse_line)
        .any(|l| l.class == LockClass::Flock && !l.waiter)
}

/// What a process's `comm` or `cmdline` says, as one printable line: NULs
/// (cmdline's separators) become spaces, every other control or
/// bidirectional-override character is shown escaped (`\x1b`), at most
/// `max` characters (`...` when cut).
pub fn printable_process_text(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\0', '\n']);
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push_str("...");
            break;
        }
        match c {
            '\0' => out.push(' '),
            c => crate::rules::opid::push_escaped(&mut out, c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured on this project's test machine (Linux 6.18, ext4 on fe:00,
    /// tmpfs on 00:1b): a flock holder with a waiter, a POSIX and an OFD
    /// lock, a shared flock with a waiter and a deeper waiter.
    const CAPTURED: &str = "\
1: FLOCK  ADVISORY  WRITE 22287 fe:00:10010672 0 EOF
1: -> FLOCK  ADVISORY  WRITE 22291 fe:00:10010672 0 EOF
2: OFDLCK ADVISORY  WRITE -1 fe:00:10010693 0 EOF
3: POSIX  ADVISORY  WRITE 22294 fe:00:10010677 0 EOF
4: FLOCK  ADVISORY  READ 22353 00:1b:2 0 EOF
4: -> FLOCK  ADVISORY  WRITE 22357 00:1b:2 0 EOF
4:  -> FLOCK  ADVISORY  WRITE 22360 00:1b:2 0 EOF
";

    const EXT4: FileId = FileId {
        major: 0xfe,
        minor: 0,
        inode: 10010672,
    };

    #[test]
    fn each_captured_line_parses_as_the_kernel_wrote_it() {
        let lines: Vec<LockLine> = CAPTURED.lines().map(|l| parse_line(l).unwrap()).collect();
        assert_eq!(
            lines[0],
            LockLine {
                class: LockClass::Flock,
                waiter: false,
                write: true,
                pid: LockPid::Pid(22287),
                file: EXT4,
            }
        );
        assert!(lines[1].waiter && lines[1].pid == LockPid::Pid(22291));
        assert_eq!(
            (lines[2].class, lines[2].pid),
            (LockClass::Ofd, LockPid::NotVisible)
        );
        assert_eq!(
            (lines[3].class, lines[3].pid),
            (LockClass::Posix, LockPid::Pid(22294))
        );
        assert_eq!(
            (lines[4].write, lines[4].file.to_string()),
            (false, "00:1b:2".to_string())
        );
        assert!(lines[5].waiter && lines[6].waiter, "{lines:?}");
        assert_eq!(EXT4.to_string(), "fe:00:10010672");
    }

    /// Only the flock holder of this device and inode: not its waiter, not
    /// the other file's holder, not a POSIX or OFD lock on the same file.
    #[test]
    fn the_holder_is_the_flock_line_of_this_device_and_inode() {
        assert_eq!(
            flock_holders(CAPTURED, EXT4, true),
            vec![LockPid::Pid(22287)]
        );
        let tmpfs = FileId {
            major: 0,
            minor: 0x1b,
            inode: 2,
        };
        assert_eq!(
            flock_holders(CAPTURED, tmpfs, true),
            vec![LockPid::Pid(22353)]
        );
        // The same inode on another device is another file.
        let other_dev = FileId { minor: 1, ..EXT4 };
        assert_eq!(flock_holders(CAPTURED, other_dev, true), vec![]);
        // A POSIX or OFD lock on our file does not hold the flock.
        let posix = FileId {
            inode: 10010677,
            ..EXT4
        };
        let ofd = FileId {
            inode: 10010693,
            ..EXT4
        };
        assert_eq!(flock_holders(CAPTURED, posix, true), vec![]);
        assert_eq!(flock_holders(CAPTURED, ofd, true), vec![]);
        // A waiter alone is no holder.
        let only_waiter = "1: -> FLOCK  ADVISORY  WRITE 22291 fe:00:10010672 0 EOF\n";
        assert_eq!(flock_holders(only_waiter, EXT4, true), vec![]);
    }

    /// pid 0 (not visible in this pid namespace, older kernels) and
    /// negative pids are no process of ours; big device numbers print wider
    /// than two hex digits.
    #[test]
    fn invisible_holders_and_wide_devices() {
        let hidden = "7: FLOCK  ADVISORY  WRITE 0 103:02:55 0 EOF\n";
        let id = FileId {
            major: 0x103,
            minor: 2,
            inode: 55,
        };
        assert_eq!(flock_holders(hidden, id, true), vec![LockPid::NotVisible]);
        assert_eq!(
            parse_line("8: FLOCK  ADVISORY  WRITE -12 103:02:55 0 EOF").map(|l| l.pid),
            Some(LockPid::NotVisible)
        );
    }

    /// A text cut short loses its last line rather than misreading it.
    #[test]
    fn a_cut_text_drops_its_partial_last_line() {
        let cut = "1: FLOCK  ADVISORY  WRITE 22287 fe:00:10010672 0 EOF\n2: FLOCK  ADVISORY  WRITE 9 fe:00:1001";
        let short = FileId {
            inode: 1001,
            ..EXT4
        };
        assert_eq!(flock_holders(cut, short, false), vec![]);
        assert_eq!(flock_holders(cut, EXT4, false), vec![LockPid::Pid(22287)]);
    }

    /// Leases, lines without an inode and garbage are not misread.
    #[test]
    fn other_lines_are_not_holders() {
        for line in [
            "5: LEASE  ACTIVE    READ 812 fe:00:10010672 0 EOF",
            "6: DELEG  ACTIVE    READ 812 fe:00:10010672 0 EOF",
            "9: POSIX  *NOINODE* WRITE 812 <none>:0 0 EOF",
            "FLOCK  ADVISORY  WRITE 812 fe:00:10010672 0 EOF",
            "1: FLOCK  ADVISORY  WRITE 812 fe:00:10010672 0 EOF trailing",
            "1: FLOCK  ADVISORY  WRITE pid fe:00:10010672 0 EOF",
            "",
        ] {
            let text = format!("{line}\n");
            assert_eq!(flock_holders(&text, EXT4, true), vec![], "{line:?}");
        }
    }

    /// The leads: exact matches first, then the same inode on another
    /// device (overlayfs names the upper file's), never another inode or a
    /// waiter.
    #[test]
    fn claims_are_exact_first_then_the_same_inode_elsewhere() {
        let text = "\
1: FLOCK  ADVISORY  WRITE 300 00:2a:10010672 0 EOF
2: FLOCK  ADVISORY  WRITE 22287 fe:00:10010672 0 EOF
2: -> FLOCK  ADVISORY  WRITE 301 00:2a:10010672 0 EOF
3: FLOCK  ADVISORY  WRITE 302 fe:00:10010673 0 EOF
4: POSIX  ADVISORY  WRITE 303 00:2a:10010672 0 EOF
";
        assert_eq!(
            flock_claims(text, EXT4, true),
            vec![LockPid::Pid(22287), LockPid::Pid(300)]
        );
        assert_eq!(flock_claims("", EXT4, true), vec![]);
    }

    /// fdinfo as captured on this project's test machine (Linux 6.18):
    /// with the flock held through the descriptor, and without; a POSIX
    /// lock, a waiter's line or a `lock:` line of another shape is not a
    /// flock held.
    #[test]
    fn fdinfo_shows_a_flock_held_through_the_descriptor() {
        let base = "pos:\t0\nflags:\t0100000\nmnt_id:\t27\nino:\t10010629\n";
        let held = format!("{base}lock:\t1: FLOCK  ADVISORY  WRITE 28474 fe:00:10010629 0 EOF\n");
        assert!(fdinfo_holds_flock(&held));
        let shared = format!("{base}lock:\t1: FLOCK  ADVISORY  READ 28474 fe:00:10010629 0 EOF\n");
        assert!(fdinfo_holds_flock(&shared));
        assert!(!fdinfo_holds_flock(base));
        for other in [
            "lock:\t1: POSIX  ADVISORY  WRITE 28474 fe:00:10010629 0 EOF\n",
            "lock:\t1: -> FLOCK  ADVISORY  WRITE 28474 fe:00:10010629 0 EOF\n",
            "lock:\tFLOCK\n",
            "flock:\t1: FLOCK  ADVISORY  WRITE 28474 fe:00:10010629 0 EOF\n",
        ] {
            assert!(!fdinfo_holds_flock(&format!("{base}{other}")), "{other}");
        }
    }

    #[test]
    fn process_text_is_one_printable_bounded_line() {
        assert_eq!(printable_process_text(b"flock\n", 64), "flock");
        assert_eq!(
            printable_process_text(b"flock\x00-x\x00/x/lock\x00sleep\x00100\x00", 256),
            "flock -x /x/lock sleep 100"
        );
        assert_eq!(
            printable_process_text(b"a\x1b[31mb\\\xe2\x80\xae", 64),
            "a\\x1b[31mb\\\\\\u{202e}"
        );
        assert_eq!(printable_process_text(b"abcdef", 3), "abc...");
    }
}
