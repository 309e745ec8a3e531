package e2e_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// TestRecoveryNeverHoldsUpANewEvent: while a recovery's resends hang at a
// slow receiver, a new event of the same webhook is delivered at once: the
// recovery leaves it a slot. (The attempt time-out is longer than the
// test waits, so a slot freed by a time-out would not do.)
func TestRecoveryNeverHoldsUpANewEvent(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 1, PerWebhook: 3, AttemptTimeout: 2 * time.Minute}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusServiceUnavailable, "down")
	hook := h.CreateWebhook("w", rcv.URL, "license.created")
	since := time.Now().Add(-time.Second)
	for range 12 {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 30*time.Second, "the webhook suspended, every log complete", func() bool {
		if h.Webhook(hook.ID).Status != "Suspended" {
			return false
		}
		for _, l := range h.Logs("webhookId=" + hook.ID) {
			if l.Status != "failed" && l.Status != "cancelled" {
				return false
			}
		}
		return true
	})
	missed := map[string]bool{}
	for _, l := range h.Logs("webhookId=" + hook.ID) {
		missed[l.EventID] = true
	}
	// One log resent by hand makes the webhook Healthy again, so new events
	// are sent; then every resend of a missed event hangs until the test ends.
	rcv.Status(http.StatusNoContent, "")
	first := h.Logs("webhookId=" + hook.ID)[0]
	h.Must(200, "POST", "/v3/webhook-event-logs/"+first.ID+"/resend", nil, nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if p, _ := webhook.Parse(body); missed[p.ID] {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	base := rcv.Count()
	rec, err := h.API.Recover(t.Context(), hook.ID, client.RecoverRequest{Since: since})
	if err != nil || rec.Count != 11 {
		t.Fatalf("recover: %+v, %v; want 11 logs", rec, err)
	}
	// Its limit here is 3 (PerWebhook): the recovery takes 2.
	heraldtest.Eventually(t, 30*time.Second, "resends hanging", func() bool { return rcv.Count() >= base+2 })
	hanging := rcv.Count()
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 30*time.Second, "the new event delivered while the resends hang", func() bool {
		for _, l := range h.Logs("webhookId=" + hook.ID + "&status=succeeded") {
			if !missed[l.EventID] {
				return true
			}
		}
		return false
	})
	if got, _ := h.API.Recovery(t.Context(), hook.ID, rec.ID); got.Status != "running" || rcv.Count() != hanging+1 {
		t.Errorf("recovery %s, %d requests since the resends hung; want running, 1 (the new event)", got.Status, rcv.Count()-hanging)
	}
}
