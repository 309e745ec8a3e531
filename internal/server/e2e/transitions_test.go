package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// A log waiting for a retry is cancelled when its webhook is disabled before
// its turn, with no request made; while it waited the webhook stayed Healthy.
// The retry falls due when the test moves herald's clock past the retry
// interval (an hour), after the disable, so no busy machine can send it
// first. The test still counts what the log records rather than assuming
// the order: every request the receiver got is an attempt on the log, the
// log ends cancelled for the disable well before its attempts run out, and
// nothing is sent once it is cancelled, however far the clock moves.
func TestRetryOfADisabledWebhookIsCancelled(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, db string) {
		const interval = time.Hour
		clock := heraldtest.NewClock()
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Now: clock.Now,
			Delivery: delivery.Config{RetryInterval: interval, MaxAttempts: 5, PollInterval: 50 * time.Millisecond}})
		rcv := heraldtest.NewReceiver(t)
		rcv.Status(500, "")
		hook := h.CreateWebhook("w", rcv.URL, "license.created")
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 30*time.Second, "the first attempt to fail", func() bool {
			logs := h.Logs("webhookId=" + hook.ID)
			return len(logs) == 1 && logs[0].Status == "retrying"
		})
		if got := h.Webhook(hook.ID).Status; got != "Healthy" {
			t.Errorf("webhook %s while its event is retrying; want Healthy", got)
		}
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false}, nil)
		clock.Advance(interval) // the retry falls due
		var l heraldtest.Log
		heraldtest.Eventually(t, 30*time.Second, "the retry to be cancelled", func() bool {
			l = h.Log(h.Logs("webhookId=" + hook.ID)[0].ID)
			return l.Status == "cancelled"
		})
		if l.RetryReason == nil || !strings.Contains(*l.RetryReason, "disabled") {
			t.Errorf("cancelled with reason %v; want one naming the disable", l.RetryReason)
		}
		switch n := rcv.Count(); {
		case n != len(l.Attempts):
			t.Errorf("%d requests, %d attempts recorded; want a request only for each attempt the log records", n, len(l.Attempts))
		case n > 2:
			t.Errorf("%d requests; want the first attempt, and at most one retry that came due before the disable", n)
		case n == 2:
			t.Logf("the retry came due before the webhook was disabled and was attempted; the next was cancelled")
		}
		// Past another retry interval, and two claims later: nothing more
		// goes out.
		claims := metric(t, h, "herald_delivery_claim_queries_total")
		clock.Advance(interval)
		heraldtest.Eventually(t, 5*time.Second, "two more claims", func() bool {
			return metric(t, h, "herald_delivery_claim_queries_total") >= claims+2
		})
		if n := rcv.Count(); n != len(l.Attempts) {
			t.Errorf("%d requests after the log was cancelled with %d attempts", n, len(l.Attempts))
		}
		if got := h.Webhook(hook.ID).Status; got != "Healthy" {
			t.Errorf("a cancelled log changed health to %s", got)
		}
	})
}

// An automatic 2xx makes an Unhealthy webhook Healthy at once.
func TestAutomaticSuccessRestoresHealthy(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, db string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{MaxAttempts: 1}})
		rcv := heraldtest.NewReceiver(t)
		rcv.Status(500, "")
		hook := h.CreateWebhook("w", rcv.URL, "license.created")
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "Unhealthy", func() bool { return h.Webhook(hook.ID).Status == "Unhealthy" })
		rcv.Status(204, "")
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "Healthy again", func() bool { return h.Webhook(hook.ID).Status == "Healthy" })
	})
}
