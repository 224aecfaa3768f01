package certrunbook

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const op = "cycle-7@cp-1"

func TestDecideEveryRow(t *testing.T) {
	renewed := func(exit int, o Outcome, verified bool) RenewAnswer {
		var r RenewResult
		if err := decodeStrict([]byte(renewDoc(op, o, PhaseDone, exit)), &r); err != nil {
			t.Fatal(err)
		}
		return RenewAnswer{ExitCode: exit, Doc: &r, ReceiptVerified: verified}
	}
	fence := func(reason FenceReason, action FenceAction, rec Outcome, m ManifestViews) *FenceAnswer {
		var f FenceResult
		if err := decodeStrict([]byte(fenceDoc(op, reason, action, rec, m)), &f); err != nil {
			t.Fatal(err)
		}
		return &FenceAnswer{Doc: &f, Attempts: 1}
	}
	restoredBy := func(a *FenceAnswer, c Component) *FenceAnswer {
		a.Doc.Restored = append(a.Doc.Restored, c)
		return a
	}
	etcdDown := allActive()
	etcdDown.Etcd = ManifestView{Location: LocationStaged}
	unknown := RenewAnswer{ExitCode: -1}
	for _, c := range []struct {
		name   string
		renew  RenewAnswer
		fence  *FenceAnswer
		status Status
		reason Reason
	}{
		{"success verified", renewed(0, OutcomeRenewed, true), nil, Succeeded, ReasonRenewed},
		{"unchanged verified", renewed(0, OutcomeUnchanged, true), nil, Succeeded, ReasonUnchanged},
		{"success unverified", renewed(0, OutcomeRenewed, false), nil, FailedLockRetained, ReasonReceiptUnverified},
		{"exit 0 but failed outcome", renewed(0, OutcomeFailed, true), nil, FailedLockRetained, ReasonCleanupRequired},
		{"success outcome but exit 1", renewed(1, OutcomeRenewed, true), nil, FailedLockRetained, ReasonCleanupRequired},
		{"failed before cleanup", renewed(1, OutcomeFailed, false), nil, FailedLockRetained, ReasonCleanupRequired},
		{"unreachable", unknown, &FenceAnswer{Failure: FenceUnreachable, Err: transportErr, Attempts: 9}, FailedLockRetained, ReasonUnreachable},
		{"lock held to the end", renewed(1, OutcomeFailed, false), &FenceAnswer{Failure: FenceBudgetExhausted, Attempts: 9}, FailedLockRetained, ReasonBudgetExhausted},
		{"malformed", renewed(1, OutcomeFailed, false), &FenceAnswer{Failure: FenceMalformed, Err: errors.New("x")}, FailedLockRetained, ReasonMalformed},
		{"no answer at all", unknown, &FenceAnswer{}, FailedLockRetained, ReasonMalformed},
		{"legacy unfinished", renewed(1, OutcomeFailed, false), fence(FenceReasonLegacyUnfinished, FenceActionNone, "", allActive()), FailedLockRetained, ReasonUnconfirmed},
		{"malformed phase", unknown, fence(FenceReasonMalformedPhase, FenceActionNone, "", allActive()), FailedLockRetained, ReasonUnconfirmed},
		{"malformed receipt", unknown, fence(FenceReasonMalformedReceipt, FenceActionNone, "", allActive()), FailedLockRetained, ReasonUnconfirmed},
		{"write failed", unknown, fence(FenceReasonWriteFailed, FenceActionNone, "", allActive()), FailedLockRetained, ReasonUnconfirmed},
		{"deadline", unknown, fence(FenceReasonDeadline, FenceActionNone, "", allActive()), FailedLockRetained, ReasonUnconfirmed},
		{"exit 4 confirmed", renewed(4, OutcomeFailed, false), fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed, allActive()), FailedLockRetained, ReasonManifestNotActive},
		{"exit 4, the fencing check put it back", renewed(4, OutcomeCancelled, false), restoredBy(fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeCancelled, allActive()), ComponentKubeAPIServer), FailedLockReleased, ReasonFailed},
		{"failed_not_restored receipt, answer lost", unknown, fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailedNotRestored, allActive()), FailedLockRetained, ReasonManifestNotActive},
		{"confirmed, a manifest still staged", renewed(1, OutcomeFailed, false), fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed, etcdDown), FailedLockRetained, ReasonManifestNotActive},
		{"exit 5 confirmed", renewed(5, OutcomeAbandoned, false), fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeAbandoned, allActive()), FailedLockReleased, ReasonFenced},
		{"superseded receipt, answer lost", unknown, fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeSuperseded, allActive()), FailedLockReleased, ReasonFenced},
		{"no receipt: abandoned now", unknown, fence(FenceReasonAbandoned, FenceActionAbandoned, OutcomeAbandoned, allActive()), FailedLockReleased, ReasonAbandoned},
		{"failed, confirmed", renewed(1, OutcomeFailed, false), fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed, allActive()), FailedLockReleased, ReasonFailed},
		{"cancelled, confirmed", renewed(1, OutcomeCancelled, false), fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeCancelled, allActive()), FailedLockReleased, ReasonFailed},
		{"success receipt, unverified", renewed(0, OutcomeRenewed, false), fence(FenceReasonReceipt, FenceActionExistingReceipt, OutcomeRenewed, allActive()), FailedLockReleased, ReasonSucceededUnverified},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Decide(op, c.renew, c.fence)
			if r.Status != c.status || r.Reason != c.reason {
				t.Fatalf("got %s/%s, want %s/%s: %s", r.Status, r.Reason, c.status, c.reason, r.Message)
			}
			if r.OperationID != op || r.Message == "" || len(r.Message) > MaxMessage {
				t.Fatalf("result %+v", r)
			}
			if r.LockRetained() != (c.status == FailedLockRetained) {
				t.Fatal("LockRetained disagrees with Status")
			}
			if c.fence != nil && c.fence.Doc != nil && r.FenceReason != c.fence.Doc.Reason {
				t.Fatalf("fence reason %q", r.FenceReason)
			}
			if r.NeedsCleanup() != (c.fence == nil && c.status != Succeeded) {
				t.Fatalf("NeedsCleanup %v", r.NeedsCleanup())
			}
		})
	}
	long := strings.Repeat("é", 600)
	if b := bound(long); len(b) > MaxMessage || !strings.HasSuffix(b, "...") || !strings.HasPrefix(b, "é") {
		t.Fatalf("bound: %d bytes", len(b))
	}
}

func TestRenewSuccessRequiresItsReceipt(t *testing.T) {
	f := newFake().
		on("--operation-id "+op+" --status-only", reply{stdout: statusDoc(op, receipt(op, OutcomeRenewed, PhaseDone), 0)}).
		on("--operation-id "+op, reply{stdout: renewDoc(op, OutcomeRenewed, PhaseDone, 0)})
	e := testExecutor(f)
	r, err := e.Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Status != Succeeded || r.Reason != ReasonRenewed || r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	if n := len(f.runs("--status-only")); n != 1 || len(f.calls) != 2 {
		t.Fatalf("calls %v", f.calls)
	}
	if slices.Contains(f.runs("--status-only")[0], "--fence") {
		t.Fatal("receipt verification must be read-only (no --fence)")
	}

	for name, rec := range map[string]*Receipt{
		"no receipt":        nil,
		"another outcome":   receipt(op, OutcomeUnchanged, PhaseDone),
		"another operation": receipt("cycle-6@cp-1", OutcomeRenewed, PhaseDone),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake().
				on("--status-only", reply{stdout: statusDoc(op, rec, 1), exit: 1}).
				on("--operation-id "+op, reply{stdout: renewDoc(op, OutcomeRenewed, PhaseDone, 0)})
			r, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
			mustNotFail(t, err)
			if r.Status == Succeeded || r.Reason != ReasonReceiptUnverified || !r.NeedsCleanup() {
				t.Fatalf("%+v", r)
			}
		})
	}
}

func TestRenewRetryableAndFailed(t *testing.T) {
	f := newFake().on("--operation-id", reply{stdout: renewDoc(op, OutcomeFailed, PhaseLock, ExitLockTimeout), exit: ExitLockTimeout})
	_, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
	var lt *LockTimeoutError
	if !errors.As(err, &lt) || !IsRetryable(err) || lt.Renew == nil {
		t.Fatalf("lock timeout: %v", err)
	}
	f = newFake().on("--operation-id", reply{startErr: transportErr})
	if _, err = testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !IsTransportError(err) || !IsRetryable(err) {
		t.Fatalf("transport: %v", err)
	}
	f = newFake().on("--operation-id", reply{stdout: renewDoc(op, OutcomeFailed, PhaseHealth, 1), exit: 1})
	r, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Status != FailedLockRetained || r.Reason != ReasonCleanupRequired || r.Phase != PhaseHealth || len(f.runs("--status-only")) != 0 {
		t.Fatalf("%+v", r)
	}
	f = newFake().on("--operation-id", reply{stdout: "{\"mode\":\"renew\",\"surprise\":1}\n", exit: 1})
	var oe *OutputError
	if _, err = testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !errors.As(err, &oe) || IsRetryable(err) {
		t.Fatalf("bad output: %v", err)
	}
}

func TestLostExitStatus(t *testing.T) {
	lost := &TransportError{Op: "wait", Err: errors.New("connection reset")}
	// The whole document arrived: its exitCode stands in.
	f := newFake().
		on("--status-only", reply{stdout: statusDoc(op, receipt(op, OutcomeRenewed, PhaseDone), 0)}).
		on("--operation-id", reply{stdout: renewDoc(op, OutcomeRenewed, PhaseDone, 0), exit: -1, waitErr: lost})
	r, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Status != Succeeded || r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	// Half a document: a transport error.
	doc := renewDoc(op, OutcomeRenewed, PhaseDone, 0)
	f = newFake().on("--operation-id", reply{stdout: doc[:len(doc)/2], exit: -1, waitErr: lost})
	if _, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !errors.Is(err, lost) {
		t.Fatalf("half a document: %v", err)
	}
	// Both known and different: an error, not a guess.
	f = newFake().on("--operation-id", reply{stdout: renewDoc(op, OutcomeFailed, PhaseHealth, 1), exit: 4})
	var me *ExitCodeMismatchError
	if _, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !errors.As(err, &me) || me.Status != 4 || me.Document != 1 {
		t.Fatalf("mismatch: %v", err)
	}
}

func TestCancellationSendsSIGTERMAndWaits(t *testing.T) {
	cancelled := reply{stdout: renewDoc(op, OutcomeCancelled, PhaseCancelled, 1), exit: 1}
	f := newFake().on("--operation-id", reply{block: true, onSignal: &cancelled})
	e := testExecutor(f)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	r, err := e.Renew(ctx, RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Outcome != OutcomeCancelled || r.Reason != ReasonCleanupRequired || !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM}) {
		t.Fatalf("%+v, signals %v", r, f.signals)
	}

	// A SIGTERM that does not get through is sent again, a second apart,
	// within the grace.
	f = newFake().on("--operation-id", reply{block: true, onSignal: &cancelled})
	f.failSignals = 1
	e = testExecutor(f)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	r, err = e.Renew(ctx, RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Outcome != OutcomeCancelled || !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}) {
		t.Fatalf("retried SIGTERM: %+v, signals %v", r, f.signals)
	}

	// A runbook that does not end within the grace: the session is closed,
	// never killed.
	f = newFake().on("--operation-id", reply{block: true})
	e = testExecutor(f)
	e.CancelGrace = 30 * time.Millisecond
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err = e.Renew(ctx, RenewRequest{OperationID: op})
	if !errors.Is(err, ErrCancelGraceExceeded) || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("grace: %v after %s", err, time.Since(start))
	}
	if !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM}) || f.closes == 0 {
		t.Fatalf("signals %v, closes %d", f.signals, f.closes)
	}
}

func TestDeadlineFromContext(t *testing.T) {
	f := newFake().
		on("--fence", fenceReply(op, FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed)).
		on("--operation-id", reply{stdout: renewDoc(op, OutcomeFailed, PhaseHealth, 1), exit: 1}).
		on("--check", checkDoc(DecisionUnchanged, nil, false))
	e := testExecutor(f)
	d := time.Date(2031, 2, 3, 4, 5, 6, 999e6, time.FixedZone("x", 3600))
	ctx, cancel := context.WithDeadline(context.Background(), d)
	defer cancel()
	_, err := e.Renew(ctx, RenewRequest{OperationID: op})
	mustNotFail(t, err)
	_, err = e.Fence(ctx, op)
	mustNotFail(t, err)
	_, _, err = e.Check(ctx, false, "")
	mustNotFail(t, err)
	for i, c := range f.calls {
		j := slices.Index(c, "--deadline")
		if i < 2 && (j < 0 || c[j+1] != "2031-02-03T03:05:06Z") {
			t.Errorf("run %d: %v", i, c)
		}
		if i == 2 && j >= 0 {
			t.Errorf("check got a deadline: %v", c)
		}
	}
	// No deadline, no flag.
	f.calls = nil
	_, err = e.Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if slices.Contains(f.calls[0], "--deadline") {
		t.Fatal(f.calls[0])
	}
}

func TestPushOnMismatchThenRetryOnce(t *testing.T) {
	f := newFake().on("--check", checkDoc(DecisionUnchanged, nil, false))
	e := testExecutor(f)
	f.files = map[string]string{} // nothing on the node yet
	_, _, err := e.Check(context.Background(), false, "")
	mustNotFail(t, err)
	sha, p, _ := e.remote()
	if want := DefaultBinaryDir + "/" + sha + "/" + BinaryName; p != want || !slices.Equal(f.pushes, []string{want}) || len(f.calls) != 2 {
		t.Fatalf("path %s, pushes %v, calls %d", p, f.pushes, len(f.calls))
	}
	// In place now: no second push.
	_, _, err = e.Check(context.Background(), false, "")
	mustNotFail(t, err)
	if len(f.pushes) != 1 || len(f.calls) != 3 {
		t.Fatalf("pushes %v calls %d", f.pushes, len(f.calls))
	}
	// A different file at the path: pushed over; still wrong: an error after one retry.
	f.files[p] = "something else"
	f.brokenPush = true
	var be *BinaryMismatchError
	if _, _, err := e.Check(context.Background(), false, ""); !errors.As(err, &be) || len(f.pushes) != 2 || len(f.calls) != 5 {
		t.Fatalf("%v, pushes %v, calls %d", err, f.pushes, len(f.calls))
	}
	if err := validBinaryDir("/var/lib/nvke bin"); err == nil {
		t.Fatal("a space in BinaryDir accepted")
	}
}

func TestPlans(t *testing.T) {
	cases := []struct {
		name      string
		check     reply
		allow     bool
		typedFirt bool
		fallback  bool // FallbackToLegacy(true)
		upgrade   bool // TypedUnimplemented message asks for the agent upgrade with pending intent
	}{
		{"both pending: legacy then typed", checkDoc(DecisionRenew, []ExecutorKind{ExecutorLegacy, ExecutorTyped}, false), true, false, false, false},
		{"typed-only pending: no fallback", checkDoc(DecisionRenew, []ExecutorKind{ExecutorTyped}, false), true, true, false, true},
		{"legacy-only pending", checkDoc(DecisionRenew, []ExecutorKind{ExecutorLegacy}, false), true, false, false, false},
		{"no intent, allowed: fallback", checkDoc(DecisionRenew, []ExecutorKind{ExecutorTyped}, true), true, true, true, false},
		{"no intent, not allowed", checkDoc(DecisionRenew, []ExecutorKind{ExecutorTyped}, true), false, true, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := testExecutor(newFake().on("--check", c.check))
			e.AllowLegacyFallback = c.allow
			doc, p, err := e.Check(context.Background(), false, "/run/agent.json")
			mustNotFail(t, err)
			if !slices.Equal(p.Executors, doc.Executors) || p.TypedFirst() != c.typedFirt {
				t.Fatalf("%+v", p)
			}
			if p.FallbackToLegacy(true) != c.fallback || p.FallbackToLegacy(false) {
				t.Fatalf("fallback %v", p.FallbackToLegacy(true))
			}
			if c.typedFirt && !c.fallback {
				r := p.TypedUnimplemented(op)
				if r.Status != FailedLockReleased || r.Reason != ReasonUpgradeAgent || !strings.Contains(r.Message, "upgrade the node agent") ||
					strings.Contains(r.Message, "pending") != c.upgrade {
					t.Fatalf("%+v", r)
				}
			}
		})
	}
	// A check failure stops the cycle; executors out of order are refused.
	e := testExecutor(newFake().on("--check", checkDoc(DecisionFailed, nil, false)))
	var cf *CheckFailedError
	if doc, p, err := e.Check(context.Background(), false, ""); !errors.As(err, &cf) || p != nil || doc == nil {
		t.Fatalf("%v %v", p, err)
	}
	e = testExecutor(newFake().on("--check", checkDoc(DecisionRenew, []ExecutorKind{ExecutorTyped, ExecutorLegacy}, false)))
	if _, _, err := e.Check(context.Background(), false, ""); err == nil {
		t.Fatal("typed before legacy accepted")
	}
}

func TestCleanupRetriesOnlyLockTimeoutAndTransport(t *testing.T) {
	lock := fenceReply(op, FenceReasonLockTimeout, FenceActionNone, "")
	ok := fenceReply(op, FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed)
	f := newFake().on("--fence", lock, reply{startErr: transportErr}, lock, ok)
	// The caller's context is already cancelled: cleanup runs anyway.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := testExecutor(f).Cleanup(ctx, op)
	if r.Status != FailedLockReleased || r.Reason != ReasonFailed || r.FenceAttempts != 4 || len(f.calls) != 4 {
		t.Fatalf("%+v, calls %d", r, len(f.calls))
	}
	if len(f.runs("--fence")) != len(f.calls) {
		t.Fatalf("cleanup ran something but the fencing check: %v", f.calls)
	}
	for _, d := range []struct {
		reason FenceReason
		want   Reason
	}{
		{FenceReasonLegacyUnfinished, ReasonUnconfirmed},
		{FenceReasonMalformedPhase, ReasonUnconfirmed},
		{FenceReasonMalformedReceipt, ReasonUnconfirmed},
		{FenceReasonWriteFailed, ReasonUnconfirmed},
		{FenceReasonDeadline, ReasonUnconfirmed},
		{FenceReasonAbandoned, ReasonAbandoned},
	} {
		rec, action := Outcome(""), FenceActionNone
		if d.reason == FenceReasonAbandoned {
			rec, action = OutcomeAbandoned, FenceActionAbandoned
		}
		f := newFake().on("--fence", fenceReply(op, d.reason, action, rec), ok)
		r := testExecutor(f).Cleanup(context.Background(), op)
		if len(f.calls) != 1 || r.Reason != d.want {
			t.Errorf("%s: %d calls, %+v", d.reason, len(f.calls), r)
		}
	}
	// The deadline that ended the lock wait: exit 3 with reason deadline
	// (SPEC 6) is a definitive unconfirmed answer, never retried.
	late := fenceReply(op, FenceReasonDeadline, FenceActionNone, "")
	late.exit = ExitLockTimeout
	late.stdout = strings.Replace(late.stdout, `"exitCode":1`, `"exitCode":3`, 1)
	f = newFake().on("--fence", late, ok)
	if r := testExecutor(f).Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != ReasonUnconfirmed || r.FenceReason != FenceReasonDeadline {
		t.Fatalf("deadline at exit 3: %d calls, %+v", len(f.calls), r)
	}
	// A confirmation without this operation's receipt, or with an action
	// that does not match its reason, proves nothing: retained, malformed.
	noProof := fenceReply(op, FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed)
	var doc map[string]any
	_ = json.Unmarshal([]byte(noProof.stdout), &doc)
	doc["receipt"] = nil
	noProof.stdout = jsonLine(doc)
	wrongAction := fenceReply(op, FenceReasonReceipt, FenceActionAbandoned, OutcomeFailed)
	for name, rep := range map[string]reply{"no receipt": noProof, "wrong action": wrongAction} {
		f := newFake().on("--fence", rep, ok)
		if r := testExecutor(f).Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != ReasonMalformed || !r.LockRetained() {
			t.Errorf("%s: %d calls, %+v", name, len(f.calls), r)
		}
	}
	// Output that breaks the contract is definitive too.
	bad := fenceReply(op, FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed)
	bad.exit = ExitFailed // confirmed, but exit 1
	f = newFake().on("--fence", bad, ok)
	if r := testExecutor(f).Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != ReasonMalformed || !r.LockRetained() {
		t.Fatalf("%d calls, %+v", len(f.calls), r)
	}
}

func TestCleanupEndsAtItsBudget(t *testing.T) {
	for _, c := range []struct {
		name string
		rep  reply
		want Reason
	}{
		{"lock held", fenceReply(op, FenceReasonLockTimeout, FenceActionNone, ""), ReasonBudgetExhausted},
		{"unreachable", reply{startErr: transportErr}, ReasonUnreachable},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake().on("--fence", c.rep)
			e := testExecutor(f)
			e.CleanupBudget = 60 * time.Millisecond
			start := time.Now()
			r := e.Cleanup(context.Background(), op)
			took := time.Since(start)
			if r.Reason != c.want || !r.LockRetained() || len(f.calls) < 5 || took > time.Second {
				t.Fatalf("%+v after %d calls, %s", r, len(f.calls), took)
			}
		})
	}
	// A fake clock: a budget that ends before the first back-off is over
	// stops after one attempt, without sleeping.
	f := newFake().on("--fence", fenceReply(op, FenceReasonLockTimeout, FenceActionNone, ""))
	e := testExecutor(f)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e.Now = func() time.Time { now = now.Add(time.Hour); return now }
	if r := e.Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != ReasonBudgetExhausted {
		t.Fatalf("%d calls, %+v", len(f.calls), r)
	}
}

// Issue 29 item 4: the fencing check still waits for the node lock when
// the cleanup budget ends; the executor's own SIGTERM makes it answer
// `deadline`. The result is the budget's end (budget-exhausted, the lock
// retained), not the runbook's `deadline`.
func TestCleanupCutAtItsBudgetIsBudgetExhausted(t *testing.T) {
	for _, budget := range []time.Duration{150 * time.Millisecond, 2 * time.Second} {
		deadline := fenceReply(op, FenceReasonDeadline, FenceActionNone, "")
		f := newFake().on("--fence", reply{block: true, onSignal: &deadline})
		e := testExecutor(f)
		e.CleanupBudget = budget
		r := e.Cleanup(context.Background(), op)
		if r.Reason != ReasonBudgetExhausted || !r.LockRetained() {
			t.Fatalf("budget %s: %+v", budget, r)
		}
	}
	// A `deadline` answer before the budget ends (the runbook's own
	// --deadline) stays the runbook's verdict.
	f := newFake().on("--fence", fenceReply(op, FenceReasonDeadline, FenceActionNone, ""))
	e := testExecutor(f)
	if r := e.Cleanup(context.Background(), op); r.Reason == ReasonBudgetExhausted {
		t.Fatalf("%+v", r)
	}
}

// Issue 29 item 3: once the caller's context has ended, an error wraps
// ctx.Err() and is not retryable, even when it is the transport's.
func TestAnErrorAfterTheCallersContextEndedIsNotRetryable(t *testing.T) {
	f := newFake().on("--operation-id", reply{startErr: transportErr})
	e := testExecutor(f)
	if _, err := e.Renew(context.Background(), RenewRequest{OperationID: op}); !IsRetryable(err) {
		t.Fatalf("a transport error with a live context must stay retryable: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Renew(ctx, RenewRequest{OperationID: op})
	var done *CallerDoneError
	if err == nil || IsRetryable(err) || !errors.Is(err, context.Canceled) || !errors.As(err, &done) {
		t.Fatalf("%T %v", err, err)
	}
}

// Issue 29 item 3: a refused argument is a typed error, naming its field,
// never retryable; nothing ran.
func TestArgumentErrorsAreTyped(t *testing.T) {
	var a *ArgumentError
	if err := ValidOperationID("a/b"); !errors.As(err, &a) || a.Field != "OperationID" {
		t.Fatalf("%T %v", err, err)
	}
	f := newFake()
	_, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: "../x"})
	if !errors.As(err, &a) || a.Field != "OperationID" || IsRetryable(err) || len(f.calls) != 0 {
		t.Fatalf("%T %v, %d calls", err, err, len(f.calls))
	}
	g := Global{Root: "relative"}
	if _, err := RenewArgs(g, RenewRequest{OperationID: "op"}); !errors.As(err, &a) || a.Field != "Root" {
		t.Fatalf("%T %v", err, err)
	}
}

func TestCleanupAfterKeepsTheRenewalsAnswer(t *testing.T) {
	f := newFake().
		on("--fence", fenceReply(op, FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed)).
		on("--operation-id", reply{stdout: renewDoc(op, OutcomeFailed, PhaseHealth, ExitOperatorMustAct), exit: ExitOperatorMustAct})
	e := testExecutor(f)
	r, err := e.Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if !r.NeedsCleanup() {
		t.Fatalf("%+v", r)
	}
	c := e.CleanupAfter(context.Background(), r)
	if c.Status != FailedLockRetained || c.Reason != ReasonManifestNotActive || c.ExitCode != ExitOperatorMustAct {
		t.Fatalf("%+v", c)
	}
	// Without the renewal's answer the same receipt releases the lock.
	if c := e.Cleanup(context.Background(), op); c.Status != FailedLockReleased {
		t.Fatalf("%+v", c)
	}
}

func TestDecodersStrictAndTolerant(t *testing.T) {
	rec := `{"format":"nvke-cert-runbook/receipt/v1","operationID":"a","outcome":"failed","phase":"health","message":"m",` +
		`"failedComponent":null,"manifests":{},"finishedAt":"t","runbookVersion":"9","caSHA256":{},"fromTheFuture":{"x":1}}`
	if r, err := DecodeReceipt([]byte(rec)); err != nil || r.Outcome != OutcomeFailed {
		t.Fatalf("receipt with an unknown field: %v", err)
	}
	for name, b := range map[string]string{
		"no operationID":  strings.Replace(rec, `"operationID":"a",`, "", 1),
		"no outcome":      strings.Replace(rec, `"outcome":"failed",`, "", 1),
		"unknown outcome": strings.Replace(rec, `"outcome":"failed"`, `"outcome":"meh"`, 1),
		"unknown format":  strings.Replace(rec, "receipt/v1", "receipt/v9", 1),
		"trailing":        rec + "{}",
	} {
		if r, err := DecodeReceipt([]byte(b)); err == nil || r != nil {
			t.Errorf("%s: accepted (%v)", name, r)
		}
	}
	ph := `{"format":"nvke-cert-runbook/phase/v2","operationID":"a","state":"renewing","new":true}`
	if _, err := DecodePhaseV2([]byte(ph)); err != nil {
		t.Fatal(err)
	}
	if p, err := DecodePhaseV2([]byte(strings.Replace(ph, "renewing", "sleeping", 1))); err == nil || p != nil {
		t.Fatal("unknown phase state accepted")
	}
	if _, err := DecodeLockOwner([]byte(`{"pid":7,"mode":"renew","startedAt":"t","bootID":"b","new":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeAgentState([]byte(`{"k8sCertRenewalState":{"phase":"idle","x":1},"other":2}`)); err != nil {
		t.Fatal(err)
	}
	if a, err := DecodeAgentState([]byte(`{"other":2}`)); err == nil || a != nil {
		t.Fatal("agent state without k8sCertRenewalState accepted")
	}
	doc := renewDoc(op, OutcomeFailed, PhaseHealth, 1)
	if _, err := DecodeRenew([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(doc, `"mode":`, `"fromTheFuture":1,"mode":`, 1)
	if r, err := DecodeRenew([]byte(bad)); err == nil || r != nil {
		t.Fatal("renew document with an unknown field accepted")
	}
	if k, v, err := Decode([]byte(bad)); err == nil || v != nil || k != "" {
		t.Fatal("Decode: value and error both")
	}
}
