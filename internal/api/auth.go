package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
)

type accountKey struct{}

// accountID returns the account the request's token belongs to.
func accountID(r *http.Request) string {
	return r.Context().Value(accountKey{}).(store.Account).ID
}

// authenticate resolves the bearer token to its account; every handler
// behind it reads and writes that account's rows only.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110, section 11.1).
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			a.writeError(w, r, problem(http.StatusUnauthorized, "unauthorized", "Unauthorized",
				"send an API token as Authorization: Bearer <token>"))
			return
		}
		acct, err := a.store.AccountByTokenHash(r.Context(), auth.HashToken(strings.TrimSpace(token)))
		if errors.Is(err, store.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald", error="invalid_token"`)
			a.writeError(w, r, problem(http.StatusUnauthorized, "unauthorized", "Unauthorized", "the API token is not valid"))
			return
		}
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accountKey{}, acct)))
	})
}
