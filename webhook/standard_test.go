package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/webhook"
)

func TestStandardWebhooks(t *testing.T) {
	body := []byte(`{"id":"e1","event":"license.created","data":{"name":"Zoë 🚀"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
	now := time.Unix(1_790_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	old, next := "whsec_old-token-0123456789", "whsec_next-token-0123456789"
	sigOld := webhook.SignStandard(old, "e1", now.Unix(), body)
	sigNext := webhook.SignStandard(next, "e1", now.Unix(), body)
	tests := []struct {
		name   string
		tokens []string
		id, ts string
		sigs   string
		at     time.Time
		want   error
	}{
		{"one signature", []string{old}, "e1", ts, sigOld, now, nil},
		{"rotation, the old token", []string{old}, "e1", ts, sigOld + " " + sigNext, now, nil},
		{"rotation, the next token", []string{next}, "e1", ts, sigOld + " " + sigNext, now, nil},
		{"wrong token", []string{"whsec_other-0123456789"}, "e1", ts, sigOld, now, webhook.ErrInvalidSignature},
		{"another id", []string{old}, "e2", ts, sigOld, now, webhook.ErrInvalidSignature},
		{"old timestamp", []string{old}, "e1", ts, sigOld, now.Add(6 * time.Minute), webhook.ErrTimestamp},
		{"future timestamp", []string{old}, "e1", ts, sigOld, now.Add(-6 * time.Minute), webhook.ErrTimestamp},
		{"no id", []string{old}, "", ts, sigOld, now, webhook.ErrMissingHeaders},
		{"no signature", []string{old}, "e1", ts, "", now, webhook.ErrMissingSignature},
		{"herald's signature", []string{old}, "e1", ts, webhook.Sign(old, body), now, webhook.ErrInvalidSignature},
		{"v2 only", []string{old}, "e1", ts, "v2," + sigOld[3:], now, webhook.ErrInvalidSignature},
	}
	for _, tt := range tests {
		if err := webhook.VerifyStandard(tt.tokens, tt.id, tt.ts, tt.sigs, body, tt.at); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v; want %v", tt.name, err, tt.want)
		}
	}
	h := http.Header{}
	h.Set(webhook.IDHeader, "e1")
	h.Set(webhook.TimestampHeader, ts)
	h.Set(webhook.SignatureHeader, sigOld)
	if !webhook.IsStandard(h) || webhook.VerifyRequest([]string{old}, h, body, now) != nil {
		t.Errorf("VerifyRequest refused a Standard Webhooks delivery")
	}
	h = http.Header{}
	h.Set(webhook.SignatureHeader, webhook.Sign(old, body))
	if webhook.IsStandard(h) || webhook.VerifyRequest([]string{old}, h, body, now) != nil {
		t.Errorf("VerifyRequest refused a herald delivery")
	}
}

// TestStandardDocExample: docs/receiving.md's Standard Webhooks example is
// this package's signature.
func TestStandardDocExample(t *testing.T) {
	body := `{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","event":"license.created","data":{"key":"HRLD-7Q4M-2KX9","name":"Zoë – 日本語 – 🚀"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`
	if got := webhook.SignStandard("whsec_ZXhhbXBsZSBrZXkgb2YgMjQgYnl0ZXMh", "0f8fad5b-d9cb-469f-a165-70867728950e", 1795000000, []byte(body)); got != "v1,xf+qETBaqXon8l3/3ilF8v4KTS3UyUb4OuLEA29aJig=" {
		t.Errorf("SignStandard = %s; want the docs' example", got)
	}
}

// TestStandardKey: a secret in the Standard Webhooks form stands for the
// bytes its base64 encodes; a secret of another form (a herald token from
// before herald showed the standard form) signs with its own bytes, which
// is what its StandardSecret stands for, so both verify the same
// deliveries.
func TestStandardKey(t *testing.T) {
	for _, tt := range []struct {
		secret string
		ok     bool
		key    string
	}{
		{"whsec_" + base64.StdEncoding.EncodeToString([]byte("twenty-four bytes of key")), true, "twenty-four bytes of key"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true, ""},
		{"whsec_herald-made_token_0123456789-_abc", false, ""},
		{"whsec_", false, ""},
		{"no prefix at all", false, ""},
		{"whsec_c2hvcnQ", false, ""}, // unpadded
	} {
		key, ok := webhook.StandardKey(tt.secret)
		if ok != tt.ok || (tt.key != "" && string(key) != tt.key) {
			t.Errorf("StandardKey(%q) = %q, %v; want ok %v", tt.secret, key, ok, tt.ok)
		}
	}
	old := "whsec_herald-made_token_0123456789-_abc"
	body := []byte(`{"id":"x"}`)
	if webhook.SignStandard(old, "x", 1795000000, body) != webhook.SignStandard(webhook.StandardSecret(old), "x", 1795000000, body) {
		t.Error("a token of the old form and its StandardSecret sign differently; want the same key")
	}
}
