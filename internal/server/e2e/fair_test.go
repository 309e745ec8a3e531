package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// Account A has 50 webhooks whose receivers hang and a backlog of 1,000
// logs; account B has one healthy webhook. Every B delivery must arrive
// while A's attempts are all still hanging: B never waits for an A
// time-out, and A's backlog is still there when B's last delivery lands.
//
// Scaled down to Concurrency 40 (A's share: all but an eighth, 35). With 50
// webhooks over 40 slots each webhook's share is its least, one, so the
// webhook shares alone let A's hanging attempts take every slot, and B's
// deliveries waited for their time-outs, before accounts had shares. The time-out is long and A's
// receivers answer only when the test ends, so no A time-out can pass
// while B is counted, however slow the machine: the assertion is about
// order, not time.
func TestOneAccountsHangingWebhooksDoNotHoldUpAnother(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testOneAccountsHangingWebhooksDoNotHoldUpAnother)
}

func testOneAccountsHangingWebhooksDoNotHoldUpAnother(t *testing.T, db string) {
	const concurrency, shareAlone = 40, 35
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db,
		Delivery: delivery.Config{AttemptTimeout: 5 * time.Minute, Concurrency: concurrency}})
	var hanging []*holdingReceiver
	for i := range 50 {
		r := newHoldingReceiver(t, 0)
		h.CreateWebhook(fmt.Sprintf("hanging %d", i), r.URL, "license.created")
		hanging = append(hanging, r)
	}
	inFlight := func() (n int64) {
		for _, r := range hanging {
			n += r.now.Load()
		}
		return n
	}
	const backlog = 20 // events: 1,000 logs of A
	for range backlog {
		h.CreateLicense(nil)
	}
	// At least its share: before accounts had shares, A took all 40 here.
	heraldtest.Eventually(t, 2*time.Minute, "A's attempts to fill A's share of the process", func() bool {
		return inFlight() >= shareAlone
	})

	b := h.NewAccount("B", "b@example.com")
	healthy := heraldtest.NewReceiver(t)
	hookB := b.CreateWebhook("healthy", healthy.URL, "license.created")
	const events = 20
	for range events {
		b.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 2*time.Minute, "every delivery to B's webhook while A's hang", func() bool {
		return healthy.Count() == events
	})
	if n := inFlight(); n == 0 || n > shareAlone {
		t.Errorf("A holds %d requests in flight; want its hanging ones, at most its share %d", n, shareAlone)
	}
	for i, r := range hanging {
		if r.Count() != int(r.now.Load()) {
			t.Fatalf("hanging receiver %d answered a request: an A time-out passed, the test shows nothing", i)
		}
	}
	if queued := len(h.Logs("status=queued&limit=500")); queued == 0 {
		t.Errorf("A's backlog drained before B's deliveries were counted; the test shows nothing")
	}
	heraldtest.Eventually(t, time.Minute, "B's logs to succeed", func() bool {
		return len(b.Logs("webhookId="+hookB.ID+"&status=succeeded&limit=500")) == events
	})
	t.Logf("B got its %d deliveries while A held %d hanging requests", events, inFlight())
}
