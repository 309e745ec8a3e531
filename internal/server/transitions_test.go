package server_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// A log waiting for a retry is cancelled when its webhook is disabled before
// its turn, with no request made; while it waited the webhook stayed Healthy.
func TestRetryOfADisabledWebhookIsCancelled(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, db string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{RetryInterval: 400 * time.Millisecond}})
		rcv := heraldtest.NewReceiver(t)
		rcv.Status(500, "")
		hook := h.CreateWebhook("w", rcv.URL, "license.created")
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "the first attempt to fail", func() bool {
			logs := h.Logs("webhookId=" + hook.ID)
			return len(logs) == 1 && logs[0].Status == "retrying"
		})
		if got := h.Webhook(hook.ID).Status; got != "Healthy" {
			t.Errorf("webhook %s while its event is retrying; want Healthy", got)
		}
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false}, nil)
		heraldtest.Eventually(t, 10*time.Second, "the retry to be cancelled", func() bool {
			return h.Logs("webhookId=" + hook.ID)[0].Status == "cancelled"
		})
		if rcv.Count() != 1 {
			t.Errorf("%d requests; want only the first attempt", rcv.Count())
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
