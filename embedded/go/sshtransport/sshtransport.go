package sshtransport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"nvke.example/certrunbook/executor"
	"nvke.example/certrunbook/internal/text"
)

// Transport is an executor.Transport over the OpenSSH client binary (and
// an executor.StreamingTransport). Every call
// runs one ssh process from an argv (never a local shell):
//
//	SSH [-F Config] -T -o BatchMode=yes -o LogLevel=ERROR [-o OPTION]... -- HOST COMMAND
//
// with stdin from /dev/null (but for Push), COMMAND built with
// executor.ShellCommand. sshd runs COMMAND with the remote account's login shell,
// which must be a POSIX shell (sh, dash, bash).
//
// ssh's exit status 255 is its own (connection refused, authentication,
// host key, a lost connection, a remote command killed by a signal): it
// becomes a *executor.TransportError with ExitCode -1. Every other status is the
// remote command's; the runbook never exits 255.
type Transport struct {
	// SSH is the absolute path of the ssh client ("": /usr/bin/ssh); it is
	// never looked up on PATH.
	SSH string
	// Host is ssh's destination, e.g. "root@10.0.0.11" (must not start
	// with '-').
	Host string
	// Config, when not "", is passed as -F (e.g. "none": read no
	// configuration file at all, only Options).
	Config string
	// Options are extra -o options, each "Name=value": IdentityFile,
	// UserKnownHostsFile, StrictHostKeyChecking=yes, ConnectTimeout, Port.
	Options []string
	// Env is the ssh process's whole environment (nil or empty:
	// PATH=/usr/sbin:/usr/bin:/sbin:/bin only).
	Env []string
	// Prepare, when set, is called on every ssh command before it starts
	// (enter a network namespace, set SysProcAttr).
	Prepare func(*exec.Cmd)
	// KillGrace is how long Close and a cancelled Push or Signal wait
	// after SIGTERM before SIGKILL (0: 2 s).
	KillGrace time.Duration
}

var _ executor.Transport = (*Transport)(nil)

// ErrSessionClosed is wrapped in the *TransportError Wait returns after
// Close stopped the session.
var ErrSessionClosed = errors.New("session closed")

const (
	defaultSSH        = "/usr/bin/ssh"
	defaultKillGrace  = 2 * time.Second
	maxStdout         = 16 << 20  // bytes of stdout kept
	maxStderr         = 256 << 10 // last bytes of stderr kept
	maxErrorStderr    = 2 << 10   // bytes of ssh's stderr in a TransportError
	startMarkerPrefix = "nvke-transport-started-"
	// waitDelay bounds how long Wait waits for the pipes to close once ssh
	// ended (a ProxyCommand or a ControlPersist master could hold them).
	waitDelay = 5 * time.Second
)

var defaultEnv = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}

func (t *Transport) grace() time.Duration {
	if t.KillGrace > 0 {
		return t.KillGrace
	}
	return defaultKillGrace
}

// command builds the ssh process for one remote command line.
func (t *Transport) command(remote string) (*exec.Cmd, error) {
	ssh := t.SSH
	if ssh == "" {
		ssh = defaultSSH
	}
	if !strings.HasPrefix(ssh, "/") {
		return nil, fmt.Errorf("Transport.SSH %q must be an absolute path", ssh)
	}
	if t.Host == "" || strings.HasPrefix(t.Host, "-") {
		return nil, fmt.Errorf("Transport.Host %q must be a destination (not empty, not starting with '-')", t.Host)
	}
	argv := []string{}
	if t.Config != "" {
		argv = append(argv, "-F", t.Config)
	}
	argv = append(argv, "-T", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR")
	for _, o := range t.Options {
		if o == "" || strings.HasPrefix(o, "-") {
			return nil, fmt.Errorf("Transport.Options: %q is not a Name=value option", o)
		}
		argv = append(argv, "-o", o)
	}
	argv = append(argv, "--", t.Host, remote)
	cmd := exec.Command(ssh, argv...)
	cmd.Env = t.Env
	if len(cmd.Env) == 0 {
		cmd.Env = append([]string(nil), defaultEnv...)
	}
	cmd.WaitDelay = waitDelay
	if t.Prepare != nil {
		t.Prepare(cmd)
	}
	return cmd, nil
}

// status maps how ssh ended. code is the remote command's exit status, or
// -1 with a *TransportError.
func status(op string, waitErr error, stderr []byte) (int, error) {
	if waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay) {
		return 0, nil
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return -1, &executor.TransportError{Op: op, Err: waitErr}
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, &executor.TransportError{Op: op, Err: fmt.Errorf("ssh killed by signal %v", ws.Signal())}
	}
	if code := ee.ExitCode(); code != 255 {
		return code, nil
	}
	msg := strings.TrimSpace(string(text.LastBytes(stderr, maxErrorStderr)))
	if msg == "" {
		return -1, &executor.TransportError{Op: op, Err: errors.New("ssh exited 255 without a message: the session ended without an exit status (connection lost, or the remote process was killed by a signal)")}
	}
	return -1, &executor.TransportError{Op: op, Err: fmt.Errorf("ssh exited 255: %q", msg)}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// stop ends a local ssh: SIGTERM, then SIGKILL after grace; it returns
// once done is closed (the process was reaped).
func stop(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
	}
}

// run runs one short ssh session bounded by ctx (cancelling it stops the
// local ssh) and returns its output and the remote exit status.
func (t *Transport) run(ctx context.Context, op, remote string, stdin []byte) (stdout, stderr []byte, code int, err error) {
	cmd, err := t.command(remote)
	if err != nil {
		return nil, nil, -1, err
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out := &capBuffer{max: maxStdout}
	errb := &tailBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := ctx.Err(); err != nil {
		return nil, nil, -1, &executor.TransportError{Op: op, Err: err}
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, -1, &executor.TransportError{Op: op, Err: err}
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		stop(cmd, done, t.grace())
		return out.bytes(), errb.bytes(), -1, &executor.TransportError{Op: op, Err: ctx.Err()}
	}
	code, err = status(op, waitErr, errb.bytes())
	return out.bytes(), errb.bytes(), code, err
}

// Push writes data to path on the node (mode 0755, umask 022) through a
// dot-named temporary file in the same directory and a rename, creating
// the directory when missing. The node checks the temporary file's size
// and sha256 before the rename, so a session cut short (cancelled ctx, a
// lost connection: the remote cat then sees a plain end of file) never
// installs a truncated file; a trap removes the temporary file on every
// failure. Cancelling ctx stops the local ssh; that is safe: path is then
// either untouched or the whole new file.
//
// The node's tools (mkdir, mktemp, cat, wc, sha256sum, chmod, mv, rm) are
// found on the PATH sshd gives root's session, not by absolute paths:
// their directory differs between distributions (/bin or /usr/bin, busybox)
// and whoever can change root's PATH on the node can replace the runbook
// itself anyway.
func (t *Transport) Push(ctx context.Context, dst string, data []byte) error {
	if !strings.HasPrefix(dst, "/") || path.Clean(dst) != dst || dst == "/" {
		return fmt.Errorf("push: %q is not a clean absolute file path", dst)
	}
	if strings.IndexByte(dst, 0) >= 0 {
		return fmt.Errorf("push: %q: %w", dst, executor.ErrShellNUL)
	}
	script := pushScript(dst, len(data), sha256Hex(data))
	if data == nil {
		data = []byte{}
	}
	_, stderr, code, err := t.run(ctx, "push", script, data)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("push %s: exit %d: %s", dst, code, strings.TrimSpace(string(text.LastBytes(stderr, maxErrorStderr))))
	}
	return nil
}

// pushScript is Push's remote command: write stdin to a temporary file
// beside dst, check it has size bytes and sha256 sum, install it.
func pushScript(dst string, size int, sum string) string {
	n := strconv.Itoa(size)
	return strings.Join([]string{
		"set -e",
		"umask 022",
		"d=" + executor.ShellQuote(path.Dir(dst)),
		"p=" + executor.ShellQuote(dst),
		"t=",
		`trap 'if [ -n "$t" ]; then rm -f -- "$t"; fi' EXIT`,
		"trap 'exit 1' HUP INT TERM PIPE",
		`mkdir -p -- "$d"`,
		`t=$(mktemp "$d/.push.XXXXXX")`,
		`cat > "$t"`,
		`n=$(wc -c < "$t")`,
		`if [ "$n" -ne ` + n + ` ]; then echo "push: received $n of ` + n + ` bytes" >&2; exit 1; fi`,
		`s=$(sha256sum < "$t")`,
		`if [ "${s%% *}" != ` + sum + ` ]; then echo "push: sha256 mismatch" >&2; exit 1; fi`,
		`chmod 0755 "$t"`,
		// mv onto a directory (or a link to one) would move the file into
		// it: refuse.
		`if [ -d "$p" ]; then echo "push: $p is a directory" >&2; exit 1; fi`,
		`mv -f -- "$t" "$p"`,
		"t=",
	}, "; ")
}

// Start starts argv on the node with stdin closed. The remote command is a
// wrapper that prints a marker line (a random token, its shell's pid and
// that process's start time, field 22 of /proc/PID/stat) on stdout and on
// stderr, then execs argv: the pid is argv's own. Whatever the remote login
// shell printed before the markers (a noisy .bashrc) is not part of the
// RunResult, so Stdout is exactly the command's (a JSON document decodes).
// Start returns once the stderr marker arrived;
// ctx bounds that wait only (when it ends first, the local ssh is stopped
// and the command may or may not have started on the node). Afterwards
// cancelling ctx does nothing: the caller decides with Signal and Close.
//
// Start returns a *TransportError when ssh failed (exit 255, killed) and a
// plain error when the remote shell ended with another status before the
// marker (a nologin account, a broken login shell).
func (t *Transport) Start(ctx context.Context, argv []string) (executor.Remote, error) {
	return t.start(ctx, argv, nil)
}

// StartStreaming is Start, and hands each line of the command's stderr to
// line as it arrives (StreamingTransport); Wait returns after the last.
func (t *Transport) StartStreaming(ctx context.Context, argv []string, line func(string)) (executor.Remote, error) {
	return t.start(ctx, argv, line)
}

func (t *Transport) start(ctx context.Context, argv []string, stream func(string)) (executor.Remote, error) {
	line, err := executor.ShellCommand(argv)
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	marker := startMarkerPrefix + hex.EncodeToString(nonce[:]) + " "
	// Builtins only (read, printf, set, exec): nothing else runs between
	// the marker and the exec. The process's own comm may hold ')' and
	// spaces: the fields are taken after the last ')'.
	wrapper := `s=; read -r s < /proc/$$/stat || s=; s=${s##*)}; set -f; set -- $s; ` +
		`printf '` + marker + `%s %s\n' "$$" "${20:--}"; ` +
		`printf '` + marker + `%s %s\n' "$$" "${20:--}" >&2; exec ` + line
	cmd, err := t.command(wrapper)
	if err != nil {
		return nil, err
	}
	r := &sshRemote{
		t:       t,
		cmd:     cmd,
		stdout:  &capBuffer{max: maxStdout},
		stderr:  &tailBuffer{max: maxStderr},
		started: make(chan struct{}),
		done:    make(chan struct{}),
	}
	r.outMarker = newMarkerWriter(marker, r.stdout, nil)
	var post io.Writer = r.stderr
	if stream != nil {
		r.lines = &text.Lines{Line: stream}
		post = io.MultiWriter(r.stderr, r.lines)
	}
	r.errMarker = newMarkerWriter(marker, post, r.started)
	cmd.Stdout, cmd.Stderr = r.outMarker, r.errMarker
	if err := ctx.Err(); err != nil {
		return nil, &executor.TransportError{Op: "start", Err: err}
	}
	if err := cmd.Start(); err != nil {
		return nil, &executor.TransportError{Op: "start", Err: err}
	}
	go func() { r.waitErr = cmd.Wait(); close(r.done) }()
	select {
	case <-r.started:
		return r, nil
	case <-r.done:
		select {
		case <-r.started:
			return r, nil
		default:
		}
		code, err := status("start", r.waitErr, r.errMarker.preamble())
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("start: the remote shell ended (exit %d) before the command started: %q",
			code, strings.TrimSpace(string(text.LastBytes(r.errMarker.preamble(), maxErrorStderr))))
	case <-ctx.Done():
		stop(cmd, r.done, t.grace())
		return nil, &executor.TransportError{Op: "start", Err: fmt.Errorf("%w (the command may have started on the node)", ctx.Err())}
	}
}

// sshRemote is one command started by Transport.Start.
type sshRemote struct {
	t      *Transport
	cmd    *exec.Cmd
	stdout *capBuffer
	stderr *tailBuffer
	// outMarker and errMarker take the marker lines out of stdout and
	// stderr (and what the login shell printed before them).
	outMarker, errMarker *markerWriter
	lines                *text.Lines   // StartStreaming's, or nil
	started              chan struct{} // closed when the marker arrived
	done                 chan struct{} // closed when ssh was reaped
	waitErr              error         // set before done is closed

	closeOnce sync.Once
	mu        sync.Mutex
	closed    bool // Close stopped ssh before it ended
}

// Wait waits for ssh to end and returns the command's output (stdout up
// to 16 MiB, the last 256 KiB of stderr, both without the marker lines and
// what came before them; a note in Stderr says what was dropped) and exit
// status.
func (r *sshRemote) Wait() (*executor.RunResult, error) {
	<-r.done
	if r.lines != nil {
		r.lines.Flush()
	}
	res := &executor.RunResult{Stdout: r.stdout.bytes(), Stderr: r.stderr.bytes(), ExitCode: -1}
	if !r.outMarker.identityFound() {
		// No stdout marker (cannot happen with a working printf): do not
		// lose what arrived.
		res.Stdout = r.outMarker.preamble()
	}
	if n := r.stdout.dropped(); n > 0 {
		res.Stderr = append(res.Stderr, fmt.Sprintf("\n[transport: %d bytes of stdout beyond %d dropped]\n", n, maxStdout)...)
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return res, &executor.TransportError{Op: "wait", Err: ErrSessionClosed}
	}
	code, err := status("wait", r.waitErr, r.stderr.bytes())
	res.ExitCode = code
	return res, err
}

// Signal opens a second session that sends sig to the started process if
// /proc/PID/stat still shows the start time the marker reported (a pid
// reused since is left alone). Only SIGTERM, SIGINT and SIGHUP are sent.
// It returns an error wrapping executor.ErrProcessGone when the process ended (or
// is a zombie, or its pid was reused). ctx bounds the whole session.
func (r *sshRemote) Signal(ctx context.Context, sig syscall.Signal) error {
	var name string
	switch sig {
	case syscall.SIGTERM:
		name = "TERM"
	case syscall.SIGINT:
		name = "INT"
	case syscall.SIGHUP:
		name = "HUP"
	default:
		return fmt.Errorf("signal: %v is not allowed (SIGTERM, SIGINT, SIGHUP)", sig)
	}
	pid, start := r.errMarker.identity()
	if start == "-" {
		return fmt.Errorf("signal: the node reported no start time for pid %d (no /proc): refusing to signal unguarded", pid)
	}
	// Between the check and kill the pid could in theory be reused; with
	// pids cycling through pid_max that window (microseconds) is
	// negligible next to the minutes a runbook runs.
	script := fmt.Sprintf(`s=; read -r s < /proc/%d/stat 2>/dev/null || s=; s=${s##*)}; set -f; set -- $s; `+
		`if [ "$#" -ge 20 ] && [ "$1" != Z ] && [ "${20}" = %s ] && kill -s %s %d 2>/dev/null; then echo signalled; else echo gone; fi`,
		pid, executor.ShellQuote(start), name, pid)
	stdout, stderr, code, err := r.t.run(ctx, "signal", script, nil)
	if err != nil {
		return err
	}
	switch strings.TrimSpace(string(stdout)) {
	case "signalled":
		if code == 0 {
			return nil
		}
	case "gone":
		if code == 0 {
			return fmt.Errorf("signal %s to pid %d: %w", name, pid, executor.ErrProcessGone)
		}
	}
	return fmt.Errorf("signal %s to pid %d: exit %d, stdout %q, stderr %q", name, pid, code,
		text.LastBytes(stdout, maxErrorStderr), strings.TrimSpace(string(text.LastBytes(stderr, maxErrorStderr))))
}

// Close stops the local ssh client (SIGTERM, SIGKILL after KillGrace) and
// reaps it; it never signals the remote process, which keeps running. It
// is idempotent. A Wait that had not seen ssh end returns a
// *TransportError wrapping ErrSessionClosed.
func (r *sshRemote) Close() error {
	r.closeOnce.Do(func() {
		select {
		case <-r.done:
			return
		default:
		}
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		stop(r.cmd, r.done, r.t.grace())
	})
	return nil
}

// capBuffer keeps the first max bytes written and counts the rest; it
// never refuses a write, so the pipe is always drained.
type capBuffer struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	drop int64
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf) // never negative
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		b.drop += int64(len(p) - room)
	}
	return len(p), nil
}

func (b *capBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

func (b *capBuffer) dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.drop
}

// tailBuffer keeps the last max bytes written and counts the rest; it
// never refuses a write.
type tailBuffer struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	drop int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		n := len(b.buf) - b.max
		b.drop += int64(n)
		b.buf = append(b.buf[:0:0], b.buf[n:]...)
	}
	return len(p), nil
}

// bytes returns the last max bytes, after a first line saying how many
// were dropped (if any).
func (b *tailBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	all, drop := b.buf, b.drop
	if len(all) > b.max {
		drop += int64(len(all) - b.max)
		all = all[len(all)-b.max:]
	}
	if drop == 0 {
		return append([]byte(nil), all...)
	}
	return append([]byte(fmt.Sprintf("[transport: first %d bytes of stderr dropped]\n", drop)), all...)
}

// markerWriter splits a stream at Start's marker line (found wherever it
// falls, split across writes or not): what comes before it is the remote
// login shell's (a noisy .bashrc) or ssh's and goes to pre; the marker
// line is parsed and dropped; the rest is the command's and goes to post.
// Like the buffers, it never refuses a write.
type markerWriter struct {
	mu      sync.Mutex
	marker  []byte
	found   bool
	pending []byte // bytes that may be the beginning of the marker line
	pre     tailBuffer
	post    io.Writer
	started chan struct{} // closed when the marker was found (nil: none)
	pid     int
	start   string
}

func newMarkerWriter(marker string, post io.Writer, started chan struct{}) *markerWriter {
	return &markerWriter{marker: []byte(marker), pre: tailBuffer{max: maxErrorStderr * 2}, post: post, started: started}
}

// maxMarkerLine bounds the marker line (prefix, pid, start time).
const maxMarkerLine = 160

func (w *markerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found {
		return w.post.Write(p)
	}
	w.pending = append(w.pending, p...)
	for !w.found && len(w.pending) > 0 {
		i := bytes.Index(w.pending, w.marker)
		if i < 0 {
			// Keep only what could still be the start of the marker.
			if cut := len(w.pending) - (len(w.marker) - 1); cut > 0 {
				w.pre.Write(w.pending[:cut])
				w.pending = append([]byte(nil), w.pending[cut:]...)
			}
			break
		}
		nl := bytes.IndexByte(w.pending[i:], '\n')
		if nl < 0 && len(w.pending)-i <= maxMarkerLine {
			break // wait for the rest of the line
		}
		pid := 0
		var fields []string
		if nl >= 0 {
			fields = strings.Fields(string(w.pending[i+len(w.marker) : i+nl]))
			if len(fields) == 2 {
				pid, _ = strconv.Atoi(fields[0])
			}
		}
		if pid <= 0 {
			// Not our line after all: pass it on.
			w.pre.Write(w.pending[:i+len(w.marker)])
			w.pending = append([]byte(nil), w.pending[i+len(w.marker):]...)
			continue
		}
		w.pid, w.start = pid, fields[1]
		w.pre.Write(w.pending[:i])
		rest := w.pending[i+nl+1:]
		w.pending = nil
		w.found = true
		w.post.Write(rest)
		if w.started != nil {
			close(w.started)
		}
	}
	return len(p), nil
}

// preamble is what came before the marker (all of it when there was no
// marker).
func (w *markerWriter) preamble() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(w.pre.bytes(), w.pending...)
}

func (w *markerWriter) identityFound() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found
}

func (w *markerWriter) identity() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pid, w.start
}
