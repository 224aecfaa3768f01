package sshtransport

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook/executor"
	"nvke.example/certrunbook/internal/testsupport"
)

// testSSHD is a real OpenSSH server on 127.0.0.1 for one test, and a
// transport pinned to its host key.
type testSSHD struct {
	dir  string
	port int
	tr   *Transport
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func keygen(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
}

// startSSHD runs /usr/sbin/sshd -D -e on a free port, or skips the test
// when that is impossible here (not root, no sshd).
func startSSHD(t *testing.T) *testSSHD {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: sshd only logs in as the user it runs as, and the runbook's transport logs in as root")
	}
	for _, p := range []string{"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("OpenSSH is not installed here (%v)", err)
		}
	}
	// sshd's privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Skipf("cannot create /run/sshd: %v", err)
	}
	dir := t.TempDir()
	keygen(t, filepath.Join(dir, "host_key"))
	keygen(t, filepath.Join(dir, "client_key"))
	pub, err := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	hostFields := strings.Fields(string(hostPub))

	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		cfg := filepath.Join(dir, "sshd_config")
		conf := strings.Join([]string{
			"Port " + strconv.Itoa(port),
			"ListenAddress 127.0.0.1",
			"HostKey " + filepath.Join(dir, "host_key"),
			"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
			"PermitRootLogin prohibit-password",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"UsePAM no",
			"StrictModes no",
			"PidFile " + filepath.Join(dir, "sshd.pid"),
			"LogLevel ERROR",
			"",
		}, "\n")
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", cfg)
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatalf("sshd: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		listening := false
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && !listening {
			select {
			case err := <-exited:
				t.Logf("sshd on port %d exited: %v: %s", port, err, log.String())
				deadline = time.Time{}
				continue
			default:
			}
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond); err == nil {
				c.Close()
				listening = true
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if !listening {
			_ = cmd.Process.Kill()
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			if t.Failed() {
				t.Logf("sshd log: %s", log.String())
			}
		})
		kh := filepath.Join(dir, "known_hosts")
		line := fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, hostFields[0], hostFields[1])
		if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		return &testSSHD{dir: dir, port: port, tr: &Transport{
			Host:   "root@127.0.0.1",
			Config: "none",
			Options: []string{
				"Port=" + strconv.Itoa(port),
				"IdentityFile=" + filepath.Join(dir, "client_key"),
				"IdentitiesOnly=yes",
				"UserKnownHostsFile=" + kh,
				"GlobalKnownHostsFile=/dev/null",
				"StrictHostKeyChecking=yes",
				"ConnectTimeout=5",
			},
			KillGrace: time.Second,
		}}
	}
	t.Fatal("sshd did not start listening in 3 attempts")
	return nil
}

func startT(t *testing.T, tr executor.Transport, argv ...string) *sshRemote {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := tr.Start(ctx, argv)
	if err != nil {
		t.Fatalf("Start %q: %v", argv, err)
	}
	return r.(*sshRemote)
}

// waitT waits at most d for r to end.
func waitT(t *testing.T, r executor.Remote, d time.Duration) (*executor.RunResult, error) {
	t.Helper()
	type res struct {
		r   *executor.RunResult
		err error
	}
	ch := make(chan res, 1)
	go func() { rr, err := r.Wait(); ch <- res{rr, err} }()
	select {
	case x := <-ch:
		return x.r, x.err
	case <-time.After(d):
		r.Close()
		t.Fatalf("Wait did not return within %v", d)
		return nil, nil
	}
}

// localStart returns field 22 of /proc/PID/stat on this machine (the test
// node is this machine), or "" when there is no such process.
func localStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}

const termLoop = `trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.1; done`

func waitReady(t *testing.T, r *sshRemote) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !bytes.Contains(r.stdout.bytes(), []byte("ready\n")) {
		if time.Now().After(deadline) {
			t.Fatalf("remote never printed ready; stderr %q", r.stderr.bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSSHStartWaitHostileArgv(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	words := testsupport.HostileWords()
	argv := append([]string{"/bin/sh", "-c", `printf '%s\0' "$@"; echo to-stderr >&2; echo "$0" >&2`, "zero word"}, words...)
	r := startT(t, s.tr, argv...)
	pid, start := r.errMarker.identity()
	res, err := waitT(t, r, 10*time.Second)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if want := "to-stderr\nzero word\n"; string(res.Stderr) != want {
		t.Errorf("stderr %q, want %q (the marker line taken out)", res.Stderr, want)
	}
	got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("got %d words %q, sent %d", len(got), got, len(words))
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: sent %q, got %q", i, words[i], got[i])
		}
	}
	if pid <= 0 || start == "" || start == "-" {
		t.Errorf("marker: pid %d start %q", pid, start)
	}
}

// The marker's pid is the command's own (the wrapper execs it), with the
// start time /proc shows for it.
func TestSSHMarkerIsTheCommandsPid(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	r := startT(t, s.tr, "/bin/sh", "-c", `echo $$; read -r x < /proc/$$/stat; echo "$x"`)
	pid, start := r.errMarker.identity()
	res, err := waitT(t, r, 10*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait: %v %+v", err, res)
	}
	lines := strings.SplitN(string(res.Stdout), "\n", 2)
	if lines[0] != strconv.Itoa(pid) {
		t.Fatalf("command's pid %s, marker's %d", lines[0], pid)
	}
	stat := lines[1]
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 20 || f[19] != start {
		t.Fatalf("command's start time %v, marker's %q", f, start)
	}
}

func TestSSHExitCodes(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	for _, code := range []int{0, 1, 3, 4, 5} {
		r := startT(t, s.tr, "/bin/sh", "-c", "echo out; echo err >&2; exit "+strconv.Itoa(code))
		res, err := waitT(t, r, 10*time.Second)
		if err != nil {
			t.Fatalf("exit %d: Wait error %v", code, err)
		}
		if res.ExitCode != code || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
			t.Errorf("exit %d: got %+v (stdout %q stderr %q)", code, res, res.Stdout, res.Stderr)
		}
	}
	// 255 is ssh's own: the transport cannot tell it from the command's.
	r := startT(t, s.tr, "/bin/sh", "-c", "exit 255")
	res, err := waitT(t, r, 10*time.Second)
	if !executor.IsTransportError(err) || res.ExitCode != -1 {
		t.Errorf("exit 255: %+v, %v; want a TransportError and -1", res, err)
	}
	// A command killed by a signal has no exit status.
	r = startT(t, s.tr, "/bin/sh", "-c", "kill -KILL $$")
	res, err = waitT(t, r, 10*time.Second)
	if !executor.IsTransportError(err) || res.ExitCode != -1 {
		t.Errorf("killed: %+v, %v; want a TransportError and -1", res, err)
	}
}

func TestSSHStdinIsClosed(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	r := startT(t, s.tr, "cat")
	res, err := waitT(t, r, 5*time.Second)
	if err != nil || res.ExitCode != 0 || len(res.Stdout) != 0 {
		t.Fatalf("cat: %+v, %v", res, err)
	}
}

func TestSSHLargeOutputBothPipes(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	const size = 8 << 20
	r := startT(t, s.tr, "/bin/sh", "-c",
		`i=0; while [ $i -lt 2000 ]; do echo "err line $i" >&2; i=$((i+1)); done &
yes 0123456789abcde | head -c `+strconv.Itoa(size)+`; wait`)
	res, err := waitT(t, r, 20*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait: %v, %+v", err, res.ExitCode)
	}
	want := bytes.Repeat([]byte("0123456789abcde\n"), size/16)
	if !bytes.Equal(res.Stdout, want) {
		t.Fatalf("stdout: %d bytes, want %d of the pattern", len(res.Stdout), len(want))
	}
	lines := strings.Split(strings.TrimSuffix(string(res.Stderr), "\n"), "\n")
	if len(lines) != 2000 || lines[0] != "err line 0" || lines[1999] != "err line 1999" {
		t.Fatalf("stderr: %d lines, first %q", len(lines), lines[0])
	}
}

// Beyond the bounds the pipes are still drained (the command ends), and
// what was dropped is said.
func TestSSHOutputBounds(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	r := startT(t, s.tr, "/bin/sh", "-c",
		`head -c 1048576 /dev/zero | tr '\0' e >&2; head -c 17825792 /dev/zero; echo last-err >&2`)
	res, err := waitT(t, r, 20*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait: %v", err)
	}
	if len(res.Stdout) != maxStdout {
		t.Errorf("stdout %d bytes, want %d", len(res.Stdout), maxStdout)
	}
	if !bytes.Contains(res.Stderr, []byte("last-err\n")) ||
		!bytes.HasPrefix(res.Stderr, []byte("[transport: first ")) ||
		!bytes.HasSuffix(res.Stderr, []byte("[transport: 1048576 bytes of stdout beyond 16777216 dropped]\n")) {
		t.Errorf("stderr (%d bytes) head %q tail %q", len(res.Stderr), res.Stderr[:60], res.Stderr[len(res.Stderr)-120:])
	}
	if len(res.Stderr) > maxStderr+200 {
		t.Errorf("stderr kept %d bytes", len(res.Stderr))
	}
}

func TestSSHSignal(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	r := startT(t, s.tr, "/bin/sh", "-c", termLoop)
	waitReady(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Signal(ctx, syscall.SIGKILL); err == nil {
		t.Fatal("SIGKILL allowed")
	}
	if err := r.Signal(ctx, syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	res, err := waitT(t, r, 10*time.Second)
	if err != nil || res.ExitCode != 7 || string(res.Stdout) != "ready\ngot-term\n" {
		t.Fatalf("after SIGTERM: %v, exit %d, stdout %q", err, res.ExitCode, res.Stdout)
	}
	// The process ended: the next Signal finds it gone.
	err = r.Signal(ctx, syscall.SIGTERM)
	if !errors.Is(err, executor.ErrProcessGone) || executor.IsTransportError(err) {
		t.Fatalf("Signal after the end: %v, want executor.ErrProcessGone", err)
	}
}

// A pid whose start time is not the marker's (pid reuse) is not signalled.
func TestSSHSignalPidReuseGuard(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	r := startT(t, s.tr, "/bin/sh", "-c", termLoop)
	waitReady(t, r)
	pid, start := r.errMarker.identity()
	if localStart(pid) != start {
		t.Fatalf("marker start %q, /proc says %q", start, localStart(pid))
	}
	// Another process's identity: same pid, another start time.
	other := &markerWriter{pid: pid, start: strconv.Itoa(mustAtoi(t, start) + 1)}
	impostor := &sshRemote{t: r.t, errMarker: other}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := impostor.Signal(ctx, syscall.SIGTERM); !errors.Is(err, executor.ErrProcessGone) {
		t.Fatalf("Signal with another start time: %v, want executor.ErrProcessGone", err)
	}
	time.Sleep(300 * time.Millisecond)
	if localStart(pid) != start || bytes.Contains(r.stdout.bytes(), []byte("got-term")) {
		t.Fatal("the guarded Signal signalled the process")
	}
	if err := r.Signal(ctx, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if res, _ := waitT(t, r, 10*time.Second); res.ExitCode != 7 {
		t.Fatalf("exit %d", res.ExitCode)
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Close stops the local client only: the remote process keeps running.
func TestSSHCloseLeavesRemoteRunning(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	r := startT(t, s.tr, "/bin/sh", "-c", termLoop)
	waitReady(t, r)
	pid, start := r.errMarker.identity()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	res, err := waitT(t, r, 5*time.Second)
	if !executor.IsTransportError(err) || !errors.Is(err, ErrSessionClosed) || res.ExitCode != -1 {
		t.Fatalf("Wait after Close: %+v, %v", res, err)
	}
	time.Sleep(500 * time.Millisecond)
	if localStart(pid) != start {
		t.Fatal("the remote process died with the client")
	}
	// A second session still reaches it (and cleans up).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Signal(ctx, syscall.SIGTERM); err != nil {
		t.Fatalf("Signal after Close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for localStart(pid) == start {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("SIGTERM after Close did not end the remote process")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// After Start returned, cancelling its ctx does not touch the session.
func TestSSHStartCtxOnlyBoundsStart(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	ctx, cancel := context.WithCancel(context.Background())
	rr, err := s.tr.Start(ctx, []string{"/bin/sh", "-c", "sleep 0.5; echo finished"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := waitT(t, rr, 10*time.Second)
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "finished\n" {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestSSHUnreachable(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	tr := *s.tr
	tr.Options = append([]string{"Port=" + strconv.Itoa(freePort(t))}, s.tr.Options[1:]...)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := tr.Start(ctx, []string{"true"})
	if err == nil {
		_, err = r.Wait()
	}
	var te *executor.TransportError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "Connection refused") {
		t.Fatalf("closed port: %v, want a TransportError with ssh's message", err)
	}
	if d := time.Since(began); d > 6*time.Second {
		t.Fatalf("took %v", d)
	}
	// A host key that is not the pinned one.
	tr = *s.tr
	kh := filepath.Join(s.dir, "other_known_hosts")
	keygen(t, filepath.Join(s.dir, "other_key"))
	pub, _ := os.ReadFile(filepath.Join(s.dir, "other_key.pub"))
	f := strings.Fields(string(pub))
	os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s %s\n", s.port, f[0], f[1])), 0o600)
	tr.Options = append([]string(nil), s.tr.Options...)
	tr.Options[3] = "UserKnownHostsFile=" + kh // ssh takes an option's first value
	if _, err := tr.Start(ctx, []string{"true"}); !executor.IsTransportError(err) {
		t.Fatalf("wrong host key: %v, want a TransportError", err)
	}
	if err := tr.Push(ctx, filepath.Join(s.dir, "never"), []byte("x")); !executor.IsTransportError(err) {
		t.Fatalf("push, wrong host key: %v", err)
	}
}

func dotPushFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".push.*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSSHPush(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	data := make([]byte, 1<<20)
	rand.Read(data)
	for i := 0; i < 256; i++ {
		data[i] = byte(i)
	}
	dir := filepath.Join(s.dir, "node dir", "it's")
	dst := filepath.Join(dir, "nvke-cert-runbook")
	for _, d := range [][]byte{data, []byte("second, shorter\n"), {}} {
		if err := s.tr.Push(ctx, dst, d); err != nil {
			t.Fatalf("Push: %v", err)
		}
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, d) {
			t.Fatalf("pushed %d bytes, read %d (%v)", len(d), len(got), err)
		}
		st, _ := os.Stat(dst)
		if st.Mode().Perm() != 0o755 {
			t.Fatalf("mode %v", st.Mode())
		}
		if m := dotPushFiles(t, dir); len(m) != 0 {
			t.Fatalf("left behind: %q", m)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("dir: %v %v", st, err)
	}

	// A push that fails (the parent is a regular file) leaves nothing.
	reg := filepath.Join(s.dir, "regular")
	os.WriteFile(reg, []byte("keep"), 0o644)
	err := s.tr.Push(ctx, filepath.Join(reg, "sub", "x"), data)
	if err == nil || executor.IsTransportError(err) {
		t.Fatalf("push under a regular file: %v, want a plain error", err)
	}
	if b, _ := os.ReadFile(reg); string(b) != "keep" {
		t.Fatal("the regular file changed")
	}
	// A push into a directory where the target name is a directory fails
	// after the temp file was written: the trap removes it.
	blocked := filepath.Join(s.dir, "blocked")
	os.MkdirAll(filepath.Join(blocked, "x", "inner"), 0o755)
	if err := s.tr.Push(ctx, filepath.Join(blocked, "x"), data); err == nil || executor.IsTransportError(err) {
		t.Fatalf("push onto a non-empty directory: %v", err)
	}
	for _, d := range []string{blocked, filepath.Join(blocked, "x")} {
		if m := dotPushFiles(t, d); len(m) != 0 {
			t.Fatalf("failed push left %q", m)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(blocked, "x")); len(ents) != 1 || ents[0].Name() != "inner" {
		t.Fatalf("the directory at the path changed: %v", ents)
	}
	if err := s.tr.Push(ctx, "relative/x", data); err == nil {
		t.Fatal("relative path accepted")
	}
}

// The node refuses to install a file that did not arrive whole (what a
// session cut short looks like to the remote cat: a plain end of file).
func TestSSHPushTruncatedNeverInstalled(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := filepath.Join(s.dir, "trunc")
	dst := filepath.Join(dir, "bin")
	data := bytes.Repeat([]byte("0123456789"), 1000)
	for _, sent := range [][]byte{data[:len(data)/2], append(append([]byte(nil), data[:len(data)-1]...), 'X')} {
		_, stderr, code, err := s.tr.run(ctx, "push", pushScript(dst, len(data), sha256Hex(data)), sent)
		if err != nil || code == 0 {
			t.Fatalf("short push: exit %d, %v, %s", code, err, stderr)
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Fatalf("truncated file installed: %v", err)
		}
		if m := dotPushFiles(t, dir); len(m) != 0 {
			t.Fatalf("left %q", m)
		}
	}
	// Cancelled halfway: either the whole file or none, and no temp file.
	big := make([]byte, 64<<20)
	rand.Read(big)
	cctx, ccancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer ccancel()
	err := s.tr.Push(cctx, dst, big)
	got, rerr := os.ReadFile(dst)
	switch {
	case err == nil && !bytes.Equal(got, big):
		t.Fatal("push succeeded with other bytes")
	case err != nil && !os.IsNotExist(rerr):
		t.Fatalf("cancelled push (%v) left a file at the path", err)
	}
	t.Logf("cancelled push: %v", err)
	deadline := time.Now().Add(5 * time.Second)
	for len(dotPushFiles(t, dir)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("cancelled push left %q", dotPushFiles(t, dir))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The ssh argv and environment, checked with a fake client that records
// them and runs the remote command with /bin/sh.
func TestSSHArgvAndEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-ssh")
	script := "#!/bin/sh\nprintf '%s\\0' \"$@\" > " + dir + "/argv\nenv > " + dir + "/env\necho login-noise; echo login-noise >&2\nfor last; do :; done\nexec /bin/sh -c \"$last\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var prepared int32
	tr := &Transport{SSH: fake, Host: "root@node", Options: []string{"ConnectTimeout=5"},
		Prepare: func(*exec.Cmd) { atomic.AddInt32(&prepared, 1) }}
	r := startT(t, tr, "echo", "a b")
	res, err := waitT(t, r, 5*time.Second)
	if err != nil || string(res.Stdout) != "a b\n" || len(res.Stderr) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "argv"))
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	want := []string{"-T", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", "--", "root@node"}
	if len(argv) != len(want)+1 || strings.Join(argv[:len(want)], " ") != strings.Join(want, " ") {
		t.Fatalf("argv %q", argv)
	}
	if !strings.HasSuffix(argv[len(want)], "; exec echo 'a b'") {
		t.Fatalf("remote command %q", argv[len(want)])
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	for _, l := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		if l != "PATH=/usr/sbin:/usr/bin:/sbin:/bin" && !strings.HasPrefix(l, "PWD=") {
			t.Errorf("environment has %q", l)
		}
	}
	if atomic.LoadInt32(&prepared) != 1 {
		t.Fatalf("Prepare called %d times", prepared)
	}
	for _, bad := range []*Transport{
		{SSH: "ssh", Host: "h"},
		{SSH: fake, Host: "-oProxyCommand=x"},
		{SSH: fake, Host: ""},
		{SSH: fake, Host: "h", Options: []string{"-F/x"}},
	} {
		if _, err := bad.Start(context.Background(), []string{"true"}); err == nil || executor.IsTransportError(err) {
			t.Errorf("%+v: %v, want a plain error", bad, err)
		}
	}
	if _, err := tr.Start(context.Background(), []string{"a\x00b"}); !errors.Is(err, executor.ErrShellNUL) {
		t.Errorf("NUL: %v", err)
	}
	// A remote shell that ends before the marker: a plain error.
	tr2 := &Transport{SSH: "/bin/false", Host: "h"}
	if _, err := tr2.Start(context.Background(), []string{"true"}); err == nil || executor.IsTransportError(err) {
		t.Errorf("no marker: %v", err)
	}
}

// The marker may be split across writes and preceded by other output on
// the same line; only what follows its line is the command's.
func TestMarkerWriter(t *testing.T) {
	post := &tailBuffer{max: 1 << 10}
	started := make(chan struct{})
	w := newMarkerWriter(startMarkerPrefix+"abc ", post, started)
	in := "motd line\n" + startMarkerPrefix + "abc x\npartial" + startMarkerPrefix + "abc 42 12345\nafter\n" + startMarkerPrefix + "abc 7 8\n"
	for i := 0; i < len(in); i += 3 {
		j := i + 3
		if j > len(in) {
			j = len(in)
		}
		w.Write([]byte(in[i:j]))
	}
	select {
	case <-started:
	default:
		t.Fatal("marker not seen")
	}
	if pid, st := w.identity(); pid != 42 || st != "12345" {
		t.Fatalf("identity %d %q", pid, st)
	}
	if got := string(post.bytes()); got != "after\n"+startMarkerPrefix+"abc 7 8\n" {
		t.Fatalf("command's output %q", got)
	}
	if got := string(w.preamble()); got != "motd line\n"+startMarkerPrefix+"abc x\npartial" {
		t.Fatalf("preamble %q", got)
	}
}

// StartStreaming hands over each stderr line while the command still runs
// (the marker line taken out), the last partial line before Wait returns,
// and RunResult.Stderr keeps them all.
func TestSSHStartStreaming(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	gate := filepath.Join(t.TempDir(), "go-on")
	var mu sync.Mutex
	var got []string
	first := make(chan struct{})
	line := func(l string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, l)
		if len(got) == 1 {
			close(first)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st executor.StreamingTransport = s.tr
	r, err := st.StartStreaming(ctx, []string{"/bin/sh", "-c",
		`echo one >&2; while [ ! -e "$0" ]; do sleep 0.05; done; echo two >&2; printf partial >&2; echo out`, gate}, line)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		r.Close()
		t.Fatal("no line arrived while the command ran")
	}
	mu.Lock()
	if len(got) != 1 || got[0] != "one" {
		t.Errorf("before the command went on: %q", got)
	}
	mu.Unlock()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := waitT(t, r, 10*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"one", "two", "partial"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	if string(res.Stderr) != "one\ntwo\npartial" || string(res.Stdout) != "out\n" {
		t.Errorf("result: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}
