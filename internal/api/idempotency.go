package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// IdempotencyKeyHeader names the key a client sends with every try of one
// POST, after Stripe's rules: the same key with the same body within 24
// hours answers the first answer again (with IdempotentReplayedHeader) and
// changes nothing; with another body, method or path it answers 422; while
// the first try still runs, 409. GET, PATCH and DELETE ignore it.
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotentReplayedHeader marks an answer given again from its key.
const IdempotentReplayedHeader = "Idempotent-Replayed"

// maxIdempotencyKey is the longest key, in bytes (all printable ASCII).
const maxIdempotencyKey = 255

// idempotent makes a POST handler honour Idempotency-Key. It runs after
// authentication and rate limiting, so a 401, 403 or 429 never consumes a
// key; see store/idempotency.go for how the key and the change commit
// together.
func (a *API) idempotent(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		keys := r.Header.Values(IdempotencyKeyHeader)
		if len(keys) == 0 {
			return next(w, r)
		}
		if err := checkIdempotencyKey(keys); err != nil {
			return err
		}
		// The body is read here, whole, to compare it with the first
		// try's; the handler reads it again from memory.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			return readProblem(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		claim, err := a.store.ClaimIdempotencyKey(r.Context(), store.IdempotentRequest{
			AccountID: accountID(r), Key: keys[0], Method: r.Method, Path: r.URL.Path, BodyHash: sha256.Sum256(body)})
		if err != nil {
			return err
		}
		switch claim.Outcome {
		case store.KeyDone:
			replay(w, claim.Answer)
			return nil
		case store.KeyInUse:
			w.Header().Set("Retry-After", "1")
			return problem(http.StatusConflict, "idempotency-key-in-use", "Idempotency key in use",
				"a request with this Idempotency-Key is still being processed; retry shortly with the same key")
		case store.KeyAnswerLost:
			return problem(http.StatusConflict, "idempotency-key-in-use", "Idempotency key in use",
				"the first request with this Idempotency-Key made its change, but its answer was lost when the server stopped; "+
					"the change is not made again: read the resource with GET")
		case store.KeyMismatch:
			return problem(http.StatusUnprocessableEntity, "idempotency-key-reused", "Idempotency key reused",
				"this Idempotency-Key was used in the last 24 hours for another request (method, path or body); send a new key with a new request")
		}
		a.runClaimed(w, r, next, claim)
		return nil
	}
}

// runClaimed runs next under claim, keeps its answer with the key (2xx and
// 4xx only, so that a try refused for the server's trouble or its rate can
// be retried under the same key) or gives the key up, and then answers.
// The answer is held back until it is kept: a client that saw it will get
// it again.
func (a *API) runClaimed(w http.ResponseWriter, r *http.Request, next handler, claim store.IdempotencyClaim) {
	rec := &heldAnswer{header: w.Header()}
	if err := next(rec, r.WithContext(store.WithIdempotencyClaim(r.Context(), claim))); err != nil {
		a.writeError(rec, r, err)
	}
	status := rec.statusOr200()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	var err error
	if kept(status) {
		err = a.store.RecordIdempotentAnswer(ctx, claim, store.IdempotentAnswer{Status: status,
			ContentType: rec.header.Get("Content-Type"), Location: rec.header.Get("Location"), Body: rec.body.Bytes()})
	} else {
		err = a.store.ReleaseIdempotencyKey(ctx, claim)
	}
	if err != nil {
		// The client still gets its answer; the key stays held until its
		// lock ends, then answers as store.KeyAnswerLost or runs again.
		a.log.Warn("idempotency key not updated", "request_id", w.Header().Get(RequestIDHeader), "err", err)
	}
	w.WriteHeader(status)
	w.Write(rec.body.Bytes())
}

// kept says whether an answer is kept with its key.
func kept(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 200 && status < 500
}

// replay answers a kept answer again.
func replay(w http.ResponseWriter, a store.IdempotentAnswer) {
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	if a.Location != "" {
		w.Header().Set("Location", a.Location)
	}
	w.Header().Set(IdempotentReplayedHeader, "true")
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}

// checkIdempotencyKey refuses a key sent twice, empty, longer than 255
// bytes or with anything but printable ASCII.
func checkIdempotencyKey(keys []string) error {
	var v Invalid
	switch k := keys[0]; {
	case len(keys) > 1:
		v.Add(IdempotencyKeyHeader, "send one Idempotency-Key header, not several")
	case k == "" || len(k) > maxIdempotencyKey:
		v.Add(IdempotencyKeyHeader, fmt.Sprintf("must be 1 to %d characters", maxIdempotencyKey))
	default:
		for i := range len(k) {
			if k[i] < 0x20 || k[i] > 0x7e {
				v.Add(IdempotencyKeyHeader, "must be printable ASCII (such as a UUID)")
				break
			}
		}
	}
	return v.Err()
}

// heldAnswer holds a handler's answer until its key has recorded it.
type heldAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldAnswer) Header() http.Header { return h.header }

func (h *heldAnswer) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

func (h *heldAnswer) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return h.body.Write(b)
}

func (h *heldAnswer) statusOr200() int {
	if h.status == 0 {
		return http.StatusOK
	}
	return h.status
}
