package serving

import (
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seqd/seqd/internal/httptry"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/store"
)

// TestStoreWritesJoinTheWritersTrace: a write to the store is a span, a
// child of the writer's traceparent, with the key, the token it carried
// and the verdict; a stale write's span is an error with the current
// token. A request without a traceparent starts a trace of its own.
func TestStoreWritesJoinTheWritersTrace(t *testing.T) {
	st, err := store.Open(store.Options{Dir: filepath.Join(t.TempDir(), "log"), Fence: store.FenceFull, CompactBytes: store.DefaultCompactBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	exp := tracetest.NewInMemoryExporter()
	srv := httptest.NewServer(traceStore(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), store.NewHandler(st, reg, metrics.NewStore(reg), slog.New(slog.DiscardHandler))))
	defer srv.Close()
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	tp := "00-" + traceID + "-" + spanID + "-01"
	for _, w := range []struct {
		headers map[string]string
		status  int
	}{
		{map[string]string{"traceparent": tp, store.HeaderToken: "5"}, 200},
		{map[string]string{"traceparent": tp, store.HeaderToken: "3"}, 409},
		{map[string]string{store.HeaderToken: "6"}, 200},
	} {
		if code, body := httptry.Do(t, "PUT", srv.URL+"/v1/kv/jobs/x", "v", w.headers); code != w.status {
			t.Fatalf("PUT with %v: %d %s, want %d", w.headers, code, body, w.status)
		}
	}
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	want := []struct {
		token, current int64
		verdict        string
		inTrace        bool
	}{
		{5, 0, "admitted", true},
		{3, 5, "stale_token", true},
		{6, 0, "admitted", false},
	}
	for i, w := range want {
		s := spans[i]
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value
		}
		if s.Name() != "seqd.store.put" || a["seqd.key"].AsString() != "jobs/x" || a["seqd.token"].AsInt64() != w.token ||
			a["seqd.store.verdict"].AsString() != w.verdict || a["seqd.current_token"].AsInt64() != w.current {
			t.Errorf("span %d: %s key %q token %d verdict %q current %d; want seqd.store.put jobs/x %d %q %d", i, s.Name(),
				a["seqd.key"].AsString(), a["seqd.token"].AsInt64(), a["seqd.store.verdict"].AsString(), a["seqd.current_token"].AsInt64(), w.token, w.verdict, w.current)
		}
		if in := s.SpanContext().TraceID().String() == traceID && s.Parent().SpanID().String() == spanID; in != w.inTrace {
			t.Errorf("span %d: in the writer's trace %v, want %v", i, in, w.inTrace)
		}
		if failed := s.Status().Code == codes.Error; failed != (w.verdict != "admitted") {
			t.Errorf("span %d: status %v for verdict %s", i, s.Status(), w.verdict)
		}
	}
}
