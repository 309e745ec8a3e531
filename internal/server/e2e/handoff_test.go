package e2e_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// On PostgreSQL what a process fires is handed to its own dispatcher
// (decision 0105): each delivery is made once, within the webhook's cap,
// the ones with room without a claim, the rest claimed once room frees.
func TestFiredLogsAreHandedToTheirProcess(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.PostgresURL(t),
		Delivery: delivery.Config{PerWebhook: 2, AttemptTimeout: 10 * time.Second}})
	rcv := heraldtest.NewReceiver(t)
	h.CreateWebhook("w", rcv.URL, "license.created")

	// One at a time, each delivered before the next fires: every one after
	// the first finds the dispatcher running and the webhook with room.
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the first delivery", func() bool { return rcv.Count() == 1 })
	handed := metric(t, h, "herald_delivery_handed_over_total")
	claimed := metric(t, h, "herald_delivery_claimed_total")
	for i := 2; i <= 4; i++ {
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 10*time.Second, "each delivery", func() bool { return rcv.Count() == i })
	}
	if n := metric(t, h, "herald_delivery_handed_over_total") - handed; n != 3 {
		t.Fatalf("%.0f of 3 deliveries handed over at firing; want each (nothing in flight, room for 4)", n)
	}
	if n := metric(t, h, "herald_delivery_claimed_total") - claimed; n != 0 {
		t.Fatalf("%.0f logs claimed; want none: each was handed over", n)
	}

	// A receiver that holds its requests: the cap (2 in flight) holds, the
	// webhook's room (twice its cap) is handed over and the rest waits in
	// the queue, claimed once the held requests are answered.
	hold := rcv.Hold(t)
	for range 8 {
		h.CreateLicense(nil)
	}
	hold.Wait(t, 10*time.Second, "held requests")
	time.Sleep(300 * time.Millisecond) // a third request would be in by now
	if n := rcv.Count() - 4; n > 2 {
		t.Fatalf("%d requests in flight to a webhook capped at 2", n)
	}
	if n := metric(t, h, "herald_delivery_handed_over_total") - handed - 3; n < 1 || n > 4 {
		t.Fatalf("%.0f of 8 logs fired with 2 in flight handed over; want at most the webhook's room, 4", n)
	}
	hold.Release()
	heraldtest.Eventually(t, 10*time.Second, "all twelve deliveries", func() bool { return rcv.Count() == 12 })
	time.Sleep(200 * time.Millisecond)
	seen := map[string]int{}
	for _, r := range rcv.Requests() {
		seen[r.Header.Get("webhook-id")]++
	}
	if len(seen) != 12 {
		t.Fatalf("%d distinct deliveries of 12 requests (%v); want each once", len(seen), seen)
	}
	if n := metric(t, h, "herald_delivery_handed_over_total") + metric(t, h, "herald_delivery_claimed_total") - handed - claimed; n != 11 {
		t.Fatalf("%.0f handed over or claimed after the first; want 11, each log once", n)
	}
}
