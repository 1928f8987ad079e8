package serving

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/store"
)

// traceStore makes each key operation that h serves a span of tp
// (seqd.store.get, seqd.store.put, seqd.store.delete), a child of the
// request's traceparent, so that a fenced write shows in its writer's
// trace: the key, the token the request carried (seqd.token), the verdict
// (seqd.store.verdict: admitted, or the refusal's code, stale_token for a
// stale one) and the current token the store answered a stale one with.
// The store itself knows nothing of traces: the span is read off the
// request and the answer. Without tp, h is returned as it is.
func traceStore(tp trace.TracerProvider, h http.Handler) http.Handler {
	if tp == nil {
		return h
	}
	tr := tp.Tracer("github.com/seqd/seqd/store")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.URL.Path, "/v1/kv/")
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tr.Start(ctx, "seqd.store."+strings.ToLower(r.Method),
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("seqd.key", key)))
		defer span.End()
		if tok, err := store.ParseFencingHeaders(r.Header); err == nil && tok > 0 {
			span.SetAttributes(attribute.Int64("seqd.token", int64(tok)))
		}
		rec := &answer{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(ctx))
		if rec.status < 300 {
			span.SetAttributes(attribute.String("seqd.store.verdict", "admitted"))
			return
		}
		var body struct {
			Code         string  `json:"code"`
			CurrentToken *uint64 `json:"current_token"`
		}
		_ = json.Unmarshal(rec.body.Bytes(), &body)
		span.SetAttributes(attribute.String("seqd.store.verdict", body.Code))
		if body.CurrentToken != nil {
			span.SetAttributes(attribute.Int64("seqd.current_token", int64(*body.CurrentToken)))
		}
		span.SetStatus(codes.Error, body.Code)
	})
}

// answer records a response's status, and the body of a refusal (a small
// JSON error), as it passes through.
type answer struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *answer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.status >= 300 && a.body.Len() < 4096 {
		a.body.Write(p)
	}
	return a.ResponseWriter.Write(p)
}
