package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
)

// MaxBodyBytes is the largest body [Middleware] reads. Herald's payloads are
// far smaller; the cap keeps a receiver safe from a sender that is not herald.
const MaxBodyBytes = 1 << 20

type rawBodyKey struct{}

// RawBody returns the verified raw body that [Middleware] read, or nil when
// the request did not pass through it.
func RawBody(r *http.Request) []byte {
	b, _ := r.Context().Value(rawBodyKey{}).([]byte)
	return b
}

// Middleware verifies each request's signature under token before calling
// next. A request without a valid signature is answered 401 and never reaches
// next. A verified request reaches next with its body readable again from the
// start, and the same bytes available from [RawBody].
func Middleware(token string, next http.Handler) http.Handler {
	return MiddlewareAny([]string{token}, next)
}

// MiddlewareAny is [Middleware] for a receiver that accepts any of several
// tokens, as during a token rotation: give it the old token and the next
// one until the rotation has ended, then the next one alone (see
// [VerifyAny]).
func MiddlewareAny(tokens []string, next http.Handler) http.Handler {
	tokens = append([]string(nil), tokens...) // the caller's slice may change later
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := VerifyAny(tokens, body, r.Header.Get(SignatureHeader)); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), rawBodyKey{}, body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
