package sequencer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/sequencer"
)

// BenchmarkVerbTracing: what a verb's span and observation cost, in
// process (not as deployed: no HTTP, no other process), on the cheapest
// verb there is: a break by a caller who may not break, refused from
// memory without a ZooKeeper request, so that the cost is as large a
// share as it can be. Variants, interleaved in rounds: untraced (the verb's body
// alone), off (no tracer: the default), unsampled (an SDK that samples
// nothing) and sampled (every span recorded and batched to an exporter
// that drops it). It prints each variant's median ns/op, the spread of
// the rounds, allocs/op and the ratio to untraced.
func BenchmarkVerbTracing(b *testing.B) {
	svcs := map[string]*sequencer.Service{
		"untraced":  tracedService(b, nil, prometheus.NewRegistry()),
		"off":       tracedService(b, nil, prometheus.NewRegistry()),
		"unsampled": tracedService(b, sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())), prometheus.NewRegistry()),
		"sampled":   tracedService(b, sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())), prometheus.NewRegistry()),
	}
	names := []string{"untraced", "off", "unsampled", "sampled"}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), callersSpan(b))
	req := api.BreakRequest{Token: 1}
	op := func(v string) func() {
		s := svcs[v]
		if v == "untraced" {
			return func() { _, _ = s.BreakUntraced(ctx, api.Locks, "bench", req, "bench") }
		}
		return func() { _, _ = s.Break(ctx, api.Locks, "bench", req, "bench") }
	}
	if _, err := svcs["off"].Break(ctx, api.Locks, "bench", req, "bench"); !errors.Is(err, api.ErrForbidden) {
		b.Fatalf("a break by anonymous: %v, want forbidden", err)
	}
	const rounds, perRound = 7, 20000
	ns := map[string][]float64{}
	for b.Loop() {
		for range rounds {
			for _, v := range names {
				f := op(v)
				start := time.Now()
				for range perRound {
					f()
				}
				ns[v] = append(ns[v], float64(time.Since(start).Nanoseconds())/perRound)
			}
		}
	}
	base := median(ns["untraced"])
	for _, v := range names {
		allocs := testing.AllocsPerRun(1000, op(v))
		m := median(ns[v])
		b.ReportMetric(m, v+"-ns/op")
		b.ReportMetric(allocs, v+"-allocs/op")
		b.Logf("in process: %-9s %7.0f ns/op (rounds %.0f..%.0f) %4.0f allocs/op  %.3fx untraced", v, m, slices.Min(ns[v]), slices.Max(ns[v]), allocs, m/base)
	}
	b.ReportMetric(median(ns["off"])/base, "off/untraced")
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
