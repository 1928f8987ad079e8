package httpapi

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// traceContext is r's context with the caller's W3C trace context
// (traceparent, tracestate) in it, so that the service's spans are its
// children. A request without a traceparent costs one map lookup.
func traceContext(r *http.Request) context.Context {
	if _, ok := r.Header["Traceparent"]; !ok {
		return r.Context()
	}
	return propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
}
