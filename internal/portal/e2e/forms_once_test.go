package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// formFields reads the hidden fields of the form posting to action on a
// page: its CSRF token, its one-time form token and its page.
func formFields(t *testing.T, body, action string) url.Values {
	t.Helper()
	re := regexp.MustCompile(`action="` + regexp.QuoteMeta(action) + `"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)"><input type="hidden" name="form" value="([^"]+)"><input type="hidden" name="page" value="([^"]*)">`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no form posting to %s on the page", action)
	}
	page, _ := url.QueryUnescape(strings.ReplaceAll(m[3], "&amp;", "&"))
	return url.Values{"csrf": {m[1]}, "form": {m[2]}, "page": {page}}
}

// with returns the form's hidden fields and more.
func with(hidden url.Values, more url.Values) url.Values {
	out := url.Values{}
	for k, v := range hidden {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// postAll posts one form n times at once, each to the next of bases (the
// same session on each: heralds on one database share sessions), and
// returns where each answer sent the browser.
func postAll(t *testing.T, b *browser, bases []string, path string, form url.Values, n int) []string {
	t.Helper()
	locs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", bases[i%len(bases)]+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := b.c.Do(req)
			if err != nil {
				t.Errorf("post %d: %v", i, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("post %d: %d; want 303", i, resp.StatusCode)
			}
			locs[i] = resp.Header.Get("Location")
		}()
	}
	wg.Wait()
	return locs
}

func allSame(locs []string) bool {
	for _, l := range locs {
		if l != locs[0] {
			return false
		}
	}
	return true
}

// TestAFormIsActedOnOnce: one form posted four times at once (on
// PostgreSQL, to two heralds sharing the database) creates one webhook,
// sends one Test and makes one resend, and every post lands where the first
// did; a later post of it says it was already sent; a form refused for its
// values can be corrected and sent again.
func TestAFormIsActedOnOnce(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		key := make([]byte, 32)
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL, Key: key})
		bases := []string{h.URL}
		if strings.HasPrefix(dbURL, "postgres") {
			bases = append(bases, heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL, Key: key}).URL)
		}
		rcv := heraldtest.NewReceiver(t)
		b := mustSignIn(t, h)

		// Add webhook.
		_, _, page := b.get("/webhooks/new")
		form := with(formFields(t, page, "/webhooks/new"), url.Values{"name": {"Billing"}, "url": {rcv.URL}, "events": {"license.created"}, "enabled": {"on"}})
		locs := postAll(t, b, bases, "/webhooks/new", form, 4)
		if !allSame(locs) || !strings.HasPrefix(locs[0], "/webhooks/") {
			t.Fatalf("the posts landed at %v; want one webhook's page for all", locs)
		}
		var list struct{ Data []struct{ ID string } }
		h.Must(200, "GET", "/v3/webhooks", nil, &list)
		if len(list.Data) != 1 || locs[0] != "/webhooks/"+list.Data[0].ID {
			t.Fatalf("%d webhooks after four posts of one form; want 1, at %s", len(list.Data), locs[0])
		}
		id := list.Data[0].ID
		if _, _, body := b.get(locs[0]); !strings.Contains(body, "Webhook added.") {
			t.Errorf("the webhook's page does not confirm it was added")
		}
		// Sent again later (Back, then the button): nothing new, and it says so.
		code, loc, body := b.submit("/webhooks/new", form)
		if code != http.StatusOK || loc != locs[0] || !strings.Contains(body, "already been sent") {
			t.Errorf("a later post: %d at %q; want the webhook's page saying the form was already sent", code, loc)
		}
		h.Must(200, "GET", "/v3/webhooks", nil, &list)
		if len(list.Data) != 1 {
			t.Errorf("%d webhooks after a later post; want 1", len(list.Data))
		}

		// A refused form frees its token: corrected, the same form is sent.
		_, _, page = b.get("/webhooks/new")
		hidden := formFields(t, page, "/webhooks/new")
		if code, loc, body := b.submit("/webhooks/new", with(hidden, url.Values{"name": {"Other"}, "url": {"ftp://x"}})); code != http.StatusUnprocessableEntity || loc != "/webhooks/new" || !strings.Contains(body, `id="url-error"`) {
			t.Errorf("an invalid form: %d at %q; want 422 on the form page with the error", code, loc)
		}
		if _, loc, _ := b.post("/webhooks/new", with(hidden, url.Values{"name": {"Other"}, "url": {rcv.URL + "/other"}, "events": {"license.renewed"}})); !strings.HasPrefix(loc, "/webhooks/") || loc == locs[0] {
			t.Errorf("the corrected form landed at %q; want the new webhook's page", loc)
		}

		// Send test: one request reaches the receiver.
		_, _, page = b.get("/webhooks/" + id + "/test")
		form = with(formFields(t, page, "/webhooks/"+id+"/test"), url.Values{"event": {"license.created"}})
		locs = postAll(t, b, bases, "/webhooks/"+id+"/test", form, 4)
		if !allSame(locs) || locs[0] != "/webhooks/"+id+"/test" {
			t.Errorf("the Test posts landed at %v", locs)
		}
		if n := rcv.Count(); n != 1 {
			t.Errorf("the receiver got %d requests from four posts of one Test form; want 1", n)
		}

		// Resend: one new attempt.
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10e9, "the event delivered", func() bool {
			logs := h.Logs("webhookId=" + id)
			return len(logs) == 1 && logs[0].Status == "succeeded"
		})
		logID := h.Logs("webhookId=" + id)[0].ID
		_, _, page = b.get("/webhook-event-logs/" + logID)
		form = formFields(t, page, "/webhook-event-logs/"+logID+"/resend")
		locs = postAll(t, b, bases, "/webhook-event-logs/"+logID+"/resend", form, 4)
		if !allSame(locs) || locs[0] != "/webhook-event-logs/"+logID {
			t.Errorf("the Resend posts landed at %v", locs)
		}
		if n := len(h.Log(logID).Attempts); n != 2 {
			t.Errorf("%d attempts after four posts of one Resend form; want 2", n)
		}
		if n := rcv.Count(); n != 3 {
			t.Errorf("the receiver got %d requests; want 3 (test, delivery, one resend)", n)
		}
	})
}

// TestResultsAndConfirmationsAreShownOnce: a confirmation, a Test result,
// a revealed token and a resend's outcome are on the page a form leads to,
// at an address without them, and a refresh shows the page without them
// and sends nothing.
func TestResultsAndConfirmationsAreShownOnce(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("CRM", rcv.URL, "license.created")
	b := mustSignIn(t, h)
	var tok struct{ Token string }
	h.Must(200, "GET", "/v3/webhooks/"+hook.ID+"/token", nil, &tok)

	steps := []struct {
		name, page, action string
		form               url.Values
		at, shows          string
	}{
		{"save", "/webhooks/" + hook.ID + "/edit", "/webhooks/" + hook.ID + "/edit",
			url.Values{"name": {"CRM 2"}, "url": {rcv.URL}, "events": {"license.created"}, "enabled": {"on"}}, "/webhooks/" + hook.ID, "Webhook saved."},
		{"test", "/webhooks/" + hook.ID + "/test", "/webhooks/" + hook.ID + "/test",
			url.Values{"event": {"license.created"}}, "/webhooks/" + hook.ID + "/test", `id="test-result"`},
		{"reveal", "/webhooks/" + hook.ID, "/webhooks/" + hook.ID + "/token", url.Values{}, "/webhooks/" + hook.ID, tok.Token},
		{"disable", "/webhooks", "/webhooks/" + hook.ID + "/enabled", url.Values{"enabled": {"false"}, "next": {"/webhooks?q=CRM"}}, "/webhooks?q=CRM", "Webhook disabled."},
		{"settings", "/account", "/account", url.Values{"name": {"Acme"}, "notificationEmail": {"ops@example.com"}}, "/account", "Settings saved."},
	}
	for _, s := range steps {
		_, _, page := b.get(s.page)
		code, loc, body := b.submit(s.action, with(formFields(t, page, s.action), s.form))
		// Read as the browser shows it: html/template writes a token's + as &#43;.
		if code != http.StatusOK || loc != s.at || !strings.Contains(html.UnescapeString(body), s.shows) {
			t.Errorf("%s: %d at %q; want 200 at %s showing %q", s.name, code, loc, s.at, s.shows)
		}
		sent := rcv.Count()
		if _, _, body := b.get(loc); strings.Contains(body, s.shows) {
			t.Errorf("%s: a refresh of %s shows %q again", s.name, loc, s.shows)
		}
		if n := rcv.Count(); n != sent {
			t.Errorf("%s: a refresh sent %d requests", s.name, n-sent)
		}
	}
	if n := rcv.Count(); n != 1 {
		t.Errorf("the receiver got %d requests; want the one Test", n)
	}

	// A refused resend (the webhook is disabled) shows why on the log's
	// page, answering 409 there, not at /resend.
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": true}, nil)
	h.CreateLicense(nil)
	// Delivered and recorded: a log still pending would be refused for its
	// attempt in flight, not for the webhook being disabled.
	heraldtest.Eventually(t, 30e9, "the event delivered and recorded", func() bool {
		return rcv.Count() == 2 && len(h.Logs("status=succeeded")) == 1
	})
	logID := h.Logs("")[0].ID
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false}, nil)
	_, _, page := b.get("/webhook-event-logs/" + logID)
	code, loc, body := b.submit("/webhook-event-logs/"+logID+"/resend", formFields(t, page, "/webhook-event-logs/"+logID+"/resend"))
	if code != http.StatusConflict || loc != "/webhook-event-logs/"+logID || !strings.Contains(body, "The webhook is disabled") {
		t.Errorf("a refused resend: %d at %q; want 409 on the log's page saying why\n%s", code, loc, body)
	}
	if code, _, body := b.get(loc); code != http.StatusOK || strings.Contains(body, "The webhook is disabled") {
		t.Errorf("a refresh after the refusal: %d, still refusing", code)
	}
}

// TestFormAfterTheSessionEnded: a form posted after its session ended goes
// to sign-in, which says so, and after sign-in back to the form with what
// was typed, except the token; nothing was saved meanwhile. The page it
// returns to is a local one only.
func TestFormAfterTheSessionEnded(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	_, _, page := b.get("/webhooks/new")
	hidden := formFields(t, page, "/webhooks/new")
	endSession(t, h, b)

	form := with(hidden, url.Values{"name": {"Billing é"}, "url": {"https://example.com/hooks"}, "events": {"license.renewed"},
		"token": {"whsec_typed_secret_value_0123456789"}, "enabled": {"on"}})
	code, loc, _ := b.post("/webhooks/new", form)
	if code != http.StatusSeeOther || loc != "/signin?next="+url.QueryEscape("/webhooks/new") {
		t.Fatalf("a form after the session ended: %d to %q; want sign-in, then back to the form", code, loc)
	}
	_, _, body := b.get(loc)
	if !strings.Contains(body, "Your session ended; sign in to continue.") || !strings.Contains(body, `name="next" value="/webhooks/new"`) {
		t.Errorf("the sign-in page does not say the session ended, or will not return to the form\n%s", body)
	}
	code, loc, _ = b.post("/signin", url.Values{"email": {h.Email}, "password": {h.Password}, "next": {"/webhooks/new"}})
	if code != http.StatusSeeOther || loc != "/webhooks/new" {
		t.Fatalf("sign in: %d to %q; want back to the form", code, loc)
	}
	_, _, body = b.get(loc)
	for _, want := range []string{"nothing was changed", `value="Billing é"`, `value="https://example.com/hooks"`, `value="license.renewed" checked`} {
		if !strings.Contains(body, want) {
			t.Errorf("the form after sign-in lacks %s", want)
		}
	}
	if strings.Contains(body, "whsec_typed_secret_value") {
		t.Errorf("the typed token was kept across sign-in")
	}
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("the form sent after the session ended created %d webhooks", len(list.Data))
	}
	if _, _, body := b.get("/webhooks/new"); strings.Contains(body, "Billing") {
		t.Errorf("a refresh shows the kept values again")
	}

	// A button with nothing typed (Disable) comes back to its page, which
	// says that nothing was done.
	hook := h.CreateWebhook("CRM", "https://example.com/crm", "license.created")
	_, _, page = b.get("/webhooks")
	hidden = formFields(t, page, "/webhooks/"+hook.ID+"/enabled")
	endSession(t, h, b)
	_, loc, _ = b.post("/webhooks/"+hook.ID+"/enabled", with(hidden, url.Values{"enabled": {"false"}, "next": {"/webhooks"}}))
	b.get(loc)
	b.post("/signin", url.Values{"email": {h.Email}, "password": {h.Password}, "next": {"/webhooks"}})
	if _, _, body := b.get("/webhooks"); loc != "/signin?next=%2Fwebhooks" || !strings.Contains(body, "nothing was done") || strings.Contains(body, "What you typed") {
		t.Errorf("Disable after the session ended led to %q, then a page without the right note", loc)
	}
	if !h.Webhook(hook.ID).Enabled {
		t.Errorf("Disable sent after the session ended was acted on")
	}

	// Another site's address in page is not followed.
	endSession(t, h, b)
	if _, loc, _ := b.post("/account", url.Values{"page": {"//evil.example/"}, "name": {"x"}}); loc != "/signin?next=%2Fwebhooks" {
		t.Errorf("page=//evil.example/ leads to %q; want sign-in, then /webhooks", loc)
	}
}

// endSession ends the browser's session on the server, as its expiry would.
func endSession(t *testing.T, h *heraldtest.Herald, b *browser) {
	t.Helper()
	u, _ := url.Parse(h.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "herald_session" {
			if err := h.Server.Store.DeleteSession(context.Background(), hashHex(c.Value)); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no session cookie")
}

// hashHex is how the store names a session: the SHA-256 of its id.
func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestResendMissedEventsIsActedOnOnceAndRefusedOnItsPage: the recovery
// button is a form like the others: a refusal (the webhook was disabled
// after the page was shown) is said on the webhook's page, answering 409
// there and not again on a refresh; a recovery started confirms once.
func TestResendMissedEventsIsActedOnOnceAndRefusedOnItsPage(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 5}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusServiceUnavailable, "down")
	hook := h.CreateWebhook("Billing", rcv.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 30e9, "the webhook Unhealthy", func() bool {
		return h.Webhook(hook.ID).Status == "Unhealthy" && len(h.Logs("status=failed")) == 1
	})
	b := mustSignIn(t, h)
	page := "/webhooks/" + hook.ID
	action := page + "/recover"

	_, _, body := b.get(page)
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false}, nil)
	code, loc, body := b.submit(action, formFields(t, body, action))
	if code != http.StatusConflict || loc != page || !strings.Contains(body, "The webhook is disabled") {
		t.Errorf("a refused recovery: %d at %q; want 409 on the webhook's page saying why", code, loc)
	}
	if code, _, body := b.get(page); code != http.StatusOK || strings.Contains(body, "The webhook is disabled") {
		t.Errorf("a refresh after the refusal: %d, still refusing", code)
	}

	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": true}, nil)
	rcv.Status(http.StatusNoContent, "")
	_, _, body = b.get(page)
	fields := formFields(t, body, action)
	code, loc, body = b.submit(action, fields)
	if code != http.StatusOK || loc != page || !strings.Contains(body, "Resending the missed events") {
		t.Errorf("a recovery: %d at %q; want 200 on the webhook's page confirming it", code, loc)
	}
	if _, _, body := b.get(page); strings.Contains(body, "Resending the missed events") {
		t.Errorf("a refresh shows the confirmation again")
	}
	// The same form sent again is not acted on again.
	if code, loc, _ := b.submit(action, fields); code != http.StatusOK || loc != page {
		t.Errorf("the form sent again: %d at %q", code, loc)
	}
	heraldtest.Eventually(t, 30e9, "the log resent once", func() bool { return rcv.Count() == 2 && h.Webhook(hook.ID).Status == "Healthy" })
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks/"+hook.ID+"/recoveries", nil, &list)
	if len(list.Data) != 1 {
		t.Errorf("%d recoveries; want 1", len(list.Data))
	}
}
