package client

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceHeaders puts the W3C trace context of ctx's span (traceparent,
// tracestate) on h, so that the daemon's spans of the request are
// children of the caller's span. A ctx without a span sends none. Only the
// OpenTelemetry API is linked: the program's own SDK, if any, made the
// span.
func traceHeaders(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}
