package server_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/retention"
)

func TestRetentionRemovesCompletedLogsOnly(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testRetentionRemovesCompletedLogsOnly)
}

func testRetentionRemovesCompletedLogsOnly(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db,
		Delivery: delivery.Config{RetryInterval: time.Hour},
		// Keep is the window in which the test must see the logs succeeded
		// before they go: wide enough for a busy machine.
		Retention: retention.Config{Keep: 5 * time.Second, Interval: 100 * time.Millisecond}})
	ok := heraldtest.NewReceiver(t)
	down := heraldtest.NewReceiver(t)
	down.Status(503, "")
	okHook := h.CreateWebhook("ok", ok.URL, "license.created")
	downHook := h.CreateWebhook("down", down.URL, "license.created")
	for range 3 {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 10*time.Second, "the deliveries and the first failures", func() bool {
		return len(h.Logs("webhookId="+okHook.ID+"&status=succeeded")) == 3 &&
			len(h.Logs("webhookId="+downHook.ID+"&status=retrying")) == 3
	})
	succeeded := h.Logs("webhookId=" + okHook.ID)[0].ID
	heraldtest.Eventually(t, 10*time.Second, "the completed logs to expire", func() bool {
		return len(h.Logs("webhookId="+okHook.ID)) == 0
	})
	if got := h.Do("GET", "/v3/webhook-event-logs/"+succeeded, nil, nil); got != 404 {
		t.Errorf("an expired log answers %d; want 404", got)
	}
	// Retrying logs stay, however old, with their events and attempts.
	time.Sleep(500 * time.Millisecond)
	logs := h.Logs("webhookId=" + downHook.ID)
	if len(logs) != 3 {
		t.Fatalf("%d logs of the failing webhook; want its 3 retrying ones", len(logs))
	}
	for _, l := range logs {
		full := h.Log(l.ID)
		if full.Status != "retrying" || len(full.Attempts) != 1 || full.Payload == "" {
			t.Errorf("log %s: %s with %d attempts", l.ID, full.Status, len(full.Attempts))
		}
	}
}
