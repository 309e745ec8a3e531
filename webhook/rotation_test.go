package webhook_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/webhook"
)

// TestVerifyAnyAcceptsEitherTokenOfARotation: a receiver holding the old
// and the next token accepts a body signed with either, and nothing else.
func TestVerifyAnyAcceptsEitherTokenOfARotation(t *testing.T) {
	t.Parallel()
	const old, next = "whsec_old_token", "whsec_next_token"
	for _, tc := range []struct {
		name      string
		tokens    []string
		signature string
		want      error
	}{
		{"old token, both held", []string{old, next}, webhook.Sign(old, body), nil},
		{"next token, both held", []string{old, next}, webhook.Sign(next, body), nil},
		{"next token, next held", []string{next}, webhook.Sign(next, body), nil},
		{"old token, next held", []string{next}, webhook.Sign(old, body), webhook.ErrInvalidSignature},
		{"a third token", []string{old, next}, webhook.Sign("whsec_third", body), webhook.ErrInvalidSignature},
		{"both signatures in one header", []string{old, next}, webhook.Sign(old, body) + " " + webhook.Sign(next, body), webhook.ErrInvalidSignature},
		{"no signature", []string{old, next}, "", webhook.ErrMissingSignature},
		{"no tokens", nil, webhook.Sign(old, body), webhook.ErrInvalidSignature},
	} {
		if err := webhook.VerifyAny(tc.tokens, body, tc.signature); !errors.Is(err, tc.want) {
			t.Errorf("%s: VerifyAny = %v; want %v", tc.name, err, tc.want)
		}
	}
}

// TestMiddlewareAnyKeepsItsTokens: the middleware accepts either token, and
// a change to the caller's slice afterwards changes nothing.
func TestMiddlewareAnyKeepsItsTokens(t *testing.T) {
	t.Parallel()
	tokens := []string{"whsec_old_token", "whsec_next_token"}
	srv := httptest.NewServer(webhook.MiddlewareAny(tokens, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bytes.Equal(webhook.RawBody(r), body) {
			t.Errorf("RawBody: %q; want the body sent", webhook.RawBody(r))
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(srv.Close)
	tokens[0] = "whsec_changed"
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"whsec_old_token", http.StatusNoContent},
		{"whsec_next_token", http.StatusNoContent},
		{"whsec_changed", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(tc.token, body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("signed with %s: %d; want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
}
