package sequencer_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/sequencer/httpapi"
)

// TestGoClientCarriesItsSpanToTheDaemon: a program's span, in the ctx it
// gives the Go client, is the parent of the daemon's spans of the
// client's requests (over HTTP: traceparent); a ctx without one gives the
// daemon's spans no parent (the control).
func TestGoClientCarriesItsSpanToTheDaemon(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	svc := tracedService(t, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), prometheus.NewRegistry())
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.HandlerOptions{}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	app := tracetest.NewInMemoryExporter()
	ctx, root := sdktrace.NewTracerProvider(sdktrace.WithSyncer(app)).Tracer("app").Start(ctxT(t, 30*time.Second), "job")
	l, err := c.Acquire(ctx, "from-client")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	root.End()
	if _, err := c.Status(ctxT(t, 30*time.Second), "from-client"); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans().Snapshots()
	if got := spanNames(spans); len(got) != 3 {
		t.Fatalf("daemon spans %v, want acquire, release, status", got)
	}
	for i, s := range spans {
		parented := s.Parent().SpanID() == root.SpanContext().SpanID() && s.SpanContext().TraceID() == root.SpanContext().TraceID()
		if want := i < 2; parented != want || s.Parent().IsRemote() != want {
			t.Errorf("%s: parent %s (remote %v) in trace %s; want the program's span %s: %v", s.Name(), s.Parent().SpanID(), s.Parent().IsRemote(), s.SpanContext().TraceID(), root.SpanContext().SpanID(), want)
		}
	}
	if tok := spanAttrs(spans[0])["seqd.token"]; tok.AsInt64() != int64(l.Token) {
		t.Errorf("the acquire's span has seqd.token %v, want the granted %d", tok.AsInt64(), l.Token)
	}
}
