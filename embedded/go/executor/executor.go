package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/internal/artifact"
	"nvke.example/certrunbook/internal/text"
)

// Defaults of an Executor's configuration.
const (
	// DefaultBinaryDir is where pushed binaries live on the node, one
	// directory per sha256.
	DefaultBinaryDir = "/var/lib/nvke/bin"
	// DefaultCleanupBudget is the guide's five-minute cleanup budget.
	DefaultCleanupBudget = 5 * time.Minute
	// DefaultCancelGrace is how long a cancelled run is waited for after
	// SIGTERM: the runbook promises to cancel within 30 s.
	DefaultCancelGrace = 45 * time.Second
	// signalTimeout bounds one attempt at sending SIGTERM.
	signalTimeout = 10 * time.Second
	// shortGrace is how long a check, a status view or a fencing check is
	// waited for after SIGTERM: they restore nothing, and the fencing
	// check answers at once when a signal ends its lock wait.
	shortGrace = 5 * time.Second
	// signalRetry spaces the attempts at sending SIGTERM within the grace.
	signalRetry = time.Second
)

// ExitBinaryMismatch is the exit code of the verifying wrapper when the
// file at the content-addressed path is missing, or not the embedded
// binary, or cannot be executed (/bin/sh's own 126).
const ExitBinaryMismatch = 126

// verifyScript is run as `/bin/sh -c verifyScript SHA PATH ARGS...`: $0 is
// the expected sha256, $1 the path; it checks the file it then execs and
// exits 126 when the check fails.
const verifyScript = `echo "$0  $1" | /usr/bin/sha256sum -c --status - >/dev/null 2>&1 || exit 126; p=$1; shift; exec "$p" "$@"`

// Backoff spaces the cleanup's retries: Dense retries Initial apart, then
// each delay Factor times the last, never above Max. The zero Backoff is
// DefaultBackoff.
type Backoff struct {
	Initial time.Duration
	Dense   int
	Factor  float64
	Max     time.Duration
}

// DefaultBackoff: four retries a quarter second apart (a lock released
// moments later), then doubling to 15 s (a node that is slow or away).
var DefaultBackoff = Backoff{Initial: 250 * time.Millisecond, Dense: 4, Factor: 2, Max: 15 * time.Second}

// Delay is the wait before retry number attempt (0: the first retry).
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Initial <= 0 {
		b = DefaultBackoff
	}
	d := b.Initial
	f := b.Factor
	if f < 1 {
		f = 1
	}
	for i := b.Dense; i < attempt; i++ {
		d = time.Duration(float64(d) * f)
		if b.Max > 0 && d >= b.Max {
			return b.Max
		}
	}
	if b.Max > 0 && d > b.Max {
		return b.Max
	}
	return d
}

// Executor runs the embedded nvke-cert-runbook on one node through a
// Transport: a struct holding configuration whose methods take a context
// and return typed results (containerd's go-runc is the model). The zero
// values of the optional fields are the defaults. An Executor is safe for
// concurrent use when its Transport is; it keeps no state between calls.
//
// Every run goes through `/bin/sh -c` with a wrapper that checks the
// sha256 of the content-addressed file BinaryDir/<sha256>/nvke-cert-runbook
// before it execs it; a missing or different file (exit 126) is pushed and
// the run retried once. The binary is always the embedded one: V2 legacy
// dispatch and the status checks never use a configured override (the
// guide).
type Executor struct {
	// Transport reaches the node (required).
	Transport Transport
	// Global: the options every mode shares (Root, timeouts, tools).
	Global Global
	// BinaryDir: the node directory of pushed binaries ("":
	// DefaultBinaryDir). Absolute; letters, digits and / . _ - only.
	BinaryDir string
	// CleanupBudget: Cleanup's own budget (0: DefaultCleanupBudget).
	CleanupBudget time.Duration
	// CancelGrace: how long to wait for a run after SIGTERM (0:
	// DefaultCancelGrace). The runbook is never sent SIGKILL: after the
	// grace the session is closed and the runbook finishes on its own.
	CancelGrace time.Duration
	// Backoff spaces Cleanup's retries (zero: DefaultBackoff).
	Backoff Backoff
	// AllowLegacyFallback lets Plan.FallbackToLegacy answer true: the
	// controller's switch for the embedded runbook as the fallback of a
	// node agent without the V2 start RPC.
	AllowLegacyFallback bool
	// Now is the clock (nil: time.Now); Cleanup uses it to judge whether
	// another retry fits in its budget.
	Now func() time.Time
	// Logf, when set, receives one line per run, push and retry.
	Logf func(format string, args ...any)
	// OnEvent, when set, receives the Executor's progress (Event): the
	// runbook's steps and phases, each component restarted, pushes, runs
	// started and ended, SIGTERM sent, cleanup attempts; a Temporal
	// activity records them as heartbeats. With a StreamingTransport the
	// runbook's log lines arrive while it runs; with another Transport
	// they arrive when the run ended. It is called from the Executor's and
	// the Transport's goroutines, one call at a time within one method
	// call (concurrent calls of the Executor's methods may overlap); it
	// must not block.
	OnEvent func(Event)
	// Binary is what the Executor pushes and runs: binary.Embedded() (the
	// embedded binary; certrunbook.New sets it). Outside this module it
	// can come from nowhere else. Nil: every call returns ErrNoBinary,
	// unless the Transport is a TestDouble (certrunbooktest.Node), whose
	// stand-in is pushed instead, so that a controller's unit tests run
	// the real Executor in a build without the binary.
	Binary *artifact.Binary
}

// ErrNoBinary is what every call returns when the Executor has no Binary
// (and its Transport is no TestDouble); binary.ErrNoBinary is the same
// value.
var ErrNoBinary = artifact.ErrNoBinary

func (e *Executor) binary() []byte {
	if b := e.Binary.Bytes(); len(b) > 0 {
		return b
	}
	if d, ok := e.Transport.(TestDouble); ok {
		return d.StandInBinary()
	}
	return nil
}

func (e *Executor) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Executor) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

func (e *Executor) cancelGrace() time.Duration {
	if e.CancelGrace > 0 {
		return e.CancelGrace
	}
	return DefaultCancelGrace
}

func (e *Executor) cleanupBudget() time.Duration {
	if e.CleanupBudget > 0 {
		return e.CleanupBudget
	}
	return DefaultCleanupBudget
}

func validBinaryDir(d string) error {
	if !strings.HasPrefix(d, "/") {
		return fmt.Errorf("BinaryDir %q must be absolute", d)
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("BinaryDir %q: only letters, digits and / . _ - are allowed", d)
		}
	}
	return nil
}

// remote returns the sha256 and the content-addressed node path of the binary.
func (e *Executor) remote() (sha, p string, err error) {
	b := e.binary()
	if len(b) == 0 {
		return "", "", ErrNoBinary
	}
	dir := e.BinaryDir
	if dir == "" {
		dir = DefaultBinaryDir
	}
	if err := validBinaryDir(dir); err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	sha = hex.EncodeToString(sum[:])
	return sha, path.Join(dir, sha, documents.BinaryName), nil
}

// Push writes the binary to its content-addressed path on the node,
// BinaryDir/<sha256>/nvke-cert-runbook, and returns that path. Runs push
// on first use by themselves; Push is for a controller that wants the
// binary in place ahead of time.
func (e *Executor) Push(ctx context.Context) (string, error) {
	_, p, err := e.remote()
	if err != nil {
		return "", err
	}
	e.logf("certrunbook: pushing %s (%d bytes)", p, len(e.binary()))
	if err := e.Transport.Push(ctx, p, e.binary()); err != nil {
		// A *TransportError is worth retrying; anything else (a read-only
		// or full disk, a path that is a directory) is the node's answer.
		return "", fmt.Errorf("certrunbook: push %s: %w", p, err)
	}
	e.event(Event{Kind: EventPushed, Path: p})
	return p, nil
}

// BinaryMismatchError: the wrapper still exited 126 right after a push.
type BinaryMismatchError struct{ Path string }

func (e *BinaryMismatchError) Error() string {
	return fmt.Sprintf("%s on the node is not the embedded binary even after a push (exit 126)", e.Path)
}

// ExitCodeMismatchError: the transport's exit status and the document's
// exitCode disagree.
type ExitCodeMismatchError struct{ Status, Document int }

func (e *ExitCodeMismatchError) Error() string {
	return fmt.Sprintf("exit status %d, but the document says exitCode %d", e.Status, e.Document)
}

// OutputError: the runbook's stdout is not the document its mode prints.
type OutputError struct {
	ExitCode int
	Err      error
	Stderr   string // its last bytes
}

func (e *OutputError) Error() string {
	msg := fmt.Sprintf("nvke-cert-runbook exited %d with unusable output: %v", e.ExitCode, e.Err)
	if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return msg
}

func (e *OutputError) Unwrap() error { return e.Err }

// LockTimeoutError: the runbook did not get the renewal lock in time (exit
// 3, nothing written). Retryable with the same operation ID.
type LockTimeoutError struct {
	Renew *documents.RenewResult // the renewal's document
	Fence *documents.FenceResult // or the fencing check's
}

func (e *LockTimeoutError) Error() string {
	msg := ""
	switch {
	case e.Renew != nil:
		msg = e.Renew.Message
	case e.Fence != nil:
		msg = e.Fence.Message
	}
	return "nvke-cert-runbook: renewal lock not acquired in time (exit 3): " + msg
}

// IsRetryable reports whether err is worth retrying with the same operation
// ID: a transport failure or a lock timeout, unless the caller's own
// context had ended (a *CallerDoneError is never retryable).
func IsRetryable(err error) bool {
	var l *LockTimeoutError
	var done *CallerDoneError
	if errors.As(err, &done) {
		return false
	}
	return IsTransportError(err) || errors.As(err, &l)
}

// CallerDoneError is what a call returns when the caller's own context
// ended while it ran (a cancelled or timed-out activity): it wraps both the
// error the call met (often a *TransportError: the session ended with the
// context) and ctx.Err(), so errors.Is(err, context.Canceled) holds. It is
// never retryable: the caller gave up, and a retry is the caller's own
// decision (run Cleanup, which is always safe).
type CallerDoneError struct {
	Err   error // what the call met
	Cause error // ctx.Err()
}

func (e *CallerDoneError) Error() string {
	return fmt.Sprintf("%v (the caller's context ended: %v)", e.Err, e.Cause)
}

func (e *CallerDoneError) Unwrap() []error { return []error{e.Err, e.Cause} }

// callerDone wraps err when ctx has ended.
func callerDone(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &CallerDoneError{Err: err, Cause: ctx.Err()}
}

// ErrCancelGraceExceeded: the runbook did not end within CancelGrace after
// SIGTERM; the session was closed (the runbook was not killed).
var ErrCancelGraceExceeded = errors.New("the runbook did not end within the cancel grace after SIGTERM; session closed, runbook not killed")

func tail(b []byte, n int) string {
	return strings.TrimSpace(string(text.LastBytes(b, n)))
}

// withDeadline adds `--deadline T` (ctx's deadline, UTC, rounded down to the
// second) for the modes that honour it (renew and the fencing check).
func withDeadline(ctx context.Context, args []string) []string {
	d, ok := ctx.Deadline()
	if !ok {
		return args
	}
	return append(args, "--deadline", d.UTC().Truncate(time.Second).Format(time.RFC3339))
}

// docExitCode returns the exitCode of stdout when it is exactly one
// complete JSON object carrying one.
func docExitCode(stdout []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return 0, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, false
	}
	raw, ok := m["exitCode"]
	if !ok {
		return 0, false
	}
	var c int
	if err := json.Unmarshal(raw, &c); err != nil || c < 0 {
		return 0, false
	}
	return c, true
}

type waited struct {
	res *RunResult
	err error
}

// run starts argv and waits. When ctx ends first it sends SIGTERM (on a
// context disconnected from ctx, retried a second apart while it fails and
// grace lasts), waits up to grace for the runbook to print its document,
// then closes the session; it never kills the runbook.
func (e *Executor) run(ctx context.Context, argv []string, grace time.Duration) (*RunResult, error) {
	var r Remote
	var err error
	var stream *text.Lines
	// The transport's goroutine (log lines) and this one (SIGTERM) both
	// report while the run lasts: one at a time.
	var emitMu sync.Mutex
	emit := func(ev Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		e.event(ev)
	}
	if st, ok := e.Transport.(StreamingTransport); ok && e.OnEvent != nil {
		stream = &text.Lines{Line: func(l string) {
			if ev, ok := logEvent(l); ok {
				emit(ev)
			}
		}}
		r, err = st.StartStreaming(ctx, argv, func(l string) { _, _ = stream.Write([]byte(l + "\n")) })
	} else {
		r, err = e.Transport.Start(ctx, argv)
	}
	if err != nil {
		// Only a *TransportError is retryable: a remote shell that ended
		// before the command (a nologin account) is not.
		return nil, fmt.Errorf("certrunbook: start: %w", err)
	}
	defer r.Close()
	done := make(chan waited, 1)
	go func() {
		res, err := r.Wait()
		done <- waited{res, err}
	}()
	var w waited
	select {
	case w = <-done:
	case <-ctx.Done():
		end := time.Now().Add(grace)
		signal := func() error {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(signalTimeout, max(time.Until(end), time.Millisecond)))
			defer cancel()
			return r.Signal(sctx, syscall.SIGTERM)
		}
		serr := signal()
		e.logf("certrunbook: %v: sent SIGTERM (err %v), waiting up to %s", ctx.Err(), serr, grace)
		emit(Event{Kind: EventSignalled, Err: serr})
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		retry := time.NewTicker(signalRetry)
		defer retry.Stop()
	wait:
		for {
			select {
			case w = <-done:
				break wait
			case <-t.C:
				return nil, &TransportError{Op: "wait", Err: ErrCancelGraceExceeded}
			case <-retry.C:
				if serr == nil || errors.Is(serr, ErrProcessGone) {
					continue
				}
				serr = signal()
				e.logf("certrunbook: SIGTERM again (err %v)", serr)
			}
		}
	}
	res, err := w.res, w.err
	if stream != nil {
		stream.Flush()
	} else if res != nil && e.OnEvent != nil {
		for _, l := range strings.Split(string(res.Stderr), "\n") {
			if ev, ok := logEvent(l); ok {
				e.event(ev)
			}
		}
	}
	if res == nil {
		if err == nil {
			err = errors.New("no result")
		}
		if !IsTransportError(err) {
			err = &TransportError{Op: "wait", Err: err}
		}
		return nil, err
	}
	doc, hasDoc := docExitCode(res.Stdout)
	if res.ExitCode < 0 {
		if !hasDoc {
			if err == nil || !IsTransportError(err) {
				err = &TransportError{Op: "wait", Err: fmt.Errorf("exit status lost (%v)", err)}
			}
			return nil, err
		}
		e.logf("certrunbook: exit status lost (%v); the document says exitCode %d", err, doc)
		res.ExitCode = doc
		return res, nil
	}
	if err != nil {
		e.logf("certrunbook: exit status %d known despite %v", res.ExitCode, err)
	}
	if hasDoc && doc != res.ExitCode {
		return nil, &ExitCodeMismatchError{Status: res.ExitCode, Document: doc}
	}
	return res, nil
}

// exec runs the binary with args through the verifying wrapper, pushing it
// once when the node's copy is missing or different.
func (e *Executor) exec(ctx context.Context, args []string, grace time.Duration) (*RunResult, error) {
	if e.Transport == nil {
		return nil, errors.New("certrunbook: Executor has no Transport")
	}
	sha, p, err := e.remote()
	if err != nil {
		return nil, err
	}
	argv := append([]string{"/bin/sh", "-c", verifyScript, sha, p}, args...)
	for attempt := 0; ; attempt++ {
		e.event(Event{Kind: EventStarted, Args: append([]string(nil), args...)})
		res, err := e.run(ctx, argv, grace)
		if err != nil {
			return nil, err
		}
		if res.ExitCode != ExitBinaryMismatch {
			e.logf("certrunbook: %s exited %d", strings.Join(args, " "), res.ExitCode)
			e.event(Event{Kind: EventExited, ExitCode: res.ExitCode})
			return res, nil
		}
		if attempt > 0 {
			return nil, &BinaryMismatchError{Path: p}
		}
		if _, err := e.Push(ctx); err != nil {
			return nil, err
		}
	}
}

// runDoc runs args and decodes the document; grace: how long a run is
// waited for after SIGTERM (CancelGrace for a renewal, which a
// cancellation makes restore a staged manifest; shortGrace otherwise).
func runDoc[T any](ctx context.Context, e *Executor, args []string, grace time.Duration, decode func([]byte) (*T, error)) (*T, int, error) {
	res, err := e.exec(ctx, args, grace)
	if err != nil {
		return nil, -1, callerDone(ctx, err)
	}
	doc, err := decode(res.Stdout)
	if err != nil {
		var u *documents.UsageErrorResult
		if errors.As(err, &u) {
			return nil, res.ExitCode, err
		}
		return nil, res.ExitCode, &OutputError{ExitCode: res.ExitCode, Err: err, Stderr: tail(res.Stderr, 512)}
	}
	return doc, res.ExitCode, nil
}

// Plan is what the check decided: whether to renew, and on which executors
// in which order (SPEC section 5, the guide's executor selection).
type Plan struct {
	// Decision: renew or unchanged (a failed check is an error, never a Plan).
	Decision documents.Decision
	// Executors in the order they must run: ["legacy", "typed"] when both
	// have pending intent (legacy first, then typed must succeed);
	// ["legacy"] or ["typed"] otherwise; empty when unchanged.
	Executors []documents.ExecutorKind
	// NoPendingIntent: neither executor has pending intent (the check's
	// legacyFallback); only then may a typed Unimplemented fall back.
	NoPendingIntent bool
	// AllowLegacyFallback is the Executor's switch, copied.
	AllowLegacyFallback bool
}

// TypedFirst reports whether the typed executor runs first: a renewal with
// no legacy intent pending (["typed"]).
func (p *Plan) TypedFirst() bool {
	return p.Decision == documents.DecisionRenew && len(p.Executors) > 0 && p.Executors[0] == documents.ExecutorTyped
}

// FallbackToLegacy reports whether the controller runs the embedded runbook
// (Executor.Renew) after the node agent's V2 Start: only when that Start
// was definitively Unimplemented (also on an activity retry), no intent is
// pending on either executor, and the Executor allows the fallback.
// Pending typed intent forbids it (legacy success cannot finish the typed
// executor's restarts): see TypedUnimplemented.
func (p *Plan) FallbackToLegacy(typedStartUnimplemented bool) bool {
	return typedStartUnimplemented && p.TypedFirst() && p.NoPendingIntent && p.AllowLegacyFallback
}

// TypedUnimplemented is the node's Result when the V2 Start was
// Unimplemented and FallbackToLegacy is false: the agent accepted no
// operation, so nothing is left to confirm and the lock is released; the
// message asks to upgrade the node agent (which then finishes a pending
// typed renewal on a later cycle).
func (p *Plan) TypedUnimplemented(operationID string) *documents.Result {
	msg := "the node agent does not implement the V2 start RPC (Unimplemented) and "
	if p.NoPendingIntent {
		msg += "the embedded runbook fallback is disabled: upgrade the node agent"
	} else {
		msg += "typed renewal intent is pending, which forbids the legacy fallback: upgrade the node agent; it finishes the pending typed renewal on a later cycle"
	}
	return &documents.Result{
		Status:      documents.FailedLockReleased,
		Reason:      documents.ReasonUpgradeAgent,
		OperationID: operationID,
		ExitCode:    -1,
		Message:     text.Bound(msg, documents.MaxMessage),
	}
}

// CheckFailedError: the check decided failed (exit 1): the cycle stops
// without dispatch.
type CheckFailedError struct{ Doc *documents.CheckResult }

func (e *CheckFailedError) Error() string {
	f := ""
	if e.Doc.Failure != nil {
		f = " (" + string(*e.Doc.Failure) + ")"
	}
	return "nvke-cert-runbook check failed" + f + ": " + e.Doc.Message
}

// Check runs the read-only preflight and returns its document and Plan. A
// check failure is a *CheckFailedError carrying the document; an answer
// that breaks the contract's rules (executors out of order, exit code and
// decision disagreeing) is an error too.
func (e *Executor) Check(ctx context.Context, force bool, agentState string) (*documents.CheckResult, *Plan, error) {
	args, err := CheckArgs(e.Global, force, agentState)
	if err != nil {
		return nil, nil, err
	}
	c, code, err := runDoc(ctx, e, args, shortGrace, documents.DecodeCheck)
	if err != nil {
		return nil, nil, err
	}
	if c.Decision == documents.DecisionFailed {
		if code != documents.ExitFailed {
			return nil, nil, fmt.Errorf("check: decision failed with exit %d", code)
		}
		return c, nil, &CheckFailedError{Doc: c}
	}
	if code != documents.ExitOK {
		return nil, nil, fmt.Errorf("check: decision %q with exit %d", c.Decision, code)
	}
	if err := validPlan(c); err != nil {
		return nil, nil, fmt.Errorf("check: %w", err)
	}
	p := &Plan{
		Decision:            c.Decision,
		Executors:           append([]documents.ExecutorKind(nil), c.Executors...),
		NoPendingIntent:     c.LegacyFallback,
		AllowLegacyFallback: e.AllowLegacyFallback,
	}
	return c, p, nil
}

func validPlan(c *documents.CheckResult) error {
	switch c.Decision {
	case documents.DecisionUnchanged:
		if len(c.Executors) != 0 || c.LegacyFallback {
			return fmt.Errorf("unchanged with executors %v", c.Executors)
		}
		return nil
	case documents.DecisionRenew:
	default:
		return fmt.Errorf("unknown decision %q", c.Decision)
	}
	ex := c.Executors
	ok := len(ex) == 1 && ex[0].Valid() || len(ex) == 2 && ex[0] == documents.ExecutorLegacy && ex[1] == documents.ExecutorTyped
	if !ok {
		return fmt.Errorf("executors %v: want [legacy], [typed] or [legacy typed]", ex)
	}
	if c.LegacyFallback && (len(ex) != 1 || ex[0] != documents.ExecutorTyped) {
		return fmt.Errorf("legacyFallback with executors %v", ex)
	}
	return nil
}

// Renew runs a V2 renewal under the embedded runbook. When ctx has a
// deadline the runbook gets it as --deadline; when ctx ends first the
// runbook is sent SIGTERM and its cancelled document is waited for
// (CancelGrace).
//
// The deadline margin: Renew may return up to CancelGrace (45 s by
// default) after ctx ends, the time the runbook has to put a staged
// manifest back and write its `cancelled` receipt (it promises 30 s). Give
// the activity's timeout at least ctx's deadline plus CancelGrace plus the
// time to send the SIGTERM (10 s at most), or shorten ctx by as much.
//
// It returns:
//   - a Result with Status Succeeded: exit 0, outcome renewed or unchanged,
//     and a read-only `--status-only --operation-id ID` found that ID's
//     receipt with the same outcome (the guide: normal V2 legacy success
//     also requires this receipt verification);
//   - a Result with Status FailedLockRetained and Reason
//     ReasonCleanupRequired for every other answer of the runbook: call
//     CleanupAfter (or Cleanup) to learn whether the lock is released;
//   - a *LockTimeoutError (exit 3, nothing written) or a *TransportError:
//     retryable with the same ID (IsRetryable), unless ctx had ended: then
//     a *CallerDoneError wrapping ctx.Err(), never retryable;
//   - any other error (arguments refused, a usage error, unusable output):
//     not retryable; run Cleanup, which is always safe.
func (e *Executor) Renew(ctx context.Context, req RenewRequest) (*documents.Result, error) {
	args, err := RenewArgs(e.Global, req)
	if err != nil {
		return nil, err
	}
	rr, code, err := runDoc(ctx, e, withDeadline(ctx, args), e.cancelGrace(), documents.DecodeRenew)
	if err != nil {
		return nil, err
	}
	if code == documents.ExitLockTimeout {
		return nil, &LockTimeoutError{Renew: rr}
	}
	ans := documents.RenewAnswer{ExitCode: code, Doc: rr}
	if code == documents.ExitOK && rr.Outcome.Success() && rr.OperationID != nil && *rr.OperationID == req.OperationID {
		verified, err := e.verifyReceipt(ctx, req.OperationID, rr.Outcome)
		if err != nil {
			return nil, err
		}
		ans.ReceiptVerified = verified
	}
	return documents.Decide(req.OperationID, ans, nil), nil
}

// verifyReceipt looks the receipt of id up read-only: it must exist, parse,
// and carry id and outcome.
func (e *Executor) verifyReceipt(ctx context.Context, id string, outcome documents.Outcome) (bool, error) {
	args, err := StatusOnlyArgs(e.Global, id)
	if err != nil {
		return false, err
	}
	s, _, err := runDoc(ctx, e, args, shortGrace, documents.DecodeStatus)
	if err != nil {
		if IsTransportError(err) {
			return false, err
		}
		e.logf("certrunbook: receipt verification of %s: %v", id, err)
		return false, nil
	}
	r := s.Receipt
	ok := r != nil && !r.Malformed && r.OperationID == id && r.Outcome == outcome
	if !ok {
		e.logf("certrunbook: receipt verification of %s failed: %+v", id, r)
	}
	return ok, nil
}

// Status runs the read-only status view (`--status-only`, with
// `--operation-id ID` when id is not ""): the node's state, and the
// receipt of id when it has one. Exit 0 (clean) and 1 (not clean) both
// return the document.
func (e *Executor) Status(ctx context.Context, id string) (*documents.StatusResult, error) {
	args, err := StatusOnlyArgs(e.Global, id)
	if err != nil {
		return nil, err
	}
	s, _, err := runDoc(ctx, e, args, shortGrace, documents.DecodeStatus)
	return s, err
}

// Fence runs one fencing check for id (`--status-only --operation-id ID
// --fence`, with --deadline from ctx). Exit 0 (confirmed), 1 (unconfirmed)
// and 3 (lock timeout) return the document; its exit code, confirmed flag
// and reason must agree, or the answer is an *OutputError.
func (e *Executor) Fence(ctx context.Context, id string) (*documents.FenceResult, error) {
	return e.fence(ctx, id, true)
}

// fence runs one fencing check; deadline: pass ctx's deadline as
// --deadline. The cleanup does not: its budget is judged by the
// controller's clock, and a node whose clock runs ahead must not answer
// "deadline" to a cleanup that still has time (its context bounds every
// attempt, and SIGTERM ends a lock wait at once).
func (e *Executor) fence(ctx context.Context, id string, deadline bool) (*documents.FenceResult, error) {
	args, err := FenceArgs(e.Global, id)
	if err != nil {
		return nil, err
	}
	if deadline {
		args = withDeadline(ctx, args)
	}
	f, code, err := runDoc(ctx, e, args, shortGrace, documents.DecodeFence)
	if err != nil {
		return nil, err
	}
	if err := validFence(f, code, id); err != nil {
		return nil, &OutputError{ExitCode: code, Err: err}
	}
	return f, nil
}

func validFence(f *documents.FenceResult, code int, id string) error {
	if f.OperationID != id {
		return fmt.Errorf("fence document for %q, not %q", f.OperationID, id)
	}
	if !f.Reason.Valid() {
		return fmt.Errorf("fence reason %q is not one of the contract's", f.Reason)
	}
	confirmed := f.Termination == documents.TerminationConfirmed
	if f.Confirmed != confirmed || f.Reason.Confirms() != confirmed {
		return fmt.Errorf("fence: confirmed %v, termination %q, reason %q disagree", f.Confirmed, f.Termination, f.Reason)
	}
	// A confirmation is proven by this operation's durable receipt (the
	// guide: "a matching durable terminal receipt"), and the action says
	// how it was reached.
	wantAction := documents.FenceActionNone
	switch f.Reason {
	case documents.FenceReasonReceipt:
		wantAction = documents.FenceActionExistingReceipt
	case documents.FenceReasonAbandoned:
		wantAction = documents.FenceActionAbandoned
	}
	if f.Action != wantAction {
		return fmt.Errorf("fence: action %q with reason %q (want %q)", f.Action, f.Reason, wantAction)
	}
	if confirmed && (f.Receipt == nil || f.Receipt.OperationID != id) {
		return fmt.Errorf("fence: confirmed without a receipt for %q", id)
	}
	want := documents.ExitFailed
	switch {
	case confirmed:
		want = documents.ExitOK
	case f.Reason == documents.FenceReasonLockTimeout:
		want = documents.ExitLockTimeout
	case f.Reason == documents.FenceReasonDeadline && code == documents.ExitLockTimeout:
		// The deadline ended the lock wait: the lock stayed held (SPEC 6).
		want = documents.ExitLockTimeout
	}
	if code != want {
		return fmt.Errorf("fence: exit %d with reason %q (want exit %d)", code, f.Reason, want)
	}
	return nil
}

// Cleanup confirms the termination of operation id after a failed or
// cancelled renewal whose answer is not at hand (CleanupAfter is the same
// with the renewal's Result). See CleanupAfter.
func (e *Executor) Cleanup(ctx context.Context, id string) *documents.Result {
	return e.cleanup(ctx, id, documents.RenewAnswer{ExitCode: -1})
}

// CleanupAfter confirms the termination of renewal's operation after Renew
// returned it failed (with renewal nil there is no operation ID: the
// answer is retained, malformed; use Cleanup(ctx, id)). It runs on a context
// disconnected from ctx's cancellation with its own CleanupBudget, repeats
// the fencing check, retrying only a lock timeout (reason lock-timeout,
// exit 3) and transport errors with Backoff, until termination is
// confirmed, the runbook gives a definitive answer, or the budget ends. It
// never starts or resumes a renewal. The Result's Status says whether the
// cluster mutation lock is released or retained (documents.Decide).
func (e *Executor) CleanupAfter(ctx context.Context, renewal *documents.Result) *documents.Result {
	if renewal == nil {
		return e.Cleanup(ctx, "")
	}
	ans := documents.RenewAnswer{ExitCode: renewal.ExitCode, Doc: renewal.Renew}
	return e.cleanup(ctx, renewal.OperationID, ans)
}

func (e *Executor) cleanup(ctx context.Context, id string, renew documents.RenewAnswer) *documents.Result {
	if err := ValidOperationID(id); err != nil {
		return documents.Decide(id, renew, &documents.FenceAnswer{Failure: documents.FenceMalformed, Err: err})
	}
	budget := e.cleanupBudget()
	end := e.now().Add(budget)
	// The attempts' context ends early enough that a last attempt cut by
	// it (SIGTERM, then shortGrace for its answer) still ends within the
	// budget.
	attempts := budget
	if reserve := shortGrace + signalTimeout; budget > 3*reserve {
		attempts = budget - reserve
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempts)
	defer cancel()
	last := &documents.FenceAnswer{Failure: documents.FenceBudgetExhausted}
	for attempt := 0; ; attempt++ {
		f, err := e.fence(ctx, id, false)
		switch {
		case err == nil && !f.Confirmed && ctx.Err() != nil:
			// The budget ended during this attempt: the executor's own
			// SIGTERM (or the deadline it passed) made the fencing check
			// answer while it still waited for the lock. That answer
			// (`deadline`) is the budget's end, not the runbook's verdict.
			return documents.Decide(id, renew, &documents.FenceAnswer{Doc: f, Failure: documents.FenceBudgetExhausted, Attempts: attempt + 1})
		case err == nil && !f.Reason.Retryable():
			return documents.Decide(id, renew, &documents.FenceAnswer{Doc: f, Attempts: attempt + 1})
		case err == nil:
			last = &documents.FenceAnswer{Doc: f, Failure: documents.FenceBudgetExhausted, Attempts: attempt + 1}
		case IsTransportError(err):
			last = &documents.FenceAnswer{Err: err, Failure: documents.FenceUnreachable, Attempts: attempt + 1}
		default:
			return documents.Decide(id, renew, &documents.FenceAnswer{Err: err, Failure: documents.FenceMalformed, Attempts: attempt + 1})
		}
		delay := e.Backoff.Delay(attempt)
		e.logf("certrunbook: cleanup of %s: attempt %d not definitive (%v); retrying in %s", id, attempt+1, describe(last), delay)
		e.event(Event{Kind: EventCleanupAttempt, Attempt: attempt + 1, Line: describe(last)})
		if e.now().Add(delay).After(end) {
			return documents.Decide(id, renew, last)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return documents.Decide(id, renew, last)
		}
	}
}

func describe(f *documents.FenceAnswer) string {
	if f.Err != nil {
		return f.Err.Error()
	}
	if f.Doc != nil {
		return string(f.Doc.Reason)
	}
	return string(f.Failure)
}
