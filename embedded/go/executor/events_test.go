package executor

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/internal/text"
)

// The runbook's log lines, as tracing-subscriber prints them with
// --log-format text (the default) and json, become Events.
func TestLogEvent(t *testing.T) {
	for _, c := range []struct {
		line      string
		kind      EventKind
		step      string
		phase     documents.Phase
		component documents.Component
	}{
		{`2026-12-04T10:00:00.123456Z  INFO step started step=restart:etcd`, EventStepStarted, "restart:etcd", documents.PhaseRestart(documents.ComponentEtcd), ""},
		{`2026-12-04T10:00:00.123456Z  INFO step ended step=health ms=12`, EventStepEnded, "health", documents.PhaseHealth, ""},
		{`2026-12-04T10:00:00.123456Z  INFO step started step=staging-preflight`, EventStepStarted, "staging-preflight", "", ""},
		{`2026-12-04T10:00:00.123456Z  INFO restarted component="kube-apiserver" old="0123456789ab" new="ba9876543210" stop_ms=500 healthy_ms=4000 api_unavailable_ms=0`, EventRestarted, "", "", documents.ComponentKubeAPIServer},
		{`{"timestamp":"2026-12-04T10:00:00.123456Z","level":"INFO","fields":{"message":"step started","step":"renew-certs"}}`, EventStepStarted, "renew-certs", documents.PhaseRenewCerts, ""},
		{`{"timestamp":"2026-12-04T10:00:00.123456Z","level":"INFO","fields":{"message":"restarted","component":"etcd","stop_ms":500}}`, EventRestarted, "", "", documents.ComponentEtcd},
		{`{"timestamp":"2026-12-04T10:00:00.123456Z","level":"INFO","fields":{"message":"restarted","component":"kube-proxy"}}`, EventLog, "", "", ""},
		{`2026-12-04T10:00:00.123456Z  WARN certificates renewed and verified`, EventLog, "", "", ""},
		{`not a log line at all`, EventLog, "", "", ""},
	} {
		ev, ok := logEvent(c.line)
		if !ok || ev.Kind != c.kind || ev.Step != c.step || ev.Phase != c.phase || ev.Component != c.component || ev.Line != c.line {
			t.Errorf("%s: got %+v", c.line, ev)
		}
	}
	if _, ok := logEvent("  \r"); ok {
		t.Error("a blank line gave an event")
	}
}

func TestLineSplitter(t *testing.T) {
	var got []string
	w := &text.Lines{Line: func(l string) { got = append(got, l) }}
	for _, p := range []string{"on", "e\ntw", "o\n\nthr", "ee"} {
		_, _ = w.Write([]byte(p))
	}
	if strings.Join(got, "|") != "one|two|" {
		t.Fatalf("before Flush: %q", got)
	}
	w.Flush()
	w.Flush()
	if strings.Join(got, "|") != "one|two||three" {
		t.Fatalf("after Flush: %q", got)
	}
}

// The real binary's log (both formats) gives the steps it ran as Events.
func TestLogEventsOfTheBinary(t *testing.T) {
	d := newDemo(t)
	for _, format := range []string{"text", "json"} {
		g := d.g
		g.LogFormat = format
		args, err := RenewArgs(g, RenewRequest{OperationID: "events-" + format})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(d.bin, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		_ = cmd.Run()
		var steps []string
		var phases []documents.Phase
		for _, l := range strings.Split(stderr.String(), "\n") {
			ev, ok := logEvent(l)
			if ok && ev.Kind == EventStepStarted {
				steps = append(steps, ev.Step)
				if ev.Phase != "" {
					phases = append(phases, ev.Phase)
				}
			}
		}
		if len(steps) < 3 || steps[0] != "phase-file" || len(phases) < 2 || phases[0] != documents.PhasePhaseFile || !slices.Contains(phases, documents.PhaseCACheck) {
			t.Errorf("%s: steps %q, phases %q from stderr:\n%s", format, steps, phases, stderr.String())
		}
	}
}
