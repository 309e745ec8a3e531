package e2e_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestWebhookFormFilter: the add and edit forms take a filter, refuse a
// malformed one beside the field naming the path and the operator (keeping
// what was typed, saving nothing), show a saved one, and remove it when
// emptied.
func TestWebhookFormFilter(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	form := url.Values{"name": {"CRM"}, "url": {"https://example.com/h"}, "events": {"license.created"}, "enabled": {"on"},
		"filter": {`{"data.productId": {"$in": "p1"}}`}}
	code, _, body := b.submit("/webhooks/new", form)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("bad filter: %d; want 422", code)
	}
	text := html.UnescapeString(body)
	if !strings.Contains(text, `id="filter-error"`) || !strings.Contains(text, `Filter path "data.productId", operator $in: takes an array of values.`) ||
		!strings.Contains(text, `{"data.productId": {"$in": "p1"}}</textarea>`) {
		t.Fatalf("the form does not show the filter's error beside it with the text kept:\n%s", body)
	}
	var list struct{ Data []struct{ ID string } }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("a refused form created %d webhooks", len(list.Data))
	}

	form.Set("filter", `{"data.productId": {"$in": ["p1"]}}`)
	code, loc, body := b.submit("/webhooks/new", form)
	if code != http.StatusOK || !strings.Contains(html.UnescapeString(body), `{"data.productId":{"$in":["p1"]}}`) {
		t.Fatalf("add with a filter: %d at %s; want the webhook's page showing the filter\n%s", code, loc, body)
	}
	id := strings.TrimPrefix(loc, "/webhooks/")
	var hook struct{ Filter map[string]any }
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &hook)
	if hook.Filter["data.productId"] == nil {
		t.Fatalf("saved filter %v; want the one typed", hook.Filter)
	}

	_, _, body = b.get("/webhooks/" + id + "/edit")
	if !strings.Contains(html.UnescapeString(body), "\"data.productId\": {\n    \"$in\": [") {
		t.Errorf("the edit form does not show the saved filter, indented:\n%s", body)
	}
	form.Set("filter", "")
	if code, _, _ := b.submit("/webhooks/"+id+"/edit", form); code != http.StatusOK {
		t.Fatalf("edit: %d", code)
	}
	var cleared struct{ Filter any }
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &cleared)
	if cleared.Filter != nil {
		t.Errorf("after emptying the field the filter is %v; want null", cleared.Filter)
	}
}

// TestWebhookFormHeaders: the form takes custom headers a line each,
// refuses herald's own beside the field, shows stored values masked, and
// keeps a value left masked when the form is saved again.
func TestWebhookFormHeaders(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	form := url.Values{"name": {"GW"}, "url": {"https://example.com/h"}, "events": {"license.created"}, "enabled": {"on"},
		"headers": {"X-Api-Key: k-secret-1\nwebhook-id: forged"}}
	code, _, body := b.submit("/webhooks/new", form)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="headers-error"`) || !strings.Contains(html.UnescapeString(body), "herald's own header") {
		t.Fatalf("a reserved header: %d; want 422 with the error beside the field\n%s", code, body)
	}
	form.Set("headers", "X-Api-Key: k-secret-1\r\nX-Tenant: acme\r\n")
	code, loc, body := b.submit("/webhooks/new", form)
	if code != http.StatusOK || strings.Contains(body, "k-secret-1") || !strings.Contains(body, "X-Api-Key: ********") {
		t.Fatalf("add with headers: %d; want the webhook page, the value masked\n%s", code, body)
	}
	id := strings.TrimPrefix(loc, "/webhooks/")
	_, _, body = b.get("/webhooks/" + id + "/edit")
	if strings.Contains(body, "k-secret-1") || !strings.Contains(body, "X-Api-Key: ********\nX-Tenant: ********") {
		t.Fatalf("the edit form shows %q; want the headers masked", body)
	}
	form.Set("headers", "X-Api-Key: ********\nX-Region: eu")
	if code, _, _ := b.submit("/webhooks/"+id+"/edit", form); code != http.StatusOK {
		t.Fatalf("edit: %d", code)
	}
	var got struct{ Headers map[string]string }
	h.Must(200, "GET", "/v3/webhooks/"+id+"?reveal=headers", nil, &got)
	if len(got.Headers) != 2 || got.Headers["X-Api-Key"] != "k-secret-1" || got.Headers["X-Region"] != "eu" {
		t.Errorf("headers after the edit: %v; want the key kept, the tenant gone, the region added", got.Headers)
	}
}

// TestWebhookFormSignatureScheme: the form chooses how deliveries are
// signed, shows the choice on the webhook's page and in the edit form, and
// refuses a scheme that does not exist.
func TestWebhookFormSignatureScheme(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	form := url.Values{"name": {"SW"}, "url": {"https://example.com/h"}, "events": {"license.created"}, "enabled": {"on"}, "signatureScheme": {"svix"}}
	if code, _, body := b.submit("/webhooks/new", form); code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="signatureScheme-error"`) {
		t.Fatalf("an unknown scheme: %d; want 422 beside the field", code)
	}
	form.Set("signatureScheme", "standard-webhooks")
	code, loc, body := b.submit("/webhooks/new", form)
	if code != http.StatusOK || !strings.Contains(body, `<dd id="signature-scheme">Standard Webhooks</dd>`) {
		t.Fatalf("add: %d; want the page naming Standard Webhooks\n%s", code, body)
	}
	id := strings.TrimPrefix(loc, "/webhooks/")
	if _, _, body := b.get("/webhooks/" + id + "/edit"); !strings.Contains(body, `<option value="standard-webhooks" selected>`) {
		t.Errorf("the edit form does not show the chosen scheme")
	}
	var got struct{ SignatureScheme string }
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &got)
	if got.SignatureScheme != "standard-webhooks" {
		t.Errorf("signatureScheme %q; want standard-webhooks", got.SignatureScheme)
	}
}

// TestWebhookFormEd25519: choosing ed25519 in the form, with the secret
// the form generated left in place, makes a key pair: the page shows the
// public key, the API the same one; switching the webhook back to herald
// without a token gives it a new secret rather than the private key.
func TestWebhookFormEd25519(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	form := url.Values{"name": {"Ed"}, "url": {"https://example.com/h"}, "events": {"license.created"}, "enabled": {"on"},
		"token": {"whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"}, "signatureScheme": {"standard-webhooks-ed25519"}}
	code, loc, body := b.submit("/webhooks/new", form)
	if code != http.StatusOK || !strings.Contains(body, `Standard Webhooks, ed25519`) {
		t.Fatalf("add: %d; want the page naming ed25519\n%s", code, body)
	}
	id := strings.TrimPrefix(loc, "/webhooks/")
	var got struct{ SignatureScheme, PublicKey string }
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &got)
	if got.SignatureScheme != "standard-webhooks-ed25519" || !strings.HasPrefix(got.PublicKey, "whpk_") {
		t.Fatalf("the API shows %+v", got)
	}
	// html/template writes a + in text as &#43;.
	if !strings.Contains(strings.ReplaceAll(body, "&#43;", "+"), `<dd id="public-key" class="mono">`+got.PublicKey+`</dd>`) {
		t.Errorf("the page does not show the public key %s", got.PublicKey)
	}
	if _, _, body := b.get("/webhooks/" + id + "/edit"); !strings.Contains(body, `<option value="standard-webhooks-ed25519" selected>`) {
		t.Errorf("the edit form does not show the chosen scheme")
	}
	var tok struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+id+"/token", nil, &tok)
	if !strings.HasPrefix(tok.Token, "whsk_") {
		t.Fatalf("token %q; want the whsk_ private key", tok.Token)
	}
	// A rotation from the page makes a new key pair, shown beside the key.
	if code, _, body := b.submit("/webhooks/"+id+"/token/rotate", url.Values{"overlap": {"3600"}}); code != http.StatusOK {
		t.Fatalf("rotate: %d\n%s", code, body)
	}
	var rotated struct {
		PublicKey     string
		TokenRotation struct{ NextPublicKey string }
	}
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &rotated)
	next := rotated.TokenRotation.NextPublicKey
	if rotated.PublicKey != got.PublicKey || !strings.HasPrefix(next, "whpk_") || next == got.PublicKey {
		t.Fatalf("after a rotation from the page: %+v", rotated)
	}
	if _, _, body := b.get("/webhooks/" + id); !strings.Contains(strings.ReplaceAll(body, "&#43;", "+"), "next: "+next) {
		t.Errorf("the page does not show the next public key %s", next)
	}
	edit := url.Values{"name": {"Ed"}, "url": {"https://example.com/h"}, "events": {"license.created"}, "enabled": {"on"}, "signatureScheme": {"herald"}}
	if code, _, body := b.submit("/webhooks/"+id+"/edit", edit); code != http.StatusOK {
		t.Fatalf("back to herald: %d\n%s", code, body)
	}
	var after struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+id+"/token", nil, &after)
	if after.Token == tok.Token || strings.HasPrefix(after.Token, "whsk_") {
		t.Errorf("after the switch to herald the token is %q; want a new HMAC secret", after.Token)
	}
}

// TestWebhookFormRateLimit: the form takes a rate limit, refuses one out of
// range beside the field (saving nothing), shows it on the webhook's page
// with the logs waiting their turn, and removes it when emptied.
func TestWebhookFormRateLimit(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	held := rcv.Hold(t)
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	form := url.Values{"name": {"Gateway"}, "url": {rcv.URL}, "events": {"license.created"}, "enabled": {"on"}}
	for _, bad := range []string{"0", "10001", "fast", "2.5"} {
		form.Set("rateLimit", bad)
		code, _, body := b.submit("/webhooks/new", form)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="rateLimit-error"`) ||
			!strings.Contains(body, `value="`+bad+`"`) {
			t.Fatalf("rate limit %q: %d; want 422 beside the field with the text kept\n%s", bad, code, body)
		}
	}
	var list struct{ Data []struct{ ID string } }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Fatalf("a refused form created %d webhooks", len(list.Data))
	}

	form.Set("rateLimit", "50")
	code, loc, body := b.submit("/webhooks/new", form)
	if code != http.StatusOK || !strings.Contains(body, `<dd id="rate-limit">Throttled at 50/s: 0 waiting</dd>`) {
		t.Fatalf("add: %d; want the page saying it is throttled at 50/s\n%s", code, body)
	}
	id := strings.TrimPrefix(loc, "/webhooks/")
	// Five events, the receiver holding the first: all wait.
	for range 5 {
		h.CreateLicense(nil)
	}
	held.Wait(t, time.Minute, "the first delivery")
	if _, _, body := b.get("/webhooks/" + id); !strings.Contains(body, "Throttled at 50/s: 5 waiting (under a second at that rate)") {
		t.Errorf("the page does not count the 5 logs waiting:\n%s", body)
	}
	if _, _, body := b.get("/webhooks/" + id + "/edit"); !strings.Contains(body, `name="rateLimit" type="number"`) || !strings.Contains(body, `value="50"`) {
		t.Errorf("the edit form does not show the rate limit")
	}
	form.Set("rateLimit", "")
	if code, _, body := b.submit("/webhooks/"+id+"/edit", form); code != http.StatusOK || !strings.Contains(body, "None: sent as fast as the endpoint answers") {
		t.Fatalf("edit without a limit: %d\n%s", code, body)
	}
	var got struct{ RateLimit *int }
	h.Must(200, "GET", "/v3/webhooks/"+id, nil, &got)
	if got.RateLimit != nil {
		t.Errorf("rateLimit %d after it was emptied; want null", *got.RateLimit)
	}
}
