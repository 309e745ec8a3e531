package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestRotationFormRefusesBadInputAndChangesNothing: an overlap out of
// bounds or not a number, a second rotation, a finish without one and a
// test signed with an unknown token are refused, say why, and change
// nothing.
func TestRotationFormRefusesBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("Rotating", rcv.URL, "license.created")
	b := mustSignIn(t, h)
	rotate, finish := "/webhooks/"+hook.ID+"/token/rotate", "/webhooks/"+hook.ID+"/token/rotate/finish"
	for _, tc := range []struct {
		name, path string
		form       url.Values
		code       int
		says       string
	}{
		{"overlap not a number", rotate, url.Values{"overlap": {"a day"}}, http.StatusUnprocessableEntity, "Choose how long both tokens sign deliveries."},
		{"overlap under a minute", rotate, url.Values{"overlap": {"59"}}, http.StatusUnprocessableEntity, "Overlap must be from 60"},
		{"overlap over 30 days", rotate, url.Values{"overlap": {"2592001"}}, http.StatusUnprocessableEntity, "Overlap must be from 60"},
		{"finish without a rotation", finish, url.Values{}, http.StatusConflict, "No token rotation is under way"},
		{"test signed with an unknown token", "/webhooks/" + hook.ID + "/test", url.Values{"event": {"license.created"}, "signWith": {"old"}}, http.StatusUnprocessableEntity, "Choose the token that signs the test."},
		{"test signed with the next token, no rotation", "/webhooks/" + hook.ID + "/test", url.Values{"event": {"license.created"}, "signWith": {"next"}}, http.StatusConflict, "no next token"},
	} {
		code, _, body := b.submit(tc.path, tc.form)
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d; want %d saying %q", tc.name, code, tc.code, tc.says)
		}
	}
	ctx := context.Background()
	if w, err := h.API.Webhook(ctx, hook.ID); err != nil || w.TokenRotation != nil {
		t.Errorf("after refused forms: rotation %+v, %v; want none", w.TokenRotation, err)
	}
	if tok, next, err := h.API.WebhookTokens(ctx, hook.ID); err != nil || tok != hook.Token || next != "" {
		t.Errorf("after refused forms: tokens %q, %q, %v; want the token unchanged", tok, next, err)
	}
	if n := rcv.Count(); n != 0 {
		t.Errorf("refused tests sent %d requests", n)
	}

	if code, loc, _ := b.post(rotate, url.Values{"overlap": {"3600"}}); code != http.StatusSeeOther || loc != "/webhooks/"+hook.ID {
		t.Fatalf("rotate: %d to %q; want 303 to the webhook's page", code, loc)
	}
	_, next, _ := h.API.WebhookTokens(ctx, hook.ID)
	if code, _, body := b.submit(rotate, url.Values{"overlap": {"60"}}); code != http.StatusConflict || !strings.Contains(body, "already under way") {
		t.Errorf("a second rotation: %d; want 409 saying one is under way", code)
	}
	if _, again, _ := h.API.WebhookTokens(ctx, hook.ID); again != next {
		t.Errorf("a refused second rotation changed the next token")
	}
}

// TestBrowserRotateToken: the owner rotates a webhook's token from its page,
// reveals both tokens, tests the receiver with the next token, and finishes
// the rotation; the page shows the state and the end at each step, and the
// Test result says which token signed.
func TestBrowserRotateToken(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("Billing", rcv.URL, "license.created")
	b := signInTab(t, h)
	page := "/webhooks/" + hook.ID
	b.open(page)
	if got := run(b, chromedp.AttributeValue(chromedp.CSS("#rotation-state"), "data-rotation")); got.Value != "none" {
		t.Fatalf("rotation state before: %q; want none", got.Value)
	}
	b.set("#overlap", "3600")
	if code := b.click("form[action$='/token/rotate'] button[type=submit]"); code != http.StatusOK {
		t.Fatalf("rotate: %d", code)
	}
	b.contains(".notice.ok", "Token rotation started.")
	w, err := h.API.Webhook(context.Background(), hook.ID)
	if err != nil || w.TokenRotation == nil {
		t.Fatalf("after Rotate token: %+v, %v; want a rotation", w.TokenRotation, err)
	}
	ends := run(b, chromedp.AttributeValue(chromedp.CSS("#rotation-ends"), "datetime"))
	if !strings.HasPrefix(ends.Value, w.TokenRotation.EndsAt.UTC().Format("2006-01-02T15:04:05")) {
		t.Errorf("the page shows the end %q; want %s", ends.Value, w.TokenRotation.EndsAt)
	}
	b.screenshot("webhook-rotation-under-way")

	b.click("form[action$='/token'] button")
	tok, next, err := h.API.WebhookTokens(context.Background(), hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, gotNext := b.text("#token-value"), b.text("#next-token-value"); got != tok || gotNext != next || next == "" {
		t.Errorf("revealed %q and %q; want %q and %q", got, gotNext, tok, next)
	}
	// The owner configures the receiver with both tokens.
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if webhook.VerifyAny([]string{tok, next}, raw, r.Header.Get(webhook.SignatureHeader)) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	b.open(page + "/test")
	b.do(chromedp.Click(chromedp.CSS("#signWith-next")))
	b.click("form[action$='/test'] button[type=submit]")
	if got := run(b, chromedp.AttributeValue(chromedp.CSS("#test-signed-with"), "data-signed-with")); got.Value != "next" {
		t.Errorf("the test result says it was signed with %q; want next", got.Value)
	}
	b.contains("#test-signed-with", "The next token")
	b.contains(".test-result [data-outcome]", "Delivered.")
	b.screenshot("webhook-test-next-token")

	b.open(page)
	if code := b.click("form[action$='/token/rotate/finish'] button[type=submit]"); code != http.StatusOK {
		t.Fatalf("finish: %d", code)
	}
	b.contains(".notice.ok", "Token rotation finished.")
	if got := run(b, chromedp.AttributeValue(chromedp.CSS("#rotation-state"), "data-rotation")); got.Value != "none" {
		t.Errorf("rotation state after the finish: %q; want none", got.Value)
	}
	if now, after, _ := h.API.WebhookTokens(context.Background(), hook.ID); now != next || after != "" {
		t.Errorf("after the finish: tokens %q, %q; want the next token alone", now, after)
	}
}
