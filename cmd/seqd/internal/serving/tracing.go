package serving

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is the tracer provider that OpenTelemetry's standard environment
// variables ask for, read with getenv: OTEL_TRACES_EXPORTER names the
// exporters (otlp, console, none; a comma-separated list); the OTLP
// exporter speaks http/protobuf to OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); the console exporter writes to
// console; OTEL_SERVICE_NAME names the service (default "seqd") and
// OTEL_TRACES_SAMPLER with OTEL_TRACES_SAMPLER_ARG chooses the sampler
// (default parentbased_always_on), as the SDK reads them. With no
// exporter (the default) it returns a nil provider: the daemon makes no
// spans at all. shutdown flushes what is left and stops the exporters.
func Tracing(ctx context.Context, getenv func(string) string, console io.Writer) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	var exporters []sdktrace.SpanExporter
	for w := range strings.SplitSeq(getenv("OTEL_TRACES_EXPORTER"), ",") {
		switch w = strings.TrimSpace(w); w {
		case "", "none":
		case "console":
			e, err := stdouttrace.New(stdouttrace.WithWriter(console))
			if err != nil {
				return nil, none, err
			}
			exporters = append(exporters, e)
		case "otlp":
			if err := otlpProtocol(getenv); err != nil {
				return nil, none, err
			}
			e, err := otlptracehttp.New(ctx)
			if err != nil {
				return nil, none, fmt.Errorf("OTEL_TRACES_EXPORTER=otlp: %w", err)
			}
			exporters = append(exporters, e)
		default:
			return nil, none, fmt.Errorf("OTEL_TRACES_EXPORTER: unknown exporter %q: give otlp, console or none", w)
		}
	}
	if len(exporters) == 0 {
		return nil, none, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "seqd")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, none, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	p := sdktrace.NewTracerProvider(opts...)
	return p, p.Shutdown, nil
}

// otlpProtocol refuses an OTLP protocol other than http/protobuf, the one
// the daemon links.
func otlpProtocol(getenv func(string) string) error {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := getenv(v); p {
		case "":
			continue
		case "http/protobuf":
			return nil
		default:
			return errors.New(v + "=" + p + ": seqd exports OTLP over http/protobuf only")
		}
	}
	return nil
}

// StartTracing is Tracing, with the flush that ends it: stop waits up to
// flushWithin for what is left to be exported, and logs (to log, when not
// nil) a flush that failed. A command defers stop.
func StartTracing(ctx context.Context, getenv func(string) string, console io.Writer, flushWithin time.Duration, log *slog.Logger) (tp trace.TracerProvider, stop func(), err error) {
	tp, shutdown, err := Tracing(ctx, getenv, console)
	if err != nil {
		return nil, func() {}, err
	}
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushWithin)
		defer cancel()
		if err := shutdown(ctx); err != nil && log != nil {
			log.Warn("traces not flushed", "err", err)
		}
	}, nil
}
