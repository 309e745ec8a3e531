package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// signInTab signs the owner in through the form.
func signInTab(t *testing.T, h *heraldtest.Herald) *tab {
	t.Helper()
	b := newTab(t, h)
	b.open("/signin")
	b.do(chromedp.SendKeys(chromedp.CSS("#email"), h.Email), chromedp.SendKeys(chromedp.CSS("#password"), h.Password))
	b.click("form[action='/signin'] button[type=submit]")
	if p := b.path(); p != "/webhooks" {
		t.Fatalf("signed in at %s", p)
	}
	return b
}

// TestBrowserFormsEditDisableDelete: a form that fails validation shows each
// error next to its field and keeps what was typed; then edit, disable and
// delete (with its confirmation), and the account's notification email.
func TestBrowserFormsEditDisableDelete(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	b := signInTab(t, h)

	b.click("a.button.primary[href='/webhooks/new']")
	b.do(chromedp.SendKeys(chromedp.CSS("#name"), "Billing"), chromedp.SendKeys(chromedp.CSS("#url"), "ftp://example.com/hooks"))
	b.set("#token", "short")
	if code := b.click("form[action='/webhooks/new'] button[type=submit]"); code != http.StatusUnprocessableEntity {
		t.Errorf("invalid form: %d; want 422", code)
	}
	b.contains(".notice.bad", "not saved")
	if id := run(b, chromedp.Evaluate[string](`document.activeElement.id`)); id != "error-summary" {
		t.Errorf("after the refusal the focus is on %q; want the error summary", id)
	}
	if n := b.count("#error-summary a[href='#url-error'], #error-summary a[href='#token-error'], #error-summary a[href='#events-error']"); n != 3 {
		t.Errorf("the error summary links to %d of the 3 fields in error", n)
	}
	// The summary lists them in the order of the fields on the page.
	if got := run(b, chromedp.Evaluate[string](`[...document.querySelectorAll('#error-summary a')].map(a => a.getAttribute('href')).join(' ')`)); got != "#url-error #token-error #events-error" {
		t.Errorf("the error summary lists %q; want the fields' order: #url-error #token-error #events-error", got)
	}
	b.contains("#url-error", "URL must use http or https.")
	b.contains("#token-error", "Token must be 16 to 256 characters.")
	b.contains("#events-error", "Events must name at least one event kind.")
	if n := b.count("#name-error"); n != 0 {
		t.Errorf("the valid name shows an error")
	}
	for sel, want := range map[string]string{"#name": "Billing", "#url": "ftp://example.com/hooks", "#token": "short"} {
		if got := b.value(sel); got != want {
			t.Errorf("%s holds %q after the refusal; want %q", sel, got, want)
		}
	}
	if a := run(b, chromedp.AttributeValue(chromedp.CSS("#url"), "aria-describedby")); !strings.Contains(a.Value, "url-error") {
		t.Errorf("#url aria-describedby %q; want it to name its error", a.Value)
	}
	b.screenshot("webhook-form-errors")
	// Each field has a label.
	if n := b.count("input:not([type=hidden]):not([type=checkbox]), select, textarea"); n != b.count("label[for]") {
		t.Errorf("%d inputs, %d labels", n, b.count("label[for]"))
	}

	// Corrected (the token left empty is generated), it is saved.
	b.set("#url", rcv.URL)
	b.set("#token", "")
	b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")))
	b.click("form[action='/webhooks/new'] button[type=submit]")
	b.contains(".notice.ok", "Webhook added.")
	id := strings.TrimPrefix(strings.SplitN(b.path(), "?", 2)[0], "/webhooks/")
	var tok struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+id+"/token", nil, &tok)
	if !strings.HasPrefix(tok.Token, "whsec_") {
		t.Errorf("token %q; want one generated", tok.Token)
	}

	// Reveal the token on the webhook's page.
	b.click("form[action$='/token'] button")
	if got := b.text("#token-value"); got != tok.Token {
		t.Errorf("revealed token %q; want %q", got, tok.Token)
	}

	// Disable from the actions menu.
	b.do(chromedp.Click(chromedp.CSS(".page-head details.menu summary")))
	b.click(".page-head form[action$='/enabled'] button")
	b.contains(".notice.ok", "Webhook disabled.")
	b.contains(".page-head .badges", "Disabled")
	if h.Webhook(id).Enabled {
		t.Errorf("still enabled")
	}

	// Edit: a new name, the token left as it is.
	b.do(chromedp.Click(chromedp.CSS(".page-head details.menu summary")))
	b.click(".page-head a[href$='/edit']")
	if v := b.value("#name"); v != "Billing" {
		t.Errorf("edit form name %q", v)
	}
	if v := b.value("#token"); v != "" {
		t.Errorf("edit form shows the token %q; want it left empty", v)
	}
	b.set("#name", "Billing v2")
	b.do(chromedp.Click(chromedp.CSS("#enabled")))
	b.click("form[action$='/edit'] button[type=submit]")
	b.contains(".notice.ok", "Webhook saved.")
	if w := h.Webhook(id); w.Name != "Billing v2" || !w.Enabled {
		t.Errorf("after edit %+v", w)
	}
	var tok2 struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+id+"/token", nil, &tok2)
	if tok2.Token != tok.Token {
		t.Errorf("editing without a token changed it")
	}

	// Delete asks first.
	b.do(chromedp.Click(chromedp.CSS(".page-head details.menu summary")))
	b.click(".page-head a[href$='/delete']")
	b.contains("h1", "Delete webhook?")
	b.contains("main", "Billing v2", "cannot be undone")
	b.click("main a.button.quiet")
	if b.path() != "/webhooks/"+id || h.Webhook(id).Name != "Billing v2" {
		t.Errorf("Cancel deleted the webhook")
	}
	b.open("/webhooks/" + id + "/delete")
	b.click("form[action$='/delete'] button[type=submit]")
	b.contains(".notice.ok", "Webhook deleted.")
	b.contains("main", "No webhooks yet")
	if code := h.Do("GET", "/v3/webhooks/"+id, nil, nil); code != http.StatusNotFound {
		t.Errorf("deleted webhook answers %d", code)
	}

	// Account settings: the notification email.
	b.click("nav.side a[href='/account']")
	// The browser checks the field's syntax first; this one passes there
	// and is refused by the server.
	b.set("#notificationEmail", "ops..team@example.com")
	b.click("form[action='/account'] button[type=submit]")
	b.contains("#notificationEmail-error", "Notification email must be an email address")
	if v := b.value("#notificationEmail"); v != "ops..team@example.com" {
		t.Errorf("email field %q after the refusal", v)
	}
	b.set("#notificationEmail", "ops@example.com")
	b.click("form[action='/account'] button[type=submit]")
	b.contains(".notice.ok", "Settings saved.")
	var acct struct{ NotificationEmail string }
	h.Must(200, "GET", "/v3/account", nil, &acct)
	if acct.NotificationEmail != "ops@example.com" {
		t.Errorf("notification email %q", acct.NotificationEmail)
	}
}
