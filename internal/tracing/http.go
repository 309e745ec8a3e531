package tracing

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/accesslog"
)

// Handler gives every request next serves a server span, named by the route
// pattern that served it ("POST /v3/licenses", "GET /webhooks/{id}"), unless
// skip says otherwise. A traceparent header from the client is honoured, so
// herald's spans join the caller's trace.
//
// The span records the method, the route, the status and the request id
// (the answer's X-Request-Id, also on the access line), and nothing else:
// not the path, whose values could be anything a client typed, nor the
// query, headers (Authorization), body, user agent or client address. That
// is why herald does not use otelhttp, which records the path, the user
// agent and an X-Forwarded-For address it does not check against trusted
// proxies. It must be wrapped by accesslog.Handler, which names the route.
func Handler(next http.Handler, tracer trace.Tracer, skip func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if skip != nil && skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := w3c.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method)))
		defer span.End()
		rw := &accesslog.Recorder{ResponseWriter: w}
		r = r.WithContext(ctx)
		next.ServeHTTP(rw, r)
		if route := accesslog.Route(r); route != "" {
			span.SetName(route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		code := rw.Status()
		span.SetAttributes(semconv.HTTPResponseStatusCode(code),
			attribute.String("herald.request_id", w.Header().Get(accesslog.RequestIDHeader)))
		if code >= 500 { // a client's mistake is not a server span's error
			span.SetStatus(codes.Error, http.StatusText(code))
		}
	})
}
