package receivers_test

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestReceiversVerifyEd25519: the Node and Python examples, given an
// ed25519 webhook's whpk_ public key as their token, accept its real
// deliveries and a Test (v1a signatures, checked with node:crypto and the
// cryptography package), and refuse the Test's request with a changed
// body or with another key's signature.
func TestReceiversVerifyEd25519(t *testing.T) {
	t.Parallel()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	pub := webhook.PublicKeyString(priv.Public().(ed25519.PublicKey))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{10}, ed25519.SeedSize))
	for _, rc := range receivers {
		if rc.name == "go" {
			continue // the Go module's verifier is tested with herald's real deliveries in internal/server/e2e
		}
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, rc.command(t), "HERALD_WEBHOOK_TOKEN="+pub)
			h := heraldtest.Start(t, heraldtest.Options{})
			var hook heraldtest.Webhook
			h.Must(http.StatusCreated, "POST", "/v3/webhooks", map[string]any{
				"name": "ed25519 receiver (" + rc.name + ")", "url": r.url + "/webhooks/herald",
				"events": []string{"license.created"}, "signatureScheme": "standard-webhooks-ed25519",
				"token": webhook.PrivateKeyString(priv),
			}, &hook)
			printed := []string{r.ready}
			accept := func(eventID string) {
				t.Helper()
				printed = append(printed, "license.created "+eventID)
				r.waitForLines(t, len(printed))
			}
			accept(deliverEvent(t, h, hook.ID))
			sent := testDelivery(t, h, hook.ID)
			p, err := webhook.Parse([]byte(sent.Body))
			if err != nil {
				t.Fatalf("the Test result's body: %v", err)
			}
			accept(p.ID)
			for _, tc := range []struct {
				name   string
				change func(header http.Header, body []byte) []byte
			}{
				{"one character of the body changed", tamper},
				{"signed by another key", func(header http.Header, body []byte) []byte {
					// As sent: lower-case names, which http.Header.Get would miss.
					//lint:ignore SA1008 the names as herald sent them
					ts, err := strconv.ParseInt(header[webhook.TimestampHeader][0], 10, 64)
					if err != nil {
						t.Fatalf("webhook-timestamp: %v", err)
					}
					header[webhook.SignatureHeader] = []string{webhook.SignStandardEd25519(other, header[webhook.IDHeader][0], ts, body)}
					return body
				}},
				{"no signature", dropSignature},
			} {
				if status := replay(t, sent, tc.change, false); status != http.StatusUnauthorized {
					t.Errorf("%s: status %d; want 401", tc.name, status)
				}
			}
			if got := r.lines(); !slices.Equal(got, printed) {
				t.Errorf("printed %q; want %q", got, printed)
			}
		})
	}
}
