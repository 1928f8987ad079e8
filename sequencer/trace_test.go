package sequencer_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/policy"
)

// tracedService is a started Service whose spans go to an in-memory
// exporter (tp nil: no tracing) and whose metrics to reg.
func tracedService(t testing.TB, tp trace.TracerProvider, reg *prometheus.Registry) *sequencer.Service {
	t.Helper()
	root := "/seqd-test/" + t.Name()
	logger := slog.New(slog.DiscardHandler) // a benchmark's log shows its figures alone
	if _, ok := t.(*testing.T); ok {
		logger = testLogger(t)
	}
	svc := sequencer.New(sequencer.Config{
		Servers:        sharedZK.Get(t).Servers(),
		Root:           root,
		SemaphoreRoot:  root + ".semaphores",
		ElectionRoot:   root + ".elections",
		SessionTimeout: 10 * time.Second,
		Metrics:        metrics.New(reg, metrics.Options{}),
		Logger:         logger,
		Tracer:         tp,
	})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

// callersSpan is the span context of a caller's trace, as a transport
// puts it into a verb's ctx from the request's traceparent.
func callersSpan(t testing.TB) trace.SpanContext {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestVerbSpansJoinTheCallersTrace: each verb is one span, a child of the
// caller's span, named for the verb, with the lock's name and kind, the
// caller's identity and the granted token; a refusal sets the span's
// status to the error's code.
func TestVerbSpansJoinTheCallersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	svc := tracedService(t, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), prometheus.NewRegistry())
	parent := callersSpan(t)
	ctx := policy.WithCaller(trace.ContextWithRemoteSpanContext(ctxT(t, 30*time.Second), parent), policy.Caller{ID: "team-a", Via: policy.ViaToken})

	l, err := svc.Acquire(ctx, "traced", acquireRequest("w1", time.Minute, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Acquire(ctx, "traced", acquireRequest("w2", time.Minute, 0, nil)); !errors.Is(err, api.ErrHeld) {
		t.Fatalf("second acquire: %v, want held", err)
	}
	seq, err := svc.ParseSequencer(l.Sequencer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Check(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Status(ctx, "traced"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Renew(ctx, api.Locks, "traced", leaseRequest(l.LeaseID, l.Token, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := svc.Release(ctx, api.Locks, "traced", leaseRequest(l.LeaseID, l.Token, 0)); err != nil {
		t.Fatal(err)
	}

	tok := attribute.Int64Value(int64(l.Token))
	want := []struct {
		name  string
		token *attribute.Value
		code  string // "" for no error
	}{
		{"seqd.acquire", &tok, ""},
		{"seqd.acquire", nil, api.CodeHeld},
		{"seqd.check", &tok, ""},
		{"seqd.status", nil, ""},
		{"seqd.renew", &tok, ""},
		{"seqd.release", nil, ""},
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d: %v", len(spans), len(want), spanNames(spans))
	}
	for i, w := range want {
		s := spans[i]
		a := spanAttrs(s)
		if s.Name() != w.name || s.SpanKind() != trace.SpanKindServer {
			t.Errorf("span %d is %s (%s), want %s (server)", i, s.Name(), s.SpanKind(), w.name)
		}
		if s.Parent().SpanID() != parent.SpanID() || s.SpanContext().TraceID() != parent.TraceID() {
			t.Errorf("%s: parent %s in trace %s, want the caller's span %s in %s", w.name, s.Parent().SpanID(), s.SpanContext().TraceID(), parent.SpanID(), parent.TraceID())
		}
		if a["seqd.name"].AsString() != "traced" || a["seqd.kind"].AsString() != "lock" || a["seqd.identity"].AsString() != "team-a" {
			t.Errorf("%s: name %q kind %q identity %q, want traced lock team-a", w.name, a["seqd.name"].AsString(), a["seqd.kind"].AsString(), a["seqd.identity"].AsString())
		}
		if got, ok := a["seqd.token"]; ok != (w.token != nil) || ok && got != *w.token {
			t.Errorf("%s: seqd.token %v (set: %v), want %v", w.name, got.String(), ok, w.token)
		}
		switch {
		case w.code == "" && s.Status().Code != codes.Unset:
			t.Errorf("%s: status %v, want unset", w.name, s.Status())
		case w.code != "" && (s.Status().Code != codes.Error || s.Status().Description != w.code):
			t.Errorf("%s: status %v, want error %q", w.name, s.Status(), w.code)
		}
	}
	if ev := spans[0].Events(); len(ev) != 1 || ev[0].Name != "granted" {
		t.Errorf("the grant's span has events %v, want one granted", ev)
	}
}

// TestVerbSpansWithoutTheCallersTrace is the control of the parent check:
// a verb called with no trace context starts a trace of its own.
func TestVerbSpansWithoutTheCallersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	svc := tracedService(t, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), prometheus.NewRegistry())
	if _, err := svc.Status(ctxT(t, 30*time.Second), "untraced"); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 1 || spans[0].Parent().IsValid() || spans[0].SpanContext().TraceID() == callersSpan(t).TraceID() {
		t.Fatalf("spans %v: want one root span in a trace of its own", spanNames(spans))
	}
	if a := spanAttrs(spans[0]); a["seqd.identity"].AsString() != policy.Anonymous {
		t.Fatalf("identity %q, want %q", a["seqd.identity"].AsString(), policy.Anonymous)
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name())
	}
	return n
}

// TestRequestDurationCarriesTraceExemplars: a traced verb's observation in
// seqd_request_duration_seconds carries its trace id as an exemplar; an
// untraced daemon observes the same verb without one.
func TestRequestDurationCarriesTraceExemplars(t *testing.T) {
	for _, c := range []struct {
		name   string
		tp     trace.TracerProvider
		traced bool
	}{
		{"traced", sdktrace.NewTracerProvider(), true},
		{"not sampled", sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())), false},
		{"tracing off", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			svc := tracedService(t, c.tp, reg)
			ctx := trace.ContextWithRemoteSpanContext(ctxT(t, 30*time.Second), callersSpan(t))
			if _, err := svc.Acquire(ctx, "exemplar", acquireRequest("w1", time.Minute, 0, nil)); err != nil {
				t.Fatal(err)
			}
			h := requestHistogram(t, reg, "seqd.acquire")
			if h.GetSampleCount() != 1 {
				t.Fatalf("%d acquires observed, want 1", h.GetSampleCount())
			}
			var ids []string
			for _, b := range h.GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					if l.GetName() == "trace_id" {
						ids = append(ids, l.GetValue())
					}
				}
			}
			want := []string(nil)
			if c.traced {
				want = []string{callersSpan(t).TraceID().String()}
			}
			if len(ids) != len(want) || len(ids) == 1 && ids[0] != want[0] {
				t.Fatalf("exemplars' trace ids %v, want %v", ids, want)
			}
		})
	}
}

// requestHistogram is seqd_request_duration_seconds{verb=verb} in reg.
func requestHistogram(t *testing.T, reg *prometheus.Registry, verb string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "seqd_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" && l.GetValue() == verb {
					return m.GetHistogram()
				}
			}
		}
	}
	t.Fatalf("no seqd_request_duration_seconds{verb=%q}", verb)
	return nil
}
