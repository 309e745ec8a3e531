// Package tracing owns herald's OpenTelemetry traces: whether they are on
// (the standard OTEL_ environment variables decide; off, nothing is
// exported and spans cost next to nothing), the provider and its OTLP
// exporter, the server span of each API and portal request, and the W3C
// trace context stored with an event, so that a delivery attempt made later,
// by any process, continues the trace of the request that fired it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment asks for traces: an OTLP endpoint
// is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
// or OTEL_TRACES_EXPORTER is otlp; and OTEL_SDK_DISABLED is not true, nor
// OTEL_TRACES_EXPORTER none. A herald nobody configured for tracing sends
// nothing anywhere: the SDK's own default (OTLP to localhost) would try to
// connect to a collector that is not there.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "otlp":
		return true
	case "":
	default: // "none", or an exporter herald does not have
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Protocol returns the OTLP protocol the environment asks for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf (the specification's recommended default).
func Protocol(getenv func(string) string) (string, error) {
	p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if p == "" {
		p = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	default:
		return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: herald exports traces over http/protobuf or grpc", p)
	}
}

// Provider is herald's tracer provider: nil when tracing is off.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// FromEnv builds the tracer provider the environment asks for, or returns
// nil when it asks for none (see Enabled). The exporter reads the rest of
// the OTEL_EXPORTER_OTLP_ variables itself (endpoint, headers, time-out,
// TLS), the batch span processor the OTEL_BSP_ ones, the sampler
// OTEL_TRACES_SAMPLER (parent-based, always on, by default), and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; service.name is
// "herald" unless they say otherwise, and service.version is version.
func FromEnv(ctx context.Context, getenv func(string) string, version string) (*Provider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	proto, err := Protocol(getenv)
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter (%s): %w", proto, err)
	}
	// Later detectors win: the environment's service name over herald's.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("herald"), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// Tracer returns the tracer herald's spans start from, or nil when p is
// nil (tracing off).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.sdk.Tracer("github.com/heraldhq/herald")
}

// Shutdown exports the spans still buffered and stops the exporter; herald
// calls it once it has stopped, so the last attempts' spans are not lost.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}
