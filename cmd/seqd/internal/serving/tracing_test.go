package serving

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestTracingFromTheEnvironment: OTEL_TRACES_EXPORTER picks the exporters
// (none by default: no provider at all), the console one writes spans
// with the service name of OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER is
// obeyed, and a value seqd cannot honour is refused with the variable's
// name.
func TestTracingFromTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		off     bool   // no provider
		wantErr string // in the error
		console string // in the console's output ("" for none)
	}{
		{name: "unset", off: true},
		{name: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, off: true},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "seqd-east"}, console: `"Value":"seqd-east"`},
		{name: "console, default name", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, console: `"Value":"seqd"`},
		{name: "console, sampled off", env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "always_off"}},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER: unknown exporter "zipkin"`},
		{name: "otlp over grpc", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []string{"OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_RESOURCE_ATTRIBUTES"} {
				t.Setenv(v, c.env[v])
			}
			var out bytes.Buffer
			tp, shutdown, err := Tracing(context.Background(), os.Getenv, &out)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tp == nil) != c.off {
				t.Fatalf("provider %v, want none: %v", tp, c.off)
			}
			if tp == nil {
				return
			}
			_, span := tp.Tracer("test").Start(context.Background(), "seqd.acquire")
			span.End()
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if c.console == "" && got != "" || c.console != "" && !(strings.Contains(got, c.console) && strings.Contains(got, `"Name":"seqd.acquire"`)) {
				t.Fatalf("console output %q, want the span with %q (none if empty)", got, c.console)
			}
		})
	}
}

// TestTracingExportsOTLPOverHTTP: with OTEL_TRACES_EXPORTER=otlp, spans go
// as OTLP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT's /v1/traces.
func TestTracingExportsOTLPOverHTTP(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []string
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		body = append(body, b...)
		mu.Unlock()
	}))
	defer srv.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	tp, shutdown, err := Tracing(context.Background(), os.Getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "seqd.release")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "POST /v1/traces application/x-protobuf" || !bytes.Contains(body, []byte("seqd.release")) {
		t.Fatalf("the receiver got %v with %q, want one POST /v1/traces of protobuf holding the span", got, body)
	}
}
