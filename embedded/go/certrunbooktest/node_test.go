package certrunbooktest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook"
	"nvke.example/certrunbook/certrunbooktest"
)

// executor: the real Executor over node, with a short cleanup budget and
// fast back-off.
func executor(node certrunbook.Transport) *certrunbook.Executor {
	return &certrunbook.Executor{
		Transport:     node,
		CleanupBudget: 300 * time.Millisecond,
		Backoff:       certrunbook.Backoff{Initial: time.Millisecond, Dense: 2, Factor: 2, Max: 20 * time.Millisecond},
	}
}

func want(t *testing.T, r *certrunbook.Result, status certrunbook.Status, reason certrunbook.Reason) {
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
	e := executor(node)
	r, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c1@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, certrunbook.Succeeded, certrunbook.ReasonRenewed)
	if r.Renew.Replayed || len(r.Renew.Restarts) != 4 || r.Renew.ExitCode != 0 {
		t.Fatalf("first run: %+v", r.Renew)
	}
	if p := node.Pushes(); len(p) != 1 || !strings.HasSuffix(p[0], "/"+certrunbook.BinaryName) {
		t.Fatalf("pushes %q: want one, on first use", p)
	}
	if n := len(node.Runs("--status-only --operation-id c1@cp-1")); n != 1 {
		t.Fatalf("%d receipt lookups, want 1", n)
	}
	if rec := node.Receipt("c1@cp-1"); rec == nil || rec.Outcome != certrunbook.OutcomeRenewed {
		t.Fatalf("receipt %+v", rec)
	}
	r, err = e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c1@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, certrunbook.Succeeded, certrunbook.ReasonRenewed)
	if !r.Renew.Replayed || r.Renew.Receipt == nil || len(node.Pushes()) != 1 {
		t.Fatalf("same ID again: replayed %v, receipt %v, pushes %d", r.Renew.Replayed, r.Renew.Receipt, len(node.Pushes()))
	}
}

func TestUnchanged(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c2@cp-1", certrunbooktest.Unchanged)
	r, err := executor(node).Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c2@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, certrunbook.Succeeded, certrunbook.ReasonUnchanged)
}

// A failed gate: retained until the cleanup confirms the failed receipt,
// then released.
func TestFailsGateThenReleased(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c3@cp-1", certrunbooktest.FailsGate)
	e := executor(node)
	r, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c3@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, certrunbook.FailedLockRetained, certrunbook.ReasonCleanupRequired)
	if r.Phase != certrunbook.PhaseRestart(certrunbook.ComponentEtcd) || r.ExitCode != certrunbook.ExitFailed {
		t.Fatalf("phase %q exit %d", r.Phase, r.ExitCode)
	}
	c := e.CleanupAfter(context.Background(), r)
	want(t, c, certrunbook.FailedLockReleased, certrunbook.ReasonFailed)
	if c.FenceReason != certrunbook.FenceReasonReceipt || c.FenceAttempts != 1 {
		t.Fatalf("fence %q after %d attempts", c.FenceReason, c.FenceAttempts)
	}
}

// A lock held by another run: the renewal times out (retryable), the
// cleanup ends retained (budget-exhausted); once the lock is free it ends
// released as abandoned, and a late attempt of the ID is fenced (exit 5).
func TestLockHeldRetainedThenAbandonedThenFenced(t *testing.T) {
	node := certrunbooktest.NewNode().HoldLock()
	e := executor(node)
	_, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c4@cp-1"})
	var lt *certrunbook.LockTimeoutError
	if !errors.As(err, &lt) || !certrunbook.IsRetryable(err) {
		t.Fatalf("renew under a held lock: %v", err)
	}
	c := e.Cleanup(context.Background(), "c4@cp-1")
	want(t, c, certrunbook.FailedLockRetained, certrunbook.ReasonBudgetExhausted)
	if c.FenceAttempts < 2 || c.FenceReason != certrunbook.FenceReasonLockTimeout {
		t.Fatalf("%d attempts, fence reason %q", c.FenceAttempts, c.FenceReason)
	}
	node.ReleaseLock()
	c = e.Cleanup(context.Background(), "c4@cp-1")
	want(t, c, certrunbook.FailedLockReleased, certrunbook.ReasonAbandoned)
	r, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c4@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != certrunbook.ExitFenced || r.Outcome != certrunbook.OutcomeAbandoned {
		t.Fatalf("late attempt: exit %d outcome %q", r.ExitCode, r.Outcome)
	}
	want(t, e.CleanupAfter(context.Background(), r), certrunbook.FailedLockReleased, certrunbook.ReasonFenced)
}

// An unreachable node: retryable errors, and a cleanup that ends retained.
func TestUnreachableRetained(t *testing.T) {
	node := certrunbooktest.NewNode().SetUnreachable(true)
	e := executor(node)
	_, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c5@cp-1"})
	if !certrunbook.IsTransportError(err) || !certrunbook.IsRetryable(err) {
		t.Fatalf("renew: %v", err)
	}
	want(t, e.Cleanup(context.Background(), "c5@cp-1"), certrunbook.FailedLockRetained, certrunbook.ReasonUnreachable)
}

// A cancelled activity: SIGTERM, the cancelled document, a
// *CallerDoneError-free Result (the runbook answered), then released.
func TestHangsCancelled(t *testing.T) {
	node := certrunbooktest.NewNode().Plan("c6@cp-1", certrunbooktest.Hangs)
	e := executor(node)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, err := e.Renew(ctx, certrunbook.RenewRequest{OperationID: "c6@cp-1"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, certrunbook.FailedLockRetained, certrunbook.ReasonCleanupRequired)
	if r.Outcome != certrunbook.OutcomeCancelled {
		t.Fatalf("outcome %q", r.Outcome)
	}
	if s := node.Signals(); len(s) != 1 || s[0] != syscall.SIGTERM {
		t.Fatalf("signals %v", s)
	}
	if len(node.Runs("--deadline")) == 0 || len(node.Runs("--deadline")) != len(node.Runs("--operation-id c6@cp-1")) {
		t.Fatalf("the context's deadline did not reach the runbook: %q", node.Runs(""))
	}
	want(t, e.CleanupAfter(context.Background(), r), certrunbook.FailedLockReleased, certrunbook.ReasonFailed)
}

// The status views: clean or not, with the receipt of the ID asked.
func TestStatusViews(t *testing.T) {
	node := certrunbooktest.NewNode()
	e := executor(node)
	s, err := e.Status(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Clean || s.ExitCode != 0 || s.OperationID != nil || s.Receipt != nil {
		t.Fatalf("clean view: %+v", s)
	}
	if _, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c7@cp-1"}); err != nil {
		t.Fatal(err)
	}
	node.SetNotClean(true)
	s, err = e.Status(context.Background(), "c7@cp-1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Clean || s.ExitCode != 1 || s.Receipt == nil || s.Receipt.OperationID != "c7@cp-1" || s.Receipt.Outcome != certrunbook.OutcomeRenewed {
		t.Fatalf("view of c7: clean %v exit %d receipt %+v", s.Clean, s.ExitCode, s.Receipt)
	}
}

func TestCheckPlans(t *testing.T) {
	node := certrunbooktest.NewNode()
	e := executor(node)
	_, p, err := e.Check(context.Background(), false, "")
	if err != nil || p.Decision != certrunbook.DecisionUnchanged {
		t.Fatalf("default check: %+v %v", p, err)
	}
	node.SetCheck(certrunbook.DecisionRenew, []certrunbook.ExecutorKind{certrunbook.ExecutorLegacy, certrunbook.ExecutorTyped}, false)
	_, p, err = e.Check(context.Background(), false, "")
	if err != nil || p.TypedFirst() || len(p.Executors) != 2 {
		t.Fatalf("both pending: %+v %v", p, err)
	}
	node.SetCheck(certrunbook.DecisionFailed, nil, false)
	_, _, err = e.Check(context.Background(), false, "")
	var cf *certrunbook.CheckFailedError
	if !errors.As(err, &cf) {
		t.Fatalf("failed check: %v", err)
	}
}

// On overrides the Node's own answers: a lost exit status, then the real
// answer.
func TestOnOverrides(t *testing.T) {
	node := certrunbooktest.NewNode().On("--fence",
		certrunbooktest.Reply{StartErr: &certrunbook.TransportError{Op: "start", Err: errors.New("reset")}},
		certrunbooktest.Reply{Stdout: "not json", ExitCode: 1})
	c := executor(node).Cleanup(context.Background(), "c8@cp-1")
	want(t, c, certrunbook.FailedLockRetained, certrunbook.ReasonMalformed)
	if c.FenceAttempts != 2 {
		t.Fatalf("%d attempts", c.FenceAttempts)
	}
}

// plain hides the Node's StartStreaming: a Transport that cannot stream
// (it passes the stand-in on: a wrapper that does not implement
// certrunbook.TestDouble gets ErrNoBinary in a build without the binary).
type plain struct{ certrunbook.Transport }

func (p plain) StandInBinary() []byte {
	return p.Transport.(certrunbook.TestDouble).StandInBinary()
}

// OnEvent: the phases reached and the components restarted, in order,
// while the runbook runs (streaming) or when it ended (a plain Transport).
func TestOnEvent(t *testing.T) {
	for i, streaming := range []bool{true, false, true, false} {
		node := certrunbooktest.NewNode()
		var tr certrunbook.Transport = node
		if !streaming {
			tr = plain{node}
		}
		e := executor(tr)
		if i >= 2 {
			e.Global.LogFormat = "json"
		}
		var mu sync.Mutex
		var kinds []string
		var phases []certrunbook.Phase
		var restarted []certrunbook.Component
		e.OnEvent = func(ev certrunbook.Event) {
			mu.Lock()
			defer mu.Unlock()
			if !ev.Kind.Valid() {
				t.Errorf("event kind %q", ev.Kind)
			}
			kinds = append(kinds, string(ev.Kind))
			if ev.Kind == certrunbook.EventStepStarted && ev.Phase != "" {
				phases = append(phases, ev.Phase)
			}
			if ev.Kind == certrunbook.EventRestarted {
				restarted = append(restarted, ev.Component)
			}
		}
		if _, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "c9@cp-1"}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if strings.Join(componentStrings(restarted), ",") != "etcd,kube-apiserver,kube-controller-manager,kube-scheduler" {
			t.Errorf("streaming %v: restarted %v", streaming, restarted)
		}
		if len(phases) < 8 || phases[0] != certrunbook.PhasePhaseFile || phases[len(phases)-1] != certrunbook.PhasePostflight {
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

func componentStrings(cs []certrunbook.Component) []string {
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
	e := executor(node)
	var kinds []certrunbook.EventKind // no lock: the Executor serializes
	var lines []string
	e.OnEvent = func(ev certrunbook.Event) {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == certrunbook.EventLog {
			lines = append(lines, ev.Line)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r, err := e.Renew(ctx, certrunbook.RenewRequest{OperationID: "c10@cp-1"})
	if err != nil || r.Outcome != certrunbook.OutcomeCancelled {
		t.Fatalf("%v %+v", err, r)
	}
	signalled, exited := -1, -1
	for i, k := range kinds {
		switch k {
		case certrunbook.EventSignalled:
			signalled = i
		case certrunbook.EventExited:
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
