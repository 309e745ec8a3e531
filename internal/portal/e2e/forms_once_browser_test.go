package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/delivery"
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

// doubleClick is a person's double click on the element css selects: two
// clicks in quick succession, the second with a click count of 2, as
// Chromium gets them from a mouse. (chromedp's DoubleClick sends only the
// second, which a page sees as one click.)
func doubleClick(css string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		xy, err := chromedp.Evaluate[[]float64](`(() => { const e = document.querySelector(`+jsString(css)+`);
			e.scrollIntoView({block: "center"}); const r = e.getBoundingClientRect();
			return [r.left + r.width / 2, r.top + r.height / 2] })()`)(ctx, t)
		if err != nil {
			return fmt.Errorf("find %s: %w", css, err)
		}
		if _, err := chromedp.MouseClickXY(xy[0], xy[1])(ctx, t); err != nil {
			return err
		}
		_, err = chromedp.MouseClickXY(xy[0], xy[1], chromedp.ClickCount(2))(ctx, t)
		return err
	})
}

// expect arranges, before a form is sent, to hear when the page shows what
// js tests for, and returns the wait for it. The page tells (a binding it
// calls from a MutationObserver) rather than being asked: while a
// navigation is under way Chromium keeps the commands sent to the page
// until the next page is there, so a page whose form is in flight cannot be
// read, only heard from. The answer to the form must be held (by the
// receiver it reaches, or by holdPosts) for the page to stay that long.
func (b *tab) expect(what, js string) (wait func()) {
	b.t.Helper()
	if b.saw == nil {
		b.saw = make(chan string, 16)
		b.do(chromedp.Func(func(_ context.Context, t *chromedp.Target) error {
			called := cdp.Events(b.ctx, t, runtime.BindingCalled)
			go func() {
				for ev, err := range called {
					if err != nil {
						return
					}
					if ev.Name != "heraldTestSaw" {
						continue
					}
					select {
					case b.saw <- ev.Payload:
					case <-b.ctx.Done():
						return
					}
				}
			}()
			_, err := cdp.Call(b.ctx, t, runtime.AddBinding, runtime.AddBindingParams{Name: "heraldTestSaw"})
			return err
		}))
	}
	run(b, chromedp.Evaluate[bool](`(() => { const seen = () => (`+js+`);
		const tell = () => { if (seen()) { obs.disconnect(); heraldTestSaw(`+jsString(what)+`); } };
		const obs = new MutationObserver(tell);
		obs.observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
		tell(); return true })()`))
	return func() {
		b.t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case got := <-b.saw:
				if got == what {
					return
				}
			case <-deadline:
				b.t.Fatalf("the page did not show %s within 60s", what)
			}
		}
	}
}

// heldPosts are the form posts whose answers the browser holds back.
type heldPosts struct {
	b       *tab
	arrived chan struct{} // closed when the first post's answer is held
	mu      sync.Mutex
	ids     []fetch.RequestID
}

// holdPosts makes the browser hold the answer to every POST to path (the
// Fetch domain pauses it at its response) until release: the herald has
// acted on the post, but the page that sent it stays until the test lets
// the answer through, so what it shows meanwhile can be read without
// racing the navigation.
func (b *tab) holdPosts(path string) *heldPosts {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	hp := &heldPosts{b: b, arrived: make(chan struct{})}
	b.t.Cleanup(cancel)
	b.do(chromedp.Func(func(_ context.Context, t *chromedp.Target) error {
		// Subscribed before the domain is enabled, and read to the
		// test's end, so that another request to path (a GET) is let
		// through whenever it is paused.
		paused := cdp.Events(ctx, t, fetch.RequestPaused)
		go func() {
			for ev, err := range paused {
				if err != nil {
					return
				}
				if ev.Request.Method != http.MethodPost {
					cdp.Call(ctx, t, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: ev.RequestID})
					continue
				}
				hp.mu.Lock()
				if hp.ids = append(hp.ids, ev.RequestID); len(hp.ids) == 1 {
					close(hp.arrived)
				}
				hp.mu.Unlock()
			}
		}()
		_, err := cdp.Call(ctx, t, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: b.base + path, RequestStage: fetch.RequestStageResponse}}})
		return err
	}))
	return hp
}

// wait returns once the browser holds the answer to a post.
func (hp *heldPosts) wait(what string) {
	hp.b.t.Helper()
	select {
	case <-hp.arrived:
	case <-time.After(60 * time.Second):
		hp.b.t.Fatalf("%s: the browser sent no post within 60s", what)
	}
}

// release is the step that lets the held answers through and stops
// holding; run it with follow to wait for the page they lead to.
func (hp *heldPosts) release() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		hp.mu.Lock()
		ids := hp.ids
		hp.mu.Unlock()
		for _, id := range ids {
			// A post the browser dropped for a later one has no answer
			// left to continue, so its error is not the test's.
			cdp.Call(ctx, t, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: id})
		}
		_, err := cdp.Call(ctx, t, fetch.Disable, cdp.Empty{})
		return err
	})
}

// posts is how many posts the browser sent while holding.
func (hp *heldPosts) posts() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return len(hp.ids)
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
//
// Each double click's answer is held (by the browser for Add webhook, by
// the receiver for Test and Resend) until the page that sent it has been
// read, and the test lets it go itself: no read of a page can race the
// navigation that replaces it, and the second click always lands on the
// page that sent the first.
func TestBrowserDoubleSubmitsActOnce(t *testing.T) {
	t.Parallel()
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			// A Test or Resend held at the receiver ends only when the
			// test lets it go, never by the attempt's time-out, however
			// slow the machine.
			h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{AttemptTimeout: 10 * time.Minute}})
			rcv := heraldtest.NewReceiver(t)
			b := signInTabAt(t, h, s.w, s.h)

			b.open("/webhooks/new")
			b.do(chromedp.SendKeys(chromedp.CSS("#name"), "Billing"))
			b.set("#url", rcv.URL)
			b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")))
			add := b.holdPosts("/webhooks/new")
			adding := b.expect("Add webhook's progress", `(() => { const b = document.querySelector("form[action='/webhooks/new'] button[type=submit]");
				return b.disabled && b.textContent === "Adding…" })()`)
			b.do(doubleClick("form[action='/webhooks/new'] button[type=submit]"))
			add.wait("Add webhook")
			adding()
			b.follow(add.release())
			b.contains(".notice.ok", "Webhook added.")
			if n := add.posts(); n != 1 {
				t.Errorf("a double click on Add webhook sent %d posts; want 1", n)
			}
			if n := webhookCount(h); n != 1 {
				t.Fatalf("a double click on Add webhook made %d webhooks; want 1", n)
			}
			id := strings.TrimPrefix(b.path(), "/webhooks/")

			// A slow receiver: the button says what is happening meanwhile.
			b.open("/webhooks/" + id + "/test")
			test := rcv.Hold(t)
			sending := b.expect("the Test's progress", `(() => { const b = document.querySelector("form[action$='/test'] button[type=submit]");
				const s = document.querySelector("[data-progress-status]");
				return b.disabled && b.textContent === "Sending…" && !s.hidden })()`)
			b.do(doubleClick("form[action$='/test'] button[type=submit]"))
			test.Wait(t, 60*time.Second, "the Test")
			sending()
			b.follow(chromedp.Func(func(context.Context, *chromedp.Target) error { test.Release(); return nil }))
			b.contains("#test-result", "Delivered.")
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
			resend := rcv.Hold(t)
			resending := b.expect("the Resend's progress", `(() => { const b = document.querySelector(".page-head form[action$='/resend'] button[type=submit]");
				return b.disabled && b.textContent === "Resending…" })()`)
			b.do(doubleClick(".page-head form[action$='/resend'] button[type=submit]"))
			resend.Wait(t, 60*time.Second, "the Resend")
			resending()
			b.follow(chromedp.Func(func(context.Context, *chromedp.Target) error { resend.Release(); return nil }))
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
