package delivery

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/tracing"
)

// Span names of the POSTs herald makes.
const (
	SpanAttempt = "delivery.attempt" // an automatic attempt
	SpanResend  = "delivery.resend"  // a resend asked for through the API or the portal
	SpanTest    = "delivery.test"    // a Test send (and its wrong-signature check)
)

// spanOf says what a POST is for; it becomes the attributes of its span.
type spanOf struct {
	name      string
	eventID   string
	kind      event.Kind
	webhookID string
	logID     string // "" for a Test
	attempt   int    // the automatic attempt's number; 0 for a resend or Test
	// fired is the traceparent stored with the event (attempt.Claim.TraceParent).
	// An automatic attempt is a child of it, so the trace that the API request
	// began goes on through every attempt in whichever process makes it. A
	// resend is a child of the request that asked for it, and links to it.
	fired string
	link  bool
}

// startSpan starts the client span of one POST. It returns a nil span when
// tracing is off, so an attempt pays nothing for it. No URL is recorded:
// receivers put credentials in them.
func (a *attempts) startSpan(ctx context.Context, s spanOf) (context.Context, trace.Span) {
	if a.cfg.Tracer == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	if sc := tracing.SpanContext(s.fired); sc.IsValid() {
		if s.link {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		} else {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodPost,
		attribute.String("herald.event_id", s.eventID),
		attribute.String("herald.event_kind", string(s.kind)),
		attribute.String("herald.webhook_id", s.webhookID),
	}
	if s.logID != "" {
		attrs = append(attrs, attribute.String("herald.log_id", s.logID))
	}
	if s.attempt > 0 {
		attrs = append(attrs, attribute.Int("herald.attempt", s.attempt))
	}
	return a.cfg.Tracer.Start(ctx, s.name, append(opts, trace.WithAttributes(attrs...))...)
}

// endSpan records what the POST saw and what came of it (outcome: delivered,
// retry, exhausted, resend_failed, succeeded or failed) and ends the span; a
// failed POST sets the span's status to error with the reason herald shows
// for it (a reason never names the URL).
func endSpan(span trace.Span, res Result, outcome string) {
	if span == nil {
		return
	}
	if res.StatusCode != nil {
		span.SetAttributes(semconv.HTTPResponseStatusCode(*res.StatusCode))
	}
	span.SetAttributes(attribute.String("herald.outcome", outcome))
	if !res.OK() {
		span.SetStatus(codes.Error, res.Err)
	}
	span.End()
}
