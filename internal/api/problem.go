package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Problem is an RFC 9457 problem document. Errors holds one entry per field
// that failed validation.
type Problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError names a field and what is wrong with it.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

const problemBase = "https://herald.dev/problems/"

func problem(status int, kind, title, detail string) *Problem {
	return &Problem{Type: problemBase + kind, Title: title, Status: status, Detail: detail}
}

// Invalid collects field errors; a nil or empty Invalid is no error.
type Invalid []FieldError

// Add records that field is wrong.
func (v *Invalid) Add(field, detail string) { *v = append(*v, FieldError{field, detail}) }

// Err returns a 422 problem naming every field, or nil.
func (v Invalid) Err() error {
	if len(v) == 0 {
		return nil
	}
	p := problem(http.StatusUnprocessableEntity, "validation", "Validation failed",
		fmt.Sprintf("%s: %s", v[0].Field, v[0].Detail))
	if len(v) > 1 {
		p.Detail = fmt.Sprintf("%d fields are invalid; see errors", len(v))
	}
	p.Errors = v
	return p
}

func notFound(what string) *Problem {
	return problem(http.StatusNotFound, "not-found", "Not found", what+" not found")
}

// handler is an HTTP handler that returns its error; serve renders it.
type handler func(w http.ResponseWriter, r *http.Request) error

// UnavailableRetryAfter is the Retry-After of an answer refused because the
// database did not answer: a restart or a failover takes seconds.
const UnavailableRetryAfter = 2 * time.Second

// writeError renders err as a problem document. Errors that are not problems
// are logged with the request id and answered without their text, which may
// hold internals a client must not see: 503 with Retry-After while the
// database does not answer or its disk is full (the client should try
// again), 500 otherwise.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var p *Problem
	switch {
	case errors.As(err, &p):
	case errors.Is(err, store.ErrNotFound):
		p = notFound("resource")
	case errors.Is(err, store.ErrConflict):
		p = problem(http.StatusConflict, "conflict", "Conflict", err.Error())
	case errors.Is(err, store.ErrIdempotencyKeyLost):
		// Its lock ran out and a retry took the key over; the retry makes
		// the change.
		w.Header().Set("Retry-After", "1")
		p = problem(http.StatusConflict, "idempotency-key-in-use", "Idempotency key in use",
			"a later request with this Idempotency-Key took it over; retry with the same key for its answer")
	case errors.Is(err, store.ErrStorageFull):
		// Nothing of the change was written, and the store has logged what
		// the operator must do; a retry works once space is freed.
		w.Header().Set("Retry-After", strconv.Itoa(int(store.FullRetryAfter.Seconds())))
		p = problem(http.StatusServiceUnavailable, "storage-full", "Service unavailable",
			"the database's disk is full, so the change was not made; retry later (the server's log tells its operator what to do)")
	case store.Unavailable(err):
		// A connection refused or reset, a terminated backend, a statement
		// timed out, a lock or a serializable snapshot not had: nothing of
		// the change was written (a transaction is all or nothing), and a
		// retry a moment later works. Logged, without its words in the
		// answer.
		id := w.Header().Get(RequestIDHeader)
		a.log.Warn("api request refused: the database is unavailable", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(int(UnavailableRetryAfter.Seconds())))
		p = problem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the database did not answer in time or dropped the connection, so nothing was changed; retry shortly (request id "+id+")")
	case errors.Is(err, store.ErrAPITokenRefused):
		// A kept token revoked or expired since its last read (auth.go's
		// checkedWriter answers as for any token not valid).
		p = problem(http.StatusUnauthorized, "unauthorized", "Unauthorized", "the API token is not valid: unknown, revoked or expired")
	case errors.Is(err, delivery.ErrBusy):
		// Test and Resend take the webhook's slots; none freed in time.
		w.Header().Set("Retry-After", "1")
		p = problem(http.StatusTooManyRequests, "busy", "Too many requests", err.Error())
	default:
		id := w.Header().Get(RequestIDHeader)
		a.log.Error("api request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Second)
		defer cancel()
		if a.store.Ping(ctx) != nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(UnavailableRetryAfter.Seconds())))
			p = problem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
				"the database is not answering; retry shortly (request id "+id+")")
			break
		}
		p = problem(http.StatusInternalServerError, "internal", "Internal error",
			"the request could not be completed; the server log has the cause under request id "+id)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // a detail's "Bearer <token>" reads as written
	enc.Encode(p)
}

// writeJSON answers v as JSON with raw UTF-8 (no \u escapes, no HTML escapes).
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := event.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
	return nil
}
