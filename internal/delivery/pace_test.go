package delivery_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
)

// A process short of CPU paces the changes of an account whose logs wait
// in the queue for a webhook that answers promptly: the next change waits
// until the claims have taken them, and then goes ahead at once. An
// account whose logs wait for a receiver that has not answered is not
// held, nor is any other account.
func TestPaceHoldsAnAccountUntilTheClaimsTakeItsLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		rcv, release := holdingReceiver(t, func(id string) bool { return strings.HasPrefix(id, "evt-held") })
		var short atomic.Bool
		d := delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), PerWebhook: 2, BatchSize: 2,
			PollInterval: time.Minute, PaceWait: time.Hour, Busy: short.Load})
		run(t, d)
		synctest.Wait()
		// logFor is log id of webhook hook of account acct.
		logFor := func(id, hook, acct string) attempt.Claim {
			c := dueLog(id, 0, rcv.URL)
			c.WebhookID, c.AccountID = hook, acct
			return c
		}
		paced := func(acct string) <-chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := d.Pace(t.Context(), acct); err != nil {
					t.Errorf("Pace(%s) = %v", acct, err)
				}
			}()
			synctest.Wait()
			return done
		}
		waiting := func(done <-chan struct{}) bool {
			select {
			case <-done:
				return false
			default:
				return true
			}
		}

		// The webhook answers promptly while another request of it is held
		// (a webhook holding nothing is forgotten); then held requests fill
		// its room.
		logs := 0
		handOver := func(c attempt.Claim) bool {
			logs++
			return q.handOver(d, c)
		}
		for _, id := range []string{"held-0", "first"} {
			if !handOver(logFor(id, "hook", "acct")) {
				t.Fatalf("%s refused with room", id)
			}
		}
		waitFor(t, "the first delivery recorded", func() bool { return len(q.recorded()) == 1 })
		short.Store(true)
		for i := 1; handOver(logFor(fmt.Sprint("held-", i), "hook", "acct")); i++ {
		}
		// A webhook of another account whose receiver has not answered yet:
		// its logs wait for the receiver, not for the process.
		for i := 0; handOver(logFor(fmt.Sprint("held-new-", i), "new", "acct2")); i++ {
		}
		for i := range 3 {
			if handOver(logFor(fmt.Sprint("held-new-q", i), "new", "acct2")) {
				t.Fatal("handed over past the webhook's room")
			}
		}

		// The webhook's room full, its logs wait in the queue. Two are
		// within the account's credit (a batch); a third makes it owe.
		for i, id := range []string{"held-q1", "held-q2"} {
			if handOver(logFor(id, "hook", "acct")) {
				t.Fatalf("%s handed over past the webhook's room", id)
			}
			if done := paced("acct"); waiting(done) != (i == 1) {
				t.Fatalf("after %d logs left in the queue, Pace waiting: %v; want %v", i+2, waiting(done), i == 1)
			}
		}
		held := paced("acct")
		for _, acct := range []string{"acct2", "other"} {
			if waiting(paced(acct)) {
				t.Fatalf("%s's change waits for acct's logs", acct)
			}
		}

		// The process has CPU to spare: nothing waits.
		short.Store(false)
		if waiting(paced("acct")) {
			t.Fatal("a change waits in a process with CPU to spare")
		}
		short.Store(true)

		// The held requests answered, the claims take the logs in the
		// queue: the change goes ahead.
		start := time.Now()
		release()
		<-held
		if waited := time.Since(start); waited > time.Minute {
			t.Fatalf("the change went ahead %v after the claims; want once they took its logs", waited)
		}
		waitFor(t, "every log recorded", func() bool { return len(q.recorded()) == logs })
		synctest.Wait()
		rcv.sentOnce(t)
	})
}
