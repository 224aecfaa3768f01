package executor

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Global holds the options every mode shares (SPEC section 1). Zero values
// leave the binary's defaults. Every builder asks for JSON output.
type Global struct {
	// Root: every node path is taken under it (tests and containers); "" is "/".
	Root string
	// LogFormat: "text" (default) or "json"; logs go to stderr.
	LogFormat string
	// ThresholdDays: a leaf expiring within N days needs renewal, 7..=90 (0: 30).
	ThresholdDays int
	// Timeouts, rounded up to whole seconds (0: the binary's default).
	LockTimeout    time.Duration // 120 s
	StopTimeout    time.Duration // 120 s
	HealthTimeout  time.Duration // 300 s
	CommandTimeout time.Duration // 120 s
	// Kubeadm and Crictl: absolute host paths ("": looked up on a fixed PATH).
	Kubeadm string
	Crictl  string
	// KubeadmConfig: passed to `kubeadm certs renew all --config` (a node path).
	KubeadmConfig string
	// Now fixes the clock (RFC 3339); tests only, refused when Root is "/".
	Now string
}

func seconds(name string, d time.Duration) ([]string, error) {
	if d == 0 {
		return nil, nil
	}
	if d < 0 {
		return nil, argError("--"+name, "--%s must not be negative", name)
	}
	s := int64((d + time.Second - 1) / time.Second)
	if s > 3600 {
		return nil, argError("--"+name, "--%s %ds is over 3600 seconds", name, s)
	}
	return []string{"--" + name, strconv.FormatInt(s, 10)}, nil
}

func (g Global) args() ([]string, error) {
	a := []string{"--output", "json"}
	if g.Root != "" {
		if !strings.HasPrefix(g.Root, "/") {
			return nil, argError("Root", "Root %q must be absolute", g.Root)
		}
		a = append(a, "--root", g.Root)
	}
	switch g.LogFormat {
	case "":
	case "text", "json":
		a = append(a, "--log-format", g.LogFormat)
	default:
		return nil, argError("LogFormat", "LogFormat %q is not text or json", g.LogFormat)
	}
	if g.ThresholdDays != 0 {
		if g.ThresholdDays < 7 || g.ThresholdDays > 90 {
			return nil, argError("ThresholdDays", "ThresholdDays %d is out of range (7..=90)", g.ThresholdDays)
		}
		a = append(a, "--threshold-days", strconv.Itoa(g.ThresholdDays))
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{
		{"lock-timeout", g.LockTimeout},
		{"stop-timeout", g.StopTimeout},
		{"health-timeout", g.HealthTimeout},
		{"command-timeout", g.CommandTimeout},
	} {
		s, err := seconds(t.name, t.d)
		if err != nil {
			return nil, err
		}
		a = append(a, s...)
	}
	for _, p := range []struct{ flag, v string }{
		{"--kubeadm", g.Kubeadm},
		{"--crictl", g.Crictl},
		{"--kubeadm-config", g.KubeadmConfig},
	} {
		if p.v == "" {
			continue
		}
		if !strings.HasPrefix(p.v, "/") {
			return nil, argError(p.flag, "%s %q must be an absolute path", p.flag, p.v)
		}
		a = append(a, p.flag, p.v)
	}
	if g.Now != "" {
		if g.Root == "" || strings.Trim(g.Root, "/.") == "" {
			return nil, argError("Now", "Now is refused when Root is /")
		}
		if _, err := time.Parse(time.RFC3339, g.Now); err != nil {
			return nil, argError("Now", "Now: %w", err)
		}
		a = append(a, "--now", g.Now)
	}
	return a, nil
}

// ValidOperationID reports whether id is an operation ID: 1 to 200
// characters of A-Z a-z 0-9 . _ : @ -, not starting with '.' or '-', never
// containing "..".
func ValidOperationID(id string) error {
	if id == "" {
		return argError("OperationID", "operation ID is empty")
	}
	if len(id) > 200 {
		return argError("OperationID", "operation ID is %d bytes long (at most 200)", len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '@' || c == '-'
		if !ok {
			return argError("OperationID", "operation ID has a character that is not allowed at byte %d (allowed: A-Z a-z 0-9 . _ : @ -)", i+1)
		}
	}
	if id[0] == '.' || id[0] == '-' {
		return argError("OperationID", "operation ID must not start with '.' or '-'")
	}
	if strings.Contains(id, "..") {
		return argError("OperationID", "operation ID must not contain '..'")
	}
	return nil
}

// CAKeys are the names --expect-ca-sha256 accepts (keys of caSHA256).
var CAKeys = []string{"ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"}

// RenewRequest is one V2 renewal (Executor.Renew, RenewArgs).
type RenewRequest struct {
	// OperationID is the caller's stable ID for this node's renewal. An
	// activity retry reattaches by calling Renew again with the same ID:
	// the runbook resumes the unfinished work or replays its receipt; it
	// never starts a second renewal.
	OperationID string
	Force       bool
	// ExpectCASHA256: CA key (one of CAKeys) to 64 hex digits.
	ExpectCASHA256 map[string]string
}

// RenewArgs builds the arguments of a V2 renewal (`--operation-id ID`).
func RenewArgs(g Global, o RenewRequest) ([]string, error) {
	if err := ValidOperationID(o.OperationID); err != nil {
		return nil, err
	}
	a, err := g.args()
	if err != nil {
		return nil, err
	}
	a = append(a, "--operation-id", o.OperationID)
	if o.Force {
		a = append(a, "--force")
	}
	names := make([]string, 0, len(o.ExpectCASHA256))
	for k := range o.ExpectCASHA256 {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := o.ExpectCASHA256[k]
		known := false
		for _, c := range CAKeys {
			known = known || c == k
		}
		if !known {
			return nil, argError("ExpectCASHA256", "ExpectCASHA256: unknown CA %q (one of %s)", k, strings.Join(CAKeys, ", "))
		}
		if !isHex64(v) {
			return nil, argError("ExpectCASHA256", "ExpectCASHA256[%q] is not 64 hex digits", k)
		}
		a = append(a, "--expect-ca-sha256", k+"="+strings.ToLower(v))
	}
	return a, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// RecoverExpiredArgs builds the arguments of the recovery of a node whose leaf
// certificates already expired (`--operation-id ID --recover-expired`,
// SPEC 11): no health gate before the renewal; set g.KubeadmConfig to the
// node's saved ClusterConfiguration. An operator's path: the controller's
// cycle never starts it by itself (a plain renewal of such a node fails at
// once in phase "expiry" and names this command).
func RecoverExpiredArgs(g Global, operationID string, expectCASHA256 map[string]string) ([]string, error) {
	a, err := RenewArgs(g, RenewRequest{OperationID: operationID, ExpectCASHA256: expectCASHA256})
	if err != nil {
		return nil, err
	}
	return append(a, "--recover-expired"), nil
}

// LegacyV1Args builds the arguments of a V1-compatible renewal (`--legacy-v1`).
func LegacyV1Args(g Global, force bool) ([]string, error) {
	a, err := g.args()
	if err != nil {
		return nil, err
	}
	a = append(a, "--legacy-v1")
	if force {
		a = append(a, "--force")
	}
	return a, nil
}

// CheckArgs builds the arguments of the read-only preflight (`--check`).
// agentState is the node agent's state file ("" for the default path).
func CheckArgs(g Global, force bool, agentState string) ([]string, error) {
	a, err := g.args()
	if err != nil {
		return nil, err
	}
	a = append(a, "--check")
	if force {
		a = append(a, "--force")
	}
	if agentState != "" {
		if !strings.HasPrefix(agentState, "/") {
			return nil, argError("AgentState", "agentState %q must be an absolute node path", agentState)
		}
		a = append(a, "--agent-state", agentState)
	}
	return a, nil
}

// StatusOnlyArgs builds the arguments of the read-only operator view
// (`--status-only`, with `--operation-id ID` when operationID is not "").
func StatusOnlyArgs(g Global, operationID string) ([]string, error) {
	a, err := g.args()
	if err != nil {
		return nil, err
	}
	a = append(a, "--status-only")
	if operationID != "" {
		if err := ValidOperationID(operationID); err != nil {
			return nil, err
		}
		a = append(a, "--operation-id", operationID)
	}
	return a, nil
}

// FenceArgs builds the arguments of the controller's termination check
// (`--status-only --operation-id ID --fence`).
func FenceArgs(g Global, operationID string) ([]string, error) {
	if err := ValidOperationID(operationID); err != nil {
		return nil, err
	}
	a, err := g.args()
	if err != nil {
		return nil, err
	}
	return append(a, "--status-only", "--operation-id", operationID, "--fence"), nil
}

// VersionArgs builds `--version --output json`.
func VersionArgs() []string { return []string{"--version", "--output", "json"} }

// HelpArgs builds `--help --output json`.
func HelpArgs() []string { return []string{"--help", "--output", "json"} }

// ArgumentError is an argument the package refuses before anything runs
// (an operation ID, a path, a bound): never retryable, nothing was sent to
// the node. Field names the option or field.
type ArgumentError struct {
	Field string
	Err   error
}

func (e *ArgumentError) Error() string { return e.Err.Error() }
func (e *ArgumentError) Unwrap() error { return e.Err }

func argError(field, format string, a ...any) error {
	return &ArgumentError{Field: field, Err: fmt.Errorf(format, a...)}
}
