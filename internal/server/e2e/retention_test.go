package e2e_test

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
	// The logs expire when the test moves herald's clock past Keep, not
	// while it waits: a busy machine cannot make them go before the test
	// has seen them succeed. The retries stay a day away, past the move.
	clock := heraldtest.NewClock()
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Now: clock.Now,
		Delivery:  delivery.Config{RetryInterval: 24 * time.Hour},
		Retention: retention.Config{Keep: time.Hour, Interval: 100 * time.Millisecond}})
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
	h.Settled()
	clock.Advance(2 * time.Hour)
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
