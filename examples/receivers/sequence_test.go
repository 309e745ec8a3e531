package receivers_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestReceiversApplyEachLicenseInOrder: each example applies a license's
// events by their sequence. A real license.created and license.updated are
// applied; a resend of the license.created, which now arrives after the
// update as a retried delivery would, is accepted (answered 2xx, so herald
// stops retrying) and printed as stale, changing nothing.
func TestReceiversApplyEachLicenseInOrder(t *testing.T) {
	t.Parallel()
	for _, rc := range receivers {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, rc.command(t))
			h := heraldtest.Start(t, heraldtest.Options{})
			var hook heraldtest.Webhook
			h.Must(http.StatusCreated, "POST", "/v3/webhooks", map[string]any{
				"name": "in order (" + rc.name + ")", "url": r.url + "/webhooks/herald",
				"events": []string{"license.created", "license.updated"}, "token": token,
			}, &hook)
			printed := []string{r.ready}
			settled := func(n int) heraldtest.Log {
				t.Helper()
				var newest heraldtest.Log
				heraldtest.Eventually(t, 20*time.Second, "the deliveries", func() bool {
					logs := h.Logs("webhookId=" + hook.ID)
					for _, l := range logs {
						if l.Status != "succeeded" {
							return false
						}
					}
					if len(logs) == n {
						newest = logs[0]
					}
					return len(logs) == n
				})
				return newest
			}

			license := h.CreateLicense(nil)
			created := settled(1)
			printed = append(printed, "license.created "+created.EventID)
			r.waitForLines(t, len(printed))

			h.Must(http.StatusOK, "PATCH", "/v3/licenses/"+license, map[string]any{"allowedActivations": 4}, nil)
			updated := settled(2)
			printed = append(printed, "license.updated "+updated.EventID)
			r.waitForLines(t, len(printed))

			var resent heraldtest.Log
			h.Must(http.StatusOK, "POST", "/v3/webhook-event-logs/"+created.ID+"/resend", nil, &resent)
			printed = append(printed, "license.created "+created.EventID+" stale")
			r.waitForLines(t, len(printed))
			if l := h.Log(created.ID); l.Status != "succeeded" {
				t.Errorf("the resent stale event's log is %s; want succeeded", l.Status)
			}
			if got := r.lines(); !slices.Equal(got, printed) {
				t.Errorf("printed %q; want %q", got, printed)
			}
		})
	}
}
