package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestAReceiverThatIsGoneDisablesItsWebhook: a 410 Gone is not retried; it
// cancels its log with the reason, disables the webhook with the reason
// shown on it, and emails the owner once; the events after it are logged
// cancelled; enabling the webhook clears the reason, and a resend
// delivers. 429, 502, 503 and 504 answers are retried as any failure,
// leaving the webhook enabled.
func TestAReceiverThatIsGoneDisablesItsWebhook(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		for _, code := range []int{429, 502, 503, 504} {
			rcv := heraldtest.NewReceiver(t)
			rcv.Status(code, "busy")
			hook := h.CreateWebhook("busy", rcv.URL, "license.created")
			h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"retryPolicy": map[string]any{"maxAttempts": 2, "intervalSeconds": 1}}, nil)
			h.CreateLicense(nil)
			heraldtest.Eventually(t, 30*time.Second, "the event to end its attempts", func() bool {
				logs := h.Logs("webhookId=" + hook.ID)
				return len(logs) == 1 && logs[0].Status == "failed"
			})
			if l := h.Logs("webhookId=" + hook.ID)[0]; l.AttemptCount != 2 {
				t.Errorf("%d: failed after %d attempts; want both", code, l.AttemptCount)
			}
			var w struct {
				Enabled        bool
				Status         string
				DisabledReason *string
			}
			h.Must(200, "GET", "/v3/webhooks/"+hook.ID, nil, &w)
			if !w.Enabled || w.DisabledReason != nil || w.Status != "Unhealthy" {
				t.Errorf("%d: webhook enabled %v (%v), %s; want enabled and Unhealthy, as after any failed event", code, w.Enabled, w.DisabledReason, w.Status)
			}
			h.Must(204, "DELETE", "/v3/webhooks/"+hook.ID, nil, nil)
		}

		rcv := heraldtest.NewReceiver(t)
		rcv.Status(http.StatusGone, "no such endpoint")
		hook := h.CreateWebhook("gone", rcv.URL, "license.created")
		h.CreateLicense(nil)
		var log heraldtest.Log
		heraldtest.Eventually(t, 30*time.Second, "the event to be cancelled", func() bool {
			logs := h.Logs("webhookId=" + hook.ID)
			if len(logs) != 1 || logs[0].Status != "cancelled" {
				return false
			}
			log = h.Log(logs[0].ID)
			return true
		})
		if log.AttemptCount != 1 || len(log.Attempts) != 1 || log.RetryReason == nil || !strings.Contains(*log.RetryReason, "410 Gone") {
			t.Errorf("log after a 410: %d attempts, reason %v; want 1, saying 410 Gone", log.AttemptCount, deref(log.RetryReason))
		}
		var w struct {
			Enabled        bool
			Status         string
			DisabledReason *string
		}
		h.Must(200, "GET", "/v3/webhooks/"+hook.ID, nil, &w)
		if w.Enabled || w.DisabledReason == nil || !strings.Contains(*w.DisabledReason, "410 Gone") || w.Status != "Healthy" {
			t.Fatalf("webhook after a 410: enabled %v, reason %v, %s; want disabled saying 410 Gone, health unchanged", w.Enabled, deref(w.DisabledReason), w.Status)
		}
		// Events after it are logged, cancelled, and nothing is sent.
		h.CreateLicense(nil)
		logs := h.Logs("webhookId=" + hook.ID)
		if len(logs) != 2 || logs[0].Status != "cancelled" || rcv.Count() != 1 {
			t.Errorf("after the 410: logs %+v, %d requests; want the new event cancelled and nothing sent", logs, rcv.Count())
		}
		type email struct{ Subject, Body string }
		var page struct{ Data []email }
		heraldtest.Eventually(t, 30*time.Second, "the owner's email", func() bool {
			h.Must(200, "GET", "/v3/emails", nil, &page)
			return len(page.Data) >= 1
		})
		var gone []email
		for _, e := range page.Data {
			if strings.Contains(e.Subject, "410 Gone") {
				gone = append(gone, e)
			}
		}
		if len(gone) != 1 || !strings.Contains(gone[0].Body, hook.ID) || !strings.Contains(gone[0].Body, "410 Gone") {
			t.Errorf("emails %+v; want one saying the webhook was disabled for a 410 Gone", page.Data)
		}

		rcv.Status(http.StatusNoContent, "")
		w.DisabledReason = nil // absent from the answer, not null
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": true}, &w)
		if !w.Enabled || w.DisabledReason != nil {
			t.Errorf("enabled again: %v, reason %v; want enabled with no reason", w.Enabled, deref(w.DisabledReason))
		}
		var resent heraldtest.Log
		h.Must(200, "POST", "/v3/webhook-event-logs/"+log.ID+"/resend", nil, &resent)
		if resent.Status != "succeeded" {
			t.Errorf("resent after enabling: %s; want succeeded", resent.Status)
		}
	})
}
