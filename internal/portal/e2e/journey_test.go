package e2e_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestBrowserJourney drives the portal in Chromium the way an account owner
// would: refused without a session and with a wrong password; signs in; adds
// a webhook pointed at a local receiver; tests it (with the signature check,
// against a receiver that verifies and one that does not); fires license
// events through the API; finds a log on Webhook Event Logs with the filters;
// opens it; resends it and sees the new attempt; reads the webhook's charts;
// signs out. It saves screenshots of the pages along the way.
func TestBrowserJourney(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 2, SuspendAfter: 3}})
	rcv := heraldtest.NewReceiver(t)
	broken := heraldtest.NewReceiver(t)
	broken.Status(500, "database unavailable")
	// Other webhooks, so the list shows every health: one that will be
	// suspended, one disabled.
	suspended := h.CreateWebhook("Inventory sync", broken.URL+"/inventory", "product.created")
	disabled := h.CreateWebhook("Legacy CRM", rcv.URL+"/legacy", "license.created")
	h.Must(200, "PATCH", "/v3/webhooks/"+disabled.ID, map[string]any{"enabled": false}, nil)
	b := newTab(t, h)

	// Without a session, a page sends the browser to sign in.
	b.open("/webhooks")
	if p := b.path(); p != "/signin?next=%2Fwebhooks" {
		t.Fatalf("without a session /webhooks shows %s; want the sign-in page", p)
	}
	b.contains("h1", "Sign in")

	// A wrong password is refused, and the email stays typed.
	b.do(chromedp.SendKeys(chromedp.CSS("#email"), h.Email), chromedp.SendKeys(chromedp.CSS("#password"), "not the password"))
	if code := b.click("form[action='/signin'] button[type=submit]"); code != http.StatusUnprocessableEntity {
		t.Errorf("wrong password: status %d; want 422", code)
	}
	b.contains(".notice.bad", "The email address or password is not right.")
	if v := b.value("#email"); v != h.Email {
		t.Errorf("email field %q after the refusal; want %q", v, h.Email)
	}
	if p := b.path(); !strings.HasPrefix(p, "/signin") {
		t.Errorf("after a wrong password the browser is at %s", p)
	}

	// The right one signs in and lands on the page first asked for.
	b.do(chromedp.SendKeys(chromedp.CSS("#password"), h.Password))
	b.click("form[action='/signin'] button[type=submit]")
	if p := b.path(); p != "/webhooks" {
		t.Fatalf("signed in at %s; want /webhooks", p)
	}
	if nav := b.exact("nav.side"); !strings.Contains(nav, "Developer") || !strings.Contains(nav, "Webhook Event Logs") || !strings.Contains(nav, "Settings") {
		t.Errorf("navigation reads %q; want Developer with Webhooks and Webhook Event Logs, and Settings", nav)
	}
	b.contains("nav.side a[aria-current=page]", "Webhooks")

	// Add a webhook: the token is generated, masked, and revealed on demand.
	b.click("a.button.primary[href='/webhooks/new']")
	b.contains("h1", "Add webhook")
	if typ := run(b, chromedp.AttributeValue(chromedp.CSS("#token"), "type")); typ.Value != "password" {
		t.Errorf("token field type %q; want it masked", typ.Value)
	}
	b.do(chromedp.Click(chromedp.CSS("[data-token-generate]")))
	token := b.value("#token")
	if key, ok := webhook.StandardKey(token); !ok || len(key) != 24 { // as herald makes one
		t.Errorf("generated token %q; want whsec_ and the base64 of 24 random bytes", token)
	}
	if typ := run(b, chromedp.AttributeValue(chromedp.CSS("#token"), "type")); typ.Value != "text" {
		t.Errorf("after Generate the token is %q; want it revealed", typ.Value)
	}
	b.do(
		chromedp.SendKeys(chromedp.CSS("#name"), "Licence emails"),
		chromedp.SendKeys(chromedp.CSS("#url"), rcv.URL+"/hooks/herald"),
		chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")),
		chromedp.Click(chromedp.CSS("input[name=events][value='license.expiresAt.updated']")),
	)
	b.click("form[action='/webhooks/new'] button[type=submit]")
	b.contains(".notice.ok", "Webhook added.")
	b.contains("h1", "Licence emails")
	hookID := strings.TrimPrefix(strings.SplitN(b.path(), "?", 2)[0], "/webhooks/")
	hook := h.Webhook(hookID)
	if hook.Name != "Licence emails" || hook.URL != rcv.URL+"/hooks/herald" || !hook.Enabled ||
		strings.Join(hook.Events, ",") != "license.created,license.expiresAt.updated" {
		t.Fatalf("created %+v", hook)
	}
	var tok struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+hookID+"/token", nil, &tok)
	if tok.Token != token {
		t.Errorf("stored token %q; want the generated %q", tok.Token, token)
	}

	// The list reads at a glance, and the actions menu works from the keyboard.
	b.click("nav.side a[href='/webhooks']")
	row := fmt.Sprintf("tr[data-webhook='%s']", hookID)
	b.contains(row, "Licence emails", rcv.URL+"/hooks/herald", "license.created", "license.expiresAt.updated", "Enabled", "Healthy")
	b.contains(fmt.Sprintf("tr[data-webhook='%s']", disabled.ID), "Legacy CRM", "Disabled")
	b.do(chromedp.Focus(chromedp.CSS(row+" summary")), chromedp.KeyEvent(kb.Enter))
	if n := b.count(row + " details.menu[open]"); n != 1 {
		t.Errorf("Enter on the actions button: %d open menus; want 1", n)
	}
	b.contains(row+" .menu-items", "Test", "Edit", "Disable", "Delete")
	b.do(chromedp.KeyEvent(kb.Escape))
	if n := b.count(row + " details.menu[open]"); n != 0 {
		t.Errorf("Escape left the menu open")
	}
	// Tabbing past its last item closes it too.
	b.do(chromedp.Focus(chromedp.CSS(row+" summary")), chromedp.KeyEvent(kb.Enter))
	b.do(chromedp.Focus(chromedp.CSS(row+" .menu-items li:last-child a")), chromedp.KeyEvent(kb.Tab))
	if n := b.count(row + " details.menu[open]"); n != 0 {
		t.Errorf("the menu stays open after the focus tabbed out of it")
	}

	// Test, against a receiver that accepts anything: a clear warning.
	rcv.Status(200, "ok")
	b.do(chromedp.Click(chromedp.CSS(row + " summary")))
	b.click(row + " .menu-items a[href$='/test']")
	if v := b.value("#event"); v != "license.created" {
		t.Errorf("Test's event is %q by default; want the first subscribed, license.created", v)
	}
	b.do(chromedp.Click(chromedp.CSS("#checkVerification")))
	b.click("form[action$='/test'] button[type=submit]")
	b.contains("[data-outcome]", "Delivered.", "200")
	b.contains("[data-verification]", "your endpoint accepts requests with a wrong signature")

	// Test again against a receiver that verifies signatures.
	rcv.SetRespond(verifying(token, http.StatusOK, "verified ✓"))
	before := rcv.Count()
	if v := b.value("#event"); v != "license.created" {
		t.Errorf("the event chosen was not kept: %q", v)
	}
	b.click("form[action$='/test'] button[type=submit]")
	b.contains("[data-outcome='succeeded']", "Delivered.", "The receiver answered 200 OK")
	b.contains("[data-verification='rejected']", "Signature check passed", "401")
	b.contains("#test-status", "200")
	if got := b.exact("#test-response-body"); got != "verified ✓" {
		t.Errorf("response body on the page %q; want the receiver's %q", got, "verified ✓")
	}
	shownBody, shownSig := b.exact("#test-request-body"), b.text("#test-signature")
	if want := webhook.Sign(token, []byte(shownBody)); shownSig != want {
		t.Errorf("signature shown %q; the body shown signs to %q", shownSig, want)
	}
	sent := rcv.Requests()[before:]
	if len(sent) != 2 {
		t.Fatalf("the receiver got %d requests for one test with the check; want 2", len(sent))
	}
	if string(sent[0].Body) != shownBody || sent[0].Header.Get("webhook-signature") != shownSig {
		t.Errorf("the page shows a body or signature other than what was sent:\nshown %s\nsent  %s", shownBody, sent[0].Body)
	}
	if !strings.Contains(shownBody, `"event":"license.created"`) || utf8.RuneCountInString(shownBody) == len(shownBody) {
		t.Errorf("sample body %s; want license.created with raw non-ASCII characters", shownBody)
	}
	if n := len(h.Logs("webhookId=" + hookID)); n != 0 {
		t.Errorf("tests made %d event logs; want none", n)
	}
	b.screenshot("webhook-test-result")

	// Fire license events through the API. The receiver fails each event's
	// first attempt, so the retry and both outcomes show.
	rcv.SetRespond(failFirst(verifying(token, http.StatusOK, "verified ✓")))
	var licenses []string
	for i := range 3 {
		if i == 2 {
			h.CreateWebhook("Slack alerts", broken.URL+"/slack", "product.created") // will be Unhealthy
		}
		licenses = append(licenses, h.CreateLicense(map[string]any{"customer": "Zoë 🎉", "seat": i}))
	}
	heraldtest.Eventually(t, 20*time.Second, "three succeeded license.created logs", func() bool {
		n := 0
		for _, l := range h.Logs("webhookId=" + hookID) {
			if l.Status == "succeeded" {
				n++
			}
		}
		return n == 3
	})
	heraldtest.Eventually(t, 20*time.Second, "Inventory sync suspended", func() bool { return h.Webhook(suspended.ID).Status == "Suspended" })
	var target heraldtest.Log
	for _, l := range h.Logs("webhookId=" + hookID) {
		if strings.Contains(l.Payload, licenses[0]) {
			target = l
		}
	}

	// Find the first license's log on Webhook Event Logs with the filters.
	b.click("nav.side a[href='/webhook-event-logs']")
	b.contains("h1", "Webhook Event Logs")
	if n := b.count("tr[data-log]"); n < 7 {
		t.Errorf("unfiltered list shows %d logs; want every webhook's", n)
	}
	b.set("#f-webhook-name", "LICENCE emails") // part of the name, any case
	b.set("#f-status", "succeeded")
	b.set("#f-event", "license.created")
	b.click("form[role=search] button[type=submit]")
	if n := b.count("tr[data-log]"); n != 3 {
		t.Errorf("filtered list shows %d logs; want the 3 succeeded license.created logs of this webhook", n)
	}
	for _, sel := range []string{"tbody tr:nth-child(1)", "tbody tr:nth-child(2)", "tbody tr:nth-child(3)"} {
		b.contains(sel, "license.created", "Licence emails", "succeeded", "200", "2")
	}
	if v := b.value("#f-status"); v != "succeeded" {
		t.Errorf("status filter shows %q after filtering", v)
	}
	if b.count(fmt.Sprintf("tbody tr:nth-child(3)[data-log='%s']", target.ID)) != 1 {
		t.Errorf("the oldest log is not last: newest first is broken")
	}
	// Each log's link is named for that log, not just for its event kind.
	names := run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr[data-log] th a")].map(a => a.textContent.replace(/\s+/g, " ").trim())`))
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || !strings.Contains(n, "Licence emails") || !strings.Contains(n, "created") {
			t.Errorf("log link named %q; want a name of its own, with its webhook and time", n)
		}
		seen[n] = true
	}
	b.screenshot("webhook-event-logs")

	// Open it: the exact payload and both attempts.
	b.click(fmt.Sprintf("tr[data-log='%s'] a", target.ID))
	b.contains("h1", "license.created")
	b.contains(".page-head .badges", "succeeded", "Licence emails")
	if got := b.exact("#payload"); got != target.Payload {
		t.Errorf("payload on the page differs from the one sent:\npage %s\nsent %s", got, target.Payload)
	}
	if !strings.Contains(b.exact("#payload"), "Zoë 🎉") {
		t.Errorf("payload does not show the raw UTF-8 text")
	}
	if n := b.count("tr[data-attempt]"); n != 2 {
		t.Fatalf("%d attempts shown; want 2", n)
	}
	b.contains("tr[data-attempt='1']", "automatic", "503", "receiver answered 503")
	if body := b.exact("tr[data-attempt='1'] pre"); body != "warming up\n" {
		t.Errorf("attempt 1's response body %q; want the receiver's", body)
	}
	b.contains("tr[data-attempt='2']", "automatic", "200")

	// Resend it: the outcome shows, with the new attempt.
	rcv.SetRespond(verifying(token, http.StatusAccepted, "accepted again"))
	b.do(chromedp.Click(chromedp.CSS(".page-head details.menu summary")))
	b.click("form[action$='/resend'] button[type=submit]")
	b.contains("#resend-outcome", "Resent:", "202 Accepted", "attempt 3")
	if id := run(b, chromedp.Evaluate[string](`document.activeElement.id`)); id != "resend-outcome" {
		t.Errorf("after the resend the focus is on %q; want the outcome", id)
	}
	// The new attempt keeps the headers sent, the signature the receiver got among them.
	sig := webhook.Sign(token, []byte(target.Payload))
	if got := b.exact("tr[data-attempt='3'] dl[data-headers=request]"); !strings.Contains(got, "webhook-signature"+sig) {
		t.Errorf("attempt 3's request headers read %q; want the signature sent, %q", got, sig)
	}
	if n := b.count("tr[data-attempt]"); n != 3 {
		t.Errorf("%d attempts after the resend; want 3", n)
	}
	b.contains("tr[data-attempt='3']", "resend", "202")
	if got := h.Log(target.ID); len(got.Attempts) != 3 || got.Attempts[2].Trigger != "resend" {
		t.Errorf("API shows %+v after the resend", got.Attempts)
	}
	b.screenshot("webhook-event-log")

	// The webhook's page: charts of its attempts, its latest logs.
	b.click(".page-head .badges a[href^='/webhooks/']")
	var attempts, ok int
	for _, l := range h.Logs("webhookId=" + hookID) {
		for _, a := range h.Log(l.ID).Attempts {
			attempts++
			if a.Error == nil {
				ok++
			}
		}
	}
	rate := int(math.Floor(100 * float64(ok) / float64(attempts)))
	b.contains("#success-chart .chart-summary", fmt.Sprintf("Last 24 hours: %d attempts, %d succeeded (%d%%).", attempts, ok, rate))
	b.contains("#latency-chart .chart-summary", fmt.Sprintf("Last %d attempts: median", attempts))
	if n := b.count("#success-chart rect.bar"); n != 24 {
		t.Errorf("success chart has %d bars; want one per hour", n)
	}
	// All attempts were made in the last minutes: one hour's bar, or two
	// when the test crossed the hour, partly failed; the others are empty.
	if n := b.count("#success-chart rect.bar:not(.none)"); n < 1 || n > 2 || b.count("#success-chart rect.bar.bad, #success-chart rect.bar.warn") < 1 {
		t.Errorf("success chart: %d hours with attempts; want the last one or two, partly failed", n)
	}
	if n := b.count("#latency-chart rect.bar"); n != attempts {
		t.Errorf("latency chart has %d bars; want one per attempt (%d)", n, attempts)
	}
	if n := b.count("#latency-chart rect.bar.bad"); n != 3 {
		t.Errorf("latency chart shows %d failed attempts; want the 3 first attempts", n)
	}
	if n := b.count("section[aria-labelledby=logs-h] tr[data-log]"); n != 3 {
		t.Errorf("webhook page lists %d logs; want 3", n)
	}
	b.contains(".page-head", "Licence emails", "Healthy", "Enabled")
	b.screenshot("webhook")

	// The list, on a desktop and on a phone.
	b.click("nav.side a[href='/webhooks']")
	b.contains(fmt.Sprintf("tr[data-webhook='%s']", suspended.ID), "Inventory sync", "Suspended")
	b.contains("tbody", "Slack alerts", "Unhealthy")
	b.screenshot("webhooks")
	b.size(true)
	b.open("/webhooks")
	if w := run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("the list is %dpx wide on a 390px phone; want no sideways scrolling", w)
	}
	b.screenshot("webhooks-phone")
	b.open("/webhook-event-logs/" + target.ID)
	if w := run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("the log page is %dpx wide on a 390px phone", w)
	}
	b.screenshot("webhook-event-log-phone")
	b.open("/webhooks/" + hookID)
	if w := run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
		t.Errorf("the webhook page is %dpx wide on a 390px phone", w)
	}
	b.screenshot("webhook-phone")
	b.size(false)

	// Sign out: the session is over.
	b.click("form[action='/signout'] button")
	b.contains(".notice.ok", "You have signed out.")
	b.open("/webhook-event-logs/" + target.ID)
	if p := b.path(); !strings.HasPrefix(p, "/signin") {
		t.Errorf("after sign-out a log page shows at %s", p)
	}
}

// verifying answers code and body to a correctly signed request, and 401 to
// any other, as a careful receiver would.
func verifying(token string, code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if webhook.Verify(token, raw, r.Header.Get("webhook-signature")) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// failFirst answers 503 to the first attempt of each event, then next.
func failFirst(next http.HandlerFunc) http.HandlerFunc {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := !seen[r.Header.Get("webhook-id")]
		seen[r.Header.Get("webhook-id")] = true
		mu.Unlock()
		if first {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		next(w, r)
	}
}
