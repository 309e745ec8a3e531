package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/store"
)

type accountKey struct{}

type scopeKey struct{}

// makerKey holds the person who made the request's token ("": not known):
// a token it makes is theirs too, and goes when they leave the account.
type makerKey struct{}

// tokenMaker returns the person who made the request's token.
func tokenMaker(r *http.Request) string {
	by, _ := r.Context().Value(makerKey{}).(string)
	return by
}

// accountID returns the account the request's token belongs to.
func accountID(r *http.Request) string {
	return r.Context().Value(accountKey{}).(store.Account).ID
}

// writeScope reports whether the request's token may make changes, and so
// may also see secrets such as a webhook's header values.
func writeScope(r *http.Request) bool {
	return r.Context().Value(scopeKey{}) == store.ScopeWrite
}

// readOnly reports whether a method changes nothing: all a read token may
// call.
func readOnly(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// authenticate resolves the bearer token to its account; every handler
// behind it reads and writes that account's rows only. A read token may
// make GET calls only; anything else is 403. It also applies the rate
// limits: a valid token's own, or, for a request without one, its client
// address's (so that guessing tokens is limited too).
//
// Every request looks its token up in the database, with no cache in
// front, but a request whose work is one statement that checks the token
// itself (checkedInStatement): that one takes the token as this process
// last read it, within a second, and answers nothing before the statement,
// or a read of the token, has found it valid (checkedWriter). Either way a
// revoked or expired token is refused by every process at its next
// request.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110, section 11.1).
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			if !a.allow(w, r, a.limits.ByAddress(r), "address") {
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			a.writeError(w, r, problem(http.StatusUnauthorized, "unauthorized", "Unauthorized",
				"send an API token as Authorization: Bearer <token>"))
			return
		}
		token = strings.TrimSpace(token)
		if strings.HasPrefix(token, auth.PullTokenPrefix) {
			a.authenticatePull(w, r, token, next)
			return
		}
		hash := auth.HashToken(token)
		var acct store.Account
		var tok store.APIToken
		var check *store.TokenCheck
		kept := false
		if a.checkedInStatement(r) {
			acct, tok, check, kept = a.store.KeptToken(hash)
		}
		if kept {
			// From here every answer, a refusal by a rate limit or the
			// scope's included, waits for a check.
			cw := &checkedWriter{ResponseWriter: w, a: a, r: r, token: token, check: check, header: w.Header().Clone()}
			defer cw.decide() // a handler that wrote nothing answers too
			w = cw
		} else {
			var err error
			acct, tok, err = a.store.Authenticate(r.Context(), hash)
			if errors.Is(err, store.ErrNotFound) {
				a.refuseToken(w, r, token)
				return
			}
			if err != nil {
				a.writeError(w, r, err)
				return
			}
		}
		if !a.allow(w, r, a.limits.ByCredential(hash), "API token") {
			return
		}
		if rps := acct.Limits.APIRequestsPerSecond; rps != nil {
			if d := a.limits.Accounts.Allow(acct.ID, *rps); !d.Allowed {
				d.SetHeaders(w.Header())
				a.writeError(w, r, problem(http.StatusTooManyRequests, "rate-limited", "Too many requests",
					fmt.Sprintf("this account has made more requests than its limit of %d a second (bursts of %d), set by the operator for the account and counted across all its API tokens; retry after %s",
						*rps, d.Limit, seconds(w.Header().Get("Retry-After")))))
				return
			}
		}
		if tok.Scope != store.ScopeWrite && !readOnly(r.Method) {
			a.writeError(w, r, problem(http.StatusForbidden, "read-only-token", "Forbidden",
				"this API token's scope is read: it may make GET calls only; use a write token to make changes"))
			return
		}
		ctx := context.WithValue(context.WithValue(context.WithValue(r.Context(), accountKey{}, acct), scopeKey{}, tok.Scope), makerKey{}, tok.CreatedBy)
		if kept {
			ctx = store.WithTokenCheck(ctx, check)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuseToken answers 401 to a request whose token is not valid.
func (a *API) refuseToken(w http.ResponseWriter, r *http.Request, token string) {
	if !a.allow(w, r, a.limits.ByAddress(r), "address") {
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="herald", error="invalid_token"`)
	detail := "the API token is not valid: unknown, revoked or expired"
	if a.operatorHash != "" && auth.SameToken(a.operatorHash, token) {
		// A valid credential in the wrong place: say which place.
		detail = "this is the operator token, which authorises the /v3/operator/ calls only; account calls take one of the account's API tokens (printed at first start, or made with POST /v3/operator/accounts)"
	}
	a.writeError(w, r, problem(http.StatusUnauthorized, "unauthorized", "Unauthorized", detail))
}

// checkedInStatement says whether r's work is one statement that checks a
// kept API token itself (store.KeptToken), so that its token need not be
// read first: a route listed in statementChecked, without an
// Idempotency-Key (whose record makes the work a transaction).
func (a *API) checkedInStatement(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Idempotency-Key") != "" {
		return false
	}
	_, pattern := a.mux.Handler(r)
	return statementChecked[pattern]
}

// checkedWriter holds back a request's answer until its kept token has
// been checked: by the statement that did its work (store.TokenCheck), or
// else here, by reading the token, when the answer is about to start. A
// token found not valid turns the answer into the 401 any request with it
// gets, whatever the handler would have said.
type checkedWriter struct {
	http.ResponseWriter
	a       *API
	r       *http.Request
	token   string
	check   *store.TokenCheck
	header  http.Header // as it was before the handler set its own
	decided bool
	refused bool
}

// decide checks the token unless a statement has, once, and says whether
// the handler's answer may go out.
func (w *checkedWriter) decide() bool {
	if w.decided {
		return !w.refused
	}
	w.decided = true
	if w.check.Made() {
		return true
	}
	_, _, err := w.a.store.Authenticate(w.r.Context(), auth.HashToken(w.token))
	if err == nil {
		return true
	}
	w.refused = true
	h := w.ResponseWriter.Header()
	clear(h)
	maps.Copy(h, w.header)
	if errors.Is(err, store.ErrNotFound) {
		w.a.refuseToken(w.ResponseWriter, w.r, w.token)
	} else {
		w.a.writeError(w.ResponseWriter, w.r, err)
	}
	return false
}

func (w *checkedWriter) WriteHeader(code int) {
	if w.decide() {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *checkedWriter) Write(b []byte) (int, error) {
	if w.decide() {
		return w.ResponseWriter.Write(b)
	}
	return len(b), nil
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *checkedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// allow sets the RateLimit headers of the limit's decision d for the
// request's who (its API token, or its address), and answers 429 when d
// refuses it.
func (a *API) allow(w http.ResponseWriter, r *http.Request, d ratelimit.Decision, who string) bool {
	d.SetHeaders(w.Header())
	if d.Allowed {
		return true
	}
	a.writeError(w, r, problem(http.StatusTooManyRequests, "rate-limited", "Too many requests",
		fmt.Sprintf("this %s has made more requests than its limit of %d at once and %s a second; retry after %s",
			who, d.Limit, strconv.FormatFloat(d.Rate, 'f', -1, 64), seconds(w.Header().Get("Retry-After")))))
	return false
}

// seconds writes a Retry-After value in words: 1 second, 2 seconds.
func seconds(n string) string {
	if n == "1" {
		return "1 second"
	}
	return n + " seconds"
}
