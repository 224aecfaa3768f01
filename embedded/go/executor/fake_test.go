package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/internal/artifact"
)

// A fake node behind the Transport interface. It plays the verifying
// wrapper itself (exit 126 unless the file at the path has the sha256 the
// argv names), so push-on-first-use is exercised as on a real node, and
// answers the runbook's argv with scripted replies.

// reply is one scripted answer.
type reply struct {
	stdout   string
	exit     int   // -1: status lost
	waitErr  error // returned by Wait (a *TransportError when exit is -1)
	startErr error // returned by Start
	// block: Wait does not return until a signal arrives; then it returns
	// onSignal (nil: never returns, until Close).
	block    bool
	onSignal *reply
}

type rule struct {
	match   string // every space-separated word must be in the runbook's args
	replies []reply
	n       int
}

type fake struct {
	mu      sync.Mutex
	rules   []*rule
	files   map[string]string // node path -> sha256 of its content
	calls   [][]string        // the runbook's args of every started run
	signals []syscall.Signal
	pushes  []string
	closes  int
	// brokenPush: a push "succeeds" but the file stays wrong.
	brokenPush bool
	// failSignals: this many first signals fail (a transport error) and
	// do not reach the runbook.
	failSignals int
}

func newFake() *fake { return &fake{files: map[string]string{}} }

// on scripts replies for args containing every word of match; the last
// reply repeats.
func (f *fake) on(match string, replies ...reply) *fake {
	f.rules = append(f.rules, &rule{match: match, replies: replies})
	return f
}

// installed marks the test binary as already pushed.
func (f *fake) installed(e *Executor) *fake {
	sha, p, err := e.remote()
	if err != nil {
		panic(err)
	}
	f.files[p] = sha
	return f
}

func (f *fake) Push(ctx context.Context, path string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushes = append(f.pushes, path)
	sum := sha256.Sum256(data)
	if f.brokenPush {
		f.files[path] = "bad"
	} else {
		f.files[path] = hex.EncodeToString(sum[:])
	}
	return nil
}

func hasWords(args []string, match string) bool {
	for _, w := range strings.Fields(match) {
		found := false
		for _, a := range args {
			found = found || a == w
		}
		if !found {
			return false
		}
	}
	return true
}

func (f *fake) Start(ctx context.Context, argv []string) (Remote, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(argv) < 5 || argv[0] != "/bin/sh" || argv[1] != "-c" || argv[2] != verifyScript {
		return nil, errors.New("fake: argv does not go through the verifying wrapper")
	}
	sha, path, args := argv[3], argv[4], argv[5:]
	f.calls = append(f.calls, args)
	if f.files[path] != sha {
		return &fakeRemote{f: f, r: reply{exit: ExitBinaryMismatch}}, nil
	}
	for _, r := range f.rules {
		if !hasWords(args, r.match) {
			continue
		}
		rep := r.replies[min(r.n, len(r.replies)-1)]
		r.n++
		if rep.startErr != nil {
			return nil, rep.startErr
		}
		return &fakeRemote{f: f, r: rep, sig: make(chan struct{}, 1), closed: make(chan struct{})}, nil
	}
	return nil, errors.New("fake: no reply scripted for " + strings.Join(args, " "))
}

// runs returns the args of the runs that contain every word of match.
func (f *fake) runs(match string) [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, c := range f.calls {
		if hasWords(c, match) {
			out = append(out, c)
		}
	}
	return out
}

type fakeRemote struct {
	f      *fake
	r      reply
	sig    chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (r *fakeRemote) Wait() (*RunResult, error) {
	rep := r.r
	if rep.block {
		select {
		case <-r.sig:
			if rep.onSignal == nil {
				<-r.closed
				return nil, &TransportError{Op: "wait", Err: errors.New("closed")}
			}
			rep = *rep.onSignal
		case <-r.closed:
			return nil, &TransportError{Op: "wait", Err: errors.New("closed")}
		}
	}
	return &RunResult{Stdout: []byte(rep.stdout), ExitCode: rep.exit}, rep.waitErr
}

func (r *fakeRemote) Signal(ctx context.Context, sig syscall.Signal) error {
	r.f.mu.Lock()
	r.f.signals = append(r.f.signals, sig)
	fail := r.f.failSignals > 0
	if fail {
		r.f.failSignals--
	}
	r.f.mu.Unlock()
	if fail {
		return &TransportError{Op: "signal", Err: errors.New("session refused")}
	}
	if r.sig != nil {
		select {
		case r.sig <- struct{}{}:
		default:
		}
	}
	return nil
}

func (r *fakeRemote) Close() error {
	r.f.mu.Lock()
	r.f.closes++
	r.f.mu.Unlock()
	r.once.Do(func() {
		if r.closed != nil {
			close(r.closed)
		}
	})
	return nil
}

// Documents as the runbook prints them (contract v1.1).

func jsonLine(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func allActive() documents.ManifestViews {
	v := documents.ManifestView{Location: documents.LocationActive, Active: true}
	return documents.ManifestViews{Etcd: v, KubeAPIServer: v, KubeControllerManager: v, KubeScheduler: v}
}

func renewDoc(id string, outcome documents.Outcome, phase documents.Phase, exit int) string {
	return jsonLine(documents.RenewResult{
		Mode: documents.ModeRenew, RunbookVersion: "test", OperationID: &id, Outcome: outcome, Phase: phase,
		Message: "renewal " + string(outcome), ReceiptWritten: true, ExitCode: exit,
	})
}

func receipt(id string, outcome documents.Outcome, phase documents.Phase) *documents.Receipt {
	return &documents.Receipt{Format: documents.ReceiptFormat, OperationID: id, Outcome: outcome, Phase: phase, Message: "receipt " + string(outcome)}
}

func statusDoc(id string, rec *documents.Receipt, exit int) string {
	s := documents.StatusResult{Mode: documents.ModeStatus, RunbookVersion: "test", OperationID: &id, Outcome: "clean", ExitCode: exit}
	if rec != nil {
		s.Receipt = &documents.ReceiptLookup{Receipt: *rec}
	}
	return jsonLine(s)
}

// fenceDoc: a fencing answer; receiptOutcome "" means no receipt.
func fenceDoc(id string, reason documents.FenceReason, action documents.FenceAction, receiptOutcome documents.Outcome, m documents.ManifestViews) string {
	f := documents.FenceResult{
		Mode: documents.ModeStatus, RunbookVersion: "test", OperationID: id, Fence: true,
		Termination: documents.TerminationUnconfirmed, Reason: reason, Action: action,
		Message: "fence " + string(reason), Manifests: m, ExitCode: documents.ExitFailed,
	}
	if reason.Confirms() {
		f.Termination, f.Confirmed, f.ExitCode = documents.TerminationConfirmed, true, documents.ExitOK
	}
	if reason == documents.FenceReasonLockTimeout {
		f.ExitCode = documents.ExitLockTimeout
	}
	if receiptOutcome != "" {
		f.Receipt = receipt(id, receiptOutcome, documents.PhaseHealth)
		f.Outcome = &receiptOutcome
		f.Phase = &f.Receipt.Phase
	}
	return jsonLine(f)
}

func fenceReply(id string, reason documents.FenceReason, action documents.FenceAction, receiptOutcome documents.Outcome) reply {
	d := fenceDoc(id, reason, action, receiptOutcome, allActive())
	var f documents.FenceResult
	_ = json.Unmarshal([]byte(d), &f)
	return reply{stdout: d, exit: f.ExitCode}
}

func checkDoc(decision documents.Decision, executors []documents.ExecutorKind, fallback bool) reply {
	exit := documents.ExitOK
	var failure *documents.CheckFailure
	if decision == documents.DecisionFailed {
		exit = documents.ExitFailed
		s := documents.CheckFailureAgentState
		failure = &s
	}
	return reply{exit: exit, stdout: jsonLine(documents.CheckResult{
		Mode: documents.ModeCheck, RunbookVersion: "test", Outcome: decision, Decision: decision, Executors: executors,
		LegacyFallback: fallback, Failure: failure, Message: "check " + string(decision), ExitCode: exit,
	})}
}

var transportErr = &TransportError{Op: "start", Err: errors.New("connection refused")}

// testExecutor: an Executor over f with a small binary, fast back-off and
// the binary already on the node.
func testExecutor(f *fake) *Executor {
	e := &Executor{
		Transport: f,
		Global:    Global{Root: "/node"},
		Backoff:   Backoff{Initial: time.Millisecond, Dense: 2, Factor: 2, Max: 4 * time.Millisecond},
		Binary:    artifact.New([]byte("#!fake nvke-cert-runbook\n")),
	}
	f.installed(e)
	return e
}

func mustNotFail(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
