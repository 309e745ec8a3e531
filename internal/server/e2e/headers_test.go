package e2e_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestCustomHeadersGoOutOnEveryRequest: a webhook's custom headers are sent
// on its deliveries, Test and resend; shown masked everywhere except to a
// write token that asks; kept when saved back masked; and refused (422,
// nothing changed) when they would replace herald's own.
func TestCustomHeadersGoOutOnEveryRequest(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		ctx := context.Background()
		rcv := heraldtest.NewReceiver(t)
		const key = "gateway-key-0123456789"
		hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "gw", URL: rcv.URL, Events: []string{"license.created"},
			Headers: map[string]string{"X-Api-Key": key, "x-tenant": "acme"}})
		if err != nil {
			t.Fatal(err)
		}
		if hook.Headers["X-Api-Key"] != "********" || hook.Headers["x-tenant"] != "********" {
			t.Errorf("create answered headers %v; want them masked", hook.Headers)
		}
		wantSent := func(what string, r heraldtest.Request) {
			t.Helper()
			if r.Header.Get("X-Api-Key") != key || r.Header.Get("X-Tenant") != "acme" {
				t.Errorf("%s arrived with X-Api-Key %q, X-Tenant %q; want the webhook's headers", what, r.Header.Get("X-Api-Key"), r.Header.Get("X-Tenant"))
			}
			if r.Header.Get("Content-Type") != "application/json; charset=utf-8" || r.Header.Get("webhook-signature") == "" {
				t.Errorf("%s lost herald's own headers: %v", what, r.Header)
			}
		}

		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
		wantSent("the delivery", rcv.Requests()[0])
		h.Settled()
		logs := h.Logs("webhookId=" + hook.ID)
		if len(logs) != 1 {
			t.Fatalf("%d logs; want 1", len(logs))
		}
		// The attempt keeps what was sent, the value masked.
		full, err := h.API.EventLog(ctx, logs[0].ID)
		if err != nil || len(full.Attempts) != 1 || full.Attempts[0].Headers == nil {
			t.Fatalf("log %+v, %v; want one attempt with its headers", full, err)
		}
		kept := map[string]string{}
		for _, hd := range full.Attempts[0].Headers.Request {
			kept[strings.ToLower(hd.Name)] = hd.Value
		}
		if kept["x-api-key"] != "********" || kept["x-tenant"] != "********" {
			t.Errorf("the attempt kept request headers %v; want the custom ones masked", kept)
		}
		if _, err := h.API.ResendEventLog(ctx, logs[0].ID); err != nil {
			t.Fatal(err)
		}
		wantSent("the resend", rcv.Requests()[1])
		test, err := h.API.TestWebhook(ctx, hook.ID, client.TestRequest{})
		if err != nil || !test.Succeeded {
			t.Fatalf("test: %+v, %v", test, err)
		}
		wantSent("the test", rcv.Requests()[2])
		for name, v := range test.Request.Headers {
			if strings.EqualFold(name, "x-api-key") && v != "********" {
				t.Errorf("the test result shows %s: %q; want it masked", name, v)
			}
		}

		// Reveal, for a write token only.
		got, err := h.API.RevealHeaders(ctx, hook.ID)
		if err != nil || got.Headers["X-Api-Key"] != key {
			t.Errorf("reveal: %v, %v; want the value", got.Headers, err)
		}
		// Saved back masked, with one more: the stored value stays.
		back := map[string]string{"X-Api-Key": "********", "x-tenant": "********", "X-Region": "eu"}
		if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{Headers: &back}); err != nil {
			t.Fatal(err)
		}
		if got, _ := h.API.RevealHeaders(ctx, hook.ID); got.Headers["X-Api-Key"] != key || got.Headers["X-Region"] != "eu" {
			t.Errorf("after saving back masked values, headers %v; want the stored key kept", got.Headers)
		}
		// herald's own: refused, nothing changed.
		bad := map[string]string{"Webhook-Signature": "forged", "X-Api-Key": "other"}
		_, err = h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{Headers: &bad})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != 422 || len(ce.Errors) != 1 || ce.Errors[0].Field != `headers["Webhook-Signature"]` {
			t.Fatalf("setting webhook-signature answered %v; want 422 naming it", err)
		}
		if got, _ := h.API.RevealHeaders(ctx, hook.ID); got.Headers["X-Api-Key"] != key {
			t.Errorf("a refused update changed the headers to %v", got.Headers)
		}
		none := map[string]string{}
		if w, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{Headers: &none}); err != nil || len(w.Headers) != 0 {
			t.Errorf("remove headers: %v, %v", w.Headers, err)
		}
	})
}
