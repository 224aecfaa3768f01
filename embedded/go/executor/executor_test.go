package executor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/internal/text"
)

const op = "cycle-7@cp-1"

func TestDecideEveryRow(t *testing.T) {
	renewed := func(exit int, o documents.Outcome, verified bool) documents.RenewAnswer {
		r, err := documents.DecodeRenew([]byte(renewDoc(op, o, documents.PhaseDone, exit)))
		if err != nil {
			t.Fatal(err)
		}
		return documents.RenewAnswer{ExitCode: exit, Doc: r, ReceiptVerified: verified}
	}
	fence := func(reason documents.FenceReason, action documents.FenceAction, rec documents.Outcome, m documents.ManifestViews) *documents.FenceAnswer {
		f, err := documents.DecodeFence([]byte(fenceDoc(op, reason, action, rec, m)))
		if err != nil {
			t.Fatal(err)
		}
		return &documents.FenceAnswer{Doc: f, Attempts: 1}
	}
	restoredBy := func(a *documents.FenceAnswer, c documents.Component) *documents.FenceAnswer {
		a.Doc.Restored = append(a.Doc.Restored, c)
		return a
	}
	etcdDown := allActive()
	etcdDown.Etcd = documents.ManifestView{Location: documents.LocationStaged}
	unknown := documents.RenewAnswer{ExitCode: -1}
	for _, c := range []struct {
		name   string
		renew  documents.RenewAnswer
		fence  *documents.FenceAnswer
		status documents.Status
		reason documents.Reason
	}{
		{"success verified", renewed(0, documents.OutcomeRenewed, true), nil, documents.Succeeded, documents.ReasonRenewed},
		{"unchanged verified", renewed(0, documents.OutcomeUnchanged, true), nil, documents.Succeeded, documents.ReasonUnchanged},
		{"success unverified", renewed(0, documents.OutcomeRenewed, false), nil, documents.FailedLockRetained, documents.ReasonReceiptUnverified},
		{"exit 0 but failed outcome", renewed(0, documents.OutcomeFailed, true), nil, documents.FailedLockRetained, documents.ReasonCleanupRequired},
		{"success outcome but exit 1", renewed(1, documents.OutcomeRenewed, true), nil, documents.FailedLockRetained, documents.ReasonCleanupRequired},
		{"failed before cleanup", renewed(1, documents.OutcomeFailed, false), nil, documents.FailedLockRetained, documents.ReasonCleanupRequired},
		{"unreachable", unknown, &documents.FenceAnswer{Failure: documents.FenceUnreachable, Err: transportErr, Attempts: 9}, documents.FailedLockRetained, documents.ReasonUnreachable},
		{"lock held to the end", renewed(1, documents.OutcomeFailed, false), &documents.FenceAnswer{Failure: documents.FenceBudgetExhausted, Attempts: 9}, documents.FailedLockRetained, documents.ReasonBudgetExhausted},
		{"malformed", renewed(1, documents.OutcomeFailed, false), &documents.FenceAnswer{Failure: documents.FenceMalformed, Err: errors.New("x")}, documents.FailedLockRetained, documents.ReasonMalformed},
		{"no answer at all", unknown, &documents.FenceAnswer{}, documents.FailedLockRetained, documents.ReasonMalformed},
		{"legacy unfinished", renewed(1, documents.OutcomeFailed, false), fence(documents.FenceReasonLegacyUnfinished, documents.FenceActionNone, "", allActive()), documents.FailedLockRetained, documents.ReasonUnconfirmed},
		{"malformed phase", unknown, fence(documents.FenceReasonMalformedPhase, documents.FenceActionNone, "", allActive()), documents.FailedLockRetained, documents.ReasonUnconfirmed},
		{"malformed receipt", unknown, fence(documents.FenceReasonMalformedReceipt, documents.FenceActionNone, "", allActive()), documents.FailedLockRetained, documents.ReasonUnconfirmed},
		{"write failed", unknown, fence(documents.FenceReasonWriteFailed, documents.FenceActionNone, "", allActive()), documents.FailedLockRetained, documents.ReasonUnconfirmed},
		{"deadline", unknown, fence(documents.FenceReasonDeadline, documents.FenceActionNone, "", allActive()), documents.FailedLockRetained, documents.ReasonUnconfirmed},
		{"exit 4 confirmed", renewed(4, documents.OutcomeFailed, false), fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed, allActive()), documents.FailedLockRetained, documents.ReasonManifestNotActive},
		{"exit 4, the fencing check put it back", renewed(4, documents.OutcomeCancelled, false), restoredBy(fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeCancelled, allActive()), documents.ComponentKubeAPIServer), documents.FailedLockReleased, documents.ReasonFailed},
		{"failed_not_restored receipt, answer lost", unknown, fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailedNotRestored, allActive()), documents.FailedLockRetained, documents.ReasonManifestNotActive},
		{"confirmed, a manifest still staged", renewed(1, documents.OutcomeFailed, false), fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed, etcdDown), documents.FailedLockRetained, documents.ReasonManifestNotActive},
		{"exit 5 confirmed", renewed(5, documents.OutcomeAbandoned, false), fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeAbandoned, allActive()), documents.FailedLockReleased, documents.ReasonFenced},
		{"superseded receipt, answer lost", unknown, fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeSuperseded, allActive()), documents.FailedLockReleased, documents.ReasonFenced},
		{"no receipt: abandoned now", unknown, fence(documents.FenceReasonAbandoned, documents.FenceActionAbandoned, documents.OutcomeAbandoned, allActive()), documents.FailedLockReleased, documents.ReasonAbandoned},
		{"failed, confirmed", renewed(1, documents.OutcomeFailed, false), fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed, allActive()), documents.FailedLockReleased, documents.ReasonFailed},
		{"cancelled, confirmed", renewed(1, documents.OutcomeCancelled, false), fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeCancelled, allActive()), documents.FailedLockReleased, documents.ReasonFailed},
		{"success receipt, unverified", renewed(0, documents.OutcomeRenewed, false), fence(documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeRenewed, allActive()), documents.FailedLockReleased, documents.ReasonSucceededUnverified},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := documents.Decide(op, c.renew, c.fence)
			if r.Status != c.status || r.Reason != c.reason {
				t.Fatalf("got %s/%s, want %s/%s: %s", r.Status, r.Reason, c.status, c.reason, r.Message)
			}
			if r.OperationID != op || r.Message == "" || len(r.Message) > documents.MaxMessage {
				t.Fatalf("result %+v", r)
			}
			if r.LockRetained() != (c.status == documents.FailedLockRetained) {
				t.Fatal("LockRetained disagrees with Status")
			}
			if c.fence != nil && c.fence.Doc != nil && r.FenceReason != c.fence.Doc.Reason {
				t.Fatalf("fence reason %q", r.FenceReason)
			}
			if r.NeedsCleanup() != (c.fence == nil && c.status != documents.Succeeded) {
				t.Fatalf("NeedsCleanup %v", r.NeedsCleanup())
			}
		})
	}
	long := strings.Repeat("é", 600)
	if b := text.Bound(long, documents.MaxMessage); len(b) > documents.MaxMessage || !strings.HasSuffix(b, "...") || !strings.HasPrefix(b, "é") {
		t.Fatalf("bound: %d bytes", len(b))
	}
}

func TestRenewSuccessRequiresItsReceipt(t *testing.T) {
	f := newFake().
		on("--operation-id "+op+" --status-only", reply{stdout: statusDoc(op, receipt(op, documents.OutcomeRenewed, documents.PhaseDone), 0)}).
		on("--operation-id "+op, reply{stdout: renewDoc(op, documents.OutcomeRenewed, documents.PhaseDone, 0)})
	e := testExecutor(f)
	r, err := e.Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Status != documents.Succeeded || r.Reason != documents.ReasonRenewed || r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	if n := len(f.runs("--status-only")); n != 1 || len(f.calls) != 2 {
		t.Fatalf("calls %v", f.calls)
	}
	if slices.Contains(f.runs("--status-only")[0], "--fence") {
		t.Fatal("receipt verification must be read-only (no --fence)")
	}

	for name, rec := range map[string]*documents.Receipt{
		"no receipt":        nil,
		"another outcome":   receipt(op, documents.OutcomeUnchanged, documents.PhaseDone),
		"another operation": receipt("cycle-6@cp-1", documents.OutcomeRenewed, documents.PhaseDone),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake().
				on("--status-only", reply{stdout: statusDoc(op, rec, 1), exit: 1}).
				on("--operation-id "+op, reply{stdout: renewDoc(op, documents.OutcomeRenewed, documents.PhaseDone, 0)})
			r, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
			mustNotFail(t, err)
			if r.Status == documents.Succeeded || r.Reason != documents.ReasonReceiptUnverified || !r.NeedsCleanup() {
				t.Fatalf("%+v", r)
			}
		})
	}
}

func TestRenewRetryableAndFailed(t *testing.T) {
	f := newFake().on("--operation-id", reply{stdout: renewDoc(op, documents.OutcomeFailed, documents.PhaseLock, documents.ExitLockTimeout), exit: documents.ExitLockTimeout})
	_, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
	var lt *LockTimeoutError
	if !errors.As(err, &lt) || !IsRetryable(err) || lt.Renew == nil {
		t.Fatalf("lock timeout: %v", err)
	}
	f = newFake().on("--operation-id", reply{startErr: transportErr})
	if _, err = testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !IsTransportError(err) || !IsRetryable(err) {
		t.Fatalf("transport: %v", err)
	}
	f = newFake().on("--operation-id", reply{stdout: renewDoc(op, documents.OutcomeFailed, documents.PhaseHealth, 1), exit: 1})
	r, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Status != documents.FailedLockRetained || r.Reason != documents.ReasonCleanupRequired || r.Phase != documents.PhaseHealth || len(f.runs("--status-only")) != 0 {
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
		on("--status-only", reply{stdout: statusDoc(op, receipt(op, documents.OutcomeRenewed, documents.PhaseDone), 0)}).
		on("--operation-id", reply{stdout: renewDoc(op, documents.OutcomeRenewed, documents.PhaseDone, 0), exit: -1, waitErr: lost})
	r, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Status != documents.Succeeded || r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	// Half a document: a transport error.
	doc := renewDoc(op, documents.OutcomeRenewed, documents.PhaseDone, 0)
	f = newFake().on("--operation-id", reply{stdout: doc[:len(doc)/2], exit: -1, waitErr: lost})
	if _, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !errors.Is(err, lost) {
		t.Fatalf("half a document: %v", err)
	}
	// Both known and different: an error, not a guess.
	f = newFake().on("--operation-id", reply{stdout: renewDoc(op, documents.OutcomeFailed, documents.PhaseHealth, 1), exit: 4})
	var me *ExitCodeMismatchError
	if _, err := testExecutor(f).Renew(context.Background(), RenewRequest{OperationID: op}); !errors.As(err, &me) || me.Status != 4 || me.Document != 1 {
		t.Fatalf("mismatch: %v", err)
	}
}

func TestCancellationSendsSIGTERMAndWaits(t *testing.T) {
	cancelled := reply{stdout: renewDoc(op, documents.OutcomeCancelled, documents.PhaseCancelled, 1), exit: 1}
	f := newFake().on("--operation-id", reply{block: true, onSignal: &cancelled})
	e := testExecutor(f)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	r, err := e.Renew(ctx, RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if r.Outcome != documents.OutcomeCancelled || r.Reason != documents.ReasonCleanupRequired || !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM}) {
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
	if r.Outcome != documents.OutcomeCancelled || !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}) {
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
	// The documented margin: Renew returns at most CancelGrace after the
	// caller's context ended, plus the SIGTERM's send (instant here); the
	// bound below is the grace with a generous allowance for a loaded
	// machine, a correctness bound (never 45 s, the default), not a timing
	// figure.
	if took := time.Since(start); !errors.Is(err, ErrCancelGraceExceeded) || took < e.CancelGrace || took > e.CancelGrace+5*time.Second {
		t.Fatalf("grace: %v after %s", err, took)
	}
	if !slices.Equal(f.signals, []syscall.Signal{syscall.SIGTERM}) || f.closes == 0 {
		t.Fatalf("signals %v, closes %d", f.signals, f.closes)
	}
}

func TestDeadlineFromContext(t *testing.T) {
	f := newFake().
		on("--fence", fenceReply(op, documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed)).
		on("--operation-id", reply{stdout: renewDoc(op, documents.OutcomeFailed, documents.PhaseHealth, 1), exit: 1}).
		on("--check", checkDoc(documents.DecisionUnchanged, nil, false))
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
	f := newFake().on("--check", checkDoc(documents.DecisionUnchanged, nil, false))
	e := testExecutor(f)
	f.files = map[string]string{} // nothing on the node yet
	_, _, err := e.Check(context.Background(), false, "")
	mustNotFail(t, err)
	sha, p, _ := e.remote()
	if want := DefaultBinaryDir + "/" + sha + "/" + documents.BinaryName; p != want || !slices.Equal(f.pushes, []string{want}) || len(f.calls) != 2 {
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
		{"both pending: legacy then typed", checkDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorLegacy, documents.ExecutorTyped}, false), true, false, false, false},
		{"typed-only pending: no fallback", checkDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorTyped}, false), true, true, false, true},
		{"legacy-only pending", checkDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorLegacy}, false), true, false, false, false},
		{"no intent, allowed: fallback", checkDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorTyped}, true), true, true, true, false},
		{"no intent, not allowed", checkDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorTyped}, true), false, true, false, false},
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
				if r.Status != documents.FailedLockReleased || r.Reason != documents.ReasonUpgradeAgent || !strings.Contains(r.Message, "upgrade the node agent") ||
					strings.Contains(r.Message, "pending") != c.upgrade {
					t.Fatalf("%+v", r)
				}
			}
		})
	}
	// A check failure stops the cycle; executors out of order are refused.
	e := testExecutor(newFake().on("--check", checkDoc(documents.DecisionFailed, nil, false)))
	var cf *CheckFailedError
	if doc, p, err := e.Check(context.Background(), false, ""); !errors.As(err, &cf) || p != nil || doc == nil {
		t.Fatalf("%v %v", p, err)
	}
	e = testExecutor(newFake().on("--check", checkDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorTyped, documents.ExecutorLegacy}, false)))
	if _, _, err := e.Check(context.Background(), false, ""); err == nil {
		t.Fatal("typed before legacy accepted")
	}
}

func TestCleanupRetriesOnlyLockTimeoutAndTransport(t *testing.T) {
	lock := fenceReply(op, documents.FenceReasonLockTimeout, documents.FenceActionNone, "")
	ok := fenceReply(op, documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed)
	f := newFake().on("--fence", lock, reply{startErr: transportErr}, lock, ok)
	// The caller's context is already cancelled: cleanup runs anyway.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := testExecutor(f).Cleanup(ctx, op)
	if r.Status != documents.FailedLockReleased || r.Reason != documents.ReasonFailed || r.FenceAttempts != 4 || len(f.calls) != 4 {
		t.Fatalf("%+v, calls %d", r, len(f.calls))
	}
	if len(f.runs("--fence")) != len(f.calls) {
		t.Fatalf("cleanup ran something but the fencing check: %v", f.calls)
	}
	for _, d := range []struct {
		reason documents.FenceReason
		want   documents.Reason
	}{
		{documents.FenceReasonLegacyUnfinished, documents.ReasonUnconfirmed},
		{documents.FenceReasonMalformedPhase, documents.ReasonUnconfirmed},
		{documents.FenceReasonMalformedReceipt, documents.ReasonUnconfirmed},
		{documents.FenceReasonWriteFailed, documents.ReasonUnconfirmed},
		{documents.FenceReasonDeadline, documents.ReasonUnconfirmed},
		{documents.FenceReasonAbandoned, documents.ReasonAbandoned},
	} {
		rec, action := documents.Outcome(""), documents.FenceActionNone
		if d.reason == documents.FenceReasonAbandoned {
			rec, action = documents.OutcomeAbandoned, documents.FenceActionAbandoned
		}
		f := newFake().on("--fence", fenceReply(op, d.reason, action, rec), ok)
		r := testExecutor(f).Cleanup(context.Background(), op)
		if len(f.calls) != 1 || r.Reason != d.want {
			t.Errorf("%s: %d calls, %+v", d.reason, len(f.calls), r)
		}
	}
	// The deadline that ended the lock wait: exit 3 with reason deadline
	// (SPEC 6) is a definitive unconfirmed answer, never retried.
	late := fenceReply(op, documents.FenceReasonDeadline, documents.FenceActionNone, "")
	late.exit = documents.ExitLockTimeout
	late.stdout = strings.Replace(late.stdout, `"exitCode":1`, `"exitCode":3`, 1)
	f = newFake().on("--fence", late, ok)
	if r := testExecutor(f).Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != documents.ReasonUnconfirmed || r.FenceReason != documents.FenceReasonDeadline {
		t.Fatalf("deadline at exit 3: %d calls, %+v", len(f.calls), r)
	}
	// A confirmation without this operation's receipt, or with an action
	// that does not match its reason, proves nothing: retained, malformed.
	noProof := fenceReply(op, documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed)
	var doc map[string]any
	_ = json.Unmarshal([]byte(noProof.stdout), &doc)
	doc["receipt"] = nil
	noProof.stdout = jsonLine(doc)
	wrongAction := fenceReply(op, documents.FenceReasonReceipt, documents.FenceActionAbandoned, documents.OutcomeFailed)
	for name, rep := range map[string]reply{"no receipt": noProof, "wrong action": wrongAction} {
		f := newFake().on("--fence", rep, ok)
		if r := testExecutor(f).Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != documents.ReasonMalformed || !r.LockRetained() {
			t.Errorf("%s: %d calls, %+v", name, len(f.calls), r)
		}
	}
	// Output that breaks the contract is definitive too.
	bad := fenceReply(op, documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed)
	bad.exit = documents.ExitFailed // confirmed, but exit 1
	f = newFake().on("--fence", bad, ok)
	if r := testExecutor(f).Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != documents.ReasonMalformed || !r.LockRetained() {
		t.Fatalf("%d calls, %+v", len(f.calls), r)
	}
}

func TestCleanupEndsAtItsBudget(t *testing.T) {
	for _, c := range []struct {
		name string
		rep  reply
		want documents.Reason
	}{
		{"lock held", fenceReply(op, documents.FenceReasonLockTimeout, documents.FenceActionNone, ""), documents.ReasonBudgetExhausted},
		{"unreachable", reply{startErr: transportErr}, documents.ReasonUnreachable},
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
	f := newFake().on("--fence", fenceReply(op, documents.FenceReasonLockTimeout, documents.FenceActionNone, ""))
	e := testExecutor(f)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e.Now = func() time.Time { now = now.Add(time.Hour); return now }
	if r := e.Cleanup(context.Background(), op); len(f.calls) != 1 || r.Reason != documents.ReasonBudgetExhausted {
		t.Fatalf("%d calls, %+v", len(f.calls), r)
	}
}

// Issue 29 item 4: the fencing check still waits for the node lock when
// the cleanup budget ends; the executor's own SIGTERM makes it answer
// `deadline`. The result is the budget's end (budget-exhausted, the lock
// retained), not the runbook's `deadline`.
func TestCleanupCutAtItsBudgetIsBudgetExhausted(t *testing.T) {
	for _, budget := range []time.Duration{150 * time.Millisecond, 2 * time.Second} {
		deadline := fenceReply(op, documents.FenceReasonDeadline, documents.FenceActionNone, "")
		f := newFake().on("--fence", reply{block: true, onSignal: &deadline})
		e := testExecutor(f)
		e.CleanupBudget = budget
		r := e.Cleanup(context.Background(), op)
		if r.Reason != documents.ReasonBudgetExhausted || !r.LockRetained() {
			t.Fatalf("budget %s: %+v", budget, r)
		}
	}
	// A `deadline` answer before the budget ends (the runbook's own
	// --deadline) stays the runbook's verdict.
	f := newFake().on("--fence", fenceReply(op, documents.FenceReasonDeadline, documents.FenceActionNone, ""))
	e := testExecutor(f)
	if r := e.Cleanup(context.Background(), op); r.Reason == documents.ReasonBudgetExhausted {
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
		on("--fence", fenceReply(op, documents.FenceReasonReceipt, documents.FenceActionExistingReceipt, documents.OutcomeFailed)).
		on("--operation-id", reply{stdout: renewDoc(op, documents.OutcomeFailed, documents.PhaseHealth, documents.ExitOperatorMustAct), exit: documents.ExitOperatorMustAct})
	e := testExecutor(f)
	r, err := e.Renew(context.Background(), RenewRequest{OperationID: op})
	mustNotFail(t, err)
	if !r.NeedsCleanup() {
		t.Fatalf("%+v", r)
	}
	c := e.CleanupAfter(context.Background(), r)
	if c.Status != documents.FailedLockRetained || c.Reason != documents.ReasonManifestNotActive || c.ExitCode != documents.ExitOperatorMustAct {
		t.Fatalf("%+v", c)
	}
	// Without the renewal's answer the same receipt releases the lock.
	if c := e.Cleanup(context.Background(), op); c.Status != documents.FailedLockReleased {
		t.Fatalf("%+v", c)
	}
}

func TestDecodersStrictAndTolerant(t *testing.T) {
	rec := `{"format":"nvke-cert-runbook/receipt/v1","operationID":"a","outcome":"failed","phase":"health","message":"m",` +
		`"failedComponent":null,"manifests":{},"finishedAt":"t","runbookVersion":"9","caSHA256":{},"fromTheFuture":{"x":1}}`
	if r, err := documents.DecodeReceipt([]byte(rec)); err != nil || r.Outcome != documents.OutcomeFailed {
		t.Fatalf("receipt with an unknown field: %v", err)
	}
	for name, b := range map[string]string{
		"no operationID":  strings.Replace(rec, `"operationID":"a",`, "", 1),
		"no outcome":      strings.Replace(rec, `"outcome":"failed",`, "", 1),
		"unknown outcome": strings.Replace(rec, `"outcome":"failed"`, `"outcome":"meh"`, 1),
		"unknown format":  strings.Replace(rec, "receipt/v1", "receipt/v9", 1),
		"trailing":        rec + "{}",
	} {
		if r, err := documents.DecodeReceipt([]byte(b)); err == nil || r != nil {
			t.Errorf("%s: accepted (%v)", name, r)
		}
	}
	ph := `{"format":"nvke-cert-runbook/phase/v2","operationID":"a","state":"renewing","new":true}`
	if _, err := documents.DecodePhaseV2([]byte(ph)); err != nil {
		t.Fatal(err)
	}
	if p, err := documents.DecodePhaseV2([]byte(strings.Replace(ph, "renewing", "sleeping", 1))); err == nil || p != nil {
		t.Fatal("unknown phase state accepted")
	}
	if _, err := documents.DecodeLockOwner([]byte(`{"pid":7,"mode":"renew","startedAt":"t","bootID":"b","new":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := documents.DecodeAgentState([]byte(`{"k8sCertRenewalState":{"phase":"idle","x":1},"other":2}`)); err != nil {
		t.Fatal(err)
	}
	if a, err := documents.DecodeAgentState([]byte(`{"other":2}`)); err == nil || a != nil {
		t.Fatal("agent state without k8sCertRenewalState accepted")
	}
	doc := renewDoc(op, documents.OutcomeFailed, documents.PhaseHealth, 1)
	if _, err := documents.DecodeRenew([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(doc, `"mode":`, `"fromTheFuture":1,"mode":`, 1)
	if r, err := documents.DecodeRenew([]byte(bad)); err == nil || r != nil {
		t.Fatal("renew document with an unknown field accepted")
	}
	if k, v, err := documents.Decode([]byte(bad)); err == nil || v != nil || k != "" {
		t.Fatal("Decode: value and error both")
	}
}
