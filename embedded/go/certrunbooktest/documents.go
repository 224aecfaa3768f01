package certrunbooktest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/executor"
)

// The check and status views are large; the Node's are the binary's own
// golden documents (tests/golden/check-clean-unchanged and
// status-asked-receipt-confirm, copied here; the kit's tests keep them
// equal), with the fields a controller reads changed.

//go:embed check.json
var checkTemplate []byte

//go:embed status.json
var statusTemplate []byte

// When is the time the Node's documents carry (finishedAt, now).
var When = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func jsonLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// JSON is the line the binary prints for the document v (one of the
// documents of this package's builders): the Go types' own encoding, with
// the keys one of the binary's shapes always prints and the Go type omits
// when empty (a renewal run's or replay's failedComponent: null).
func JSON(v any) string {
	d, ok := v.(*documents.RenewResult)
	if !ok {
		return jsonLine(v)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(jsonLine(d)), &m); err != nil {
		panic(err)
	}
	early := !d.Replayed && d.Etcd == nil
	if !early {
		if _, ok := m["failedComponent"]; !ok {
			m["failedComponent"] = nil
		}
	}
	return jsonLine(m)
}

func fromTemplate[T any](b []byte) *T {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		panic(fmt.Sprintf("certrunbooktest: template: %v", err))
	}
	return &v
}

func allActive() documents.ManifestLocations {
	a := documents.LocationActive
	return documents.ManifestLocations{Etcd: a, KubeAPIServer: a, KubeControllerManager: a, KubeScheduler: a}
}

func allActiveViews() documents.ManifestViews {
	v := documents.ManifestView{Location: documents.LocationActive, Active: true}
	return documents.ManifestViews{Etcd: v, KubeAPIServer: v, KubeControllerManager: v, KubeScheduler: v}
}

func caSHA256() map[string]string {
	m := map[string]string{}
	for i, k := range executor.CAKeys {
		m[k] = strings.Repeat(fmt.Sprintf("%x", i+10), 64)
	}
	return m
}

// ExitCodeOf is the exit code of a renewal that ended with outcome o (SPEC
// section 7): 0 renewed or unchanged, 4 failed_not_restored, 5 abandoned
// or superseded, else 1.
func ExitCodeOf(o documents.Outcome) int {
	switch {
	case o.Success():
		return documents.ExitOK
	case o == documents.OutcomeFailedNotRestored:
		return documents.ExitOperatorMustAct
	case o.Fenced():
		return documents.ExitFenced
	}
	return documents.ExitFailed
}

var endpoint = "unix:///run/containerd/containerd.sock"

// ReceiptDoc is the receipt state/completed/<id>.json of a run that ended
// with outcome o in phase p.
func ReceiptDoc(id string, o documents.Outcome, p documents.Phase, message string) *documents.Receipt {
	r := &documents.Receipt{
		Format: documents.ReceiptFormat, OperationID: id, Outcome: o, Phase: p, Message: message,
		Manifests: allActive(), FinishedAt: When.Format(time.RFC3339), RunbookVersion: RunbookVersion,
		CASHA256: caSHA256(),
	}
	return r
}

// RenewDoc is what a renewal's run of id prints when it ends with outcome
// o in phase p (failed: the component whose restart failed, or nil). Its
// Receipt field holds the receipt the run wrote (the binary prints it only
// on a replay: the Node clears it).
func RenewDoc(id string, o documents.Outcome, p documents.Phase, failed *documents.Component) *documents.RenewResult {
	msg := fmt.Sprintf("operation %s: %s (phase %s)", id, o, p)
	d := &documents.RenewResult{
		Mode: documents.ModeRenew, RunbookVersion: RunbookVersion, OperationID: &id,
		Outcome: o, Phase: p, Message: msg, FailedComponent: failed, ReceiptWritten: true,
		Certificates: []documents.CertificateChange{}, CASHA256: caSHA256(), Manifests: allActive(),
		Restarts: []documents.Restart{}, Etcd: &documents.EtcdVoters{Voters: 3, HealthyVoters: 3},
		DurationMs: 1000, ExitCode: ExitCodeOf(o),
		RuntimeEndpoint: &documents.RuntimeEndpoint{Endpoint: &endpoint, Source: "kubeadm-flags"},
	}
	if o == documents.OutcomeRenewed {
		d.Resigned = true
		for i, c := range documents.Components {
			ms := uint64(0)
			d.Restarts = append(d.Restarts, documents.Restart{
				Component: c, OldContainerID: fmt.Sprintf("%064x", 2*i+1), NewContainerID: fmt.Sprintf("%064x", 2*i+2),
				StopMs: 500, HealthyMs: 4000, TotalMs: 4500, APIUnavailableMs: &ms,
			})
		}
	}
	rec := ReceiptDoc(id, o, p, msg)
	rec.FailedComponent = failed
	if len(d.Restarts) > 0 {
		rec.Restarts = d.Restarts
	}
	d.Receipt = rec
	return d
}

// ReplayDoc is what a renewal of an ID that already has receipt r prints:
// the receipt replayed, exit by its outcome (5 for an abandoned or
// superseded receipt: a late attempt is fenced).
func ReplayDoc(r *documents.Receipt) *documents.RenewResult {
	id := r.OperationID
	rc := *r
	return &documents.RenewResult{
		Mode: documents.ModeRenew, RunbookVersion: RunbookVersion, OperationID: &id,
		Outcome: r.Outcome, Phase: r.Phase, Message: fmt.Sprintf("operation %s already has a receipt (outcome %s): replayed", id, r.Outcome),
		FailedComponent: r.FailedComponent, Replayed: true, Certificates: []documents.CertificateChange{},
		CASHA256: r.CASHA256, Manifests: r.Manifests, Restarts: []documents.Restart{}, Receipt: &rc,
		ExitCode: ExitCodeOf(r.Outcome),
	}
}

// LockTimeoutDoc is a renewal that did not get the node's lock in time:
// exit 3, nothing written.
func LockTimeoutDoc(id string) *documents.RenewResult {
	return &documents.RenewResult{
		Mode: documents.ModeRenew, RunbookVersion: RunbookVersion, OperationID: &id,
		Outcome: documents.OutcomeFailed, Phase: documents.PhaseLock,
		Message:      "renewal lock /var/lib/nvke/k8s-cert-renewal/lock still held after 60s by another run; nothing was done",
		Certificates: []documents.CertificateChange{}, CASHA256: map[string]string{}, Manifests: allActive(),
		Restarts: []documents.Restart{}, ExitCode: documents.ExitLockTimeout,
	}
}

// FenceDoc is a fencing check of id that answered reason; rec is the
// operation's receipt (nil: none). Confirming reasons exit 0, lock-timeout
// 3, the others 1.
func FenceDoc(id string, reason documents.FenceReason, rec *documents.Receipt) *documents.FenceResult {
	f := &documents.FenceResult{
		Mode: documents.ModeStatus, RunbookVersion: RunbookVersion, OperationID: id, Fence: true,
		Termination: documents.TerminationUnconfirmed, Reason: reason, Action: documents.FenceActionNone,
		Restored: []documents.Component{}, Conflicts: []string{}, Manifests: allActiveViews(), ExitCode: documents.ExitFailed,
	}
	switch reason {
	case documents.FenceReasonReceipt:
		f.Action = documents.FenceActionExistingReceipt
	case documents.FenceReasonAbandoned:
		f.Action = documents.FenceActionAbandoned
	case documents.FenceReasonLockTimeout:
		f.ExitCode = documents.ExitLockTimeout
	}
	if reason.Confirms() {
		f.Termination, f.Confirmed, f.ExitCode = documents.TerminationConfirmed, true, documents.ExitOK
	}
	if rec != nil {
		rc := *rec
		f.Receipt = &rc
		f.Outcome = &rc.Outcome
		f.Phase = &rc.Phase
	}
	f.Message = fmt.Sprintf("operation %s: %s; termination %s", id, reason, f.Termination)
	return f
}

// CheckDoc is the check's answer (the other fields: the golden
// check-clean-unchanged's). A failed decision has failure "agent-state"
// and exit 1.
func CheckDoc(decision documents.Decision, executors []documents.ExecutorKind, legacyFallback bool) *documents.CheckResult {
	c := fromTemplate[documents.CheckResult](checkTemplate)
	c.RunbookVersion = RunbookVersion
	c.Outcome, c.Decision = decision, decision
	c.Executors = append([]documents.ExecutorKind{}, executors...)
	c.LegacyFallback = legacyFallback
	c.ExitCode = documents.ExitOK
	c.Message = "check: " + string(decision)
	if decision == documents.DecisionFailed {
		f := documents.CheckFailureAgentState
		c.Failure = &f
		c.ExitCode = documents.ExitFailed
		c.Reasons = append(c.Reasons, "the node agent's state is unreadable")
	}
	return c
}

// StatusDoc is the read-only status view, `--status-only [--operation-id
// ID]` (id "" : none), with rec the receipt of id (nil: none); clean: the
// node is clean (exit 0) or not (exit 1). The other fields are the golden
// status-asked-receipt-confirm's.
func StatusDoc(id string, rec *documents.Receipt, clean bool) *documents.StatusResult {
	s := fromTemplate[documents.StatusResult](statusTemplate)
	s.RunbookVersion = RunbookVersion
	s.OperationID = nil
	s.Receipt = nil
	s.Fencing = nil
	if id != "" {
		s.OperationID = &id
		s.Fencing = &documents.FencingPlan{Action: documents.FencingActionAbandon, Termination: documents.TerminationConfirmed, Restore: []documents.Component{}}
		if rec != nil {
			s.Receipt = &documents.ReceiptLookup{Receipt: *rec}
			s.Fencing.Action = documents.FencingActionConfirm
		}
	}
	if clean {
		s.Outcome, s.Clean, s.Severity, s.ExitCode = documents.StatusOutcomeClean, true, documents.SeverityClean, documents.ExitOK
		s.Reasons, s.NextSteps = []string{}, []documents.NextStep{}
		s.Message = "node is clean"
	}
	return s
}

// VersionDoc is `--version --output json`.
func VersionDoc() string {
	return jsonLine(documents.VersionInfo{
		Mode: documents.ModeVersion, RunbookVersion: RunbookVersion, GitCommit: "0000000",
		ContractVersion: documents.ContractVersion, ExitCode: documents.ExitOK,
	})
}

// UsageErrorDoc is a refused argument list (exit 2).
func UsageErrorDoc(message string) *documents.UsageError {
	return &documents.UsageError{
		RunbookVersion: RunbookVersion, Outcome: documents.OutcomeUsageError, Phase: documents.PhaseArguments,
		Message: message, ExitCode: documents.ExitUsage,
	}
}

// The steps a renewal logs, in the binary's order (SPEC section 8: "step
// started" and "step ended" around each, "restarted" after each
// component's restart).
func steps() []string {
	s := []string{"phase-file", "staging-preflight", "ca-check", "expiry", "health", "renew-certs"}
	for _, c := range documents.Components {
		s = append(s, string(documents.PhaseRestart(c)))
	}
	return append(s, "postflight")
}

// LogLine is one of the runbook's log lines as tracing-subscriber prints
// it: with --log-format json `{"timestamp":…,"level":"INFO","fields":{…}}`,
// else (text, the default) `TIMESTAMP  INFO message key=value…`. kv: field
// names and values, in pairs.
func LogLine(json bool, message string, kv ...string) string {
	ts := When.Format("2006-01-02T15:04:05.000000Z")
	if !json {
		line := ts + "  INFO " + message
		for i := 0; i+1 < len(kv); i += 2 {
			line += " " + kv[i] + "=" + kv[i+1]
		}
		return line
	}
	fields := map[string]string{"message": message}
	for i := 0; i+1 < len(kv); i += 2 {
		fields[kv[i]] = strings.Trim(kv[i+1], `"`)
	}
	return strings.TrimSuffix(jsonLine(map[string]any{"timestamp": ts, "level": "INFO", "fields": fields}), "\n")
}

// progress: the log lines of renewal id up to (and with) the step last.
func progress(json bool, id string, last documents.Phase) []string {
	out := []string{LogLine(json, "renewal starting (lock held)", "operation", `"`+id+`"`, "mode", "renew")}
	for _, s := range steps() {
		out = append(out, LogLine(json, "step started", "step", s))
		if c, ok := documents.Phase(s).Restart(); ok {
			out = append(out, LogLine(json, "restarted", "component", `"`+string(c)+`"`, "stop_ms", "500", "healthy_ms", "4000"))
		}
		out = append(out, LogLine(json, "step ended", "step", s, "ms", "10"))
		if s == string(last) {
			break
		}
	}
	return out
}
