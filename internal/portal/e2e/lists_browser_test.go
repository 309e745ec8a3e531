package e2e_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestBrowserListFilters: searching and filtering webhooks from the
// keyboard, then a webhook's logs from its page: the chosen webhook stays a
// filter through a status change and paging until its chip is removed.
func TestBrowserListFilters(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	s := newSeed(t, h)
	crm := s.webhook("CRM bridge", "https://crm.example.com/in", event.LicenseCreated)
	for i := range 60 {
		s.webhook(fmt.Sprintf("Hook %02d", i), fmt.Sprintf("https://example.com/h/%02d", i), event.LicenseDeleted)
	}
	s.fire(event.LicenseCreated, 30)
	b := signInTab(t, h)

	b.contains("p.count", "61 webhooks")
	if n := b.count("tr[data-webhook]"); n != 50 {
		t.Errorf("first page shows %d webhooks; want 50", n)
	}
	// Typed, then Enter: the search is a plain GET form.
	b.follow(chromedp.SendKeys(chromedp.CSS("#f-q"), "CRM\r"))
	b.contains("p.count", "1 of 61 webhooks matches")
	if n := b.count("tr[data-webhook]"); n != 1 {
		t.Errorf("search shows %d webhooks; want 1", n)
	}
	b.screenshot("webhooks-search")
	b.set("#f-status", "Suspended")
	b.click("form[role=search] button[type=submit]")
	b.contains("p.count", "0 of 61 webhooks match")
	if v := b.value("#f-q"); v != "CRM" {
		t.Errorf("search field holds %q after a status change; want CRM", v)
	}
	b.contains(".empty", "No webhooks match these filters.")

	// The webhook's logs, from its page.
	b.open("/webhooks/" + crm.ID)
	b.click("a[href='/webhook-event-logs?webhook=" + crm.ID + "']")
	b.contains(".filter-chip", "Webhook: CRM bridge")
	b.contains("p.count", "30 event logs match")
	b.set("#f-status", "cancelled")
	b.follow(chromedp.SendKeys(chromedp.CSS("#f-event-id"), "\r"))
	b.contains(".filter-chip", "Webhook: CRM bridge")
	b.contains("p.count", "30 event logs match")
	if v := b.value("#f-status"); v != "cancelled" {
		t.Errorf("status filter shows %q; want cancelled", v)
	}
	b.click("a[rel=next]")
	b.contains(".filter-chip", "Webhook: CRM bridge")
	if n := b.count("tr[data-log]"); n != 5 {
		t.Errorf("older page shows %d logs; want 5", n)
	}
	b.screenshot("webhook-event-logs-filters")
	b.click(".filter-chip a")
	if n := b.count(".filter-chip"); n != 0 {
		t.Errorf("the webhook filter is still shown after its removal")
	}
	if v := b.value("#f-status"); v != "cancelled" {
		t.Errorf("removing the webhook dropped the status (%q)", v)
	}
	// Each field has a label.
	if n := b.count("form[role=search] input:not([type=hidden]), form[role=search] select"); n != b.count("form[role=search] label[for]") {
		t.Errorf("%d filter fields, %d labels", n, b.count("form[role=search] label[for]"))
	}
}
