//! Output never holds the node hostage (SPEC 8, Contract v1.1 row 1; issue
//! "Truthful under faults"): stderr, and separately stdout, is a pipe nobody
//! reads (an SSH client that stopped reading without closing), with a
//! manifest staged. The run finishes or cancels within its bounds, etcd goes
//! back, the controller's fencing check then confirms, and the operation's
//! log file has every line.
//!
//! Every run here is bounded: a runbook that does not exit in time is killed
//! (SIGKILL) and the test fails, it never hangs. Run with
//! `cargo test --features sim --test stalled -- --nocapture`.
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// They also make the system calls the runbook makes, to plant and provoke
// (signals, pre_exec, raw fds): unsafe as the tests need it.
#![allow(unsafe_code)]
// Skips and measurements are printed through the harness (captured unless --nocapture); the print lints bind src/.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use support::node::*;

/// The pipe's capacity, set explicitly (the default depends on the page size).
const PIPE: usize = 65536;
/// SIGTERM cancels within this (SPEC 4 "Signals").
const CANCEL_BOUND: Duration = Duration::from_secs(30);
/// A whole renewal on the simulated node, with the stop latencies below.
const RUN_BOUND: Duration = Duration::from_secs(120);

/// A pipe nobody reads: the test keeps the read end open and never reads it
/// (until the run is over); `prefill` bytes are already in it. O_CLOEXEC: no
/// other test's child inherits an end.
fn pipe_nobody_reads(prefill: usize) -> (OwnedFd, OwnedFd) {
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
    fcntl(&w, FcntlArg::F_SETPIPE_SZ(PIPE as i32)).unwrap();
    assert_eq!(fcntl(&w, FcntlArg::F_GETPIPE_SZ).unwrap() as usize, PIPE);
    // Non-blocking only while the test fills its own pipe (before any child
    // shares the open file description).
    let fl = OFlag::from_bits_truncate(fcntl(&w, FcntlArg::F_GETFL).unwrap());
    fcntl(&w, FcntlArg::F_SETFL(fl | OFlag::O_NONBLOCK)).unwrap();
    let mut chunk = vec![b'#'; 4096];
    chunk[4095] = b'\n';
    let mut n = 0;
    while n < prefill {
        match nix::unistd::write(&w, &chunk[..(prefill - n).min(4096)]) {
            Ok(k) => n += k,
            Err(_) => break,
        }
    }
    fcntl(&w, FcntlArg::F_SETFL(fl)).unwrap();
    assert_eq!(n, prefill);
    (r, w)
}

/// Bytes waiting in a pipe (FIONREAD on its read end).
fn queued(r: &OwnedFd) -> usize {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer.
    let rc = unsafe { nix::libc::ioctl(r.as_raw_fd(), nix::libc::FIONREAD, &mut n) };
    assert_eq!(rc, 0);
    n as usize
}

/// Everything in the pipe now (the writer is gone), without blocking.
fn read_all_now(r: OwnedFd) -> Vec<u8> {
    let fl = OFlag::from_bits_truncate(fcntl(&r, FcntlArg::F_GETFL).unwrap());
    fcntl(&r, FcntlArg::F_SETFL(fl | OFlag::O_NONBLOCK)).unwrap();
    let mut f = std::fs::File::from(r);
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// A stderr that is read, like an SSH client's, until [`Reader::stall`]:
/// from then on nobody reads it, and the test tops the pipe up to the brim
/// (through its own non-blocking open file description of the pipe, never
/// the one the runbook shares), so the runbook's next line cannot go in.
struct Reader {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<(OwnedFd, Vec<u8>)>,
    top: std::fs::File,
}

impl Reader {
    /// The pipe, and its reader; give the write end to the runbook.
    fn start() -> (Reader, OwnedFd) {
        use std::os::unix::fs::OpenOptionsExt;
        let (r, w) = pipe_nobody_reads(0);
        let top = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(format!("/proc/self/fd/{}", w.as_raw_fd()))
            .unwrap();
        // The read end is the test's alone: non-blocking is its own business.
        let fl = OFlag::from_bits_truncate(fcntl(&r, FcntlArg::F_GETFL).unwrap());
        fcntl(&r, FcntlArg::F_SETFL(fl | OFlag::O_NONBLOCK)).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut f = std::fs::File::from(r);
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                match f.read(&mut buf) {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            (OwnedFd::from(f), got)
        });
        (Reader { stop, thread, top }, w)
    }

    /// Stop reading and fill the pipe: returns the read end (never read
    /// again) and what was read before.
    fn stall(self) -> (OwnedFd, Vec<u8>) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (r, got) = self.thread.join().unwrap();
        let mut top = self.top;
        for chunk in [4096, 1] {
            while std::io::Write::write(&mut top, &vec![b'#'; chunk]).is_ok() {}
        }
        (r, got)
    }
}

/// A running runbook, killed (SIGKILL) if the test ends before it does.
struct Run {
    child: Option<Child>,
    started: Instant,
    /// the operation's log file
    log: std::path::PathBuf,
}

impl Run {
    fn pid(&self) -> Pid {
        Pid::from_raw(self.child.as_ref().unwrap().id() as i32)
    }
    fn running(&mut self) -> bool {
        matches!(self.child.as_mut().unwrap().try_wait(), Ok(None))
    }
    /// The end of the operation's log, for a failure message.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
    /// Wait at most `limit`; on timeout kill it and fail the test.
    fn wait(&mut self, limit: Duration, what: &str) -> ExitStatus {
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return s;
            }
            if t.elapsed() > limit {
                let mut c = self.child.take().unwrap();
                let _ = c.kill();
                let _ = c.wait();
                panic!(
                    "{what}: the runbook had not exited after {:?} ({:?} since it started); killed; its log ends:\n{}",
                    limit,
                    self.started.elapsed(),
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(node: &Node, args: &[&str], stdout: Stdio, stderr: Stdio) -> Run {
    let mut cmd = node.command(args);
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    let child = cmd.spawn().unwrap();
    // `cmd` (and with it the parent's copies of the pipe ends it was given)
    // is dropped here.
    let id = args
        .iter()
        .position(|a| *a == "--operation-id")
        .map(|i| args[i + 1])
        .unwrap_or("legacy-v1");
    Run {
        child: Some(child),
        started: Instant::now(),
        log: node.state().join("log").join(format!("{id}.log")),
    }
}

/// Poll `cond` every 10 ms until it holds; fail (with `what`) after `limit`
/// or if the run exits first.
fn wait_until(run: &mut Run, limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        if !run.running() {
            let status = run.child.as_mut().unwrap().try_wait();
            panic!(
                "{what}: the runbook exited first ({status:?}); its log ends:\n{}",
                run.log_tail()
            );
        }
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn log_file(node: &Node, id: &str) -> String {
    std::fs::read_to_string(node.state().join("log").join(format!("{id}.log"))).unwrap_or_default()
}

/// Every line of a `--log-format json` log is one whole JSON object.
fn json_lines(log: &str) -> Vec<Value> {
    assert!(log.ends_with('\n'), "the log ends mid-line");
    log.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

fn message(v: &Value) -> &str {
    v["fields"]["message"].as_str().unwrap_or("")
}

fn has(lines: &[Value], msg: &str, field: &str, value: &str) -> bool {
    lines
        .iter()
        .any(|l| message(l) == msg && l["fields"][field].as_str() == Some(value))
}

/// stderr is read until etcd's manifest is staged and the run sits in the
/// wait for etcd to stop; then its reader stops reading and the pipe is
/// full. SIGTERM still cancels within 30 s, and puts etcd back.
#[test]
fn stalled_stderr_sigterm_while_etcd_staged_cancels_within_30s() {
    let node = Node::new("rsa", json!({ "stopLatencyMs": 30000 }));
    let id = "op-stall-term";
    let (reader, w) = Reader::start();
    let mut run = spawn(
        &node,
        &[
            "--operation-id",
            id,
            "--force",
            "--log-format",
            "json",
            "--stop-timeout",
            "60",
        ],
        Stdio::piped(),
        Stdio::from(w),
    );
    let mut stdout = run.child.as_mut().unwrap().stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    wait_until(&mut run, Duration::from_secs(60), "etcd staged", || {
        node.staged("etcd").exists()
    });
    let (r, read_before) = reader.stall();
    assert!(queued(&r) >= 60000, "the pipe is not full: {}", queued(&r));
    // The run goes on logging into the full pipe (today: every poll of the
    // wait; a later line at the latest when SIGTERM is handled).
    std::thread::sleep(Duration::from_secs(1));
    assert!(node.staged("etcd").exists(), "etcd is no longer staged");
    eprintln!(
        "stderr pipe holds {} bytes unread, etcd staged; SIGTERM",
        queued(&r)
    );
    let t = Instant::now();
    kill(run.pid(), Signal::SIGTERM).unwrap();
    let status = run.wait(CANCEL_BOUND, "SIGTERM with a stalled stderr");
    eprintln!("exited {:?} after SIGTERM", t.elapsed());
    let out = out_reader.join().unwrap();
    let v: Value = serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)));
    assert_eq!(
        (status.code(), v["outcome"].as_str()),
        (Some(1), Some("cancelled")),
        "{v:#}"
    );
    assert!(node.manifest("etcd").is_file(), "etcd.yaml is not back");
    node.assert_all_active();
    assert_eq!(node.receipt(id).unwrap()["outcome"], "cancelled");
    // The log file has every line, the ones stderr never took included;
    // what stderr got before it stalled is its beginning.
    let log = log_file(&node, id);
    let lines = json_lines(&log);
    assert!(
        has(&lines, "receipt written", "outcome", "cancelled"),
        "no receipt line in the log file"
    );
    assert!(log.as_bytes().starts_with(&read_before));
    assert!(read_before.len() < log.len());
    node.fence(id);
    drop(r);
}

/// stderr is read until etcd's manifest is staged, then stalls (full, never
/// read again) for the rest of the run: the run finishes within its normal
/// bounds, the log file has every line, and stderr has only the start of
/// them.
#[test]
fn stalled_stderr_the_run_finishes_and_the_log_file_has_every_line() {
    let node = Node::new("rsa", json!({ "stopLatencyMs": 1000 }));
    let id = "op-stall-run";
    let (reader, w) = Reader::start();
    let mut run = spawn(
        &node,
        &["--operation-id", id, "--force", "--log-format", "json"],
        Stdio::piped(),
        Stdio::from(w),
    );
    let mut stdout = run.child.as_mut().unwrap().stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    wait_until(&mut run, Duration::from_secs(60), "etcd staged", || {
        node.staged("etcd").exists()
    });
    let (r, read_before) = reader.stall();
    assert!(queued(&r) >= 60000, "the pipe is not full: {}", queued(&r));
    let status = run.wait(RUN_BOUND, "a renewal with a stalled stderr");
    eprintln!("finished in {:?}", run.started.elapsed());
    let out = out_reader.join().unwrap();
    let v: Value = serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)));
    assert_eq!(
        (status.code(), v["outcome"].as_str()),
        (Some(0), Some("renewed")),
        "{v:#}"
    );
    node.assert_all_active();
    assert_eq!(node.receipt(id).unwrap()["outcome"], "renewed");
    let log = log_file(&node, id);
    let lines = json_lines(&log);
    assert!(has(&lines, "receipt written", "outcome", "renewed"));
    assert!(has(&lines, "step ended", "step", "restart:kube-scheduler"));
    assert!(has(&lines, "step ended", "step", "postflight"));
    // stderr never drained: the end says (in the log file) how many lines
    // it is missing.
    assert!(
        lines
            .iter()
            .any(|l| message(l).starts_with("stderr is not being read")),
        "no note of the lines stderr missed"
    );
    // What stderr got (read, then left in the pipe up to the test's own
    // top-up) is the beginning of the log file, byte for byte.
    let mut got = read_before;
    let rest = read_all_now(r);
    let end = rest.iter().rposition(|b| *b != b'#').map_or(0, |i| i + 1);
    got.extend_from_slice(&rest[..end]);
    assert!(
        log.as_bytes().starts_with(&got),
        "stderr is not a prefix of the log file"
    );
    assert!(got.len() < log.len());
    eprintln!(
        "log file: {} lines, {} bytes; stderr got {} bytes of them",
        lines.len(),
        log.len(),
        got.len()
    );
    node.fence(id);
}

/// stderr stalls (the pipe full from the start), then the reader comes back
/// near the end of the run: stderr gets what was queued, one line saying how
/// many were dropped, and everything after; with the dropped ones that is
/// the log file, line for line.
#[test]
fn a_stderr_that_drains_late_gets_the_count_of_the_dropped_lines() {
    let node = Node::new("rsa", json!({}));
    let id = "op-stall-drain";
    let (r, w) = pipe_nobody_reads(PIPE);
    assert_eq!(queued(&r), PIPE);
    let mut run = spawn(
        &node,
        &["--operation-id", id, "--force", "--log-format", "json"],
        Stdio::piped(),
        Stdio::from(w),
    );
    let mut stdout = run.child.as_mut().unwrap().stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    wait_until(&mut run, RUN_BOUND, "postflight", || {
        json_lines_lenient(&log_file(&node, id))
            .iter()
            .any(|l| message(l) == "step started" && l["fields"]["step"] == "postflight")
    });
    // The reader is back.
    let err_reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(r);
        let mut b = Vec::new();
        let _ = f.read_to_end(&mut b);
        b
    });
    let status = run.wait(RUN_BOUND, "a renewal whose stderr drains late");
    assert_eq!(status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out_reader.join().unwrap()).unwrap();
    assert_eq!(v["outcome"], "renewed");
    let err = err_reader.join().unwrap();
    let err = String::from_utf8(err[PIPE..].to_vec()).unwrap();
    let stderr = json_lines(&err);
    let file = json_lines(&log_file(&node, id));
    let is_note = |l: &Value| message(l).starts_with("stderr was full or not being read");
    let notes: Vec<&Value> = stderr.iter().filter(|l| is_note(l)).collect();
    assert_eq!(
        notes.len(),
        1,
        "one count of the dropped lines: {notes:?} (stderr: {} lines, {} bytes; log file: {} lines)",
        stderr.len(),
        err.len(),
        file.len()
    );
    let dropped = notes[0]["fields"]["dropped"].as_u64().unwrap() as usize;
    assert!(dropped > 0);
    // The note is in the log file too.
    assert!(file.iter().any(|l| l == notes[0]));
    // stderr = the file's lines with exactly `dropped` of them missing, at
    // the note.
    let file: Vec<&Value> = file.iter().filter(|l| !is_note(l)).collect();
    let at = stderr.iter().position(is_note).unwrap();
    let (before, after) = (&stderr[..at], &stderr[at + 1..]);
    assert_eq!(before.len() + dropped + after.len(), file.len());
    assert!(before.iter().zip(&file).all(|(a, b)| a == *b));
    assert!(after
        .iter()
        .zip(&file[at + dropped..])
        .all(|(a, b)| a == *b));
    assert!(has(&stderr, "receipt written", "outcome", "renewed"));
    eprintln!(
        "stderr: {} lines, then {dropped} dropped, then {}; log file: {} lines",
        before.len(),
        after.len(),
        file.len()
    );
}

/// The log file while it is being written: whole lines only.
fn json_lines_lenient(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// stdout is a full pipe nobody reads, with etcd staged during the run: the
/// run finishes, the result is given up after a bounded wait, the process
/// exits; etcd is back and the fence confirms.
#[test]
fn stalled_stdout_the_run_finishes_and_exits() {
    let node = Node::new("rsa", json!({ "stopLatencyMs": 1000 }));
    let id = "op-stall-out";
    let (r, w) = pipe_nobody_reads(PIPE);
    let err = std::fs::File::create(node.sim.join("runbook.stderr")).unwrap();
    let mut run = spawn(
        &node,
        &["--operation-id", id, "--force"],
        Stdio::from(w),
        Stdio::from(err),
    );
    wait_until(&mut run, Duration::from_secs(60), "etcd staged", || {
        node.staged("etcd").exists()
    });
    let status = run.wait(RUN_BOUND, "a renewal with a stalled stdout");
    eprintln!("exited after {:?}", run.started.elapsed());
    assert_eq!(status.code(), Some(0));
    assert_eq!(queued(&r), PIPE, "stdout was not full");
    assert!(node.manifest("etcd").is_file(), "etcd.yaml is not back");
    node.assert_all_active();
    assert_eq!(node.receipt(id).unwrap()["outcome"], "renewed");
    let log = log_file(&node, id);
    assert!(log.contains("receipt written"), "{log}");
    node.fence(id);
    drop(r);
}

/// stdout is a full pipe nobody reads, and stderr stalls (as above) once
/// etcd is staged; SIGTERM still cancels within 30 s.
#[test]
fn stalled_stdout_and_stderr_sigterm_while_etcd_staged_cancels_within_30s() {
    let node = Node::new("rsa", json!({ "stopLatencyMs": 30000 }));
    let id = "op-stall-both";
    let (ro, wo) = pipe_nobody_reads(PIPE);
    let (reader, we) = Reader::start();
    let mut run = spawn(
        &node,
        &["--operation-id", id, "--force", "--stop-timeout", "60"],
        Stdio::from(wo),
        Stdio::from(we),
    );
    wait_until(&mut run, Duration::from_secs(60), "etcd staged", || {
        node.staged("etcd").exists()
    });
    let (re, _) = reader.stall();
    assert!(queued(&re) >= 60000, "stderr is not full: {}", queued(&re));
    std::thread::sleep(Duration::from_secs(1));
    assert!(node.staged("etcd").exists(), "etcd is no longer staged");
    let t = Instant::now();
    kill(run.pid(), Signal::SIGTERM).unwrap();
    let status = run.wait(CANCEL_BOUND, "SIGTERM with stalled stdout and stderr");
    eprintln!("exited {:?} after SIGTERM", t.elapsed());
    assert_eq!(status.code(), Some(1));
    assert_eq!(queued(&ro), PIPE, "stdout is not full");
    assert!(queued(&re) >= 60000, "stderr is not full: {}", queued(&re));
    assert!(node.manifest("etcd").is_file(), "etcd.yaml is not back");
    node.assert_all_active();
    assert_eq!(node.receipt(id).unwrap()["outcome"], "cancelled");
    let log = log_file(&node, id);
    assert!(log.contains("receipt written"), "{log}");
    node.fence(id);
}
