package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// consoleSpan is the part of a span that the console exporter writes
// that the test reads.
type consoleSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
}

// TestLockPassesItsSpanToTheCommand: with tracing on, seqd lock's run is
// a span, a child of the TRACEPARENT it was given, holding the granted
// token, and the command gets that span's context in TRACEPARENT; with
// tracing off, the command gets seqd's TRACEPARENT as it was.
func TestLockPassesItsSpanToTheCommand(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
		given   = "00-" + traceID + "-" + spanID + "-01"
	)
	env := []string{"SEQD_ZK=" + c.ConnectString(), "TRACEPARENT=" + given, "OTEL_SERVICE_NAME=", "OTEL_TRACES_SAMPLER="}
	args := []string{"traced", "--", "sh", "-c", `echo "$TRACEPARENT $SEQD_TOKEN"`}

	code, stdout, stderr := runLockT(t, time.Minute, append(env, "OTEL_TRACES_EXPORTER=none"), args...)
	if code != 0 || !strings.HasPrefix(stdout, given+" ") {
		t.Fatalf("tracing off: exit %d, the command printed %q, want %q and the token; stderr: %s", code, stdout, given, stderr)
	}

	code, stdout, stderr = runLockT(t, time.Minute, append(env, "OTEL_TRACES_EXPORTER=console"), args...)
	f := strings.Fields(stdout)
	if code != 0 || len(f) != 2 {
		t.Fatalf("tracing on: exit %d, the command printed %q; stderr: %s", code, stdout, stderr)
	}
	var span *consoleSpan
	for _, line := range strings.Split(stderr, "\n") {
		var s consoleSpan
		if json.Unmarshal([]byte(line), &s) == nil && s.Name == "seqd.lock" {
			span = &s
		}
	}
	if span == nil {
		t.Fatalf("no seqd.lock span on stderr: %s", stderr)
	}
	if span.SpanContext.TraceID != traceID || span.Parent.SpanID != spanID {
		t.Errorf("the run's span is in trace %s under %s, want the given %s under %s", span.SpanContext.TraceID, span.Parent.SpanID, traceID, spanID)
	}
	if want := "00-" + traceID + "-" + span.SpanContext.SpanID + "-01"; f[0] != want {
		t.Errorf("the command got TRACEPARENT %s, want the run's span: %s", f[0], want)
	}
	var token string
	for _, a := range span.Attributes {
		if a.Key == "seqd.token" {
			if n, ok := a.Value.Value.(float64); ok {
				token = strconv.FormatFloat(n, 'f', -1, 64)
			}
		}
	}
	if token != f[1] {
		t.Errorf("the run's span has seqd.token %q, want SEQD_TOKEN %s", token, f[1])
	}
}
