package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/listen"
	"github.com/heraldhq/herald/webhook"
)

// TestEd25519DeliveriesVerifyWithThePublicKey: on both engines, a webhook
// signed with ed25519 shows a whpk_ public key and keeps a whsk_ private
// one; a real delivery and a Test verify under the public key alone
// (herald's receiver module, as a receiver uses it), not under another
// key nor with a changed body; during a rotation a delivery carries both
// keys' v1a signatures, each verifying alone, and after the rotation's
// end only the next key's.
func TestEd25519DeliveriesVerifyWithThePublicKey(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		ctx := context.Background()
		rcv := heraldtest.NewReceiver(t)
		hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "ed", URL: rcv.URL, Events: []string{"license.created"},
			SignatureScheme: "standard-webhooks-ed25519"})
		if err != nil {
			t.Fatal(err)
		}
		if hook.SignatureScheme != "standard-webhooks-ed25519" {
			t.Fatalf("signatureScheme %q", hook.SignatureScheme)
		}
		pub := hook.PublicKey
		if _, ok := webhook.ParsePublicKey(pub); !ok {
			t.Fatalf("publicKey %q is no whpk_ key", pub)
		}
		if derived, ok := webhook.PublicKeyOf(hook.Token); !ok || derived != pub {
			t.Fatalf("token %q is no whsk_ key of publicKey %q (derived %q)", hook.Token, pub, derived)
		}
		if got, err := h.API.Webhook(ctx, hook.ID); err != nil || got.PublicKey != pub {
			t.Fatalf("GET shows publicKey %q, %v; want %q", got.PublicKey, err, pub)
		}

		acct, err := h.API.Account(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// No token: what a receiver fetches.
		public := client.New(h.URL, "", nil)
		keys := func() []client.SigningKey {
			t.Helper()
			k, err := public.SigningKeys(ctx, acct.ID)
			if err != nil {
				t.Fatalf("GET /v3/signing-keys without a token: %v", err)
			}
			return k
		}
		// Another webhook of the account, HMAC-signed, has no key to list.
		if _, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "hmac", URL: rcv.URL, Events: []string{"license.renewed"}}); err != nil {
			t.Fatal(err)
		}
		if got := keys(); len(got) != 1 || got[0] != (client.SigningKey{WebhookID: hook.ID, PublicKey: pub}) {
			t.Fatalf("signing keys %+v; want the webhook's publicKey alone", got)
		}
		other := h.NewAccount("other", "other@example.com")
		if got, err := public.SigningKeys(ctx, mustAccountID(t, other)); err != nil || len(got) != 0 {
			t.Errorf("another account's signing keys: %+v, %v; want none", got, err)
		}
		var apiErr *client.Error
		if _, err := public.SigningKeys(ctx, "no-such-account"); !errors.As(err, &apiErr) || apiErr.Status != 404 {
			t.Errorf("an unknown account: %v; want 404", err)
		}
		if _, err := public.SigningKeys(ctx, ""); !errors.As(err, &apiErr) || apiErr.Status != 422 || !strings.Contains(apiErr.Error(), "account") {
			t.Errorf("no account: %v; want 422 naming account", err)
		}

		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
		test, err := h.API.TestWebhook(ctx, hook.ID, client.TestRequest{CheckVerification: true})
		if err != nil || !test.Succeeded {
			t.Fatalf("test: %+v, %v", test, err)
		}
		rotated, err := h.API.RotateWebhookToken(ctx, hook.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if rotated.TokenRotation == nil || rotated.PublicKey != pub {
			t.Fatalf("during the rotation: %+v", rotated)
		}
		nextPub := rotated.TokenRotation.NextPublicKey
		if _, ok := webhook.ParsePublicKey(nextPub); !ok || nextPub == pub {
			t.Fatalf("nextPublicKey %q (publicKey %q)", nextPub, pub)
		}
		if got := keys(); len(got) != 1 || got[0] != (client.SigningKey{WebhookID: hook.ID, PublicKey: pub, NextPublicKey: nextPub}) {
			t.Fatalf("signing keys during the rotation %+v; want both", got)
		}
		h.CreateLicense(nil)
		// The delivery, the Test, its forged sample, and the delivery
		// during the rotation.
		heraldtest.Eventually(t, 10*time.Second, "the delivery during the rotation", func() bool { return rcv.Count() == 4 })
		if _, err := h.API.FinishWebhookTokenRotation(ctx, hook.ID); err != nil {
			t.Fatal(err)
		}
		after, err := h.API.Webhook(ctx, hook.ID)
		if err != nil || after.PublicKey != nextPub || after.TokenRotation != nil {
			t.Fatalf("after the rotation: publicKey %q, rotation %+v, %v; want %q", after.PublicKey, after.TokenRotation, err, nextPub)
		}
		if got := keys(); len(got) != 1 || got[0] != (client.SigningKey{WebhookID: hook.ID, PublicKey: nextPub}) {
			t.Fatalf("signing keys after the rotation %+v; want the next key alone", got)
		}
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "the delivery after the rotation", func() bool { return rcv.Count() == 5 })

		got := rcv.Requests()
		verify := func(keys []string, r heraldtest.Request, body []byte) error {
			return webhook.VerifyStandardEd25519(keys, r.Header.Get(webhook.IDHeader), r.Header.Get(webhook.TimestampHeader),
				r.Header.Get(webhook.SignatureHeader), body, time.Now())
		}
		for i, c := range []struct {
			name      string
			pub, next bool // verifies under each key alone
			sigs      int
		}{
			{"delivery", true, false, 1},
			{"test", true, false, 1},
			{"forged test sample", false, false, 1},
			{"delivery during the rotation", true, true, 2},
			{"delivery after the rotation", false, true, 1},
		} {
			r := got[i]
			sig := r.Header.Get(webhook.SignatureHeader)
			if n := len(strings.Fields(sig)); n != c.sigs || !strings.HasPrefix(sig, "v1a,") {
				t.Errorf("%s: webhook-signature %q; want %d v1a signatures", c.name, sig, c.sigs)
			}
			if err := verify([]string{pub}, r, r.Body); (err == nil) != c.pub {
				t.Errorf("%s under publicKey: %v; want ok %v", c.name, err, c.pub)
			}
			if err := verify([]string{nextPub}, r, r.Body); (err == nil) != c.next {
				t.Errorf("%s under nextPublicKey: %v; want ok %v", c.name, err, c.next)
			}
			// herald listen, given the public key as its token.
			if code := listenAnswer(t, pub, r); (code == http.StatusOK) != c.pub {
				t.Errorf("%s: herald listen with publicKey answered %d; want ok %v", c.name, code, c.pub)
			}
			tampered := append([]byte(nil), r.Body...)
			tampered[len(tampered)-2] ^= 1
			if err := verify([]string{pub, nextPub}, r, tampered); err == nil {
				t.Errorf("%s: a changed body verified", c.name)
			}
		}
	})
}

func mustAccountID(t *testing.T, h *heraldtest.Herald) string {
	t.Helper()
	a, err := h.API.Account(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

// listenAnswer replays a delivery as received to herald listen's handler
// configured with token, and returns its status.
func listenAnswer(t *testing.T, token string, r heraldtest.Request) int {
	t.Helper()
	srv := httptest.NewServer(listen.Handler(listen.Config{Token: token, Out: io.Discard}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
