package sequencer_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/internal/httptry"
	"github.com/seqd/seqd/sequencer/httpapi"
)

// TestMetricsShowExemplarsToOpenMetricsScrapers: /metrics, asked for
// OpenMetrics (as Prometheus asks with exemplar storage on), shows a
// traced acquire's trace id as the exemplar of its bucket; the classic
// text format, which cannot carry exemplars, shows none (the control).
func TestMetricsShowExemplarsToOpenMetricsScrapers(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := tracedService(t, sdktrace.NewTracerProvider(), reg)
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.HandlerOptions{Gatherer: reg}))
	t.Cleanup(srv.Close)
	ctx := trace.ContextWithRemoteSpanContext(ctxT(t, 30*time.Second), callersSpan(t))
	if _, err := svc.Acquire(ctx, "exposed", acquireRequest("w1", time.Minute, 0, nil)); err != nil {
		t.Fatal(err)
	}
	exemplar := `# {trace_id="` + callersSpan(t).TraceID().String() + `"}`
	for _, c := range []struct {
		accept string
		shown  bool
	}{
		{"application/openmetrics-text;version=1.0.0", true},
		{"text/plain", false},
	} {
		code, body := httptry.Do(t, http.MethodGet, srv.URL+"/metrics", "", map[string]string{"Accept": c.accept})
		if code != 200 {
			t.Fatalf("GET /metrics (Accept %s): %d", c.accept, code)
		}
		var line string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `seqd_request_duration_seconds_bucket{verb="seqd.acquire"`) && strings.Contains(l, "# {") {
				line = l
			}
		}
		if got := strings.Contains(line, exemplar); got != c.shown {
			t.Errorf("Accept %s: the acquire's bucket with an exemplar is %q; want %q shown: %v", c.accept, line, exemplar, c.shown)
		}
	}
}
