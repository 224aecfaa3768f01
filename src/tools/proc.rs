//! Subprocesses (kubeadm, crictl): absolute path, cleared environment plus
//! what the tool needs, its own process group, a timeout, capped output, and
//! cancellation polled while it runs. The caller's PATH is never trusted.

use crate::tools::signals::Cancel;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The fixed PATH tools are looked up on (SPEC section 9).
pub const FIXED_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// stdout kept (JSON documents are small; more is an error).
pub const STDOUT_CAP: usize = 4 * 1024 * 1024;
/// stderr kept: the tail, for error messages.
pub const STDERR_CAP: usize = 64 * 1024;
/// Environment variables passed through to tools when set (crictl's runtime
/// endpoint configuration); everything else is cleared.
const PASS_ENV: [&str; 3] = [
    "CONTAINER_RUNTIME_ENDPOINT",
    "IMAGE_SERVICE_ENDPOINT",
    "CRI_CONFIG_FILE",
];

/// A tool that is not where it must be: not something waiting fixes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNotFound {
    /// The absolute path given (`--crictl`, `--kubeadm`) is not a file.
    #[error("{name} not found at {}", path.display())]
    At { name: String, path: PathBuf },
    /// No executable of that name on [`FIXED_PATH`].
    #[error("{name} not found on the fixed PATH {FIXED_PATH}")]
    OnFixedPath { name: String },
}

/// Find a tool: the path given (absolute), or `name` on the fixed PATH.
pub fn resolve_tool(name: &str, given: Option<&Path>) -> Result<PathBuf, ToolNotFound> {
    match given {
        Some(p) => {
            if p.is_file() {
                Ok(p.to_path_buf())
            } else {
                Err(ToolNotFound::At {
                    name: name.to_string(),
                    path: p.to_path_buf(),
                })
            }
        }
        None => FIXED_PATH
            .split(':')
            .map(|dir| Path::new(dir).join(name))
            .find(|p| is_executable(p))
            .ok_or_else(|| ToolNotFound::OnFixedPath {
                name: name.to_string(),
            }),
    }
}

/// A regular file (after following links: tools are often symlinked into
/// /usr/local/bin) with an execute bit. No user or home-directory lookups:
/// the static binary must not pull in glibc's NSS.
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    #[allow(clippy::disallowed_methods)] // a tool path, not a node file: links followed on purpose
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[derive(Debug, Clone)]
pub struct Output {
    /// None when killed (timeout, cancel) or ended by a signal.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    /// The last `STDERR_CAP` bytes.
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
    /// The stderr tail as one printable line (for error messages).
    pub fn stderr_tail(&self) -> String {
        let s = String::from_utf8_lossy(&self.stderr);
        let s: String = s
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let mut s = s.trim().to_string();
        // A logrus line (crictl's `time="..." level=fatal msg="..."`): its
        // message, unquoted, not the time it was printed.
        if let (Some(_), Some(i)) = (s.find("level="), s.rfind(" msg=")) {
            let msg = s[i + 5..].trim();
            let msg = msg
                .strip_prefix('"')
                .and_then(|m| m.strip_suffix('"'))
                .unwrap_or(msg);
            s = msg.replace("\\\"", "\"");
        }
        if s.is_empty() {
            return "nothing on stderr".to_string();
        }
        let n = s.chars().count();
        if n > 300 {
            s.chars().skip(n - 300).collect()
        } else {
            s.to_string()
        }
    }
}

/// A subprocess that did not run to its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcError {
    #[error("failed to start {cmd}: {err}")]
    Spawn { cmd: String, err: String },
    #[error("{cmd} timed out after {secs}s and was killed")]
    Timeout { cmd: String, secs: u64 },
    #[error("{cmd} was cancelled")]
    Cancelled { cmd: String },
    #[error("{cmd} printed more than {cap} bytes")]
    TooMuchOutput { cmd: String, cap: usize },
}

fn reader<R: Read + Send + 'static>(
    mut r: R,
    cap: usize,
    keep_tail: bool,
) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > cap {
                        truncated = true;
                        if keep_tail {
                            let cut = kept.len() - cap;
                            kept.drain(..cut);
                        } else {
                            // Over the cap the run is an error anyway: stop
                            // reading (the tool gets EPIPE) instead of
                            // draining gigabytes until the timeout.
                            kept.truncate(cap);
                            break;
                        }
                    }
                }
            }
        }
        (kept, truncated)
    })
}

/// "exit 3", or "killed by a signal".
pub fn describe_exit(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit {c}"),
        None => "killed by a signal".to_string(),
    }
}

/// Describe a command line for logs (never contains secrets: tools get
/// paths, not key material).
pub fn describe(program: &Path, args: &[String]) -> String {
    let mut s = program.display().to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// Run `program args` with a cleared environment, a timeout and the cancel
/// flag polled. Output beyond the caps is dropped (stdout: an error). Its
/// command line and exit status are logged (SPEC 8).
pub fn run(
    program: &Path,
    args: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<Output, ProcError> {
    run_logged(program, args, timeout, cancel, true)
}

/// [`run`] for a call inside a poll (a gate attempt, a wait): its command
/// line and exit status are logged at debug level only (SPEC 8, v1.1: the
/// wait logs its start and end with the number of calls). A timeout is
/// still a warning.
pub fn run_in_poll(
    program: &Path,
    args: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<Output, ProcError> {
    run_logged(program, args, timeout, cancel, false)
}

fn run_logged(
    program: &Path,
    args: &[String],
    timeout: Duration,
    cancel: &Cancel,
    info: bool,
) -> Result<Output, ProcError> {
    let cmd = describe(program, args);
    if info {
        tracing::info!(command = %cmd, "running");
    } else {
        tracing::debug!(command = %cmd, "running");
    }
    let start = Instant::now();
    let child = command(program, args)
        .spawn()
        .map_err(|e| ProcError::Spawn {
            cmd: cmd.clone(),
            err: e.to_string(),
        })?;
    let mut running = Running::new(child);
    let status = match running.wait(start, timeout, cancel) {
        Ok(status) => status,
        Err(stop) => {
            running.end();
            return Err(match stop {
                Stop::Cancelled => ProcError::Cancelled { cmd },
                Stop::Timeout => {
                    tracing::warn!(command = %cmd, "timed out after {}s; killed", timeout.as_secs());
                    ProcError::Timeout {
                        cmd,
                        secs: timeout.as_secs(),
                    }
                }
            });
        }
    };
    let ((stdout, stdout_truncated), stderr) = running.drain();
    let code = status.and_then(|s| s.code());
    let elapsed = start.elapsed();
    if info {
        tracing::info!(command = %cmd, exit = ?code, ms = elapsed.as_millis() as u64, "finished");
    } else {
        tracing::debug!(command = %cmd, exit = ?code, ms = elapsed.as_millis() as u64, "finished");
    }
    if stdout_truncated {
        return Err(ProcError::TooMuchOutput {
            cmd,
            cap: STDOUT_CAP,
        });
    }
    Ok(Output {
        code,
        stdout,
        stderr,
    })
}

/// The command line as it runs: a cleared environment (the fixed PATH,
/// `LC_ALL=C`, what `PASS_ENV` passes), `/` as its directory, no stdin,
/// piped output, its own process group, and killed with the runbook.
fn command(program: &Path, args: &[String]) -> Command {
    #[allow(clippy::disallowed_methods)] // the subprocess module: this is the one place
    let mut c = Command::new(program);
    c.args(args)
        .env_clear()
        .env("PATH", FIXED_PATH)
        .env("LC_ALL", "C")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // A tool must not outlive a runbook killed with SIGKILL: an orphaned
    // kubeadm could still be writing keys while the fencing check and the
    // next operation proceed. The kernel kills it when this thread dies.
    // SAFETY: prctl(2) is async-signal-safe; nothing else runs in the child.
    let parent = nix::unistd::Pid::this();
    #[allow(unsafe_code)] // the documented exception (lib.rs): pre_exec has no safe form
    unsafe {
        c.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            // The runbook may have died before the line above: then we are
            // already orphaned and must not run.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other(
                    "the runbook exited before the tool started",
                ));
            }
            Ok(())
        });
    }
    for k in PASS_ENV {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    c
}

/// What a reader thread returns: the bytes kept, and whether its cap cut them.
type Kept = (Vec<u8>, bool);

/// Why a wait ended before the tool did.
enum Stop {
    Cancelled,
    Timeout,
}

/// A tool started: the process, its process group, the threads reading
/// its output.
struct Running {
    child: std::process::Child,
    pgid: nix::unistd::Pid,
    out: Option<std::thread::JoinHandle<Kept>>,
    /// What stdout read, when it ended before the tool.
    stdout_early: Option<Kept>,
    err: std::thread::JoinHandle<Kept>,
}

impl Running {
    fn new(mut child: std::process::Child) -> Self {
        let out = Some(reader(
            child.stdout.take().expect("piped"),
            STDOUT_CAP,
            false,
        ));
        let err = reader(child.stderr.take().expect("piped"), STDERR_CAP, true);
        let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
        Running {
            child,
            pgid,
            out,
            stdout_early: None,
            err,
        }
    }

    fn kill_group(&self) {
        let _ = nix::sys::signal::killpg(self.pgid, nix::sys::signal::Signal::SIGKILL);
    }

    /// Poll until the tool exits (its status; None when it cannot be
    /// read), is cancelled or times out. Stdout over its cap ends the tool
    /// at once.
    fn wait(
        &mut self,
        start: Instant,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<Option<std::process::ExitStatus>, Stop> {
        let mut interval = Duration::from_millis(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return Ok(Some(st)),
                Ok(None) => {}
                Err(_) => return Ok(None),
            }
            if self.out.as_ref().is_some_and(|h| h.is_finished()) {
                // stdout ended first: keep what it read. Over its cap, the run
                // is an error whatever the tool does next: end the tool now
                // rather than at the timeout.
                let r = self.out.take().expect("checked").join().unwrap_or_default();
                if r.1 {
                    self.kill_group();
                }
                self.stdout_early = Some(r);
            }
            // A cancellation first: when the controller's deadline is what
            // bounds this call, it is a cancellation, not a tool's timeout.
            if cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            if start.elapsed() >= timeout {
                return Err(Stop::Timeout);
            }
            std::thread::sleep(interval);
            interval = (interval * 2).min(Duration::from_millis(10));
        }
    }

    /// End a tool cut short: its group killed, reaped, its readers joined.
    fn end(mut self) {
        self.kill_group();
        let _ = self.child.wait();
        if let Some(h) = self.out.take() {
            let _ = h.join();
        }
        let _ = self.err.join();
    }

    /// The tool exited: its stdout (and whether it was cut) and stderr. A
    /// grandchild that kept the pipes open must not hang us: give the
    /// readers a moment, then end the group (which then still exists,
    /// since someone holds the pipe).
    fn drain(self) -> (Kept, Vec<u8>) {
        let drain_deadline = Instant::now() + Duration::from_secs(2);
        let drained =
            |r: &Running| r.out.as_ref().is_none_or(|h| h.is_finished()) && r.err.is_finished();
        while !drained(&self) && Instant::now() < drain_deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !drained(&self) {
            self.kill_group();
        }
        let stdout = match (self.stdout_early, self.out) {
            (Some(r), _) => r,
            (None, Some(h)) => h.join().unwrap_or_default(),
            (None, None) => Default::default(),
        };
        let (stderr, _) = self.err.join().unwrap_or_default();
        (stdout, stderr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Result<Output, ProcError> {
        run(
            Path::new("/bin/sh"),
            &["-c".to_string(), script.to_string()],
            Duration::from_millis(timeout_ms),
            &Cancel::new(),
        )
    }

    #[test]
    fn environment_is_cleared_and_path_fixed() {
        std::env::set_var("NVKE_TEST_SECRET", "leak");
        let o = sh("echo \"$PATH:${NVKE_TEST_SECRET:-none}\"", 5000).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            format!("{FIXED_PATH}:none")
        );
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let start = Instant::now();
        let e = sh("sleep 30 & sleep 30", 200).unwrap_err();
        assert!(matches!(e, ProcError::Timeout { .. }), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn output_is_capped_and_stderr_keeps_the_tail() {
        let e = sh("head -c 5000000 /dev/zero", 10000).unwrap_err();
        assert!(matches!(e, ProcError::TooMuchOutput { .. }));
        let o = sh(
            "i=0; while [ $i -lt 20000 ]; do echo line$i >&2; i=$((i+1)); done; exit 3",
            10000,
        )
        .unwrap();
        assert_eq!(o.code, Some(3));
        assert!(o.stderr.len() <= STDERR_CAP);
        assert!(o.stderr_tail().ends_with("line19999"));
    }

    #[test]
    fn endless_output_ends_at_the_cap_not_at_the_timeout() {
        // SIGPIPE ignored: only killing the group stops this one. Drained
        // until the timeout, it would be ProcError::Timeout instead.
        let e = sh("trap '' PIPE; while :; do yes; done", 60_000).unwrap_err();
        assert!(matches!(e, ProcError::TooMuchOutput { .. }), "{e}");
    }

    #[test]
    fn cancel_stops_a_running_tool() {
        let c = Cancel::new();
        let c2 = c.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            c2.cancel();
        });
        let e = run(
            Path::new("/bin/sleep"),
            &["30".into()],
            Duration::from_secs(20),
            &c,
        )
        .unwrap_err();
        assert!(matches!(e, ProcError::Cancelled { .. }));
    }

    #[test]
    fn tools_resolve_on_the_fixed_path_only() {
        assert!(resolve_tool("sh", None).is_ok());
        assert!(resolve_tool("definitely-not-a-tool-xyz", None).is_err());
        assert!(resolve_tool("x", Some(Path::new("/nonexistent/kubeadm"))).is_err());
    }
}
