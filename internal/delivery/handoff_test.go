package delivery_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
)

// handOver plays the firing's part of a hand-off over fakeQueue: it asks d
// for room for c, and if granted queues c leased (as the firing's statement
// leases it) and hands it over after "the commit". Refused, c is queued
// due, for the claims. It reports whether c was handed over.
func (q *fakeQueue) handOver(d *delivery.Dispatcher, c attempt.Claim) bool {
	if !d.Reserve(c.AccountID, c.WebhookID) {
		q.add(c)
		return false
	}
	c.Lease = "fired-" + c.LogID
	q.mu.Lock()
	q.logs = append(q.logs, &fakeLog{claim: c, status: attempt.Pending, due: d.LeaseUntil(q.now())})
	q.mu.Unlock()
	d.Take([]attempt.Claim{c})
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
		rcv, release := holdingReceiver(t, func(id string) bool { return id == "evt-held" })
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
			if o.Result != attempt.Delivered || o.Lease != "fired-"+o.LogID {
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
		waiting := q.log("log-waits").status == attempt.Queued
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
		rcv.sentOnce(t)
	})
}

// A firing whose transaction outlives the dispatcher's stop (it reserved
// room before the stop, and commits after the stop stopped waiting for it)
// hands its log to nobody: the log is released, due again at once, not
// left leased until its lease ends. One whose commit's answer was lost
// releases what it may have leased as well.
func TestDispatcherReleasesWhatIsHandedOverToNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		rcv := newPipeReceiver(t, answer(http.StatusNoContent))
		d := delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t)})
		stop := run(t, d)
		synctest.Wait()

		// leased queues c under the lease its firing would have given it.
		leased := func(c attempt.Claim) attempt.Claim {
			c.Lease = "fired-" + c.LogID
			q.mu.Lock()
			q.logs = append(q.logs, &fakeLog{claim: c, status: attempt.Pending, due: d.LeaseUntil(q.now())})
			q.mu.Unlock()
			return c
		}
		late := dueLog("late", 0, rcv.URL)
		if !d.Reserve(late.AccountID, late.WebhookID) {
			t.Fatal("refused with nothing in flight or waiting")
		}
		stop() // waits for the reservation, then stops without it
		d.Take([]attempt.Claim{leased(late)})
		if l := q.log(late.LogID); l.status != attempt.Queued || l.due.After(clock()) {
			t.Fatalf("log handed over after the stop: %s, due %v; want queued, due now", l.status, l.due)
		}
		if n := rcv.Count(); n != 0 {
			t.Fatalf("%d requests sent; want none: nobody was there to take the log", n)
		}
		if d.Reserve(late.AccountID, late.WebhookID) {
			t.Fatal("a stopped dispatcher reserved room")
		}

		// Started again, its first claim takes the released log.
		run(t, d)
		waitFor(t, "the released log delivered", func() bool { return len(q.recorded()) == 1 })
		synctest.Wait()
		lost := dueLog("lost", 0, rcv.URL)
		if !d.Reserve(lost.AccountID, lost.WebhookID) {
			t.Fatal("refused with nothing in flight or waiting")
		}
		d.Abandon([]attempt.Claim{leased(lost)}, true)
		waitFor(t, "the lost commit's lease released", func() bool {
			q.mu.Lock()
			defer q.mu.Unlock()
			return slices.ContainsFunc(q.released, func(ls []string) bool { return slices.Contains(ls, "fired-"+lost.LogID) })
		})
		// Due again, a claim takes it: sent once.
		waitFor(t, "the released log delivered", func() bool { return len(q.recorded()) == 2 })
		synctest.Wait()
		if n := rcv.Count(); n != 2 {
			t.Fatalf("%d requests for two logs; want one each, by claims", n)
		}
	})
}
