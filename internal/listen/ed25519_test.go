package listen_test

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/listen"
	"github.com/heraldhq/herald/internal/receivertest"
	"github.com/heraldhq/herald/webhook"
)

// TestEd25519DeliveriesAreVerified: given an ed25519 webhook's public key
// (or its private key), herald listen verifies v1a signatures, a
// rotation's two included, and refuses another key's, a tampered body or
// a stale timestamp, saying which.
func TestEd25519DeliveriesAreVerified(t *testing.T) {
	t.Parallel()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	next := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, ed25519.SeedSize))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, ed25519.SeedSize))
	pub := webhook.PublicKeyString(key.Public().(ed25519.PublicKey))
	now := time.Now().Unix()
	headers := func(ts int64, sigs ...string) http.Header {
		h := heraldHeaders("")
		h.Set(webhook.TimestampHeader, strconv.FormatInt(ts, 10))
		h.Set(webhook.SignatureHeader, strings.Join(sigs, " "))
		return h
	}
	good := webhook.SignStandardEd25519(key, eventID, now, body)
	tampered := append(bytes.Clone(body[:len(body)-2]), 'x', '}')
	for _, tc := range []struct {
		name    string
		token   string
		header  http.Header
		body    []byte
		status  int
		problem string
	}{
		{"signed", pub, headers(now, good), body, http.StatusOK, ""},
		{"private key given", webhook.PrivateKeyString(key), headers(now, good), body, http.StatusOK, ""},
		{"rotation", pub, headers(now, webhook.SignStandardEd25519(next, eventID, now, body), good), body, http.StatusOK, ""},
		{"another key", pub, headers(now, webhook.SignStandardEd25519(other, eventID, now, body)), body, http.StatusUnauthorized, "no v1a signature verifies"},
		{"tampered", pub, headers(now, good), tampered, http.StatusUnauthorized, "no v1a signature verifies"},
		{"an HMAC signature", pub, headers(now, webhook.SignStandard("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3", eventID, now, body)), body, http.StatusUnauthorized, "no v1a signature verifies"},
		{"stale", pub, headers(now-600, webhook.SignStandardEd25519(key, eventID, now-600, body)), body, http.StatusUnauthorized, "not within 5 minutes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := new(receivertest.Output)
			srv := httptest.NewServer(listen.Handler(listen.Config{Token: tc.token, Out: out}))
			t.Cleanup(srv.Close)
			resp, answer := send(t, srv.URL, tc.header, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(answer, tc.problem) {
				t.Errorf("answer = %d %s; want %d naming %q", resp.StatusCode, answer, tc.status, tc.problem)
			}
			if tc.problem == "" && !strings.Contains(out.String(), "  verified\n") {
				t.Errorf("printed %q; want it verified", out.String())
			}
		})
	}
}
