package executor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook/binary"
	"nvke.example/certrunbook/documents"
)

// The demo node's "now": the fixture's etcd peer certificate expires within
// 30 days, so a renewal is due.
const demoNow = "2027-02-10T00:00:00Z"

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", ".."}, parts...)...)
}

// inRepo skips a test that reads the repository's files (fixtures, Rust
// goldens) when the package is tested outside it (a copied or vendored
// package): skipped, not failed.
func inRepo(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(repoPath("Cargo.toml")); err != nil {
		t.Skipf("outside the nvke-cert-runbook repository (%v)", err)
	}
}

// copyTree copies a fixture node tree with the modes the runbook insists on
// (directories 0755, files 0644, keys and kubeconfigs 0600).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			return os.Chmod(to, 0o755)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".key") || strings.HasSuffix(p, ".conf") {
			mode = 0o600
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		return os.Chmod(to, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type demo struct {
	bin  string
	root string
	g    Global
}

func newDemo(t *testing.T) *demo {
	t.Helper()
	if binary.Bytes() == nil {
		t.Skip("built with -tags certrunbook_nobinary: no binary to run")
	}
	dir := t.TempDir()
	bin, err := binary.WriteBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	inRepo(t)
	copyTree(t, repoPath("fixtures", "nodes", "rsa"), root)
	return &demo{bin: bin, root: root, g: Global{
		Root:          root,
		Now:           demoNow,
		Kubeadm:       "/bin/false",
		Crictl:        "/bin/false",
		HealthTimeout: time.Second,
	}}
}

// run execs the binary and returns its exit code and stdout, which must be
// exactly one newline-terminated JSON line.
func (d *demo) run(t *testing.T, args []string, err error) (int, []byte) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(d.bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	out := stdout.Bytes()
	if !bytes.HasSuffix(out, []byte("\n")) || bytes.Count(out, []byte("\n")) != 1 {
		t.Fatalf("%v: stdout is not one JSON line:\n%s\nstderr:\n%s", args, out, stderr.String())
	}
	// Every document carries the process's exit code (contract v1.1).
	if c, ok := docExitCode(out); !ok || c != code {
		t.Errorf("%v: exit %d, document exitCode %d (present %v): %s", args, code, c, ok, out)
	}
	return code, out
}

// Without a Binary (package binary not wired, or built with -tags
// certrunbook_nobinary) an Executor over a plain Transport says so.
func TestNoBinaryNoPush(t *testing.T) {
	if _, err := (&Executor{Transport: newFake()}).Push(context.Background()); !errors.Is(err, ErrNoBinary) || !errors.Is(err, binary.ErrNoBinary) {
		t.Fatalf("Push: %v", err)
	}
	if binary.Embedded() == nil {
		return
	}
	f := newFake()
	if _, err := (&Executor{Transport: f, Binary: binary.Embedded()}).Push(context.Background()); err != nil {
		t.Fatalf("Push of the embedded binary: %v", err)
	}
	for p, sha := range f.files {
		if !strings.HasSuffix(p, "/"+binary.SHA256()+"/nvke-cert-runbook") || sha != binary.SHA256() {
			t.Fatalf("pushed %s (sha256 %s), want the embedded binary", p, sha)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	d := newDemo(t)
	code, out := d.run(t, VersionArgs(), nil)
	v, err := documents.DecodeVersion(out)
	if err != nil || code != documents.ExitOK {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if v.RunbookVersion != binary.Version() || v.ContractVersion != documents.ContractVersion || v.GitCommit != binary.GitCommit() {
		t.Fatalf("--version %+v, manifest %s %s", v, binary.Version(), binary.GitCommit())
	}
	code, out = d.run(t, HelpArgs(), nil)
	h, err := documents.DecodeHelp(out)
	if err != nil || code != documents.ExitOK || !strings.Contains(h.Help, "--status-only") {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
}

func TestCheckStatusFenceOnTheDemoNode(t *testing.T) {
	d := newDemo(t)

	args, err := CheckArgs(d.g, false, "")
	code, out := d.run(t, args, err)
	c, err := documents.DecodeCheck(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != documents.ExitOK || c.Decision != "renew" || len(c.Executors) != 1 || c.Executors[0] != "typed" {
		t.Fatalf("check: exit %d, %+v", code, c)
	}
	due := 0
	for _, cert := range c.Certificates {
		if cert.WithinThreshold != nil && *cert.WithinThreshold {
			due++
			if cert.Name != "etcd-peer" {
				t.Errorf("unexpected due leaf %s", cert.Name)
			}
		}
	}
	if due != 1 || len(c.CASHA256) != 3 || c.Manifests.Etcd.Location != "active" {
		t.Fatalf("check: %+v", c)
	}

	// The demo node has files and no runtime: the live node (v1.2, SPEC 10)
	// is not checked, so the view is not clean (exit 1), and says why.
	args, err = StatusOnlyArgs(d.g, "")
	code, out = d.run(t, args, err)
	s, err := documents.DecodeStatus(out)
	if err != nil || code != documents.ExitFailed || s.Clean || s.Fencing != nil || s.Live == nil || s.Live.Runtime == nil {
		t.Fatalf("status: exit %d, %v: %s", code, err, out)
	}

	// Fencing an operation that never ran: an abandoned receipt.
	args, err = FenceArgs(d.g, "cycle-1@cp-1")
	code, out = d.run(t, args, err)
	f, err := documents.DecodeFence(out)
	if err != nil || code != documents.ExitOK || !f.Confirmed || f.Action != documents.FenceActionAbandoned || f.Receipt == nil ||
		f.Receipt.Outcome != documents.OutcomeAbandoned || f.Reason != documents.FenceReasonAbandoned || f.ExitCode != code {
		t.Fatalf("fence: exit %d, %v: %s", code, err, out)
	}
	state := filepath.Join(d.root, "var/lib/nvke/k8s-cert-renewal")
	b, err := os.ReadFile(filepath.Join(state, "completed", "cycle-1@cp-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := documents.DecodeReceipt(b)
	if err != nil || r.OperationID != "cycle-1@cp-1" || r.Manifests.KubeScheduler != "active" {
		t.Fatalf("receipt: %v: %s", err, b)
	}
	b, err = os.ReadFile(filepath.Join(state, "owner"))
	if err != nil {
		t.Fatal(err)
	}
	if o, err := documents.DecodeLockOwner(b); err != nil || o.Mode != "status-fence" {
		t.Fatalf("owner: %v: %s", err, b)
	}

	// The status view now lists that receipt and would confirm.
	args, err = StatusOnlyArgs(d.g, "cycle-1@cp-1")
	code, out = d.run(t, args, err)
	s, err = documents.DecodeStatus(out)
	if err != nil || code != documents.ExitFailed || s.ReceiptCount != 1 || s.Fencing == nil || s.Fencing.Action != "confirm" ||
		s.Receipt == nil || s.Receipt.Outcome != documents.OutcomeAbandoned {
		t.Fatalf("status with ID: exit %d, %v: %s", code, err, out)
	}

	// A renewal under the fenced ID is refused: replay, exit 5.
	args, err = RenewArgs(d.g, RenewRequest{OperationID: "cycle-1@cp-1"})
	code, out = d.run(t, args, err)
	rr, err := documents.DecodeRenew(out)
	if err != nil || code != documents.ExitFenced || !rr.Replayed || rr.Receipt == nil {
		t.Fatalf("replay: exit %d, %v: %s", code, err, out)
	}
}

func TestRenewalRefusedByTheHealthGate(t *testing.T) {
	// No container runtime here (crictl is /bin/false): a due renewal stops
	// at the health gate with every manifest active.
	d := newDemo(t)
	args, err := RenewArgs(d.g, RenewRequest{OperationID: "cycle-2@cp-1"})
	code, out := d.run(t, args, err)
	r, err := documents.DecodeRenew(out)
	if err != nil || code != documents.ExitFailed || r.Outcome != documents.OutcomeFailed || r.Phase != "health" || r.Success() ||
		r.Manifests.Etcd != "active" || len(r.Certificates) != 11 {
		t.Fatalf("renew: exit %d, %v: %s", code, err, out)
	}
	args, err = LegacyV1Args(d.g, false)
	code, out = d.run(t, args, err)
	if r, err = documents.DecodeRenew(out); err != nil || code != documents.ExitFailed || r.Mode != "legacy-v1" || r.OperationID != nil {
		t.Fatalf("legacy-v1: exit %d, %v: %s", code, err, out)
	}

	// Someone holds the lock: exit 3, nothing done.
	lock, err := os.OpenFile(filepath.Join(d.root, "var/lib/nvke/k8s-cert-renewal/lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	g := d.g
	g.LockTimeout = time.Nanosecond // rounded up to 1 s
	args, err = RenewArgs(g, RenewRequest{OperationID: "cycle-3@cp-1"})
	code, out = d.run(t, args, err)
	// An early failure reports where the four manifests are (issue 14).
	if r, err = documents.DecodeRenew(out); err != nil || code != documents.ExitLockTimeout || r.Phase != "lock" || r.Etcd != nil ||
		r.Manifests.Etcd != "active" || r.Resigned {
		t.Fatalf("lock timeout: exit %d, %v: %s", code, err, out)
	}
	args, err = FenceArgs(g, "cycle-3@cp-1")
	code, out = d.run(t, args, err)
	if f, err := documents.DecodeFence(out); err != nil || code != documents.ExitLockTimeout || f.Confirmed || f.Reason != documents.FenceReasonLockTimeout {
		t.Fatalf("fence, lock held: exit %d, %v: %s", code, err, out)
	}
}

func TestUsageErrors(t *testing.T) {
	d := newDemo(t)
	// --fence without an ID: built by hand, since the builders refuse it.
	code, out := d.run(t, []string{"--output", "json", "--root", d.root, "--status-only", "--fence"}, nil)
	u, err := documents.DecodeUsageError(out)
	if err != nil || code != documents.ExitUsage || u.Outcome != "usage_error" || u.Mode == nil || *u.Mode != "status" {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	// A mode decoder given a usage error says so.
	if _, err := documents.DecodeCheck(out); err == nil {
		t.Fatal("DecodeCheck accepted a usage error")
	} else {
		var ue *documents.UsageErrorResult
		if !errors.As(err, &ue) {
			t.Fatalf("not a UsageErrorResult: %v", err)
		}
	}
	code, out = d.run(t, []string{"--output=json", "--check", "--bogus"}, nil)
	if _, err := documents.DecodeUsageError(out); err != nil || code != documents.ExitUsage {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
}

func TestBuildersRefuseWhatTheBinaryRefuses(t *testing.T) {
	g := Global{Root: "/tmp/x"}
	for _, id := range []string{"", ".a", "-a", "a/b", "a..b", "a b", "ａ", strings.Repeat("a", 201)} {
		if _, err := RenewArgs(g, RenewRequest{OperationID: id}); err == nil {
			t.Errorf("Renew accepted operation ID %q", id)
		}
		if _, err := FenceArgs(g, id); err == nil {
			t.Errorf("Fence accepted operation ID %q", id)
		}
	}
	if _, err := RenewArgs(g, RenewRequest{OperationID: strings.Repeat("a", 200)}); err != nil {
		t.Error(err)
	}
	if _, err := RenewArgs(g, RenewRequest{OperationID: "a", ExpectCASHA256: map[string]string{"sa.pub": strings.Repeat("a", 64)}}); err == nil {
		t.Error("unknown CA accepted")
	}
	if _, err := CheckArgs(Global{ThresholdDays: 91}, false, ""); err == nil {
		t.Error("threshold 91 accepted")
	}
	if _, err := CheckArgs(Global{Now: demoNow}, false, ""); err == nil {
		t.Error("Now without a root accepted")
	}
	a, err := RenewArgs(Global{Root: "/r", LockTimeout: 1500 * time.Millisecond, ThresholdDays: 45}, RenewRequest{
		OperationID:    "op",
		Force:          true,
		ExpectCASHA256: map[string]string{"etcd/ca.crt": strings.Repeat("A", 64), "ca.crt": strings.Repeat("b", 64)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "--output json --root /r --threshold-days 45 --lock-timeout 2 --operation-id op --force " +
		"--expect-ca-sha256 ca.crt=" + strings.Repeat("b", 64) + " --expect-ca-sha256 etcd/ca.crt=" + strings.Repeat("a", 64)
	if got := strings.Join(a, " "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// SPEC 11: the operator's recovery, never forced, with the saved
	// ClusterConfiguration.
	a, err = RecoverExpiredArgs(Global{KubeadmConfig: "/root/kubeadm-config.yaml"}, "recover-1@cp-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want = "--output json --kubeadm-config /root/kubeadm-config.yaml --operation-id recover-1@cp-1 --recover-expired"
	if got := strings.Join(a, " "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := RecoverExpiredArgs(Global{}, "../x", nil); err == nil {
		t.Error("a bad operation ID accepted")
	}
}
