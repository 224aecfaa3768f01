package certrunbooktest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook/certrunbooktest"
	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/executor"
)

// newExecutor: the real Executor over node, with a short cleanup budget and
// fast back-off.
func newExecutor(node executor.Transport) *executor.Executor {
	return &executor.Executor{
		Transport:     node,
		CleanupBudget: 300 * time.Millisecond,
		Backoff:       executor.Backoff{Initial: time.Millisecond, Dense: 2, Factor: 2, Max: 20 * time.Millisecond},
	}
}

func want(t *testing.T, r *documents.Result, status documents.Status, reason documents.Reason) {
	t.Helper()
	if r == nil {
		t.Fatalf("no result, want %s/%s", status, reason)
	}
	if r.Status != status || r.Reason != reason {
		t.Fatalf("result %s/%s (%s), want %s/%s", r.Status, r.Reason, r.Message, status, reason)
	}
}

// Succeeded, with push on first use and the receipt verified read-only;
// the same ID again replays the receipt.
func TestSucceedsThenReplays(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c1@cp-1", certrunbooktest.Succeeds)
	e := newExecutor(node)
	r, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c1@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, documents.Succeeded, documents.ReasonRenewed)
	if r.Renew.Replayed || len(r.Renew.Restarts) != 4 || r.Renew.ExitCode != 0 {
		t.Fatalf("first run: %+v", r.Renew)
	}
	if p := node.Pushes(); len(p) != 1 || !strings.HasSuffix(p[0], "/"+documents.BinaryName) {
		t.Fatalf("pushes %q: want one, on first use", p)
	}
	if n := len(node.Runs("--status-only --operation-id c1@cp-1")); n != 1 {
		t.Fatalf("%d receipt lookups, want 1", n)
	}
	if rec := node.Receipt("c1@cp-1"); rec == nil || rec.Outcome != documents.OutcomeRenewed {
		t.Fatalf("receipt %+v", rec)
	}
	r, err = e.Renew(context.Background(), executor.RenewRequest{OperationID: "c1@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, documents.Succeeded, documents.ReasonRenewed)
	if !r.Renew.Replayed || r.Renew.Receipt == nil || len(node.Pushes()) != 1 {
		t.Fatalf("same ID again: replayed %v, receipt %v, pushes %d", r.Renew.Replayed, r.Renew.Receipt, len(node.Pushes()))
	}
}

func TestUnchanged(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c2@cp-1", certrunbooktest.Unchanged)
	r, err := newExecutor(node).Renew(context.Background(), executor.RenewRequest{OperationID: "c2@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, documents.Succeeded, documents.ReasonUnchanged)
}

// A failed gate: retained until the cleanup confirms the failed receipt,
// then released.
func TestFailsGateThenReleased(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c3@cp-1", certrunbooktest.FailsGate)
	e := newExecutor(node)
	r, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c3@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, documents.FailedLockRetained, documents.ReasonCleanupRequired)
	if r.Phase != documents.PhaseRestart(documents.ComponentEtcd) || r.ExitCode != documents.ExitFailed {
		t.Fatalf("phase %q exit %d", r.Phase, r.ExitCode)
	}
	c := e.CleanupAfter(context.Background(), r)
	want(t, c, documents.FailedLockReleased, documents.ReasonFailed)
	if c.FenceReason != documents.FenceReasonReceipt || c.FenceAttempts != 1 {
		t.Fatalf("fence %q after %d attempts", c.FenceReason, c.FenceAttempts)
	}
}

// A lock held by another run: the renewal times out (retryable), the
// cleanup ends retained (budget-exhausted); once the lock is free it ends
// released as abandoned, and a late attempt of the ID is fenced (exit 5).
func TestLockHeldRetainedThenAbandonedThenFenced(t *testing.T) {
	node := certrunbooktest.NewNode().HoldLock()
	e := newExecutor(node)
	_, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c4@cp-1"})
	var lt *executor.LockTimeoutError
	if !errors.As(err, &lt) || !executor.IsRetryable(err) {
		t.Fatalf("renew under a held lock: %v", err)
	}
	c := e.Cleanup(context.Background(), "c4@cp-1")
	want(t, c, documents.FailedLockRetained, documents.ReasonBudgetExhausted)
	if c.FenceAttempts < 2 || c.FenceReason != documents.FenceReasonLockTimeout {
		t.Fatalf("%d attempts, fence reason %q", c.FenceAttempts, c.FenceReason)
	}
	node.ReleaseLock()
	c = e.Cleanup(context.Background(), "c4@cp-1")
	want(t, c, documents.FailedLockReleased, documents.ReasonAbandoned)
	r, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c4@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != documents.ExitFenced || r.Outcome != documents.OutcomeAbandoned {
		t.Fatalf("late attempt: exit %d outcome %q", r.ExitCode, r.Outcome)
	}
	want(t, e.CleanupAfter(context.Background(), r), documents.FailedLockReleased, documents.ReasonFenced)
}

// An unreachable node: retryable errors, and a cleanup that ends retained.
func TestUnreachableRetained(t *testing.T) {
	node := certrunbooktest.NewNode().SetUnreachable(true)
	e := newExecutor(node)
	_, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c5@cp-1"})
	if !executor.IsTransportError(err) || !executor.IsRetryable(err) {
		t.Fatalf("renew: %v", err)
	}
	want(t, e.Cleanup(context.Background(), "c5@cp-1"), documents.FailedLockRetained, documents.ReasonUnreachable)
}

// A cancelled activity: SIGTERM, the cancelled document, a
// *CallerDoneError-free Result (the runbook answered), then released.
func TestHangsCancelled(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c6@cp-1", certrunbooktest.Hangs)
	e := newExecutor(node)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, err := e.Renew(ctx, executor.RenewRequest{OperationID: "c6@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, documents.FailedLockRetained, documents.ReasonCleanupRequired)
	if r.Outcome != documents.OutcomeCancelled {
		t.Fatalf("outcome %q", r.Outcome)
	}
	if s := node.Signals(); len(s) != 1 || s[0] != syscall.SIGTERM {
		t.Fatalf("signals %v", s)
	}
	if len(node.Runs("--deadline")) == 0 || len(node.Runs("--deadline")) != len(node.Runs("--operation-id c6@cp-1")) {
		t.Fatalf("the context's deadline did not reach the runbook: %q", node.Runs(""))
	}
	want(t, e.CleanupAfter(context.Background(), r), documents.FailedLockReleased, documents.ReasonFailed)
}

// The status views: clean or not, with the receipt of the ID asked.
func TestStatusViews(t *testing.T) {
	node := certrunbooktest.NewNode()
	e := newExecutor(node)
	s, err := e.Status(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Clean || s.ExitCode != 0 || s.OperationID != nil || s.Receipt != nil {
		t.Fatalf("clean view: %+v", s)
	}
	if _, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c7@cp-1"}); err != nil {
		t.Fatal(err)
	}
	node.SetNotClean(true)
	s, err = e.Status(context.Background(), "c7@cp-1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Clean || s.ExitCode != 1 || s.Receipt == nil || s.Receipt.OperationID != "c7@cp-1" || s.Receipt.Outcome != documents.OutcomeRenewed {
		t.Fatalf("view of c7: clean %v exit %d receipt %+v", s.Clean, s.ExitCode, s.Receipt)
	}
}

func TestCheckPlans(t *testing.T) {
	node := certrunbooktest.NewNode()
	e := newExecutor(node)
	_, p, err := e.Check(context.Background(), false, "")
	if err != nil || p.Decision != documents.DecisionUnchanged {
		t.Fatalf("default check: %+v %v", p, err)
	}
	node.SetCheck(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorLegacy, documents.ExecutorTyped}, false)
	_, p, err = e.Check(context.Background(), false, "")
	if err != nil || p.TypedFirst() || len(p.Executors) != 2 {
		t.Fatalf("both pending: %+v %v", p, err)
	}
	node.SetCheck(documents.DecisionFailed, nil, false)
	_, _, err = e.Check(context.Background(), false, "")
	var cf *executor.CheckFailedError
	if !errors.As(err, &cf) {
		t.Fatalf("failed check: %v", err)
	}
}

// On overrides the Node's own answers: a lost exit status, then the real
// answer.
func TestOnOverrides(t *testing.T) {
	node := certrunbooktest.NewNode().On("--fence",
		certrunbooktest.Reply{StartErr: &executor.TransportError{Op: "start", Err: errors.New("reset")}},
		certrunbooktest.Reply{Stdout: "not json", ExitCode: 1})
	c := newExecutor(node).Cleanup(context.Background(), "c8@cp-1")
	want(t, c, documents.FailedLockRetained, documents.ReasonMalformed)
	if c.FenceAttempts != 2 {
		t.Fatalf("%d attempts", c.FenceAttempts)
	}
}

// plain hides the Node's StartStreaming: a Transport that cannot stream
// (it passes the stand-in on: a wrapper that does not implement
// executor.TestDouble gets ErrNoBinary in a build without the binary).
type plain struct{ executor.Transport }

func (p plain) StandInBinary() []byte {
	return p.Transport.(executor.TestDouble).StandInBinary()
}

// OnEvent: the phases reached and the components restarted, in order,
// while the runbook runs (streaming) or when it ended (a plain Transport).
func TestOnEvent(t *testing.T) {
	for i, streaming := range []bool{true, false, true, false} {
		node := certrunbooktest.NewNode()
		var tr executor.Transport = node
		if !streaming {
			tr = plain{node}
		}
		e := newExecutor(tr)
		if i >= 2 {
			e.Global.LogFormat = "json"
		}
		var mu sync.Mutex
		var kinds []string
		var phases []documents.Phase
		var restarted []documents.Component
		e.OnEvent = func(ev executor.Event) {
			mu.Lock()
			defer mu.Unlock()
			if !ev.Kind.Valid() {
				t.Errorf("event kind %q", ev.Kind)
			}
			kinds = append(kinds, string(ev.Kind))
			if ev.Kind == executor.EventStepStarted && ev.Phase != "" {
				phases = append(phases, ev.Phase)
			}
			if ev.Kind == executor.EventRestarted {
				restarted = append(restarted, ev.Component)
			}
		}
		if _, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "c9@cp-1"}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if strings.Join(componentStrings(restarted), ",") != "etcd,kube-apiserver,kube-controller-manager,kube-scheduler" {
			t.Errorf("streaming %v: restarted %v", streaming, restarted)
		}
		if len(phases) < 8 || phases[0] != documents.PhasePhaseFile || phases[len(phases)-1] != documents.PhasePostflight {
			t.Errorf("streaming %v: phases %v", streaming, phases)
		}
		all := strings.Join(kinds, " ")
		for _, k := range []string{"started pushed started log step-started", "step-ended exited started", "exited"} {
			if !strings.Contains(all, k) {
				t.Errorf("streaming %v: events %q lack %q", streaming, all, k)
			}
		}
		mu.Unlock()
	}
}

func componentStrings(cs []documents.Component) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return out
}

// A cancelled run reports SIGTERM, then the runbook's last lines and its
// exit. (The callback holds no lock of its own: the Executor calls it one
// at a time within a call.)
func TestOnEventCancelled(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c10@cp-1", certrunbooktest.Hangs)
	e := newExecutor(node)
	var kinds []executor.EventKind // no lock: the Executor serializes
	var lines []string
	e.OnEvent = func(ev executor.Event) {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == executor.EventLog {
			lines = append(lines, ev.Line)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r, err := e.Renew(ctx, executor.RenewRequest{OperationID: "c10@cp-1"})
	if err != nil || r.Outcome != documents.OutcomeCancelled {
		t.Fatalf("%v %+v", err, r)
	}
	signalled, exited := -1, -1
	for i, k := range kinds {
		switch k {
		case executor.EventSignalled:
			signalled = i
		case executor.EventExited:
			exited = i
		}
	}
	if signalled < 0 || exited < signalled {
		t.Fatalf("events %v: want signalled, then exited", kinds)
	}
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-1], "cancelled") {
		t.Fatalf("log lines %q: want the runbook's cancelled line last", lines)
	}
}
