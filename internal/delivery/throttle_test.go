package delivery_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
)

// A throttled webhook's deliveries go out one send interval apart, each
// once, none of them failed or counted as an attempt while it waits, and
// another webhook of the same account is not slowed by it: on the bubble's
// clock, so the times are exact. The dispatcher also claims no more of the
// throttled webhook than two seconds' worth: its backlog waits in the queue.
func TestThrottledWebhookIsPacedAndAnotherIsNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, n = 20, 200 // 10 s of sends
		clock := offsetClock()
		q := newFakeQueue(clock)
		var mu sync.Mutex
		sent := map[string][]time.Time{}
		rcv := newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			sent[r.URL.Path] = append(sent[r.URL.Path], clock())
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})
		for i := range n {
			c := dueLog(fmt.Sprint("t", i), 0, "http://receiver.test/throttled")
			c.WebhookID, c.RateLimit = "throttled", rate
			q.add(c)
			c = dueLog(fmt.Sprint("f", i), 0, "http://receiver.test/free")
			c.WebhookID = "free"
			q.add(c)
		}
		start := clock()
		run(t, delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t)}))
		count := func(path string) int {
			mu.Lock()
			defer mu.Unlock()
			return len(sent[path])
		}
		waitFor(t, "every delivery to the free webhook", func() bool { return count("/free") == n })
		if got := count("/throttled"); got > n/4 {
			t.Errorf("%d of %d throttled deliveries made by the time the free webhook's %d were; want the free one not held back", got, n, n)
		}
		for held := 0; count("/throttled") < n; time.Sleep(100 * time.Millisecond) {
			pending := 0
			q.mu.Lock()
			for _, l := range q.logs {
				if l.claim.WebhookID == "throttled" && l.status == attempt.Pending {
					pending++
				}
			}
			q.mu.Unlock()
			// Two seconds' worth waiting for slots, and a second's worth
			// sent whose outcomes wait to be recorded; without the bound,
			// a claim takes 2 × PerWebhook (128).
			if pending > 3*rate && held == 0 {
				held = pending
				t.Errorf("%d throttled logs claimed at once; want at most two seconds' worth waiting, %d, and a second's being recorded", pending, 2*rate)
			}
			if clock().Sub(start) > time.Minute {
				t.Fatalf("%d of %d throttled deliveries after a minute", count("/throttled"), n)
			}
		}
		mu.Lock()
		times := sent["/throttled"]
		mu.Unlock()
		interval := time.Second / rate
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < interval-time.Millisecond {
				t.Fatalf("throttled sends %d and %d %v apart; want at least %v", i-1, i, gap, interval)
			}
		}
		if span, want := times[n-1].Sub(times[0]), time.Duration(n-1)*interval; span > want+want/10 {
			t.Errorf("%d throttled sends took %v; want about %v", n, span, want)
		}
		waitFor(t, "every outcome recorded", func() bool { return len(q.recorded()) >= 2*n })
		ids := map[string]int{}
		for _, id := range rcv.IDs() {
			ids[id]++
		}
		for id, k := range ids {
			if k != 1 {
				t.Errorf("%s sent %d times; want once", id, k)
			}
		}
		for _, o := range q.recorded() {
			if o.Result != attempt.Delivered && o.Result != attempt.Release {
				t.Errorf("log %s recorded %s; want delivered (or given back to wait), never failed", o.LogID, o.Result)
			}
			if o.Result == attempt.Release && o.Attempt != nil {
				t.Errorf("a log given back to wait carries an attempt %+v", o.Attempt)
			}
		}
		for i := range n {
			if l := q.log(fmt.Sprint("log-t", i)); l.status != attempt.Succeeded || l.claim.AttemptCount != 0 {
				t.Errorf("log-t%d %s with %d failed attempts; want succeeded at its first", i, l.status, l.claim.AttemptCount)
			}
		}
	})
}

// Two dispatchers over one queue (two processes on one database) share the
// webhook's send slots: together they send at its rate, not twice it, and
// each sends some.
func TestTwoDispatchersShareOneThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, n = 10, 60
		clock := offsetClock()
		q := newFakeQueue(clock)
		var mu sync.Mutex
		var times []time.Time
		rcv := newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			times = append(times, clock())
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})
		for i := range n {
			c := dueLog(fmt.Sprint(i), 0, rcv.URL)
			c.RateLimit = rate
			q.add(c)
		}
		cfg := delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), PollInterval: 100 * time.Millisecond}
		run(t, delivery.New(q, cfg))
		run(t, delivery.New(q, cfg))
		waitFor(t, "every delivery", func() bool { return rcv.Count() == n })
		mu.Lock()
		defer mu.Unlock()
		interval := time.Second / rate
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < interval-time.Millisecond {
				t.Fatalf("sends %d and %d %v apart; want at least %v", i-1, i, gap, interval)
			}
		}
		leases := map[string]bool{}
		for _, o := range q.recorded() {
			if o.Result == attempt.Delivered {
				leases[o.Lease] = true
			}
		}
		if len(leases) < 2 {
			t.Errorf("deliveries under %d claims; want several, of both dispatchers", len(leases))
		}
	})
}
