package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestBrowserLongValuesKeepPagesInTheirViewport: a name of 175 characters
// without a space and a URL of 1,500 characters wrap or are shortened, with
// the whole value at hand (a title, and the webhook's own page): no page is
// wider than its viewport, and no list row grows taller than a few lines,
// on a desktop or on a phone.
func TestBrowserLongValuesKeepPagesInTheirViewport(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	name := strings.Repeat("Name", 43) + "End" // 175 characters, no space
	url := rcv.URL + "/" + strings.Repeat("segment", 210)
	hook := h.CreateWebhook(name, url, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the event delivered", func() bool {
		l := h.Logs("")
		return len(l) == 1 && l[0].Status == "succeeded"
	})
	logID := h.Logs("")[0].ID
	b := signInTab(t, h)

	pages := []string{"/webhooks", "/webhooks/" + hook.ID, "/webhooks/" + hook.ID + "/edit", "/webhooks/" + hook.ID + "/test",
		"/webhooks/" + hook.ID + "/delete", "/webhook-event-logs", "/webhook-event-logs?webhook=" + hook.ID,
		"/webhook-event-logs/" + logID, "/account", "/account/api-tokens"}
	for _, phone := range []bool{false, true} {
		b.size(phone)
		for _, p := range pages {
			b.open(p)
			where := fmt.Sprintf("%s (phone %v)", p, phone)
			width := run(b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
			view := run(b, chromedp.Evaluate[int](`window.innerWidth`))
			if width > view {
				t.Errorf("%s is %d px wide in a %d px viewport", where, width, view)
			}
			// A list row, or a phone's card, stays a few lines tall.
			most := 180
			if phone {
				most = 520
			}
			if tallest := run(b, chromedp.Evaluate[int](`Math.ceil(Math.max(0, ...[...document.querySelectorAll("table.list tbody tr")].map(r => r.getBoundingClientRect().height)))`)); tallest > most {
				t.Errorf("%s has a list row %d px tall; want at most %d", where, tallest, most)
			}
			if p == "/webhooks" && phone {
				b.screenshot("long-values-phone")
			} else if p == "/webhooks" {
				b.screenshot("long-values")
			}
		}
	}
	// The log page with every detail open (payload, response, headers) stays
	// within its viewport too.
	for _, phone := range []bool{false, true} {
		b.size(phone)
		b.open("/webhook-event-logs/" + logID)
		width := run(b, chromedp.Evaluate[int](`document.querySelectorAll("details:not(.menu)").forEach(d => d.open = true), document.documentElement.scrollWidth`))
		if view := run(b, chromedp.Evaluate[int](`window.innerWidth`)); width > view {
			t.Errorf("the log page with its details open is %d px wide in a %d px viewport (phone %v)", width, view, phone)
		}
		if phone {
			b.screenshot("log-details-open-phone")
		} else {
			b.screenshot("log-details-open")
		}
	}
	b.size(false)

	// The whole values stay at hand: on the list as titles, in full on the webhook's page.
	b.open("/webhooks")
	if got := run(b, chromedp.Evaluate[string](`document.querySelector("tr[data-webhook] td.url code").title`)); got != url {
		t.Errorf("the list's URL title is %q; want the whole URL", got)
	}
	if got := run(b, chromedp.Evaluate[string](`document.querySelector("tr[data-webhook] th a").title`)); got != name {
		t.Errorf("the list's name title is %q; want the whole name", got)
	}
	b.open("/webhooks/" + hook.ID)
	if got := b.text("h1"); got != name {
		t.Errorf("the webhook page's heading is %q; want the whole name", got)
	}
	b.contains(".facts", url)
}

// TestBrowserTimesReadInTheViewersZone: times read in the viewer's own zone,
// with UTC on hover; without JavaScript they read in UTC.
func TestBrowserTimesReadInTheViewersZone(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	h.CreateWebhook("CRM", rcv.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the event delivered", func() bool {
		l := h.Logs("")
		return len(l) == 1 && l[0].Status == "succeeded"
	})
	logID := h.Logs("")[0].ID
	b := signInTab(t, h)
	b.do(chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	}))
	for _, p := range []string{"/webhook-event-logs", "/webhook-event-logs/" + logID} {
		b.open(p)
		type stamp struct{ Datetime, Text, Title string }
		stamps := run(b, chromedp.Evaluate[[]stamp](`[...document.querySelectorAll("time[datetime]")].map(e => ({datetime: e.getAttribute("datetime"), text: e.textContent, title: e.title}))`))
		if len(stamps) == 0 {
			t.Fatalf("%s shows no times", p)
		}
		for _, s := range stamps {
			at, err := time.Parse(time.RFC3339Nano, s.Datetime)
			if err != nil {
				t.Fatalf("%s: datetime %q: %v", p, s.Datetime, err)
			}
			tokyo := at.In(time.FixedZone("JST", 9*3600))
			if want := tokyo.Format("2006-01-02 15:04:05") + " GMT+9"; s.Text != want {
				t.Errorf("%s: a time reads %q; want %q, the viewer's", p, s.Text, want)
			}
			if want := at.UTC().Format("2006-01-02 15:04:05 UTC"); s.Title != want {
				t.Errorf("%s: a time's title is %q; want %q", p, s.Title, want)
			}
		}
	}
}
