package sequencer

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer/policy"
)

// Each verb is one span, a child of the span context its ctx carries (the
// caller's traceparent, put there by the transport), and one observation
// of seqd_request_duration_seconds, whose exemplar is the span's trace id
// when the span is sampled. Without a Config.Tracer a verb makes no span:
// what it costs then is a clock read and the histogram's observation.

// tracerName is the instrumentation scope of the service's spans.
const tracerName = "github.com/seqd/seqd/sequencer"

// The span names of the verbs.
const (
	spanAcquire    = "seqd.acquire"
	spanCampaign   = "seqd.campaign"
	spanRenew      = "seqd.renew"
	spanRelease    = "seqd.release"
	spanProclaim   = "seqd.proclaim"
	spanBreak      = "seqd.break"
	spanCheck      = "seqd.check"
	spanStatus     = "seqd.status"
	spanStatusWait = "seqd.status_wait"
	spanOverview   = "seqd.overview"
)

// verbSpan is one verb's span and clock. Its zero span (tracing off) is
// a no-op: then only the duration is observed.
type verbSpan struct {
	m     *metrics.Metrics
	verb  string
	start time.Time
	span  trace.Span // nil when tracing is off
}

// traced starts verb's span on the name of kind, replacing *ctx with the
// span's context. A verb defers the end of what it returns (one line:
// defer s.traced(&ctx, ...).lease(&l, &err)); the span is started when the
// defer statement runs.
func (s *Service) traced(ctx *context.Context, verb, kind, name string) verbSpan {
	v := verbSpan{m: s.cfg.Metrics, verb: verb, start: time.Now()}
	tp := s.cfg.Tracer
	if tp == nil {
		return v
	}
	*ctx, v.span = tp.Tracer(tracerName).Start(*ctx, verb,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("seqd.name", name),
			attribute.String("seqd.kind", kind),
			attribute.String("seqd.identity", policy.CallerOf(*ctx).ID),
		))
	return v
}

// familyKind is the kind word of family f, for a verb that knows only
// the family.
func familyKind(f api.Family) string {
	switch f {
	case api.Semaphores:
		return policy.KindSemaphoreWord
	case api.Elections:
		return policy.KindElectionWord
	case api.MultiLocks:
		return policy.KindMultiWord
	}
	return policy.KindLockWord
}

// end ends the span with *err's status and observes the verb's duration.
func (v verbSpan) end(err *error) {
	d := time.Since(v.start)
	traceID := ""
	if v.span != nil {
		if *err != nil {
			code := errorCode(*err)
			v.span.SetAttributes(attribute.String("seqd.error_code", code))
			v.span.SetStatus(codes.Error, code)
			v.span.RecordError(*err)
		}
		if sc := v.span.SpanContext(); sc.IsSampled() {
			traceID = sc.TraceID().String()
		}
		v.span.End()
	}
	v.m.Request(v.verb, d, traceID)
}

// lease ends a grant's or a renewal's span: the granted token and the
// time the verb waited for it.
func (v verbSpan) lease(l *api.Lease, err *error) {
	if v.span != nil && *err == nil {
		tok := l.Token
		if tok == 0 {
			tok = l.Term
		}
		v.span.SetAttributes(attribute.Int64("seqd.token", int64(tok)), attribute.Float64("seqd.wait_seconds", time.Since(v.start).Seconds()))
		if v.verb == spanAcquire || v.verb == spanCampaign {
			v.span.AddEvent("granted", trace.WithAttributes(attribute.Int64("seqd.token", int64(tok))))
		}
	}
	v.end(err)
}

// multi ends a multi-lock grant's or renewal's span: each lock's token.
func (v verbSpan) multi(l *api.MultiLease, err *error) {
	if v.span != nil && *err == nil {
		names := make([]string, len(l.Locks))
		toks := make([]int64, len(l.Locks))
		for i, t := range l.Locks {
			names[i], toks[i] = t.Name, int64(t.Token)
		}
		v.span.SetAttributes(attribute.StringSlice("seqd.names", names), attribute.Int64Slice("seqd.tokens", toks),
			attribute.Float64("seqd.wait_seconds", time.Since(v.start).Seconds()))
	}
	v.end(err)
}

// token ends a span whose answer is a token: the current one (check) or
// the one broken.
func (v verbSpan) token(t *uint64, err *error) {
	if v.span != nil && *err == nil {
		v.span.SetAttributes(attribute.Int64("seqd.token", int64(*t)))
	}
	v.end(err)
}

// errorCode is the API's code for a verb's error, as the span's status
// shows it.
func errorCode(err error) string {
	var (
		pe *policy.Error
		ce *api.ConflictError
		re *api.RequestError
		ue *api.UnavailableError
		se *fence.SequencerError
	)
	switch {
	case errors.As(err, &pe) && pe.Quota:
		return api.CodeQuotaExceeded
	case errors.As(err, &pe):
		return api.CodeForbidden
	case errors.As(err, &ce):
		return ce.Code()
	case errors.As(err, &re):
		return api.CodeBadRequest
	case errors.As(err, &se) && errors.Is(se.Err, fence.ErrBadSignature):
		return api.CodeBadSignature
	case errors.As(err, &se):
		return api.CodeBadRequest
	case errors.As(err, &ue):
		return api.CodeUnavailable
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return api.CodeInternal
}
