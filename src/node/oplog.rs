//! Logs: stderr, plus (for a renewal) the operation's log file
//! `state/log/<ID>.log` (0600). Output never blocks the work (SPEC 8, v1.1).
//!
//! - The log file is written synchronously and completely, by the thread
//!   that logs: it is the record an operator reads, and it never drops a
//!   line.
//! - stderr is written by one dedicated thread fed by a bounded queue
//!   ([`QUEUE_LINES`]). Logging only enqueues; when the queue is full (stderr
//!   is a pipe nobody reads: an SSH client that stopped reading) the line is
//!   dropped from stderr and counted, and so is every line after it until
//!   the writer has caught up with the lines before the gap. Then it writes
//!   one line saying how many were dropped, at the place of the gap (it goes
//!   to the log file too). So a stalled stderr never holds a staged manifest
//!   hostage, and SIGTERM still cancels.
//! - At the end ([`settle`], called by `output` before the result is
//!   printed, and an `atexit(3)` handler) stderr gets a bounded time to
//!   drain, [`END_BUDGET`] in all; then the process exits regardless, and
//!   the log file says how many lines stderr did not get.
//! - fd 2 is never made non-blocking: its open file description is shared
//!   with other processes (the SSH session, a shell). A blocking write only
//!   ever stalls the writer thread.
//! - A closed stderr (EPIPE: the SSH session went away) is ignored.
//!
//! For a panic hook: [`emergency`].

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// Lines (and bytes) waiting for stderr before new lines are dropped. The
/// pipe in front of a reader already holds 64 KiB (and an SSH channel more):
/// the queue only bridges the writes that pipe cannot take at once, it is
/// not a second log (that is the log file).
pub const QUEUE_LINES: usize = 32;
pub const QUEUE_BYTES: usize = 64 * 1024;
/// How long, in all, the end of the process waits for stderr to drain.
pub const END_BUDGET: Duration = Duration::from_secs(2);
/// How long [`emergency`] waits for a lock another thread holds.
const EMERGENCY_WAIT: Duration = Duration::from_millis(500);

static FILE: Mutex<Option<File>> = Mutex::new(None);
static STDERR: Queue = Queue::new(QUEUE_LINES, QUEUE_BYTES);
static WRITER: OnceLock<bool> = OnceLock::new();
static END: OnceLock<Instant> = OnceLock::new();
static SETTLE_NOTED: Mutex<bool> = Mutex::new(false);

thread_local! {
    /// Set on the stderr writer thread: what it logs itself (the count of
    /// dropped lines) goes to the file and straight to stderr, not the queue.
    static IN_WRITER: Cell<bool> = const { Cell::new(false) };
    static DIRECT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Tee every log line to this file from now on.
pub fn set_file(f: File) {
    let mut g = FILE.lock().unwrap_or_else(PoisonError::into_inner);
    *g = Some(f);
}

/// The writer for one log event (tracing-subscriber calls [`make_writer`]
/// once per event): the bytes are collected and, when the event is done
/// (flush or drop), written to the file and queued for stderr as one line.
pub struct Tee {
    buf: Vec<u8>,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.commit();
        Ok(())
    }
}

impl Tee {
    fn commit(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.buf);
        write_file(&line, None);
        if IN_WRITER.with(Cell::get) {
            DIRECT.with(|d| d.borrow_mut().extend_from_slice(&line));
            return;
        }
        if ensure_writer() {
            STDERR.push(line);
        }
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        self.commit();
    }
}

pub fn make_writer() -> Tee {
    Tee { buf: Vec::new() }
}

/// For a panic hook: write `line` (a newline is added if missing) to the
/// operation's log file and queue it for stderr, never blocking: a lock held
/// by another thread is waited for at most half a second, a full queue
/// drops the line from stderr (counted) as for any log line. Never panics.
/// Safe to call from any thread, before logging starts (then it only queues
/// for stderr) and more than once.
///
/// The hook should call this *instead of* std's default hook, not before it:
/// the default hook writes the panic message to fd 2 with a blocking write,
/// which on a stalled stderr never returns, so the unwinding (and the guards
/// that put a staged manifest back) would never run. The line is written as
/// given, not in the `--log-format`: a hook that wants JSON formats it.
pub fn emergency(line: &str) {
    let mut b = line.as_bytes().to_vec();
    if !b.ends_with(b"\n") {
        b.push(b'\n');
    }
    write_file(&b, Some(EMERGENCY_WAIT));
    if ensure_writer() {
        if let Some(mut st) = lock_briefly(&STDERR.state, EMERGENCY_WAIT) {
            STDERR.push_locked(&mut st, b);
            drop(st);
            STDERR.work.notify_one();
        }
    }
}

/// Wait at most `timeout` for every queued line to reach stderr; true when
/// it did (or nothing was queued). Logs nothing.
pub fn flush(timeout: Duration) -> bool {
    STDERR.flush(timeout)
}

/// Before the result is printed: give stderr up to `timeout` (within the
/// process's [`END_BUDGET`]) to catch up, so the logs come before the
/// result when both go to one terminal or pipe. If it does not, log once
/// (the log file has it; stderr may not) how many lines stderr is missing.
pub fn settle(timeout: Duration) {
    if flush(end_budget(timeout)) {
        return;
    }
    let (dropped, waiting) = STDERR.missing();
    let mut noted = SETTLE_NOTED.lock().unwrap_or_else(PoisonError::into_inner);
    if *noted {
        return;
    }
    *noted = true;
    drop(noted);
    tracing::warn!(
        dropped,
        waiting,
        "stderr is not being read: {dropped} log lines dropped from it and {waiting} not yet written; this log file has every line"
    );
}

/// What is left of [`END_BUDGET`] (counted from the first call), at most
/// `timeout`.
fn end_budget(timeout: Duration) -> Duration {
    let now = Instant::now();
    let end = *END.get_or_init(|| now + END_BUDGET);
    timeout.min(end.saturating_duration_since(now))
}

extern "C" fn at_exit() {
    // Never unwind into libc; thread-locals are gone by now (none used).
    let _ = std::panic::catch_unwind(|| {
        flush(end_budget(END_BUDGET));
    });
}

/// Start the stderr writer thread (once). False if it could not be started:
/// then lines go to the log file only.
fn ensure_writer() -> bool {
    *WRITER.get_or_init(|| {
        let started = std::thread::Builder::new()
            .name("stderr".into())
            .spawn(|| {
                IN_WRITER.with(|w| w.set(true));
                STDERR.run(write_stderr, dropped_note);
            })
            .is_ok();
        if started {
            // SAFETY: registers a plain function; at_exit catches panics.
            #[allow(unsafe_code)] // the documented exception (lib.rs): atexit(3)
            unsafe {
                nix::libc::atexit(at_exit);
            }
        }
        started
    })
}

/// Append to the log file (all of it; errors ignored: logs never fail the
/// run). `wait`: give up after this long if another thread holds the file.
fn write_file(b: &[u8], wait: Option<Duration>) {
    let g = match wait {
        None => Some(FILE.lock().unwrap_or_else(PoisonError::into_inner)),
        Some(w) => lock_briefly(&FILE, w),
    };
    if let Some(mut g) = g {
        if let Some(f) = g.as_mut() {
            let _ = f.write_all(b);
        }
    }
}

fn lock_briefly<T>(m: &Mutex<T>, wait: Duration) -> Option<MutexGuard<'_, T>> {
    let until = Instant::now() + wait;
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

/// One line to fd 2, on the writer thread: a blocking write (it may stall
/// here, the work goes on). EAGAIN (someone else made the shared file
/// description non-blocking) waits for POLLOUT; any other error (EPIPE: the
/// reader is gone) gives the line up.
fn write_stderr(mut buf: &[u8]) {
    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let err = std::io::stderr();
    let fd = err.as_fd();
    while !buf.is_empty() {
        match nix::unistd::write(fd, buf) {
            Ok(0) => return,
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let _ = poll(
                    &mut [PollFd::new(fd, PollFlags::POLLOUT)],
                    PollTimeout::from(1000u16),
                );
            }
            Err(_) => return,
        }
    }
}

/// The line that says how many lines were dropped, logged from the writer
/// thread when it reaches the gap: in the log format, to the file and (the
/// bytes returned) stderr. Without a subscriber, a plain line.
fn dropped_note(n: u64) -> Vec<u8> {
    DIRECT.with(|d| d.borrow_mut().clear());
    tracing::warn!(
        dropped = n,
        "stderr was full or not being read: {n} log lines dropped from it here; the operation's log file has every line"
    );
    let b = DIRECT.with(|d| std::mem::take(&mut *d.borrow_mut()));
    if b.is_empty() {
        plain_note(n)
    } else {
        b
    }
}

fn plain_note(n: u64) -> Vec<u8> {
    format!("nvke-cert-runbook: {n} log lines dropped from stderr here (it was full or not being read)\n")
        .into_bytes()
}

enum Item {
    Line(Vec<u8>),
    /// This many lines were dropped here.
    Dropped(u64),
}

struct State {
    items: VecDeque<Item>,
    /// the queued lines and their bytes
    lines: usize,
    bytes: usize,
    /// the writer is writing an item it took
    busy: bool,
    dropped_total: u64,
}

/// The bounded queue in front of stderr and its one consumer.
struct Queue {
    state: Mutex<State>,
    /// an item was queued
    work: Condvar,
    /// the queue became empty and the writer idle
    idle: Condvar,
    max_lines: usize,
    max_bytes: usize,
}

impl Queue {
    const fn new(max_lines: usize, max_bytes: usize) -> Queue {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                lines: 0,
                bytes: 0,
                busy: false,
                dropped_total: 0,
            }),
            work: Condvar::new(),
            idle: Condvar::new(),
            max_lines,
            max_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue a line, or drop and count it when the queue is full. Never
    /// waits for the writer (the lock is only ever held briefly).
    fn push(&self, line: Vec<u8>) {
        let mut st = self.lock();
        self.push_locked(&mut st, line);
        drop(st);
        self.work.notify_one();
    }

    fn push_locked(&self, st: &mut State, line: Vec<u8>) {
        // Once dropping, keep dropping until the writer has caught up with
        // everything before the gap: one gap and one count per stall, not a
        // sieve that lets the short lines through.
        if let Some(Item::Dropped(n)) = st.items.back_mut() {
            *n += 1;
            st.dropped_total += 1;
            return;
        }
        // A line longer than the queue still goes when nothing waits.
        if st.lines == 0 || (st.lines < self.max_lines && st.bytes + line.len() <= self.max_bytes) {
            st.lines += 1;
            st.bytes += line.len();
            st.items.push_back(Item::Line(line));
            return;
        }
        st.dropped_total += 1;
        st.items.push_back(Item::Dropped(1));
    }

    /// Lines dropped and not yet reported, lines queued.
    fn missing(&self) -> (u64, usize) {
        let st = self.lock();
        let mut dropped = 0;
        let mut waiting = 0;
        for i in &st.items {
            match i {
                Item::Dropped(n) => dropped += n,
                Item::Line(_) => waiting += 1,
            }
        }
        (dropped, waiting)
    }

    fn flush(&self, timeout: Duration) -> bool {
        let st = self.lock();
        let (st, _) = self
            .idle
            .wait_timeout_while(st, timeout, |s| s.busy || !s.items.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
        !st.busy && st.items.is_empty()
    }

    /// The writer: take each item in order and write it (outside the lock);
    /// a gap of dropped lines becomes `note(n)`. Never returns.
    fn run(&self, mut write: impl FnMut(&[u8]), mut note: impl FnMut(u64) -> Vec<u8>) {
        loop {
            let item = {
                let mut st = self.lock();
                st.busy = false;
                let item = loop {
                    if let Some(i) = st.items.pop_front() {
                        break i;
                    }
                    self.idle.notify_all();
                    st = self.work.wait(st).unwrap_or_else(PoisonError::into_inner);
                };
                // In the same critical section: a flush never sees an empty
                // queue while a taken item is still unwritten.
                st.busy = true;
                if let Item::Line(l) = &item {
                    st.lines -= 1;
                    st.bytes -= l.len();
                }
                item
            };
            match item {
                Item::Line(l) => write(&l),
                Item::Dropped(n) => write(&note(n)),
            }
        }
    }
}

/// Logs a step's start, and its end with the duration (SPEC section 8).
pub struct StepLog {
    name: String,
    started: Instant,
}

impl StepLog {
    pub fn new(name: impl Into<String>) -> StepLog {
        let name = name.into();
        tracing::info!(step = %name, "step started");
        StepLog {
            name,
            started: Instant::now(),
        }
    }
}

impl Drop for StepLog {
    fn drop(&mut self) {
        tracing::info!(step = %self.name, ms = self.started.elapsed().as_millis() as u64, "step ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;

    /// A queue of `lines` lines and `bytes` bytes whose writer sends what it writes to the
    /// returned receiver, and blocks while `gate` is locked.
    fn queue(
        lines: usize,
        bytes: usize,
    ) -> (&'static Queue, Arc<Mutex<()>>, mpsc::Receiver<Vec<u8>>) {
        let q: &'static Queue = Box::leak(Box::new(Queue::new(lines, bytes)));
        let gate = Arc::new(Mutex::new(()));
        let (tx, rx) = mpsc::channel();
        let g = Arc::clone(&gate);
        std::thread::spawn(move || {
            q.run(
                move |b| {
                    let _held = g.lock().unwrap();
                    tx.send(b.to_vec()).unwrap();
                },
                plain_note,
            )
        });
        (q, gate, rx)
    }

    fn line(i: usize) -> Vec<u8> {
        format!("line {i:04}\n").into_bytes()
    }

    #[test]
    fn lines_arrive_in_order_and_flush_waits_for_them() {
        let (q, _gate, rx) = queue(1000, 1 << 20);
        for i in 0..100 {
            q.push(line(i));
        }
        assert!(q.flush(Duration::from_secs(5)));
        let got: Vec<Vec<u8>> = rx.try_iter().collect();
        assert_eq!(got, (0..100).map(line).collect::<Vec<_>>());
        assert_eq!(q.lock().dropped_total, 0);
    }

    #[test]
    fn a_stalled_writer_never_blocks_push_and_the_gap_is_counted_once_it_drains() {
        let (q, gate, rx) = queue(1000, 10 * 10);
        let held = gate.lock().unwrap();
        // The writer takes line 0 and stalls writing it; 10 lines of 10
        // bytes fill the queue; the next 25 are dropped.
        q.push(line(0));
        let t = Instant::now();
        while !q.lock().busy {
            assert!(t.elapsed() < Duration::from_secs(5));
            std::thread::yield_now();
        }
        let t = Instant::now();
        for i in 1..=34 {
            q.push(line(i));
        }
        // Dropping goes on until the writer catches up: a short line that
        // would fit is dropped too (one gap, one count).
        q.push(b"\n".to_vec());
        assert!(t.elapsed() < Duration::from_secs(1), "push waited");
        assert_eq!(q.lock().dropped_total, 25);
        assert_eq!(q.missing(), (25, 10));
        // The end of the process does not wait for it forever.
        let t = Instant::now();
        assert!(!q.flush(Duration::from_millis(200)));
        assert!(t.elapsed() < Duration::from_secs(2));
        drop(held);
        assert!(q.flush(Duration::from_secs(5)));
        q.push(line(36));
        assert!(q.flush(Duration::from_secs(5)));
        let got: Vec<String> = rx
            .try_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect();
        let mut want: Vec<String> = (0..=10)
            .map(|i| String::from_utf8(line(i)).unwrap())
            .collect();
        want.push(String::from_utf8(plain_note(25)).unwrap());
        want.push(String::from_utf8(line(36)).unwrap());
        assert_eq!(got, want);
        assert_eq!(q.missing(), (0, 0));
    }

    #[test]
    fn the_queue_holds_at_most_its_lines() {
        let (q, gate, rx) = queue(3, 1 << 20);
        let held = gate.lock().unwrap();
        q.push(line(0));
        let t = Instant::now();
        while !q.lock().busy {
            assert!(t.elapsed() < Duration::from_secs(5));
            std::thread::yield_now();
        }
        for i in 1..=5 {
            q.push(line(i));
        }
        assert_eq!(q.missing(), (2, 3));
        drop(held);
        assert!(q.flush(Duration::from_secs(5)));
        assert_eq!(rx.try_iter().count(), 5);
    }

    #[test]
    fn a_line_longer_than_the_queue_goes_when_nothing_waits() {
        let (q, _gate, rx) = queue(1000, 8);
        q.push(vec![b'x'; 100]);
        assert!(q.flush(Duration::from_secs(5)));
        assert_eq!(rx.try_iter().next().map(|b| b.len()), Some(100));
    }
}
