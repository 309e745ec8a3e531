package portal_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
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
