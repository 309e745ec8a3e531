package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestBrowserSuspendedWebhookExplainsItselfAndResendsWhatWasMissed: an
// Unhealthy, then Suspended, webhook's page says what the state means,
// what happens to new events and what to do; its one button resends the
// missed events, the page shows the progress, and the webhook is Healthy.
func TestBrowserSuspendedWebhookExplainsItselfAndResendsWhatWasMissed(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 2}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusServiceUnavailable, "down")
	hook := h.CreateWebhook("Billing", rcv.URL, "license.created")
	// The account's watcher hears that the recovery made it Healthy.
	watchRcv := heraldtest.NewReceiver(t)
	h.CreateWebhook("Watcher", watchRcv.URL, "webhook.recovered")
	b := signInTab(t, h)
	page := "/webhooks/" + hook.ID
	settled := func(status string, logs int) {
		t.Helper()
		heraldtest.Eventually(t, 30*time.Second, "the webhook "+status, func() bool {
			if h.Webhook(hook.ID).Status != status {
				return false
			}
			all := h.Logs("webhookId=" + hook.ID)
			for _, l := range all {
				if l.Status != "failed" && l.Status != "cancelled" {
					return false
				}
			}
			return len(all) == logs
		})
	}

	h.CreateLicense(nil)
	settled("Unhealthy", 1)
	b.open(page)
	b.contains("#state-help", "Unhealthy: deliveries are failing", "New events are still sent and retried",
		"if the 2 most recent completed events all fail", "Test")
	b.contains("#recover-button", "Resend 1 missed event")

	h.CreateLicense(nil)
	settled("Suspended", 2)
	h.CreateLicense(nil) // logged, not sent, while suspended
	settled("Suspended", 3)
	b.open(page)
	b.contains("#state-help", "Suspended: nothing is being sent", "New events are still logged, as cancelled",
		"A successful Test does not lift the suspension", "Fix the endpoint")
	b.contains("#recover-button", "Resend 3 missed events")
	b.screenshot("webhook-suspended")

	before := rcv.Count()
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	if code := b.click("#recover-button"); code != http.StatusOK {
		t.Fatalf("after the button: %d", code)
	}
	if p := b.path(); p != page {
		t.Errorf("after the button the page is %s; want the webhook's page (post/redirect/get)", p)
	}
	b.contains("main", "Resending the missed events, each once")
	b.contains("#recovery-progress", "of 3")
	// The page follows the progress in place, without reloading.
	heraldtest.Eventually(t, 30*time.Second, "the progress to read done", func() bool {
		return strings.Contains(b.text("#recovery-status"), "Done: 3 of 3 delivered, 0 failed") && b.count("#state-help") == 0
	})
	b.contains(".badges", "Healthy")
	b.open(page)
	if strings.Contains(b.text("main"), "Resending the missed events, each once") {
		t.Errorf("the confirmation is shown again on a refresh")
	}
	b.contains("#recovery-status", "Done: 3 of 3 delivered, 0 failed")
	b.contains(".badges", "Healthy")
	if n := b.count("#state-help"); n != 0 {
		t.Errorf("a Healthy webhook's page still explains a bad state")
	}
	heraldtest.Eventually(t, 30*time.Second, "the watcher's webhook.recovered", func() bool { return watchRcv.Count() >= 1 })
	if p, err := webhook.Parse(watchRcv.Requests()[0].Body); err != nil || p.Event != "webhook.recovered" {
		t.Errorf("the watcher heard %+v, %v; want webhook.recovered", p, err)
	}
	b.screenshot("webhook-recovered")
	ids := map[string]int{}
	for _, r := range rcv.Requests()[before:] {
		p, err := webhook.Parse(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		ids[p.ID]++
	}
	if len(ids) != 3 {
		t.Errorf("%d distinct events resent; want 3", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("event %s resent %d times", id, n)
		}
	}
}
