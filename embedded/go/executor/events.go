package executor

import (
	"context"
	"encoding/json"
	"strings"

	"nvke.example/certrunbook/documents"
)

// StreamingTransport is a Transport that can also hand over a run's stderr
// (the runbook's log) line by line as it arrives. The Executor uses it only
// when OnEvent is set; a plain Transport still works (its lines then come
// from RunResult.Stderr once the run ended). sshtransport.Transport and
// certrunbooktest.Node implement it.
type StreamingTransport interface {
	Transport
	// StartStreaming is Start, and calls line with each complete line of
	// the command's stderr (without its newline), one call at a time, all
	// of them before the Remote's Wait returns.
	StartStreaming(ctx context.Context, argv []string, line func(string)) (Remote, error)
}

// EventKind is what an Event reports.
type EventKind string

// The events (Executor.OnEvent).
const (
	// EventPushed: the binary was pushed to Path.
	EventPushed EventKind = "pushed"
	// EventStarted: a run of the runbook started with Args.
	EventStarted EventKind = "started"
	// EventStepStarted: the runbook started Step ("step started" in its
	// log); Phase is set when the step is one of the contract's phases
	// (health, renew-certs, restart:etcd…): the phase the renewal reached.
	EventStepStarted EventKind = "step-started"
	// EventStepEnded: the runbook ended Step.
	EventStepEnded EventKind = "step-ended"
	// EventRestarted: the runbook restarted Component (its "restarted"
	// log line).
	EventRestarted EventKind = "restarted"
	// EventLog: any other line of the runbook's log.
	EventLog EventKind = "log"
	// EventSignalled: the caller's context ended; SIGTERM was sent (Err:
	// its error, if any).
	EventSignalled EventKind = "signalled"
	// EventExited: the run ended with ExitCode.
	EventExited EventKind = "exited"
	// EventCleanupAttempt: a fencing attempt of the cleanup was not
	// definitive; Attempt is its number (from 1), Line what it met.
	EventCleanupAttempt EventKind = "cleanup-attempt"
)

// Valid reports whether k is one of the event kinds.
func (k EventKind) Valid() bool {
	switch k {
	case EventPushed, EventStarted, EventStepStarted, EventStepEnded, EventRestarted,
		EventLog, EventSignalled, EventExited, EventCleanupAttempt:
		return true
	}
	return false
}

// Event is one progress report of an Executor (OnEvent): enough for a
// Temporal activity to heartbeat with (the step or phase reached, the
// component restarted).
type Event struct {
	Kind      EventKind
	Args      []string            // EventStarted: the runbook's arguments
	Path      string              // EventPushed
	Step      string              // EventStepStarted, EventStepEnded
	Phase     documents.Phase     // EventStepStarted, EventStepEnded: Step as a contract phase, or ""
	Component documents.Component // EventRestarted
	Line      string              // the log line (EventStep*, EventRestarted, EventLog); EventCleanupAttempt: why
	ExitCode  int                 // EventExited
	Attempt   int                 // EventCleanupAttempt
	Err       error               // EventSignalled
}

func (e *Executor) event(ev Event) {
	if e.OnEvent != nil {
		e.OnEvent(ev)
	}
}

// logEvent turns one line of the runbook's log (--log-format json or
// text) into an Event; blank lines give none.
func logEvent(line string) (Event, bool) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" {
		return Event{}, false
	}
	msg, fields := parseLogLine(line)
	ev := Event{Kind: EventLog, Line: line}
	switch msg {
	case "step started", "step ended":
		if s := fields["step"]; s != "" {
			ev.Kind, ev.Step = EventStepStarted, s
			if msg == "step ended" {
				ev.Kind = EventStepEnded
			}
			if p := documents.Phase(s); p.Valid() {
				ev.Phase = p
			}
		}
	case "restarted":
		if c := documents.Component(fields["component"]); c.Valid() {
			ev.Kind, ev.Component = EventRestarted, c
		}
	}
	return ev, true
}

// parseLogLine: the message and fields of a tracing-subscriber line, as
// JSON ({"fields":{"message":…,…}}) or text (`TIME LEVEL message k=v…`).
func parseLogLine(line string) (string, map[string]string) {
	fields := map[string]string{}
	if strings.HasPrefix(line, "{") {
		var j struct {
			Fields map[string]any `json:"fields"`
		}
		if json.Unmarshal([]byte(line), &j) == nil {
			for k, v := range j.Fields {
				if s, ok := v.(string); ok {
					fields[k] = s
				} else if b, err := json.Marshal(v); err == nil {
					fields[k] = string(b)
				}
			}
			return fields["message"], fields
		}
	}
	words := strings.Fields(line)
	// Skip the timestamp and the level.
	for len(words) > 0 && !isLevel(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return "", fields
	}
	words = words[1:]
	end := len(words)
	for end > 0 {
		k, v, ok := strings.Cut(words[end-1], "=")
		if !ok || k == "" || strings.ContainsAny(k, `"' `) {
			break
		}
		fields[k] = strings.Trim(v, `"`)
		end--
	}
	return strings.Join(words[:end], " "), fields
}

func isLevel(w string) bool {
	switch w {
	case "TRACE", "DEBUG", "INFO", "WARN", "ERROR":
		return true
	}
	return false
}
