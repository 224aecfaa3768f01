//go:build nvke_e2e

package certrunbook

// The Executor over the real sshtransport.Transport against a node of the namespaced
// lab of tests/e2e (real sshd, real etcd, the simulated kubelet). The Rust
// test go_executor_over_real_ssh (tests/e2e.rs) builds the lab, writes the
// configuration named by NVKE_GO_LAB and runs this test binary inside the
// lab's network namespace; the pid namespace and the host filesystem are
// shared, so the node's files are read at their host paths and the runbook
// is signalled by pid. Without NVKE_GO_LAB the test skips.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/executor"
	"nvke.example/certrunbook/internal/artifact"
	"nvke.example/certrunbook/sshtransport"
)

// labConfig is what the Rust side writes (host paths of one node).
type labConfig struct {
	Node       string `json:"node"`
	IP         string `json:"ip"`
	Etc        string `json:"etcKubernetes"` // the node's /etc/kubernetes
	VarLibNvke string `json:"varLibNvke"`    // the node's /var/lib/nvke
	State      string `json:"stateDir"`      // the node's /var/lib/nvke/k8s-cert-renewal
	Sim        string `json:"simDir"`        // the node's /usr/local (containers.json)
	SSHKey     string `json:"sshKey"`
	KnownHosts string `json:"knownHosts"`
	Runbook    string `json:"runbook"` // the binary to push
}

// labNode reads the node's files on the host (test oracle).
type labNode struct {
	t   *testing.T
	cfg labConfig
}

const (
	poll       = 25 * time.Millisecond
	longWait   = 3 * time.Minute
	opDeadline = 5 * time.Minute
)

// neverStop sets the simulated kubelet's knob (sim.json, re-read on every
// poll): the listed components' old containers ignore their stop, so a
// restart of one of them waits (up to --stop-timeout) with its manifest
// staged, long enough for any signal to land there.
func (n *labNode) neverStop(cs ...documents.Component) {
	p := filepath.Join(n.cfg.Sim, "sim.json")
	b, err := os.ReadFile(p)
	if err != nil {
		n.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		n.t.Fatal(err)
	}
	names := []string{}
	for _, c := range cs {
		names = append(names, string(c))
	}
	m["neverStop"] = names
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		n.t.Fatal(err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		n.t.Fatal(err)
	}
}

func (n *labNode) staged(c documents.Component) string {
	return filepath.Join(n.cfg.Etc, "nvke-cert-renewal-staging", string(c)+".yaml")
}

// running returns the running control-plane container IDs by component.
func (n *labNode) running() map[documents.Component]string {
	b, err := os.ReadFile(filepath.Join(n.cfg.Sim, "containers.json"))
	if err != nil {
		return nil
	}
	var doc struct {
		Containers []struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			State     string `json:"state"`
			ID        string `json:"id"`
		} `json:"containers"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	out := map[documents.Component]string{}
	for _, c := range doc.Containers {
		if c.State == "CONTAINER_RUNNING" && c.Namespace == "kube-system" && documents.Component(c.Name).Valid() {
			out[documents.Component(c.Name)] = c.ID
		}
	}
	return out
}

// allActive: the four manifests in manifests/, nothing in the runbook's
// staging directory.
func (n *labNode) allActive() error {
	for _, c := range documents.Components {
		if _, err := os.Stat(filepath.Join(n.cfg.Etc, "manifests", string(c)+".yaml")); err != nil {
			return fmt.Errorf("%s is not active: %v", c, err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(n.cfg.Etc, "nvke-cert-renewal-staging"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return fmt.Errorf("left in the staging directory: %v", names)
	}
	return nil
}

// lockFree probes the runbook's flock without waiting.
func (n *labNode) lockFree() error {
	f, err := os.OpenFile(filepath.Join(n.cfg.State, "lock"), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no run yet
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("the lock is held: %v", err)
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

func (n *labNode) receipt(id string) *documents.Receipt {
	b, err := os.ReadFile(filepath.Join(n.cfg.State, "completed", id+".json"))
	if err != nil {
		return nil
	}
	r, err := documents.DecodeReceipt(b)
	if err != nil {
		n.t.Errorf("receipt of %s: %v", id, err)
		return nil
	}
	return r
}

func (n *labNode) phase() []byte {
	b, _ := os.ReadFile(filepath.Join(n.cfg.State, "phase"))
	return b
}

// waitFor polls cond every 25 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(poll)
	}
	return cond()
}

// clean waits until the four pods run, then asserts every manifest is
// active and the lock is free: what the next subtest starts from.
func (n *labNode) clean() {
	n.t.Helper()
	if !waitFor(longWait, func() bool { return len(n.running()) == len(documents.Components) }) {
		n.t.Fatalf("the four control-plane pods are not all running: %v", n.running())
	}
	if err := n.allActive(); err != nil {
		n.t.Fatal(err)
	}
	if err := n.lockFree(); err != nil {
		n.t.Fatal(err)
	}
}

// runbookPID is the pid of the runbook running id (state/owner, checked
// against /proc/PID/cmdline), 0 if none.
func (n *labNode) runbookPID(id string) int {
	b, err := os.ReadFile(filepath.Join(n.cfg.State, "owner"))
	if err != nil {
		return 0
	}
	o, err := documents.DecodeLockOwner(b)
	if err != nil || o.OperationID == nil || *o.OperationID != id {
		return 0
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", o.PID))
	if err != nil || !strings.Contains(string(cmd), id) || !strings.Contains(string(cmd), documents.BinaryName) {
		return 0
	}
	return int(o.PID)
}

// logs collects the Executor's Logf lines (and passes them to t.Logf).
type logs struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
	l.t.Log(s)
}

func (l *logs) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// recorder wraps a Transport: records every argv started and, with delay
// set, starts a command only once delay (from the call) has passed, on a
// context without ctx's cancellation, and returns only once it ended: a
// delayed activity attempt whose command reaches the node after the
// activity's deadline.
type recorder struct {
	inner executor.Transport
	delay func() time.Duration

	mu       sync.Mutex
	argvs    [][]string
	signals  []error
	startsAt []time.Time
}

func (r *recorder) Push(ctx context.Context, path string, data []byte) error {
	return r.inner.Push(ctx, path, data)
}

func (r *recorder) Start(ctx context.Context, argv []string) (executor.Remote, error) {
	if r.delay != nil {
		time.Sleep(r.delay())
		ctx = context.WithoutCancel(ctx)
	}
	r.mu.Lock()
	r.argvs = append(r.argvs, slices.Clone(argv))
	r.startsAt = append(r.startsAt, time.Now())
	r.mu.Unlock()
	rem, err := r.inner.Start(ctx, argv)
	if err != nil || r.delay == nil {
		return rem, err
	}
	// Wait here: the command runs to its end on the node, whatever the
	// Executor does once ctx is over (it may send SIGTERM, which then
	// finds the process gone).
	res, werr := rem.Wait()
	return &finished{Remote: rem, rec: r, res: res, err: werr}, nil
}

func (r *recorder) fenceStarts() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for i, a := range r.argvs {
		if slices.Contains(a, "--fence") {
			out = append(out, r.startsAt[i])
		}
	}
	return out
}

type finished struct {
	executor.Remote
	rec *recorder
	res *executor.RunResult
	err error
}

func (f *finished) Wait() (*executor.RunResult, error) { return f.res, f.err }

func (f *finished) Signal(ctx context.Context, sig syscall.Signal) error {
	err := f.Remote.Signal(ctx, sig)
	f.rec.mu.Lock()
	f.rec.signals = append(f.rec.signals, err)
	f.rec.mu.Unlock()
	return err
}

func argValue(argv []string, name string) string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == name {
			return argv[i+1]
		}
	}
	return ""
}

func restartedComponents(r *documents.RenewResult) []documents.Component {
	var out []documents.Component
	for _, x := range r.Restarts {
		out = append(out, x.Component)
	}
	return out
}

func TestLab(t *testing.T) {
	cfgPath := os.Getenv("NVKE_GO_LAB")
	if cfgPath == "" {
		t.Skip("NVKE_GO_LAB is not set: run through tests/e2e.rs go_executor_over_real_ssh")
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg labConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(cfg.Runbook)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	sha := hex.EncodeToString(sum[:])
	node := &labNode{t: t, cfg: cfg}
	ssh := &sshtransport.Transport{
		SSH:  "/usr/bin/ssh",
		Host: "root@" + cfg.IP,
		Options: []string{
			"IdentityFile=" + cfg.SSHKey,
			"IdentitiesOnly=yes",
			"UserKnownHostsFile=" + cfg.KnownHosts,
			"GlobalKnownHostsFile=/dev/null",
			"StrictHostKeyChecking=yes",
			"ConnectTimeout=10",
			"ServerAliveInterval=5",
		},
	}
	newExecutor := func(t *testing.T, tr executor.Transport) (*executor.Executor, *logs) {
		l := &logs{t: t}
		return &executor.Executor{Transport: tr, Global: executor.Global{}, AllowLegacyFallback: true, Logf: l.logf, Binary: artifact.New(bin)}, l
	}
	stamp := time.Now().Unix()
	opID := func(label string) string { return fmt.Sprintf("go-lab-%d-%s:%s", stamp, label, cfg.Node) }
	summary := func(format string, args ...any) {
		// One line per measurement, for the Rust side's log.
		fmt.Printf("LAB: "+format+"\n", args...)
	}
	node.clean()

	t.Run("1-check-renew-replay", func(t *testing.T) {
		node.t = t
		e, l := newExecutor(t, ssh)
		pushed := filepath.Join(cfg.VarLibNvke, "bin", sha, documents.BinaryName)
		if _, err := os.Stat(pushed); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s exists before the first run (%v): the push would not be tested", pushed, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), opDeadline)
		defer cancel()
		t0 := time.Now()
		c, plan, err := e.Check(ctx, true, "")
		if err != nil {
			t.Fatal(err)
		}
		checkTook := time.Since(t0)
		// No node agent here (agent state absent) and nothing pending: the
		// check selects typed with the legacy fallback, which the guide
		// takes when the agent's V2 Start is Unimplemented.
		if c.Decision != documents.DecisionRenew || c.ExitCode != documents.ExitOK || c.AgentState.State != documents.AgentAbsent ||
			!plan.TypedFirst() || !plan.NoPendingIntent || !plan.FallbackToLegacy(true) {
			t.Fatalf("check: decision %s, executors %v, legacyFallback %v, agent %s, exit %d", c.Decision, plan.Executors, c.LegacyFallback, c.AgentState.State, c.ExitCode)
		}
		// The first run found no binary (exit 126), pushed it, ran again.
		if n := l.count("pushing " + executor.DefaultBinaryDir + "/" + sha + "/" + documents.BinaryName); n != 1 {
			t.Fatalf("%d pushes, want 1", n)
		}
		got, err := os.ReadFile(pushed)
		if err != nil {
			t.Fatal(err)
		}
		if s := sha256.Sum256(got); hex.EncodeToString(s[:]) != sha {
			t.Fatalf("%s on the node is not the runbook", pushed)
		}
		if st, _ := os.Stat(pushed); st.Mode().Perm() != 0o755 {
			t.Fatalf("%s mode %v", pushed, st.Mode())
		}
		before := node.running()
		id := opID("renew")
		t1 := time.Now()
		r, err := e.Renew(ctx, executor.RenewRequest{OperationID: id, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		renewTook := time.Since(t1)
		if r.Status != documents.Succeeded || r.Reason != documents.ReasonRenewed || r.ExitCode != documents.ExitOK || r.OperationID != id {
			t.Fatalf("renew: %+v", r)
		}
		d := r.Renew
		if d.Replayed || !d.ReceiptWritten || d.Outcome != documents.OutcomeRenewed || d.ExitCode != documents.ExitOK || d.Phase != documents.PhaseDone {
			t.Fatalf("renew document: replayed %v receiptWritten %v outcome %s phase %s exit %d", d.Replayed, d.ReceiptWritten, d.Outcome, d.Phase, d.ExitCode)
		}
		if got := restartedComponents(d); !slices.Equal(got, documents.Components) {
			t.Fatalf("restarted %v", got)
		}
		if rec := node.receipt(id); rec == nil || rec.Outcome != documents.OutcomeRenewed || rec.OperationID != id {
			t.Fatalf("receipt %+v", rec)
		}
		node.clean()
		after := node.running()
		for i, c := range documents.Components {
			if before[c] == after[c] || d.Restarts[i].OldContainerID != before[c] || d.Restarts[i].NewContainerID != after[c] {
				t.Fatalf("%s: before %s, after %s, document %+v", c, before[c], after[c], d.Restarts[i])
			}
		}
		if l.count("pushing") != 1 {
			t.Fatal("the renewal pushed again")
		}
		// An activity retry with the same ID reattaches: the receipt is
		// replayed, nothing restarts.
		t2 := time.Now()
		again, err := e.Renew(ctx, executor.RenewRequest{OperationID: id, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		replayTook := time.Since(t2)
		if again.Status != documents.Succeeded || again.Reason != documents.ReasonRenewed || again.ExitCode != documents.ExitOK || !again.Renew.Replayed || len(again.Renew.Restarts) != 0 {
			t.Fatalf("replay: %+v %+v", again, again.Renew)
		}
		node.clean()
		if now := node.running(); !maps.Equal(now, after) {
			t.Fatalf("the replay restarted something: %v -> %v", after, now)
		}
		summary("1 check %.1fs (push included), forced renew %.1fs (%d restarts), replay %.1fs, binary at %s", checkTook.Seconds(), renewTook.Seconds(), len(d.Restarts), replayTook.Seconds(), pushed)
	})

	t.Run("2-cancel-mid-restart", func(t *testing.T) {
		node.t = t
		e, l := newExecutor(t, ssh)
		id := opID("cancel")
		ctx, cancel := context.WithTimeout(context.Background(), opDeadline)
		defer cancel()
		type out struct {
			r   *documents.Result
			err error
		}
		// kube-scheduler's old container ignores its stop: the runbook
		// waits with that manifest staged, so the SIGTERM (a second SSH
		// session, about a second) surely lands in that wait, however
		// loaded the machine.
		node.neverStop(documents.ComponentKubeScheduler)
		defer node.neverStop()
		done := make(chan out, 1)
		go func() {
			r, err := e.Renew(ctx, executor.RenewRequest{OperationID: id, Force: true})
			done <- out{r, err}
		}()
		var o out
		staged := waitFor(longWait, func() bool {
			select {
			case o = <-done:
				return true
			default:
			}
			_, err := os.Stat(node.staged(documents.ComponentKubeScheduler))
			return err == nil
		})
		if !staged || o.r != nil || o.err != nil {
			t.Fatalf("kube-scheduler was never staged: %+v %v", o.r, o.err)
		}
		tc := time.Now()
		cancel()
		select {
		case o = <-done:
		case <-time.After(longWait):
			t.Fatal("Renew did not return after the cancellation")
		}
		cancelTook := time.Since(tc)
		if o.err != nil {
			t.Fatal(o.err)
		}
		r := o.r
		if l.count("sent SIGTERM (err <nil>)") != 1 {
			t.Fatalf("SIGTERM was not delivered once: %v", l.lines)
		}
		if r.Status != documents.FailedLockRetained || r.Reason != documents.ReasonCleanupRequired || r.ExitCode != documents.ExitFailed || r.Outcome != documents.OutcomeCancelled {
			t.Fatalf("cancelled renew: %+v", r)
		}
		if d := r.Renew; d.Outcome != documents.OutcomeCancelled || !d.ReceiptWritten || d.ExitCode != documents.ExitFailed {
			t.Fatalf("the runbook's own cancelled document: %+v", d)
		}
		// The runbook cancelled on its own (SIGTERM handled, the staged
		// kube-scheduler manifest put back).
		rec := node.receipt(id)
		if rec == nil || rec.Outcome != documents.OutcomeCancelled || !strings.Contains(rec.Message, "cancelled by a signal") ||
			rec.FailedComponent == nil || *rec.FailedComponent != documents.ComponentKubeScheduler {
			t.Fatalf("receipt %+v", rec)
		}
		node.neverStop()
		if err := node.allActive(); err != nil {
			t.Fatalf("the cancelled run did not put %s back: %v", *rec.FailedComponent, err)
		}
		ph, err := documents.DecodePhaseV2(node.phase())
		if err != nil || ph.OperationID != id || ph.State != "restart_pending" || ph.NextComponent == nil {
			t.Fatalf("phase file after the cancel: %+v %v", ph, err)
		}
		resumeAt := slices.Index(documents.Components, *ph.NextComponent)
		node.clean()
		tf := time.Now()
		c := e.Cleanup(context.Background(), id)
		if c.Status != documents.FailedLockReleased || c.Reason != documents.ReasonFailed || c.FenceReason != documents.FenceReasonReceipt ||
			c.FenceAttempts != 1 || c.Outcome != documents.OutcomeCancelled || c.Fence.Action != documents.FenceActionExistingReceipt {
			t.Fatalf("cleanup: %+v", c)
		}
		fenceTook := time.Since(tf)
		node.clean()
		// The cancelled operation left its work for the next one.
		next := opID("after-cancel")
		tn := time.Now()
		n, err := e.Renew(ctx2(t), executor.RenewRequest{OperationID: next})
		if err != nil {
			t.Fatal(err)
		}
		if n.Status != documents.Succeeded || n.Renew.ResumedFrom == nil || n.Renew.ResumedFrom.OperationID == nil || *n.Renew.ResumedFrom.OperationID != id {
			t.Fatalf("the next operation did not resume the cancelled one: %+v %+v", n, n.Renew.ResumedFrom)
		}
		got := restartedComponents(n.Renew)
		if resumeAt < 1 || !slices.Equal(got, documents.Components[resumeAt:]) {
			t.Fatalf("resumed restarts %v, want from %s on", got, *ph.NextComponent)
		}
		node.clean()
		summary("2 cancelled with kube-scheduler staged (its old container ignoring the stop); the runbook's cancelled document %.1fs later (SIGTERM landed in %s's restart, put back: %q); cleanup %.1fs (%s/%s, 1 fence); resumed by %s in %.1fs restarting %v", cancelTook.Seconds(), *rec.FailedComponent, rec.Message, fenceTook.Seconds(), c.Status, c.FenceReason, next, time.Since(tn).Seconds(), got)
	})

	t.Run("3-sigkill-mid-restart", func(t *testing.T) {
		node.t = t
		e, _ := newExecutor(t, ssh)
		id := opID("sigkill")
		ctx, cancel := context.WithTimeout(context.Background(), opDeadline)
		defer cancel()
		type out struct {
			r   *documents.Result
			err error
		}
		done := make(chan out, 1)
		go func() {
			r, err := e.Renew(ctx, executor.RenewRequest{OperationID: id, Force: true})
			done <- out{r, err}
		}()
		pid := 0
		var o out
		returned := false
		waitFor(longWait, func() bool {
			select {
			case o = <-done:
				returned = true
				return true
			default:
			}
			if _, err := os.Stat(node.staged(documents.ComponentKubeAPIServer)); err != nil {
				return false
			}
			pid = node.runbookPID(id)
			return pid != 0
		})
		if returned || pid == 0 {
			t.Fatalf("never saw the runbook of %s with kube-apiserver staged: %+v %v", id, o.r, o.err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		tk := time.Now()
		select {
		case o = <-done:
		case <-time.After(longWait):
			t.Fatal("Renew did not return after the runbook was killed")
		}
		// The answer is lost: an error worth an activity retry, or a result
		// whose exit status is unknown.
		switch {
		case o.err != nil:
			if !executor.IsRetryable(o.err) {
				t.Fatalf("not retryable: %v", o.err)
			}
		case o.r.ExitCode != -1:
			t.Fatalf("a killed runbook answered: %+v", o.r)
		}
		if _, err := os.Stat(node.staged(documents.ComponentKubeAPIServer)); err != nil {
			t.Fatalf("kube-apiserver is not staged after the kill: %v", err)
		}
		if node.receipt(id) != nil {
			t.Fatal("a killed runbook wrote a receipt")
		}
		tf := time.Now()
		c := e.Cleanup(context.Background(), id)
		fenceTook := time.Since(tf)
		if c.Status != documents.FailedLockReleased || c.Reason != documents.ReasonAbandoned || c.FenceReason != documents.FenceReasonAbandoned ||
			c.Fence.Action != documents.FenceActionAbandoned || !slices.Contains(c.Fence.Restored, documents.ComponentKubeAPIServer) {
			t.Fatalf("cleanup: %+v %+v", c, c.Fence)
		}
		if fenceTook > executor.DefaultCleanupBudget {
			t.Fatalf("cleanup took %s", fenceTook)
		}
		if rec := node.receipt(id); rec == nil || rec.Outcome != documents.OutcomeAbandoned {
			t.Fatalf("receipt %+v", rec)
		}
		if err := node.allActive(); err != nil {
			t.Fatalf("the fencing check did not put kube-apiserver back: %v", err)
		}
		backAfter := time.Since(tk)
		node.clean()
		// A delayed attempt with the killed ID is fenced by its receipt.
		before := node.running()
		phase := node.phase()
		late, err := e.Renew(ctx, executor.RenewRequest{OperationID: id, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if late.ExitCode != documents.ExitFenced || !late.Renew.Replayed || late.Renew.Outcome != documents.OutcomeAbandoned || len(late.Renew.Restarts) != 0 || !late.NeedsCleanup() {
			t.Fatalf("delayed attempt: %+v %+v", late, late.Renew)
		}
		if lc := e.CleanupAfter(context.Background(), late); lc.Status != documents.FailedLockReleased || lc.Reason != documents.ReasonFenced {
			t.Fatalf("cleanup of the delayed attempt: %+v", lc)
		}
		if now := node.running(); !maps.Equal(now, before) || string(node.phase()) != string(phase) {
			t.Fatalf("the delayed attempt changed the node: %v -> %v", before, now)
		}
		// The next cycle: a scheduled check sees the pending work, a fresh
		// operation resumes it.
		next := opID("after-kill")
		cctx := ctx2(t)
		chk, plan, err := e.Check(cctx, false, "")
		if err != nil {
			t.Fatal(err)
		}
		if chk.Decision != documents.DecisionRenew || !chk.PhaseFile.Pending || !slices.Equal(plan.Executors, []documents.ExecutorKind{documents.ExecutorLegacy}) {
			t.Fatalf("check after the kill: %s %v pending %v", chk.Decision, plan.Executors, chk.PhaseFile.Pending)
		}
		tn := time.Now()
		n, err := e.Renew(cctx, executor.RenewRequest{OperationID: next})
		if err != nil {
			t.Fatal(err)
		}
		if n.Status != documents.Succeeded || n.Renew.ResumedFrom == nil || n.Renew.ResumedFrom.OperationID == nil || *n.Renew.ResumedFrom.OperationID != id {
			t.Fatalf("the next cycle did not resume %s: %+v %+v", id, n, n.Renew.ResumedFrom)
		}
		got := restartedComponents(n.Renew)
		if len(got) == 0 || got[0] != documents.ComponentKubeAPIServer || slices.Contains(got, documents.ComponentEtcd) {
			t.Fatalf("resumed restarts %v, want from kube-apiserver on", got)
		}
		node.clean()
		summary("3 SIGKILL pid %d: Renew returned %.90q...; cleanup %.1fs (%s/%s, %d fence(s), restored %v), kube-apiserver back %.1fs after the kill; delayed attempt exit %d; next cycle resumed in %.1fs restarting %v", pid, fmt.Sprint(o.err), fenceTook.Seconds(), c.Status, c.FenceReason, c.FenceAttempts, c.Fence.Restored, backAfter.Seconds(), late.ExitCode, time.Since(tn).Seconds(), got)
	})

	t.Run("4-deadline-passed", func(t *testing.T) {
		node.t = t
		id := opID("late")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		deadline, _ := ctx.Deadline()
		rec := &recorder{inner: ssh, delay: func() time.Duration { return time.Until(deadline) + 1500*time.Millisecond }}
		e, _ := newExecutor(t, rec)
		before := node.running()
		phase := node.phase()
		if len(phase) == 0 {
			t.Fatal("no phase file to compare")
		}
		r, err := e.Renew(ctx, executor.RenewRequest{OperationID: id, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.argvs) != 1 {
			t.Fatalf("%d commands started, want 1: %v", len(rec.argvs), rec.argvs)
		}
		passed := argValue(rec.argvs[0], "--deadline")
		dl, err := time.Parse(time.RFC3339, passed)
		if err != nil || !dl.Before(rec.startsAt[0]) {
			t.Fatalf("--deadline %q is not in the past at %s: %v", passed, rec.startsAt[0], err)
		}
		if r.Status != documents.FailedLockRetained || r.Reason != documents.ReasonCleanupRequired || r.ExitCode != documents.ExitFailed || r.Outcome != documents.OutcomeCancelled {
			t.Fatalf("late renew: %+v", r)
		}
		if d := r.Renew; !d.ReceiptWritten || d.Replayed || len(d.Restarts) != 0 || d.Resigned {
			t.Fatalf("late renew document: %+v", d)
		}
		if rc := node.receipt(id); rc == nil || rc.Outcome != documents.OutcomeCancelled {
			t.Fatalf("receipt %+v", rc)
		}
		if now := node.running(); !maps.Equal(now, before) || string(node.phase()) != string(phase) {
			t.Fatalf("the late attempt changed the node: %v -> %v", before, now)
		}
		if err := node.allActive(); err != nil {
			t.Fatal(err)
		}
		plain, _ := newExecutor(t, ssh)
		c := plain.Cleanup(context.Background(), id)
		if c.Status != documents.FailedLockReleased || c.Reason != documents.ReasonFailed || c.FenceReason != documents.FenceReasonReceipt || c.Outcome != documents.OutcomeCancelled {
			t.Fatalf("cleanup: %+v", c)
		}
		if string(node.phase()) != string(phase) {
			t.Fatal("the cleanup changed the phase file")
		}
		node.clean()
		summary("4 started %.1fs after the deadline %s: exit %d %s, nothing changed; SIGTERM after the deadline: %v; cleanup %s/%s", rec.startsAt[0].Sub(deadline).Seconds(), passed, r.ExitCode, r.Outcome, rec.signals, c.Status, c.FenceReason)
	})

	t.Run("5-fence-meets-held-lock", func(t *testing.T) {
		node.t = t
		id := opID("held")
		rec := &recorder{inner: ssh}
		e, l := newExecutor(t, rec)
		e.Global = executor.Global{LockTimeout: time.Second}
		e.Backoff = executor.Backoff{Initial: 200 * time.Millisecond, Dense: 10, Factor: 1, Max: time.Second}
		e.CleanupBudget = 3 * time.Minute
		f, err := os.OpenFile(filepath.Join(cfg.State, "lock"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		held := time.Now()
		released := make(chan time.Time, 1)
		cleaned := make(chan struct{})
		go func() {
			// About 3 s, and at least one lock-timeout answer seen.
			waitFor(longWait, func() bool {
				select {
				case <-cleaned:
					return true
				default:
				}
				return time.Since(held) >= 3*time.Second && l.count("not definitive (lock-timeout)") > 0
			})
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			released <- time.Now()
		}()
		t0 := time.Now()
		c := e.Cleanup(context.Background(), id)
		took := time.Since(t0)
		close(cleaned)
		rel := <-released
		starts := rec.fenceStarts()
		if c.Status != documents.FailedLockReleased || c.Reason != documents.ReasonAbandoned || c.FenceReason != documents.FenceReasonAbandoned || c.Fence.ExitCode != documents.ExitOK {
			t.Fatalf("cleanup: %+v", c)
		}
		timeouts := l.count("not definitive (lock-timeout)")
		if c.FenceAttempts < 2 || len(starts) != c.FenceAttempts || timeouts != c.FenceAttempts-1 {
			t.Fatalf("%d fence attempts, %d started, %d lock timeouts", c.FenceAttempts, len(starts), timeouts)
		}
		if !starts[0].Before(rel) {
			t.Fatal("the first fencing check started after the lock was released")
		}
		if took > e.CleanupBudget {
			t.Fatalf("cleanup took %s, over its budget", took)
		}
		if rc := node.receipt(id); rc == nil || rc.Outcome != documents.OutcomeAbandoned {
			t.Fatalf("receipt %+v", rc)
		}
		node.clean()
		summary("5 lock held %.1fs: %d fence attempts (%d lock-timeout, exit 3), confirmed %s in %.1fs (budget %s)", rel.Sub(held).Seconds(), c.FenceAttempts, timeouts, c.FenceReason, took.Seconds(), e.CleanupBudget)
	})
}

// ctx2 is a fresh context with the operation deadline, cancelled at the
// end of the test.
func ctx2(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opDeadline)
	t.Cleanup(cancel)
	return ctx
}
