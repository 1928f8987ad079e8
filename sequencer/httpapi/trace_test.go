package httpapi

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/api"
)

// spanSeer is a fakeService that keeps the span context its status read
// was called with.
type spanSeer struct {
	*fakeService
	seen chan trace.SpanContext
}

func (s spanSeer) Status(ctx context.Context, name string) (api.LockStatus, error) {
	s.seen <- trace.SpanContextFromContext(ctx)
	return s.fakeService.Status(ctx, name)
}

// TestVerbsSeeTheCallersTraceContext: the service's verbs get the W3C
// trace context the request carried (traceparent, tracestate), and none
// when it carried none.
func TestVerbsSeeTheCallersTraceContext(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	svc := spanSeer{&fakeService{}, make(chan trace.SpanContext, 1)}
	url := serve(t, svc, HandlerOptions{})
	for _, c := range []struct {
		name    string
		headers map[string]string
		valid   bool
		state   string
	}{
		{"traceparent and tracestate", map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01", "tracestate": "vendor=x"}, true, "vendor=x"},
		{"no traceparent", nil, false, ""},
		{"a malformed traceparent", map[string]string{"traceparent": "00-nothex-" + spanID + "-01"}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, body := httpDoWith(t, "GET", url+"/v1/locks/traced", "", c.headers); code != 200 {
				t.Fatalf("status read: %d %s", code, body)
			}
			sc := <-svc.seen
			if sc.IsValid() != c.valid {
				t.Fatalf("the verb saw span context %+v, want valid=%v", sc, c.valid)
			}
			if !c.valid {
				return
			}
			if sc.TraceID().String() != traceID || sc.SpanID().String() != spanID || !sc.IsSampled() || !sc.IsRemote() || sc.TraceState().String() != c.state {
				t.Fatalf("the verb saw trace %s span %s sampled=%v remote=%v state %q, want %s %s sampled remote %q",
					sc.TraceID(), sc.SpanID(), sc.IsSampled(), sc.IsRemote(), sc.TraceState(), traceID, spanID, c.state)
			}
		})
	}
}
