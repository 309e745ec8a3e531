package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the one propagation format herald reads and stores: W3C Trace
// Context.
var w3c propagation.TraceContext

// TraceParent returns the W3C traceparent of the span active in ctx, or ""
// when there is none (tracing off, or nothing sampled it in). The store keeps
// it with a fired event. tracestate is not kept: herald's spans set none,
// and a client's vendor state has no use past its own request.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "" // the common case when tracing is off: no map, no formatting
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c.Get("traceparent")
}

// SpanContext parses a stored traceparent into the remote span context it
// names; the result is invalid when traceparent is empty or malformed.
func SpanContext(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}
