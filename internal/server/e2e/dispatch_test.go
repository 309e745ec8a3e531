package e2e_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// metric reads one counter from the server's /metrics.
func metric(t *testing.T, h *heraldtest.Herald, name string) float64 {
	t.Helper()
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// blockingReceiver holds every request until the test ends, and tracks how
// many are in flight at once.
func blockingReceiver(t *testing.T) (r *heraldtest.Receiver, now, peak *atomic.Int32) {
	release := make(chan struct{})
	now, peak = new(atomic.Int32), new(atomic.Int32)
	r = heraldtest.NewReceiver(t)
	t.Cleanup(func() { close(release) }) // before the receiver closes: cleanups run last first
	r.SetRespond(func(w http.ResponseWriter, req *http.Request) {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-release:
		case <-req.Context().Done():
		}
		now.Add(-1)
	})
	return r, now, peak
}

// A webhook at its in-flight cap leaves due logs this process may not claim;
// the dispatcher must wait for a slot, a wake-up or the poll, not ask again
// every millisecond.
func TestSaturatedWebhookDoesNotSpinTheDispatcher(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{PerWebhook: 1, AttemptTimeout: 10 * time.Second}})
	rcv, now, _ := blockingReceiver(t)
	h.CreateWebhook("slow", rcv.URL, "license.created")
	for range 3 {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 5*time.Second, "one request in flight", func() bool { return now.Load() == 1 })
	before := metric(t, h, "herald_delivery_claim_queries_total")
	time.Sleep(time.Second)
	if n := metric(t, h, "herald_delivery_claim_queries_total") - before; n > 20 {
		t.Errorf("%.0f claim queries in a second while nothing could be claimed; want a few (poll interval 1s)", n)
	}
}

// PerWebhook caps the requests in flight to one webhook, even when one
// transaction queues several of its logs while one is already in flight.
func TestPerWebhookCapHolds(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{PerWebhook: 2, AttemptTimeout: 10 * time.Second}})
	rcv, now, peak := blockingReceiver(t)
	h.CreateWebhook("w", rcv.URL, "license.created", "activation.created", "license.first-activated")
	id := h.CreateLicense(nil)
	heraldtest.Eventually(t, 5*time.Second, "one request in flight", func() bool { return now.Load() == 1 })
	var l struct{ Key string }
	h.Must(200, "GET", "/v3/licenses/"+id, nil, &l)
	h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": l.Key, "fingerprint": "fp-1"}, nil) // two logs, one transaction
	heraldtest.Eventually(t, 5*time.Second, "two requests in flight", func() bool { return now.Load() >= 2 })
	time.Sleep(500 * time.Millisecond) // a third would have been sent by now
	if p := peak.Load(); p > 2 {
		t.Errorf("%d requests in flight to one webhook; PerWebhook is 2", p)
	}
}
