package listen_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/listen"
	"github.com/heraldhq/herald/webhook"
)

// TestStandardWebhooksDeliveriesAreVerified: herald listen verifies a
// delivery signed the Standard Webhooks way (rotation's two signatures
// included) and refuses a stale, forged or tampered one, saying which.
func TestStandardWebhooksDeliveriesAreVerified(t *testing.T) {
	t.Parallel()
	now := time.Now().Unix()
	headers := func(ts int64, sigs ...string) http.Header {
		h := heraldHeaders("")
		h.Set(webhook.TimestampHeader, strconv.FormatInt(ts, 10))
		h.Set(webhook.SignatureHeader, strings.Join(sigs, " "))
		return h
	}
	good := webhook.SignStandard(token, eventID, now, body)
	for _, tc := range []struct {
		name    string
		header  http.Header
		status  int
		problem string
	}{
		{"signed", headers(now, good), http.StatusOK, ""},
		{"rotation", headers(now, webhook.SignStandard("whsec_next-0123456789", eventID, now, body), good), http.StatusOK, ""},
		{"wrong token", headers(now, webhook.SignStandard("whsec_another", eventID, now, body)), http.StatusUnauthorized, "no v1 signature matches"},
		{"stale", headers(now-600, webhook.SignStandard(token, eventID, now-600, body)), http.StatusUnauthorized, "not within 5 minutes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, out := start(t, listen.Config{})
			resp, answer := send(t, url, tc.header, body)
			if resp.StatusCode != tc.status || !strings.Contains(answer, tc.problem) {
				t.Errorf("answer = %d %s; want %d naming %q", resp.StatusCode, answer, tc.status, tc.problem)
			}
			if tc.problem == "" && !strings.Contains(out.String(), "  verified\n") {
				t.Errorf("printed %q; want it verified", out.String())
			}
		})
	}
}
