package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestAWebhookDisabledByItsReceiverSaysWhy: a webhook herald disabled
// because its receiver answered 410 Gone says so on its page, with what to
// do; its retry policy shows there too, its own or the default.
func TestAWebhookDisabledByItsReceiverSaysWhy(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusGone, "gone")
	hook := h.CreateWebhook("gone", rcv.URL, "license.created")
	b := mustSignIn(t, h)
	if _, _, page := b.get("/webhooks/" + hook.ID); strings.Contains(page, `id="disabled-reason"`) || !strings.Contains(page, "(herald's default)") {
		t.Errorf("an enabled webhook's page shows a reason to be disabled, or not its default retry policy:\n%s", page)
	}
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 30*time.Second, "the webhook to be disabled", func() bool { return !h.Webhook(hook.ID).Enabled })
	_, _, page := b.get("/webhooks/" + hook.ID)
	if !strings.Contains(page, `id="disabled-reason"`) || !strings.Contains(page, "410 Gone") || !strings.Contains(page, "enable the webhook") {
		t.Errorf("the disabled webhook's page does not say why:\n%s", page)
	}
	h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": true, "retryPolicy": map[string]any{"maxAttempts": 7, "backoff": "exponential", "intervalSeconds": 30}}, nil)
	_, _, page = b.get("/webhooks/" + hook.ID)
	if strings.Contains(page, `id="disabled-reason"`) || !strings.Contains(page, "7 attempts, exponential back-off from 30 s up to 3600 s") {
		t.Errorf("enabled again with its own policy, the page still says it was disabled, or not its policy")
	}
}
