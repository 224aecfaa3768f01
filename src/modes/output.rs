//! Writing results: one JSON object or a short text for people, written once
//! to stdout. A closed stdout (EPIPE: the SSH session is gone) is ignored,
//! never a reason to stop or panic; a stdout nobody reads (a pipe that stays
//! full) is given [`STDOUT_BUDGET`] and then abandoned, so the process still
//! exits (SPEC 8, v1.1). Before the result, the logs get a bounded moment to
//! reach stderr ([`crate::node::oplog::settle`]).

use crate::contract;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// How long the result may take to reach stdout before it is given up.
pub const STDOUT_BUDGET: Duration = Duration::from_secs(10);
/// How long the logs may take to reach stderr before the result is written.
const LOGS_FIRST: Duration = Duration::from_secs(1);
/// At most this much per write(2): no more than a pipe guarantees room for
/// once poll(2) says it is writable, so a write after POLLOUT does not block.
const CHUNK: usize = 4096;

/// What a mode produced: its exit code, its document (typed; its trailer
/// is stamped by `modes::app`) and its text.
#[derive(Debug)]
pub struct Report {
    pub code: u8,
    pub doc: Box<dyn contract::Printed>,
    pub text: String,
}

impl Report {
    /// The document as built, as JSON (the unit tests read it).
    #[cfg(test)]
    pub fn json(&self) -> serde_json::Value {
        self.doc.to_json()
    }
}

/// Write one JSON line (`contract::line`) to stdout.
pub fn emit_json(line: Vec<u8>) {
    emit_stdout(line);
}

pub fn emit_text(s: &str) {
    let mut b = s.as_bytes().to_vec();
    if !s.ends_with('\n') {
        b.push(b'\n');
    }
    emit_stdout(b);
}

/// The result to fd 1, bounded: poll(2) for room and write as it comes,
/// until [`STDOUT_BUDGET`] has passed. fd 1's flags are never changed (its
/// open file description is shared with the caller). The writing happens
/// on a helper thread that this one waits for at most the budget, so even a
/// write(2) that blocks after POLLOUT (a tty stopped with ^S, another
/// writer racing for the pipe) cannot hold the process: it exits and the
/// helper goes with it.
fn emit_stdout(bytes: Vec<u8>) {
    crate::node::oplog::settle(LOGS_FIRST);
    let deadline = Instant::now() + STDOUT_BUDGET;
    let bytes = std::sync::Arc::new(bytes);
    let (tx, rx) = std::sync::mpsc::channel();
    let theirs = std::sync::Arc::clone(&bytes);
    let spawned = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || {
            write_bounded(std::io::stdout().as_fd(), &theirs, deadline);
            let _ = tx.send(());
        });
    match spawned {
        Ok(_) => {
            let _ = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        // No thread: the same bounded write here (poll keeps it bounded on
        // a pipe).
        Err(_) => {
            write_bounded(std::io::stdout().as_fd(), &bytes, deadline);
        }
    }
}

/// Write `buf` to `fd` until done, an error (EPIPE: the reader is gone), or
/// `deadline`. Returns the bytes written.
pub fn write_bounded(fd: BorrowedFd<'_>, mut buf: &[u8], deadline: Instant) -> usize {
    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let total = buf.len();
    while !buf.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        // Round up: a poll of 0 ms would spin.
        let ms = u16::try_from(left.as_millis().clamp(1, 1000)).unwrap_or(1000);
        let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        let rev = fds[0].revents().unwrap_or(PollFlags::empty());
        if rev.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
            && !rev.contains(PollFlags::POLLOUT)
        {
            break;
        }
        let n = buf.len().min(CHUNK);
        match nix::unistd::write(fd, &buf[..n]) {
            Ok(0) => break,
            Ok(k) => buf = &buf[k..],
            Err(Errno::EINTR) | Err(Errno::EAGAIN) => {}
            Err(_) => break,
        }
    }
    total - buf.len()
}

/// Write to stderr, ignoring a closed stderr.
pub fn emit_stderr(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(s.as_bytes());
    if !s.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

pub use crate::contract::text::{escape, text_cert_tables, text_kubelet, text_list, word};

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::OwnedFd;

    fn fill(w: &OwnedFd) -> usize {
        // The test's own pipe: non-blocking only while it is filled.
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let fl = OFlag::from_bits_truncate(fcntl(w, FcntlArg::F_GETFL).unwrap());
        fcntl(w, FcntlArg::F_SETFL(fl | OFlag::O_NONBLOCK)).unwrap();
        let mut n = 0;
        while let Ok(k) = nix::unistd::write(w, &[b'x'; 4096]) {
            n += k;
        }
        fcntl(w, FcntlArg::F_SETFL(fl)).unwrap();
        n
    }

    #[test]
    fn a_full_pipe_nobody_reads_is_given_up_at_the_deadline() {
        let (_r, w) = nix::unistd::pipe().unwrap();
        assert!(fill(&w) >= 4096);
        let t = Instant::now();
        let n = write_bounded(w.as_fd(), b"{}\n", t + Duration::from_millis(300));
        assert_eq!(n, 0);
        assert!(t.elapsed() >= Duration::from_millis(290));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }

    #[test]
    fn a_large_result_goes_out_as_the_reader_reads_it() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let big = vec![b'y'; 300 * 1024];
        let reader = std::thread::spawn(move || {
            let mut f = std::fs::File::from(r);
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut got).unwrap();
            got.len()
        });
        let n = write_bounded(w.as_fd(), &big, Instant::now() + Duration::from_secs(20));
        drop(w);
        assert_eq!((n, reader.join().unwrap()), (big.len(), big.len()));
    }

    #[test]
    fn a_closed_reader_ends_the_write_at_once() {
        let (r, w) = nix::unistd::pipe().unwrap();
        drop(r);
        let t = Instant::now();
        let n = write_bounded(w.as_fd(), b"{}\n", t + Duration::from_secs(5));
        assert_eq!(n, 0);
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
