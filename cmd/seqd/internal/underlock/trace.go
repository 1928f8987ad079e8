package underlock

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/fence"
)

// A run is one span, seqd.lock (or seqd.campaign), a child of the trace
// context seqd was given in TRACEPARENT and TRACESTATE (OpenTelemetry's
// environment carrier), and the command gets the span's own context in
// them: the command's spans are children of the run's, which holds the
// lock's name and token. Without a tracer the command inherits seqd's
// TRACEPARENT as it is.

// envCarrier is a propagation carrier over environment variables, whose
// names are the upper-case keys (TRACEPARENT).
type envCarrier map[string]string

func (e envCarrier) Get(key string) string { return e[envName(key)] }
func (e envCarrier) Set(key, v string)     { e[envName(key)] = v }
func (e envCarrier) Keys() []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	return keys
}

func envName(key string) string {
	b := []byte(key)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// startSpan starts the run's span, a child of getenv's TRACEPARENT; a
// no-op span without a tracer.
func startSpan(cfg Config, getenv func(string) string) trace.Span {
	if cfg.Tracer == nil {
		return trace.SpanFromContext(context.Background())
	}
	parent := propagation.TraceContext{}.Extract(context.Background(),
		envCarrier{"TRACEPARENT": getenv("TRACEPARENT"), "TRACESTATE": getenv("TRACESTATE")})
	name := "seqd.lock"
	if cfg.Kind == fence.KindElection {
		name = "seqd.campaign"
	}
	_, span := cfg.Tracer.Tracer("github.com/seqd/seqd/cmd/seqd").Start(parent, name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.StringSlice("seqd.names", cfg.Names), attribute.String("seqd.kind", string(cfg.Kind))))
	return span
}

// granted records the grant's token on the run's span.
func granted(span trace.Span, token uint64) {
	span.SetAttributes(attribute.Int64("seqd.token", int64(token)))
	span.AddEvent("granted", trace.WithAttributes(attribute.Int64("seqd.token", int64(token))))
}

// endSpan ends the run's span with err's status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// traceEnv is TRACEPARENT (and TRACESTATE) of span for the command; none
// for a span that is not recorded (no tracer), whose command inherits
// seqd's own.
func traceEnv(span trace.Span) []string {
	if !span.SpanContext().IsValid() {
		return nil
	}
	c := envCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), span), c)
	var env []string
	for k, v := range c {
		env = append(env, k+"="+v)
	}
	return env
}
