package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// holdingReceiver is a receiver that holds every request until the test ends
// (or until its hold says otherwise), and counts how many it holds at once.
type holdingReceiver struct {
	*heraldtest.Receiver
	now, peak atomic.Int64
}

// newHoldingReceiver starts a receiver whose requests wait for release (or
// for hold, when it is not zero) and then answer 204. Release happens at the
// end of the test, before herald stops, so herald's stop does not wait out
// the attempts' time-out.
func newHoldingReceiver(t *testing.T, hold time.Duration) *holdingReceiver {
	r := &holdingReceiver{Receiver: heraldtest.NewReceiver(t)}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r.SetRespond(func(w http.ResponseWriter, req *http.Request) {
		n := r.now.Add(1)
		defer r.now.Add(-1)
		for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
		}
		var timeout <-chan time.Time
		if hold > 0 {
			timeout = time.After(hold)
		}
		select {
		case <-release:
		case <-timeout:
		case <-req.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return r
}

// With every delivery default, ten receivers that never answer must not hold
// up an eleventh that answers at once: before each webhook had a share, the
// ten filled the process's 512 slots (64 each) and the healthy webhook's
// deliveries waited for their time-outs.
func TestHangingWebhooksDoNotHoldUpAHealthyOne(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testHangingWebhooksDoNotHoldUpAHealthyOne)
}

func testHangingWebhooksDoNotHoldUpAHealthyOne(t *testing.T, db string) {
	// The hanging attempts must still be in flight when the healthy
	// deliveries are counted, however slow the machine: a long time-out.
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{AttemptTimeout: 5 * time.Minute}})
	var hanging []*holdingReceiver
	for i := range 10 {
		r := newHoldingReceiver(t, 0)
		h.CreateWebhook(fmt.Sprintf("hanging %d", i), r.URL, "license.created")
		hanging = append(hanging, r)
	}
	healthy := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("healthy", healthy.URL, "license.created")
	const events = 100 // more than the 64 a webhook could once hold
	for range events {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, time.Minute, "every delivery to the healthy webhook while the others hang", func() bool {
		return healthy.Count() == events
	})
	held := 0
	for i, r := range hanging {
		if r.now.Load() == 0 {
			t.Fatalf("hanging receiver %d holds no request: the test shows nothing", i)
		}
		if p := r.peak.Load(); p > 4 {
			t.Errorf("hanging receiver %d held %d requests at once; a webhook that has not answered holds at most 4", i, p)
		}
		held += int(r.now.Load())
	}
	t.Logf("the healthy webhook got its %d deliveries while the ten hanging ones held %d requests", events, held)
	heraldtest.Eventually(t, 30*time.Second, "the healthy webhook's logs to succeed", func() bool {
		logs := h.Logs("webhookId=" + hook.ID + "&status=succeeded&limit=500")
		return len(logs) == events
	})
}

// Test takes the webhook's slots like a delivery: a hundred Tests at once
// never open more than the webhook's cap (64) of connections to its
// receiver; each either runs or answers 429 with Retry-After.
func TestParallelTestsStayWithinTheWebhooksCap(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	r := newHoldingReceiver(t, 300*time.Millisecond)
	hook := h.CreateWebhook("tested", r.URL, "license.created")
	var wg sync.WaitGroup
	var ok, busy atomic.Int64
	for range 100 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/v3/webhooks/"+hook.ID+"/test", nil)
			req.Header.Set("Authorization", "Bearer "+h.Token)
			resp, err := h.Client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				if resp.Header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
				busy.Add(1)
			default:
				t.Errorf("test answered %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	t.Logf("%d tests ran, %d answered 429; the receiver held at most %d at once", ok.Load(), busy.Load(), r.peak.Load())
	if p := r.peak.Load(); p > 64 {
		t.Errorf("the receiver held %d test requests at once; the webhook's cap is 64", p)
	}
	if ok.Load() == 0 {
		t.Errorf("no test ran")
	}
	if got := int64(r.Count()); got != ok.Load() {
		t.Errorf("the receiver got %d requests for %d tests that ran: a refused test sent something", got, ok.Load())
	}
}

// Forty resends of one log at once send one POST: the first marks the log in
// flight in the database, and the others answer 409. On PostgreSQL the
// resends go to two processes.
func TestParallelResendsOfOneLogSendOnce(t *testing.T) {
	t.Parallel()
	for _, s := range heraldtest.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			heraldtest.PostgresHandles(t, 2)
			testParallelResendsOfOneLogSendOnce(t, s.URL(t))
		})
	}
}

func testParallelResendsOfOneLogSendOnce(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{MaxAttempts: 1}})
	heralds := []*heraldtest.Herald{h}
	r := heraldtest.NewReceiver(t)
	r.Status(http.StatusInternalServerError, "down")
	hook := h.CreateWebhook("resent", r.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 30*time.Second, "the log to fail", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].Status == "failed"
	})
	logID := h.Logs("webhookId=" + hook.ID)[0].ID
	if strings.HasPrefix(db, "postgres") { // SQLite is one process's
		heralds = append(heralds, heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Key: h.Options.Key, Token: h.Token}))
	}
	before := r.Count()
	// The receiver holds the resend it gets until every other one has been
	// answered (or a minute has passed), so that however slowly a busy
	// machine starts the forty, they all ask while one is in flight.
	var answered atomic.Int64
	others := make(chan struct{})
	r.SetRespond(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-others:
		case <-time.After(time.Minute):
		}
		w.WriteHeader(http.StatusNoContent)
	})
	var wg sync.WaitGroup
	var codes sync.Map
	for i := range 40 {
		wg.Go(func() {
			var out map[string]any
			code := heralds[i%len(heralds)].Do(http.MethodPost, "/v3/webhook-event-logs/"+logID+"/resend", nil, &out)
			n, _ := codes.LoadOrStore(code, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			if code != http.StatusOK && answered.Add(1) == 39 {
				close(others)
			}
		})
	}
	wg.Wait()
	count := func(code int) int64 {
		if n, ok := codes.Load(code); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	if sent := r.Count() - before; sent != 1 {
		t.Errorf("40 parallel resends sent %d POSTs; want 1", sent)
	}
	if count(http.StatusOK) != 1 || count(http.StatusConflict) != 39 {
		codes.Range(func(k, v any) bool { t.Logf("%v: %d", k, v.(*atomic.Int64).Load()); return true })
		t.Errorf("%d resends answered 200 and %d 409; want 1 and 39", count(http.StatusOK), count(http.StatusConflict))
	}
	l := h.Log(logID)
	if l.Status != "succeeded" || len(l.Attempts) != 2 {
		t.Errorf("log %s with %d attempts; want succeeded with the first attempt and one resend", l.Status, len(l.Attempts))
	}
}
