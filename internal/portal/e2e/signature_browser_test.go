package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestBrowserSignatureCheck: from a webhook's actions menu to the signature
// debugger, at 1440×900 and 390×844. A body with non-ASCII characters and
// LF line breaks, typed into the text box, is checked over the bytes the
// receiver had (the browser sends the line breaks as CRLF); a signature
// over re-serialised JSON is named as such; the result takes the focus;
// every field has a label; a phone needs no sideways scrolling.
func TestBrowserSignatureCheck(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	id, tok := signedWebhook(t, h)
	b := signInTab(t, h)

	for _, size := range []struct {
		name          string
		width, height int64
		phone         bool
	}{{"desktop", 1440, 900, false}, {"phone", 390, 844, true}} {
		b.size(size.phone) // every navigation also runs axe-core at both sizes
		b.open("/webhooks/" + id)
		b.do(chromedp.Click(chromedp.CSS(".page-head details.menu summary")))
		if code := b.click(".page-head a[href$='/signature']"); code != http.StatusOK {
			t.Fatalf("%s: the debugger answered %d", size.name, code)
		}
		b.contains("h1", "Check a signature")
		if n := b.count("textarea, input:not([type=hidden]), select"); n != b.count("main label[for]") {
			t.Errorf("%s: %d fields, %d labels", size.name, n, b.count("main label[for]"))
		}

		// Base64 that is not: refused beside the field, the focus on the
		// summary, what was typed kept.
		b.do(chromedp.SetValue(chromedp.CSS("#encoding"), "base64"))
		setExact(b, "#body", "not base64!")
		if code := b.click("form[action$='/signature'] button[type=submit]"); code != http.StatusUnprocessableEntity {
			t.Errorf("%s: bad Base64 answered %d; want 422", size.name, code)
		}
		b.contains("#body-error", "not valid Base64")
		if focused := run(b, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "check-errors" {
			t.Errorf("%s: focus on %q after the refusal; want the error summary", size.name, focused)
		}
		if v := b.value("#body"); v != "not base64!" {
			t.Errorf("%s: the text box holds %q after the refusal", size.name, v)
		}
		b.do(chromedp.SetValue(chromedp.CSS("#encoding"), "text"))

		body := "{\n  \"name\": \"Zoë Ångström – 日本語 – 🚀\"\n}"
		setExact(b, "#body", body)
		setExact(b, "#signature", sign(tok, []byte(body)))
		b.click("form[action$='/signature'] button[type=submit]")
		b.contains("[data-verdict]", "Match.")
		if n := b.count("[data-verdict=match]"); n != 1 {
			t.Errorf("%s: the LF body typed in the browser does not match; verdict %q", size.name, b.text("[data-verdict]"))
		}
		if got := b.text("#check-bytes"); got != fmt.Sprint(len(body)) {
			t.Errorf("%s: %s bytes checked; want %d (LF line breaks, UTF-8)", size.name, got, len(body))
		}
		if v := b.value("#body"); v != body {
			t.Errorf("%s: the text box holds %q after the check; want what was typed", size.name, v)
		}
		if focused := run(b, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "check-result" {
			t.Errorf("%s: focus on %q after the check; want the result", size.name, focused)
		}
		b.screenshot("webhook-signature-match-" + size.name)

		// The receiver re-serialised the JSON (keys sorted, compact).
		var v any
		json.Unmarshal([]byte(body), &v)
		sorted, _ := json.Marshal(v)
		setExact(b, "#signature", sign(tok, sorted))
		b.click("form[action$='/signature'] button[type=submit]")
		b.contains("[data-verdict=mismatch]", "No match.", "parses the JSON")
		if got := run(b, chromedp.Evaluate[string](`document.querySelector("[data-cause]").dataset.cause`)); got != "reserialised" {
			t.Errorf("%s: first cause %q; want reserialised", size.name, got)
		}
		b.contains(".notes", "compact")
		if strings.Contains(run(b, chromedp.Evaluate[string](`document.documentElement.outerHTML`)), tok) {
			t.Errorf("%s: the page shows the token", size.name)
		}
		fit(b, size.phone, size.width, size.height)
		if w := run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > int(size.width) {
			t.Errorf("%s: the page is %dpx wide at %dpx", size.name, w, size.width)
		}
		b.screenshot("webhook-signature-mismatch-" + size.name)
	}
}

// setExact sets a field's value byte for byte, line breaks included.
func setExact(b *tab, css, value string) {
	b.t.Helper()
	sel, _ := json.Marshal(css)
	val, _ := json.Marshal(value)
	run(b, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+string(sel)+`); e.value = `+string(val)+`; return true })()`))
}

// fit sets the viewport to exactly width×height (the shared helpers use
// 1280×900 for a desktop), for the width checks and screenshots.
func fit(b *tab, phone bool, width, height int64) {
	b.t.Helper()
	if phone {
		b.do(chromedp.EmulateViewport(width, height, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	} else {
		b.do(chromedp.EmulateViewport(width, height))
	}
}

// TestBrowserSignatureCheckStandardWebhooks: for a webhook signing the
// Standard Webhooks way, a real delivery (which the Standard Webhooks
// project's own Go library accepts) pasted into the debugger with its
// webhook-id, webhook-timestamp and webhook-signature headers is a match;
// the same delivery with its timestamp changed, its body changed, or
// signed with another token is refused, each with its reason; a malformed
// timestamp is refused beside its field.
func TestBrowserSignatureCheckStandardWebhooks(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	token := auth.NewWebhookToken()
	var hook struct{ ID string }
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "SW", "url": rcv.URL, "events": []string{"license.created"},
		"token": token, "signatureScheme": "standard-webhooks"}, &hook)
	h.CreateLicense(map[string]any{"owner": "Zoë Ångström 🚀"})
	heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	got := rcv.Requests()[0]
	lib, err := standardwebhooks.NewWebhook(token) // the token as herald shows it
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.VerifyIgnoringTimestamp(got.Body, got.Header); err != nil {
		t.Fatalf("the Standard Webhooks library refuses herald's delivery: %v", err)
	}
	id, ts, sig := got.Header.Get("webhook-id"), got.Header.Get("webhook-timestamp"), got.Header.Get("webhook-signature")

	b := signInTab(t, h)
	b.open("/webhooks/" + hook.ID + "/signature")
	b.contains("#check-scheme", "Standard Webhooks")
	check := func(body, webhookID, timestamp, signature string) int64 {
		t.Helper()
		setExact(b, "#body", body)
		setExact(b, "#webhookId", webhookID)
		setExact(b, "#timestamp", timestamp)
		setExact(b, "#signature", signature)
		return b.click("form[action$='/signature'] button[type=submit]")
	}

	if code := check(string(got.Body), id, ts, sig); code != http.StatusOK {
		t.Fatalf("the check answered %d", code)
	}
	b.contains("[data-verdict=match]", "Match.", "webhook-id and webhook-timestamp")
	if s := b.text("#check-signature"); s != sig {
		t.Errorf("herald's signature reads %q; want the one sent, %q", s, sig)
	}
	b.screenshot("webhook-signature-standard-match")

	// The webhook-id may be left out: it is the body's id.
	check(string(got.Body), "", ts, sig)
	b.contains("[data-verdict=match]", "Match.")
	b.contains("#check-webhook-id", id)

	// A replay with a new timestamp.
	later, _ := strconv.ParseInt(ts, 10, 64)
	check(string(got.Body), id, strconv.FormatInt(later+60, 10), sig)
	b.contains("[data-verdict=mismatch]", "No match.", "made with webhook-timestamp "+ts, "attempt 1")
	if c := run(b, chromedp.Evaluate[string](`document.querySelector("[data-cause]").dataset.cause`)); c != "header" {
		t.Errorf("a changed timestamp's cause is %q; want header", c)
	}

	// A changed body, with the signature herald sent.
	tampered := strings.Replace(string(got.Body), "license.created", "license.deleted", 1)
	check(tampered, id, ts, sig)
	b.contains("[data-verdict=sent]", "the body pasted here is not that body")

	// Signed with another token, as a forger would.
	forger, _ := standardwebhooks.NewWebhook(webhook.StandardSecret(auth.NewWebhookToken()))
	forged, _ := forger.Sign(id, time.Unix(later, 0), got.Body)
	check(string(got.Body), id, ts, forged)
	b.contains("[data-verdict=unknown]", "No match, and no common mistake reproduces it", "webhook-timestamp")
	b.screenshot("webhook-signature-standard-forged")

	// A timestamp in milliseconds: refused beside the field, nothing checked.
	if code := check(string(got.Body), id, ts+"000.5", sig); code != http.StatusUnprocessableEntity {
		t.Errorf("a bad timestamp answered %d; want 422", code)
	}
	b.contains("#timestamp-error", "whole number of seconds")
	if n := b.count("#check-result"); n != 0 {
		t.Errorf("a refused check shows a result")
	}
	if strings.Contains(run(b, chromedp.Evaluate[string](`document.documentElement.outerHTML`)), token) {
		t.Errorf("the page shows the token")
	}
}
