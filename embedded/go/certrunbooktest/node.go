// Package certrunbooktest is a fake control-plane node for the unit tests
// of a controller that uses certrunbook: a Node implements
// executor.Transport (and StreamingTransport, and TestDouble), plays the
// verifying wrapper and the runbook on one node, and answers with the
// binary's documents and exit codes for the situations the controller
// guide names: a renewal that succeeds or is unchanged, a failed health
// gate, a same-ID replay, a lock held by another run (the cleanup ends
// retained, then, once the lock is free, released as abandoned, and a late
// attempt of that ID is fenced with exit 5), a cancelled renewal, an
// unreachable node, and the read-only status views.
//
// The real Executor runs against it with no Rust artifact: an Executor with
// no Binary (a controller's tests import executor and documents, never
// package binary; or a build with -tags certrunbook_nobinary) pushes the
// Node's stand-in bytes (executor.TestDouble).
//
//	node := certrunbooktest.NewNode()
//	node.Plan("cycle-1@cp-1", certrunbooktest.Succeeds)
//	e := &executor.Executor{Transport: node}
//	r, err := e.Renew(ctx, executor.RenewRequest{OperationID: "cycle-1@cp-1"})
//
// The documents are built from the package's own types on the shapes of
// the binary's golden documents (tests/golden), and decode with its strict
// decoders; the kit's tests check them against embedded/schema.
package certrunbooktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/executor"
)

// Scenario is how the runbook's first run of an operation ID ends on the
// Node (Plan). Later runs of the same ID replay its receipt, as the binary
// does.
type Scenario string

// The scenarios.
const (
	// Succeeds: the four components are restarted; outcome renewed, exit
	// 0, receipt written.
	Succeeds Scenario = "succeeds"
	// Unchanged: nothing was due; outcome unchanged, exit 0.
	Unchanged Scenario = "unchanged"
	// FailsGate: the health gate failed after etcd's restart; outcome
	// failed, phase restart:etcd, exit 1, the manifests all active and a
	// failed receipt (the cleanup confirms it and releases the lock).
	FailsGate Scenario = "fails-gate"
	// Hangs: the run does not end until it is sent SIGTERM; it then
	// writes a cancelled receipt and exits 1.
	Hangs Scenario = "hangs"
)

// Valid reports whether s is one of the scenarios.
func (s Scenario) Valid() bool {
	switch s {
	case Succeeds, Unchanged, FailsGate, Hangs:
		return true
	}
	return false
}

// RunbookVersion is the runbookVersion of the Node's documents.
const RunbookVersion = "0.0.0-certrunbooktest"

// Reply is one scripted answer of a run (On): what it prints and how it
// ends. It overrides the Node's own behaviour for the runs it matches.
type Reply struct {
	Stdout   string
	ExitCode int      // -1: the transport lost the status (then WaitErr)
	Stderr   []string // log lines, streamed (StreamingTransport) and returned
	StartErr error    // returned by Start (a *executor.TransportError is retryable)
	WaitErr  error    // returned by Wait with the result
	// Block: Wait does not return until the run is sent a signal; it then
	// answers OnSignal (nil: it never answers; Close ends the wait with a
	// transport error).
	Block    bool
	OnSignal *Reply

	receipt *documents.Receipt // written when OnSignal answers
	op      *op
}

type rule struct {
	match   []string
	replies []Reply
	n       int
}

type op struct {
	scenario Scenario
	receipt  *documents.Receipt
}

// Node is a fake control-plane node. The zero Node is not usable: call
// NewNode. A Node is safe for concurrent use.
type Node struct {
	mu          sync.Mutex
	files       map[string]string // path -> sha256 of its content
	ops         map[string]*op
	rules       []*rule
	calls       [][]string
	signals     []syscall.Signal
	pushes      []string
	lockHeld    bool
	unreachable bool
	notClean    bool
	check       *documents.CheckResult
}

// NewNode returns a reachable, clean Node whose lock is free, with nothing
// pushed and no operation planned (a renewal of an unplanned ID succeeds).
func NewNode() *Node {
	return &Node{files: map[string]string{}, ops: map[string]*op{}}
}

// standIn is what the Executor pushes in a build without the binary.
var standIn = []byte("#!/bin/false\n# certrunbooktest: a stand-in for nvke-cert-runbook; a real node never runs it\n")

// StandInBinary implements executor.TestDouble.
func (n *Node) StandInBinary() []byte { return append([]byte(nil), standIn...) }

// Plan sets how the first renewal of id ends. Unplanned IDs succeed.
func (n *Node) Plan(id string, s Scenario) *Node {
	if !s.Valid() {
		panic(fmt.Sprintf("certrunbooktest: unknown scenario %q", s))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opLocked(id).scenario = s
	return n
}

func (n *Node) opLocked(id string) *op {
	o := n.ops[id]
	if o == nil {
		o = &op{scenario: Succeeds}
		n.ops[id] = o
	}
	return o
}

// HoldLock makes another run hold the node's renewal lock: a renewal
// answers exit 3 (lock timeout, nothing written) and a fencing check
// reason lock-timeout (exit 3) until ReleaseLock.
func (n *Node) HoldLock() *Node { n.mu.Lock(); n.lockHeld = true; n.mu.Unlock(); return n }

// ReleaseLock frees the lock (HoldLock).
func (n *Node) ReleaseLock() *Node { n.mu.Lock(); n.lockHeld = false; n.mu.Unlock(); return n }

// SetUnreachable makes every Push and Start fail with a
// *executor.TransportError (a node that is away), or reachable again.
func (n *Node) SetUnreachable(away bool) *Node {
	n.mu.Lock()
	n.unreachable = away
	n.mu.Unlock()
	return n
}

// SetNotClean makes the status view report a node that is not clean
// (exit 1), as a node with a stray manifest would; the default is clean.
func (n *Node) SetNotClean(notClean bool) *Node {
	n.mu.Lock()
	n.notClean = notClean
	n.mu.Unlock()
	return n
}

// SetCheck sets the check's answer (the default: unchanged). A failed
// decision exits 1 with failure "agent-state".
func (n *Node) SetCheck(decision documents.Decision, executors []documents.ExecutorKind, legacyFallback bool) *Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.check = CheckDoc(decision, executors, legacyFallback)
	return n
}

// On scripts the replies of the runs whose runbook arguments contain every
// word of match (space-separated), before the Node's own behaviour; the
// last reply repeats. The first matching rule answers.
func (n *Node) On(match string, replies ...Reply) *Node {
	if len(replies) == 0 {
		panic("certrunbooktest: On without a reply")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rules = append(n.rules, &rule{match: strings.Fields(match), replies: replies})
	return n
}

// Receipt returns a copy of the receipt the Node holds for id (nil: none).
func (n *Node) Receipt(id string) *documents.Receipt {
	n.mu.Lock()
	defer n.mu.Unlock()
	if o := n.ops[id]; o != nil && o.receipt != nil {
		r := *o.receipt
		return &r
	}
	return nil
}

// Runs returns the runbook arguments of every run started so far whose
// arguments contain every word of match ("" : all).
func (n *Node) Runs(match string) [][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out [][]string
	for _, c := range n.calls {
		if hasWords(c, strings.Fields(match)) {
			out = append(out, append([]string(nil), c...))
		}
	}
	return out
}

// Signals returns the signals sent to runs so far.
func (n *Node) Signals() []syscall.Signal {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]syscall.Signal(nil), n.signals...)
}

// Pushes returns the paths pushed so far.
func (n *Node) Pushes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.pushes...)
}

var errAway = errors.New("certrunbooktest: node unreachable (connection refused)")

// Push implements executor.Transport.
func (n *Node) Push(ctx context.Context, path string, data []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.unreachable {
		return &executor.TransportError{Op: "push", Err: errAway}
	}
	sum := sha256.Sum256(data)
	n.files[path] = hex.EncodeToString(sum[:])
	n.pushes = append(n.pushes, path)
	return nil
}

// Start implements executor.Transport.
func (n *Node) Start(ctx context.Context, argv []string) (executor.Remote, error) {
	return n.StartStreaming(ctx, argv, nil)
}

// StartStreaming implements executor.StreamingTransport: the run's log
// lines reach line as it prints them, before Wait returns.
func (n *Node) StartStreaming(ctx context.Context, argv []string, line func(string)) (executor.Remote, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.unreachable {
		return nil, &executor.TransportError{Op: "start", Err: errAway}
	}
	// The verifying wrapper: /bin/sh -c SCRIPT SHA PATH ARGS...
	if len(argv) < 5 || argv[0] != "/bin/sh" || argv[1] != "-c" {
		return nil, fmt.Errorf("certrunbooktest: argv %q does not go through the verifying wrapper", argv)
	}
	sha, path, args := argv[3], argv[4], argv[5:]
	n.calls = append(n.calls, append([]string(nil), args...))
	r := &remote{n: n, sig: make(chan struct{}, 1), closed: make(chan struct{}), line: line}
	if n.files[path] != sha {
		r.rep = Reply{ExitCode: executor.ExitBinaryMismatch}
		return r, nil
	}
	for _, ru := range n.rules {
		if hasWords(args, ru.match) {
			r.rep = ru.replies[min(ru.n, len(ru.replies)-1)]
			ru.n++
			if r.rep.StartErr != nil {
				return nil, r.rep.StartErr
			}
			r.emit(r.rep.Stderr)
			return r, nil
		}
	}
	r.rep = n.answerLocked(args)
	r.emit(r.rep.Stderr)
	return r, nil
}

func hasWords(args, words []string) bool {
	for _, w := range words {
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

func value(args []string, opt string) string {
	for i, a := range args {
		if a == opt && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// answerLocked plays the runbook for args.
func (n *Node) answerLocked(args []string) Reply {
	has := func(w string) bool { return hasWords(args, []string{w}) }
	id := value(args, "--operation-id")
	switch {
	case has("--version"):
		return Reply{Stdout: VersionDoc(), ExitCode: documents.ExitOK}
	case has("--check"):
		c := n.check
		if c == nil {
			c = CheckDoc(documents.DecisionUnchanged, nil, false)
		}
		return Reply{Stdout: JSON(c), ExitCode: c.ExitCode}
	case has("--status-only") && has("--fence"):
		return n.fenceLocked(id)
	case has("--status-only"):
		var rec *documents.Receipt
		if o := n.ops[id]; id != "" && o != nil {
			rec = o.receipt
		}
		s := StatusDoc(id, rec, !n.notClean)
		return Reply{Stdout: JSON(s), ExitCode: s.ExitCode}
	case id != "":
		return n.renewLocked(id, value(args, "--log-format") == "json")
	}
	return Reply{Stdout: JSON(UsageErrorDoc("no mode given")), ExitCode: documents.ExitUsage}
}

func (n *Node) fenceLocked(id string) Reply {
	if n.lockHeld {
		return fenceReply(FenceDoc(id, documents.FenceReasonLockTimeout, nil))
	}
	o := n.opLocked(id)
	if o.receipt != nil {
		return fenceReply(FenceDoc(id, documents.FenceReasonReceipt, o.receipt))
	}
	// No receipt and the lock free: the operation is fenced (abandoned).
	o.receipt = ReceiptDoc(id, documents.OutcomeAbandoned, documents.PhaseLock, "abandoned by a fencing check: no run of this operation holds the lock")
	return fenceReply(FenceDoc(id, documents.FenceReasonAbandoned, o.receipt))
}

func fenceReply(f *documents.FenceResult) Reply {
	return Reply{Stdout: JSON(f), ExitCode: f.ExitCode}
}

func (n *Node) renewLocked(id string, json bool) Reply {
	if n.lockHeld {
		return Reply{Stdout: JSON(LockTimeoutDoc(id)), ExitCode: documents.ExitLockTimeout}
	}
	o := n.opLocked(id)
	if o.receipt != nil {
		d := ReplayDoc(o.receipt)
		return Reply{Stdout: JSON(d), ExitCode: d.ExitCode}
	}
	var d *documents.RenewResult
	var logs []string
	switch o.scenario {
	case Unchanged:
		d = RenewDoc(id, documents.OutcomeUnchanged, documents.PhaseDone, nil)
		logs = progress(json, id, documents.PhaseExpiry)
	case FailsGate:
		etcd := documents.ComponentEtcd
		d = RenewDoc(id, documents.OutcomeFailed, documents.PhaseRestart(etcd), &etcd)
		logs = progress(json, id, documents.PhaseRestart(etcd))
	case Hangs:
		logs = progress(json, id, documents.PhaseRestart(documents.ComponentEtcd))
		c := RenewDoc(id, documents.OutcomeCancelled, documents.PhaseCancelled, nil)
		rec := c.Receipt
		c.Receipt = nil
		return Reply{Stderr: logs, Block: true, OnSignal: &Reply{
			Stdout: JSON(c), ExitCode: c.ExitCode,
			Stderr: []string{LogLine(json, "cancelled: the staged manifest is back; receipt written")},
		}, receipt: rec, op: o}
	default:
		d = RenewDoc(id, documents.OutcomeRenewed, documents.PhaseDone, nil)
		logs = progress(json, id, documents.PhaseDone)
	}
	o.receipt = d.Receipt
	d.Receipt = nil
	return Reply{Stdout: JSON(d), ExitCode: d.ExitCode, Stderr: logs}
}

type remote struct {
	n      *Node
	rep    Reply
	sig    chan struct{}
	closed chan struct{}
	once   sync.Once
	line   func(string)
}

func (r *remote) emit(lines []string) {
	if r.line == nil {
		return
	}
	for _, l := range lines {
		r.line(l)
	}
}

// Wait implements executor.Remote.
func (r *remote) Wait() (*executor.RunResult, error) {
	rep := r.rep
	stderr := append([]string(nil), rep.Stderr...)
	if rep.Block {
		select {
		case <-r.sig:
			if rep.OnSignal == nil {
				<-r.closed
				return nil, &executor.TransportError{Op: "wait", Err: errors.New("certrunbooktest: session closed")}
			}
			next := *rep.OnSignal
			if rep.op != nil && rep.receipt != nil {
				r.n.mu.Lock()
				rep.op.receipt = rep.receipt
				r.n.mu.Unlock()
			}
			r.emit(next.Stderr)
			stderr = append(stderr, next.Stderr...)
			rep = next
		case <-r.closed:
			return nil, &executor.TransportError{Op: "wait", Err: errors.New("certrunbooktest: session closed")}
		}
	}
	res := &executor.RunResult{Stdout: []byte(rep.Stdout), ExitCode: rep.ExitCode}
	if len(stderr) > 0 {
		res.Stderr = []byte(strings.Join(stderr, "\n") + "\n")
	}
	return res, rep.WaitErr
}

// Signal implements executor.Remote.
func (r *remote) Signal(ctx context.Context, sig syscall.Signal) error {
	r.n.mu.Lock()
	r.n.signals = append(r.n.signals, sig)
	away := r.n.unreachable
	r.n.mu.Unlock()
	if away {
		return &executor.TransportError{Op: "signal", Err: errAway}
	}
	select {
	case r.sig <- struct{}{}:
	default:
	}
	return nil
}

// Close implements executor.Remote.
func (r *remote) Close() error {
	r.once.Do(func() { close(r.closed) })
	return nil
}
