// Package accesslog owns the access log: one line per API and portal
// request, naming its request id, method, route pattern, status, size and
// duration, and never its path values, query, headers or body, which can
// carry what the log must not (a token, an email address). It also gives
// every request the id that its answer carries in X-Request-Id, so a line in
// the log and a client's report of an answer can be matched.
package accesslog

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// RequestIDHeader carries each request's id in its answer.
const RequestIDHeader = "X-Request-Id"

type entryKey struct{}

// entry is what the handlers tell the log about a request while serving it.
type entry struct {
	route string
}

// SetRoute records the pattern that served r (r.Pattern of the mux that
// matched it). Handlers behind nested muxes call it, because only the
// innermost mux knows the route; a request that no handler names is logged
// with the outermost pattern.
func SetRoute(r *http.Request) {
	if e, ok := r.Context().Value(entryKey{}).(*entry); ok && r.Pattern != "" {
		e.route = r.Pattern
	}
}

// Route returns the route pattern that served r: the one a handler recorded
// with SetRoute, else r.Pattern (the outermost mux's, once it has served r).
func Route(r *http.Request) string {
	if e, ok := r.Context().Value(entryKey{}).(*entry); ok && e.route != "" {
		return e.route
	}
	return r.Pattern
}

// Options says where a request's line goes.
type Options struct {
	// Log gets a line per request at info; nil logs nothing.
	Log *slog.Logger
	// Observe, when set, is told each request's route, method, status and
	// duration (for metrics).
	Observe func(route, method string, status int, d time.Duration)
	// Skip leaves a request out of both (health checks and metrics
	// scrapes, which would drown the rest).
	Skip func(*http.Request) bool
}

// Handler gives every request an id, lets handlers record their route, and
// logs and observes the requests that o does not skip.
func Handler(next http.Handler, o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := uuid.Must(uuid.NewV7()).String()
		w.Header().Set(RequestIDHeader, id)
		if o.Skip != nil && o.Skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		// The entry is made even with nothing to log or observe: a
		// request's span is named by the route it records (Route).
		e := &entry{}
		r = r.WithContext(context.WithValue(r.Context(), entryKey{}, e))
		if o.Log == nil && o.Observe == nil {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rw := &Recorder{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		route := Route(r)
		took := time.Since(start)
		if o.Observe != nil {
			o.Observe(route, r.Method, rw.Status(), took)
		}
		if o.Log == nil {
			return
		}
		o.Log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("request_id", id),
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", rw.Status()),
			slog.Int64("bytes", rw.bytes),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000))
	})
}

// Recorder notes the status and size of an answer, for the access log and
// for the server spans of package tracing. Unwrap lets
// http.ResponseController reach the connection's own Flush and deadlines.
type Recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// Status is the answer's status: 200 when the handler wrote none.
func (w *Recorder) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *Recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
