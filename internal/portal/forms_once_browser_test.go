package portal_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// screens are the sizes the form journeys run at: a laptop and a phone.
var screens = []struct {
	name string
	w, h int64
}{{"desktop", 1440, 900}, {"phone", 390, 844}}

// signInTabAt signs in and sets the tab to a screen's size.
func signInTabAt(t *testing.T, h *heraldtest.Herald, w, hh int64) *tab {
	t.Helper()
	b := signInTab(t, h)
	b.do(chromedp.EmulateViewport(w, hh))
	return b
}

// webhookCount is how many webhooks the account has.
func webhookCount(h *heraldtest.Herald) int {
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	return len(list.Data)
}

// until waits, generously, for a JavaScript condition on the page.
func (b *tab) until(what, js string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// progress waits until js is true on a page whose form was just sent.
// Chromium may hand the page over to the coming navigation before the
// answer arrives, after which the sending page can no longer be read
// ("Cannot find context with specified id"): what it showed until then
// cannot be checked, and the test goes on to the answer.
func (b *tab) progress(what, js string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](js))
	switch {
	case err == nil:
	case strings.Contains(err.Error(), "Cannot find context"):
		b.t.Logf("%s: the page was handed to the navigation before it could be read", what)
	default:
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// afterNavigation waits until js is true in the page a navigation already
// under way leads to. Evaluating while the old page is torn down can fail
// ("Cannot find context with specified id"), so each try is short and its
// error only means "not yet".
func (b *tab) afterNavigation(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// endSession ends the tab's session on the server, as its expiry would.
func (b *tab) endSession(h *heraldtest.Herald) {
	b.t.Helper()
	res := run(b, func(ctx context.Context, t *chromedp.Target) (*network.GetCookiesResult, error) {
		r, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base}})
		return &r, err
	})
	for _, c := range res.Cookies {
		if c.Name == "herald_session" {
			if err := h.Server.Store.DeleteSession(context.Background(), hashHex(c.Value)); err != nil {
				b.t.Fatal(err)
			}
			return
		}
	}
	b.t.Fatal("no session cookie in the browser")
}

// TestBrowserDoubleSubmitsActOnce: a double click on Add webhook adds one
// webhook; Send test shows its progress while a slow receiver answers and a
// double click sends one test; a double click on Resend makes one attempt.
func TestBrowserDoubleSubmitsActOnce(t *testing.T) {
	t.Parallel()
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			h := heraldtest.Start(t, heraldtest.Options{})
			rcv := heraldtest.NewReceiver(t)
			b := signInTabAt(t, h, s.w, s.h)

			b.open("/webhooks/new")
			b.do(chromedp.SendKeys(chromedp.CSS("#name"), "Billing"))
			b.set("#url", rcv.URL)
			b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")))
			b.follow(chromedp.DoubleClick(chromedp.CSS("form[action='/webhooks/new'] button[type=submit]")))
			b.do(chromedp.WaitVisible(chromedp.CSS(".notice.ok")))
			b.contains(".notice.ok", "Webhook added.")
			if n := webhookCount(h); n != 1 {
				t.Fatalf("a double click on Add webhook made %d webhooks; want 1", n)
			}
			id := strings.TrimPrefix(b.path(), "/webhooks/")

			// A slow receiver: the button says what is happening meanwhile.
			release := make(chan struct{})
			var releaseOnce sync.Once
			letGo := func() { releaseOnce.Do(func() { close(release) }) }
			// Cleanups run last first: this one, before the receiver's
			// Close, which would otherwise wait for a held request forever
			// when the test stops early.
			t.Cleanup(letGo)
			rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
				<-release
				w.WriteHeader(http.StatusNoContent)
			})
			b.open("/webhooks/" + id + "/test")
			b.do(chromedp.DoubleClick(chromedp.CSS("form[action$='/test'] button[type=submit]")))
			b.progress("the Test's progress", `(() => { const b = document.querySelector("form[action$='/test'] button[type=submit]");
				const s = document.querySelector("[data-progress-status]");
				return !!b && b.disabled && b.textContent === "Sending…" && !!s && !s.hidden })()`)
			b.screenshot("test-in-progress-" + s.name)
			// The page waits for the answer while the receiver holds it.
			heraldtest.Eventually(t, 30*time.Second, "the test at the receiver", func() bool { return rcv.Count() >= 1 })
			letGo()
			// Read in one evaluation that may be retried: the double click's
			// second post lands on the same page, which may replace it again.
			b.afterNavigation("the Test's result", `(() => { const r = document.querySelector("#test-result");
				return !!r && r.textContent.includes("Delivered.") })()`)
			if n := rcv.Count(); n != 1 {
				t.Errorf("a double click on Send test sent %d requests; want 1", n)
			}

			// Resend, double-clicked.
			h.CreateLicense(nil)
			heraldtest.Eventually(t, 30*time.Second, "the event delivered", func() bool {
				logs := h.Logs("webhookId=" + id)
				return len(logs) == 1 && logs[0].Status == "succeeded"
			})
			logID := h.Logs("webhookId=" + id)[0].ID
			b.open("/webhook-event-logs/" + logID)
			b.do(chromedp.Click(chromedp.CSS(".page-head details.menu summary")))
			b.follow(chromedp.DoubleClick(chromedp.CSS(".page-head form[action$='/resend'] button[type=submit]")))
			b.do(chromedp.WaitVisible(chromedp.CSS("#resend-outcome")))
			if n := len(h.Log(logID).Attempts); n != 2 {
				t.Errorf("a double click on Resend made %d attempts; want 2 (the delivery and one resend)", n)
			}
			if n := rcv.Count(); n != 3 {
				t.Errorf("the receiver got %d requests; want 3 (test, delivery, resend)", n)
			}
			b.screenshot("resent-once-" + s.name)
		})
	}
}

// TestBrowserBackAndRefreshDoNotResend: Back after a refused and then a
// successful create shows the form, not a resubmission; refreshing a Test
// result (with the signature check, two requests) sends nothing again.
func TestBrowserBackAndRefreshDoNotResend(t *testing.T) {
	t.Parallel()
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			h := heraldtest.Start(t, heraldtest.Options{})
			rcv := heraldtest.NewReceiver(t)
			b := signInTabAt(t, h, s.w, s.h)

			b.open("/webhooks/new")
			b.do(chromedp.SendKeys(chromedp.CSS("#name"), "Billing"))
			b.set("#url", "ftp://example.com/hooks")
			if code := b.click("form[action='/webhooks/new'] button[type=submit]"); code != http.StatusUnprocessableEntity {
				t.Errorf("invalid form: %d; want 422", code)
			}
			b.contains("#url-error", "URL must use http or https.")
			if p := b.path(); p != "/webhooks/new" {
				t.Errorf("the refused form is at %s; want /webhooks/new", p)
			}
			b.set("#url", rcv.URL)
			b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")))
			b.click("form[action='/webhooks/new'] button[type=submit]")
			b.contains(".notice.ok", "Webhook added.")
			id := strings.TrimPrefix(b.path(), "/webhooks/")

			if code := b.follow(chromedp.NavigateBack()); code != http.StatusOK {
				t.Errorf("Back after the create: %d; want the form page", code)
			}
			if p := b.path(); p != "/webhooks/new" || b.count("form[action='/webhooks/new']") != 1 {
				t.Errorf("Back shows %s; want the form", p)
			}
			if n := b.count(".notice.bad, .field-error"); n != 0 {
				t.Errorf("Back shows the old refusal again")
			}
			if n := webhookCount(h); n != 1 {
				t.Errorf("%d webhooks after Back; want 1", n)
			}

			b.open("/webhooks/" + id + "/test")
			b.do(chromedp.Click(chromedp.CSS("#checkVerification")))
			b.click("form[action$='/test'] button[type=submit]")
			b.do(chromedp.WaitVisible(chromedp.CSS("#test-result")))
			if n := rcv.Count(); n != 2 {
				t.Fatalf("the Test with the signature check sent %d requests; want 2", n)
			}
			if code := b.follow(chromedp.Reload()); code != http.StatusOK {
				t.Errorf("refresh after the Test: %d", code)
			}
			if n := b.count("#test-result"); n != 0 {
				t.Errorf("a refresh shows the old result as if new")
			}
			if n := rcv.Count(); n != 2 {
				t.Errorf("a refresh after the Test sent %d more requests; want none", n-2)
			}
		})
	}
}

// TestBrowserSessionEndedMidForm: a form sent after the session ended goes
// to sign-in, which says why; after sign-in the form is back with what was
// typed (the token excepted), and sends as usual.
func TestBrowserSessionEndedMidForm(t *testing.T) {
	t.Parallel()
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			h := heraldtest.Start(t, heraldtest.Options{})
			rcv := heraldtest.NewReceiver(t)
			b := signInTabAt(t, h, s.w, s.h)

			b.open("/webhooks/new")
			b.do(chromedp.SendKeys(chromedp.CSS("#name"), "Billing é"))
			b.set("#url", rcv.URL+"/hooks")
			b.set("#token", "whsec_typed_before_the_end_0123456789")
			b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.renewed']")))
			b.endSession(h)
			b.click("form[action='/webhooks/new'] button[type=submit]")
			if p := b.path(); p != "/signin?next=%2Fwebhooks%2Fnew" {
				t.Fatalf("after the session ended the form led to %s; want sign-in", p)
			}
			b.contains("main", "Your session ended; sign in to continue.")
			b.screenshot("session-ended-" + s.name)

			b.do(chromedp.SendKeys(chromedp.CSS("#email"), h.Email), chromedp.SendKeys(chromedp.CSS("#password"), h.Password))
			b.click("form[action='/signin'] button[type=submit]")
			if p := b.path(); p != "/webhooks/new" {
				t.Fatalf("signed in at %s; want back at the form", p)
			}
			b.contains("main", "nothing was changed")
			for sel, want := range map[string]string{"#name": "Billing é", "#url": rcv.URL + "/hooks"} {
				if got := b.value(sel); got != want {
					t.Errorf("%s holds %q after sign-in; want %q", sel, got, want)
				}
			}
			if ok := run(b, chromedp.Evaluate[bool](`document.querySelector("input[name=events][value='license.renewed']").checked`)); !ok {
				t.Errorf("the chosen event is not kept")
			}
			if tok := b.value("#token"); tok == "whsec_typed_before_the_end_0123456789" || !strings.HasPrefix(tok, "whsec_") {
				t.Errorf("token field %q; want a new one, not the one typed", tok)
			}
			if n := webhookCount(h); n != 0 {
				t.Fatalf("the form sent after the session ended made %d webhooks", n)
			}
			b.click("form[action='/webhooks/new'] button[type=submit]")
			b.contains(".notice.ok", "Webhook added.")
			if n := webhookCount(h); n != 1 {
				t.Errorf("%d webhooks; want 1", n)
			}
		})
	}
}
