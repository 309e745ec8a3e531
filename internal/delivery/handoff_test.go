package delivery_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/store"
)

// handOver plays the firing's part of a hand-off over fakeQueue: it asks d
// for room for c, and if granted queues c leased (as the firing's statement
// leases it) and hands it over after "the commit". Refused, c is queued
// due, for the claims. It reports whether c was handed over.
func (q *fakeQueue) handOver(d *delivery.Dispatcher, c store.Claim) bool {
	if !d.Reserve(c.AccountID, c.WebhookID) {
		q.add(c)
		return false
	}
	c.Lease = "fired-" + c.LogID
	q.mu.Lock()
	q.logs = append(q.logs, &fakeLog{claim: c, status: store.Pending, due: d.LeaseUntil(q.now())})
	q.mu.Unlock()
	d.Take([]store.Claim{c})
	return true
}

// What a firing may hand over: nothing before the dispatcher's first claim
// (a backlog may be waiting); then each log of a webhook with room and
// nothing older waiting, attempted and recorded once under its lease with
// no claim; never past the webhook's room, and once a log of the webhook
// had to wait in the queue, none of its later ones until a claim has taken
// the waiting ones.
func TestDispatcherTakesWhatIsFiredWhenNothingOlderWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		hold := make(chan struct{})
		rcv := newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("webhook-id") == "evt-held" {
				<-hold
			}
			w.WriteHeader(http.StatusNoContent)
		})
		release := sync.OnceFunc(func() { close(hold) })
		t.Cleanup(release) // before the receiver's, which waits for the held request
		d := delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), PerWebhook: 1, PollInterval: time.Minute})
		if d.Reserve("acct", "hook") {
			t.Fatal("a dispatcher not running reserved room")
		}
		run(t, d)
		synctest.Wait() // its first claim has looked: nothing waits

		claims := q.claimed()
		for i := range 3 {
			c := dueLog(strconv.Itoa(i), 0, rcv.URL)
			if !q.handOver(d, c) {
				t.Fatalf("log %d refused with nothing in flight or waiting", i)
			}
			waitFor(t, "the outcome to be recorded", func() bool { return len(q.recorded()) == i+1 })
			synctest.Wait()
		}
		if got := q.claimed() - claims; got != 0 {
			t.Errorf("%d claims made for three logs handed over; want none", got)
		}
		out := q.recorded()
		if len(out) != 3 || rcv.Count() != 3 {
			t.Fatalf("%d outcomes recorded, %d requests; want 3 of each", len(out), rcv.Count())
		}
		for _, o := range out {
			if o.Result != store.Delivered || o.Lease != "fired-"+o.LogID {
				t.Errorf("recorded %s under %q; want delivered, under the lease it was handed over with", o.Result, o.Lease)
			}
		}

		// One held in flight: with PerWebhook 1 the webhook's room is 2
		// (a second round waits in the process for the slot).
		if !q.handOver(d, dueLog("held", 0, rcv.URL)) {
			t.Fatal("refused with nothing in flight")
		}
		waitFor(t, "the held request", func() bool { return rcv.Count() == 4 })
		if !q.handOver(d, dueLog("second", 0, rcv.URL)) {
			t.Fatal("refused within the webhook's room of 2")
		}
		synctest.Wait() // "second" waits for the webhook's one slot
		if q.handOver(d, dueLog("waits", 0, rcv.URL)) {
			t.Fatal("handed over past the webhook's room")
		}
		release()
		synctest.Wait()
		// "waits" waited in the queue; until a claim has taken it, nothing
		// of the webhook is handed over, room or not.
		waiting := q.log("log-waits").status == store.Queued
		if q.handOver(d, dueLog("behind", 0, rcv.URL)) && waiting {
			t.Fatal("handed over a log while an older one waited in the queue")
		}
		waitFor(t, "every log recorded", func() bool { return len(q.recorded()) == rcv.Count() && rcv.Count() == 7 })
		synctest.Wait()
		// A claim that took as many as the webhook's room may have left
		// more: the next log waits for one more claim, which, coming back
		// short, finds the webhook drained. The one after is handed over.
		q.handOver(d, dueLog("after-1", 0, rcv.URL))
		waitFor(t, "after-1 recorded", func() bool { return len(q.recorded()) == 8 })
		synctest.Wait()
		if !q.handOver(d, dueLog("after-2", 0, rcv.URL)) {
			t.Fatal("refused once the claims had taken what waited")
		}
		waitFor(t, "after-2 recorded", func() bool { return len(q.recorded()) == 9 })
		synctest.Wait()
		seen := map[string]int{}
		for _, id := range rcv.IDs() {
			seen[id]++
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s sent %d times; want once", id, n)
			}
		}
	})
}
