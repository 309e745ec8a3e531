package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// A disabled webhook sends no POST for its events, not even on request.
func TestResendToADisabledWebhookIsRefused(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("w", rcv.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the delivery", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].Status == "succeeded"
	})
	logID := h.Logs("webhookId=" + hook.ID)[0].ID
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false}, nil)
	if got := h.Do("POST", "/v3/webhook-event-logs/"+logID+"/resend", nil, nil); got != http.StatusConflict {
		t.Errorf("resend to a disabled webhook: %d; want 409", got)
	}
	if rcv.Count() != 1 || len(h.Log(logID).Attempts) != 1 {
		t.Errorf("a refused resend sent or recorded something")
	}
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": true}, nil)
	h.Must(200, "POST", "/v3/webhook-event-logs/"+logID+"/resend", nil, nil)
	if rcv.Count() != 2 {
		t.Errorf("resend after enabling: %d requests; want 2", rcv.Count())
	}
}
