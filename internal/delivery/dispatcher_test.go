package delivery_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Dispatcher tests over fakeQueue: no database, a receiver over net.Pipe,
// and time faked by testing/synctest, so a test of leases and retries runs
// in milliseconds. The same paths on the real store, on both engines, are
// tested by the lease, renew and trace tests here and by internal/server.

// epoch is where the injected clock starts: far from the bubble's own
// 2000-01-01, so that a time read from time.Now rather than Config.Now
// would show.
var epoch = time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

// offsetClock is the clock the tests inject: the bubble's time, moved to
// epoch. Call it inside the bubble.
func offsetClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return epoch.Add(time.Since(start)) }
}

// dueLog is a log of webhook "hook" for event evt-id, attempted attempts
// times before, sent to url.
func dueLog(id string, attempts int, url string) attempt.Claim {
	return attempt.Claim{LogID: "log-" + id, AccountID: "acct", WebhookID: "hook", EventID: "evt-" + id,
		Event: string(event.LicenseCreated), Body: []byte(`{"id":"evt-` + id + `"}`), URL: url,
		Token: "whsec_fake_queue_token_0123456789", Enabled: true, Health: string(store.Healthy), AttemptCount: attempts}
}

// run runs d until stop is called or the test ends.
func run(t *testing.T, d *delivery.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return stop
}

// logTo logs to the test's output, shown when it fails or runs with -v.
func logTo(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

func answer(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func TestDispatcherRecordsEachOutcome(t *testing.T) {
	const maxAttempts, interval = 3, 7 * time.Minute
	for _, tt := range []struct {
		name     string
		code     int
		attempts int // made before this one
		disabled bool
		health   store.Health
		want     attempt.Result
		reason   string
		status   attempt.LogStatus
		sent     int
	}{
		{"a 2xx is delivered", 204, 0, false, store.Healthy, attempt.Delivered, "", attempt.Succeeded, 1},
		{"a 500 with attempts left retries after the interval", 500, 0, false, store.Healthy, attempt.Retry, "receiver answered 500", attempt.Retrying, 1},
		{"a 500 on the last attempt is exhausted", 500, maxAttempts - 1, false, store.Unhealthy, attempt.Exhausted,
			"receiver answered 500; no attempts left", attempt.Failed, 1},
		{"a disabled webhook's log is cancelled unsent", 204, 0, true, store.Healthy, attempt.Cancel,
			"webhook disabled before this attempt; no delivery attempted", attempt.Cancelled, 0},
		{"a suspended webhook's log is cancelled unsent", 204, 1, false, store.Suspended, attempt.Cancel,
			store.ReasonSuspendedBefore, attempt.Cancelled, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := offsetClock()
				q := newFakeQueue(clock)
				rcv := newPipeReceiver(t, answer(tt.code))
				c := dueLog("1", tt.attempts, rcv.URL)
				c.Enabled, c.Health = !tt.disabled, string(tt.health)
				q.add(c)
				run(t, delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), MaxAttempts: maxAttempts, RetryInterval: interval}))
				waitFor(t, "the outcome to be recorded", func() bool { return len(q.recorded()) > 0 })
				synctest.Wait()

				out := q.recorded()
				if len(out) != 1 {
					t.Fatalf("%d outcomes recorded; want 1", len(out))
				}
				o := out[0]
				if o.Result != tt.want || o.Reason != tt.reason || o.Trigger != attempt.TriggerAutomatic || o.Lease == "" {
					t.Errorf("recorded %s (%q), trigger %q, lease %q; want %s (%q), automatic, under the claim's lease",
						o.Result, o.Reason, o.Trigger, o.Lease, tt.want, tt.reason)
				}
				if got := rcv.Count(); got != tt.sent {
					t.Errorf("receiver got %d requests; want %d", got, tt.sent)
				}
				l := q.log(c.LogID)
				if l.status != tt.status {
					t.Errorf("log %s; want %s", l.status, tt.status)
				}
				if tt.sent == 0 {
					if o.Attempt != nil {
						t.Errorf("recorded an attempt %+v for a log not sent", o.Attempt)
					}
					return
				}
				a := o.Attempt
				if a == nil || a.StatusCode == nil || *a.StatusCode != tt.code {
					t.Fatalf("attempt %+v; want one answered %d", a, tt.code)
				}
				// Stamped by the injected clock, not time.Now.
				if a.SentAt.Before(epoch) || a.ReceivedAt == nil || a.ReceivedAt.Before(a.SentAt) {
					t.Errorf("attempt sent at %v, answered at %v; want both on the injected clock, from %v", a.SentAt, a.ReceivedAt, epoch)
				}
				if tt.want == attempt.Retry {
					if want := a.ReceivedAt.Add(interval); !o.NextAt.Equal(want) || !l.due.Equal(want) {
						t.Errorf("retry due at %v, log due at %v; want %v, the retry interval after the answer", o.NextAt, l.due, want)
					}
				} else if !o.NextAt.IsZero() {
					t.Errorf("next attempt at %v; want none", o.NextAt)
				}
			})
		})
	}
}

// At a steady low rate each log costs one claim: when its attempt ends
// and its outcome is recorded, nothing else being due, the freed slot wakes
// no claim (it would find nothing; on PostgreSQL at 200 events a second
// every delivery cost such a second claim). A retry the outcome puts back
// in the queue is still claimed when it falls due.
func TestDispatcherClaimsOnceALogWhenNothingElseIsDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		var failed atomic.Bool
		rcv := newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			// The log "retried" fails its first attempt.
			if r.Header.Get("webhook-id") == "evt-retried" && !failed.Swap(true) {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		// Polled once a minute: the retry below is claimed on time only
		// if the recorded outcome that queued it wakes a claim.
		run(t, delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), RetryInterval: time.Second,
			PollInterval: time.Minute}))
		synctest.Wait()
		before := q.claimed()
		const n = 5
		for i := range n {
			q.add(dueLog(strconv.Itoa(i), 0, rcv.URL))
			waitFor(t, "the outcome to be recorded", func() bool { return len(q.recorded()) == i+1 })
			synctest.Wait()
		}
		if got := q.claimed() - before; got != n {
			t.Errorf("%d claims for %d logs fired one at a time; want %d", got, n, n)
		}

		q.add(dueLog("retried", 0, rcv.URL))
		waitFor(t, "the retry to be delivered", func() bool { return len(q.recorded()) == n+2 })
		failure, retry := q.recorded()[n], q.recorded()[n+1]
		if retry.Result != attempt.Delivered || retry.LogID != "log-retried" {
			t.Fatalf("last outcome %s of %s; want the retry delivered", retry.Result, retry.LogID)
		}
		if late := retry.Attempt.SentAt.Sub(failure.NextAt); late > 100*time.Millisecond {
			t.Errorf("retry sent %v after it fell due; want at once", late)
		}
	})
}

// A recording held up (a slow commit) does not hold up the webhook's next
// delivery: an attempt made counts against the process until its outcome is
// recorded, but not against its webhook's claim room. And up to Recorders
// recordings are under way at once: with one, the third outcome waits for
// the first recording; with two, it is recorded beside it.
func TestDispatcherDeliversAndRecordsWhileARecordingIsHeldUp(t *testing.T) {
	for _, recorders := range []int{1, 2} {
		t.Run(fmt.Sprint(recorders, " recorders"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := offsetClock()
				q := newFakeQueue(clock)
				rcv := newPipeReceiver(t, answer(http.StatusNoContent))
				letGo := q.holdRecording()
				// One request at a time, so a claim may take two logs (twice
				// its limit): both are attempted and wait to be recorded.
				q.add(dueLog("1", 0, rcv.URL))
				q.add(dueLog("2", 0, rcv.URL))
				run(t, delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), Recorders: recorders, PerWebhook: 1}))
				waitFor(t, "the first two delivered and their recording begun", func() bool {
					n, _ := q.recording()
					return n == 1 && rcv.Count() == 2
				})
				q.add(dueLog("3", 0, rcv.URL))
				waitFor(t, "the third log to be delivered while the recording is held", func() bool { return rcv.Count() == 3 })
				time.Sleep(time.Second) // the bubble's time: the second outcome goes as far as it can
				if _, most := q.recording(); most != recorders {
					t.Errorf("%d recordings at once; want %d", most, recorders)
				}
				letGo()
				waitFor(t, "every outcome recorded", func() bool { return len(q.recorded()) == 3 })
			})
		})
	}
}

// A stop lets the attempt in flight finish and be recorded, and releases a
// log claimed but not yet attempted (here waiting for its webhook's one
// slot): due again at once, not when its lease would have ended.
func TestDispatcherReleasesClaimsNotAttemptedAtAStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		answered := make(chan struct{})
		rcv := newPipeReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			<-answered
			w.WriteHeader(http.StatusNoContent)
		})
		q.add(dueLog("1", 0, rcv.URL))
		q.add(dueLog("2", 0, rcv.URL))
		stop := run(t, delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), PerWebhook: 1, AttemptTimeout: time.Minute}))
		waitFor(t, "both logs claimed", func() bool {
			return rcv.Count() == 1 && q.log("log-2").status == attempt.Pending
		})
		stopped := make(chan struct{})
		go func() {
			stop()
			close(stopped)
		}()
		synctest.Wait() // the stop is seen before the slot frees
		close(answered)
		<-stopped

		out := q.recorded()
		results := map[string]attempt.Result{}
		for _, o := range out {
			results[o.LogID] = o.Result
		}
		if len(out) != 2 || results["log-1"] != attempt.Delivered || results["log-2"] != attempt.Release {
			t.Errorf("recorded %v; want log-1 delivered and log-2 released", results)
		}
		if l := q.log("log-2"); l.status != attempt.Queued || l.claim.Lease != "" || l.due.After(clock()) {
			t.Errorf("log-2 %s under lease %q, due at %v; want queued, unleased, due now (%v)", l.status, l.claim.Lease, l.due, clock())
		}
		if ids := rcv.IDs(); !slices.Equal(ids, []string{"evt-1"}) {
			t.Errorf("receiver got %v; want only evt-1", ids)
		}
	})
}

// A claim that reports an error may have committed all the same: the logs it
// took are released at once, and delivered once, not left until the lease
// ends.
func TestDispatcherReleasesTheLogsOfAFailedClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		rcv := newPipeReceiver(t, answer(http.StatusNoContent))
		q.add(dueLog("1", 0, rcv.URL))
		q.loseNextClaim()
		start := clock()
		d := delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t)})
		run(t, d)
		waitFor(t, "the delivery", func() bool { return len(q.recorded()) > 0 })

		q.mu.Lock()
		released, lost := slices.Concat(q.released...), q.lost
		q.mu.Unlock()
		if lost == "" || !slices.Contains(released, lost) {
			t.Errorf("released leases %v; want the failed claim's %q", released, lost)
		}
		if o := q.recorded()[0]; o.Result != attempt.Delivered || o.Lease == lost {
			t.Errorf("recorded %s under lease %q; want delivered under a later claim's", o.Result, o.Lease)
		}
		if ids := rcv.IDs(); !slices.Equal(ids, []string{"evt-1"}) {
			t.Errorf("receiver got %v; want evt-1 once", ids)
		}
		if took := clock().Sub(start); took >= d.Config().Lease/2 {
			t.Errorf("delivered %s after the failed claim; want well within a lease", took)
		}
	})
}

// A log whose recording is held up past its lease (a slow database) is
// still this process's: its lease is renewed every third of a lease, on the
// injected clock, and another process polling meanwhile does not take it
// over and send it again.
func TestDispatcherRenewsTheLeasesItHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		q, rcv, cfg, letGo := attemptHeldUp(t, offsetClock(), lease) // process A: sends, then waits to record
		defer letGo()
		held := q.log("log-1").claim.Lease
		run(t, delivery.New(q, cfg)) // process B, claiming every 50ms
		time.Sleep(3*lease + time.Second)

		renewals := q.renewed()
		if len(renewals) < 9 {
			t.Fatalf("%d renewals in 10s; want one a second", len(renewals))
		}
		for i, r := range renewals {
			if r.n != 1 || !r.until.Equal(r.at.Add(lease)) || r.at.Before(epoch) {
				t.Errorf("renewal %d at %v: %d leases until %v; want 1 until a lease later, on the injected clock", i, r.at, r.n, r.until)
			}
			if i > 0 && r.at.Sub(renewals[i-1].at) != lease/3 {
				t.Errorf("renewal %d came %s after the one before; want a third of the lease", i, r.at.Sub(renewals[i-1].at))
			}
		}
		if l := q.log("log-1"); l.status != attempt.Pending || l.claim.Lease != held {
			t.Errorf("log %s under lease %q; want still pending under A's %q", l.status, l.claim.Lease, held)
		}
		letGo()
		waitFor(t, "the outcome to be recorded", func() bool { return len(q.recorded()) > 0 })
		if o := q.recorded()[0]; o.Result != attempt.Delivered || o.Lease != held {
			t.Errorf("recorded %s under %q; want delivered under A's lease", o.Result, o.Lease)
		}
		if n := rcv.Count(); n != 1 {
			t.Errorf("the event was sent %d times with no process dead and no retry due; want once (the lease was taken over)", n)
		}
	})
}

// A process whose clock jumps past the leases it holds (it was paused, its
// host suspended, or a test moved its clock) before its renewer's next tick
// renews them before its next claim: that claim must not take over its own
// attempt, made and waiting to be recorded, and send it again. The clock
// jumps on the injected clock alone, so the renewer's ticks (real time, a
// third of a lease) never come.
func TestDispatcherRenewsBeforeClaimingWhenItsClockJumps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Minute
		base := offsetClock()
		var jumped atomic.Int64
		clock := func() time.Time { return base().Add(time.Duration(jumped.Load())) }
		q, rcv, _, letGo := attemptHeldUp(t, clock, lease)
		defer letGo()
		held := q.log("log-1").claim.Lease

		jumped.Store(int64(lease + time.Minute))
		q.add(dueLog("2", 0, rcv.URL)) // wakes the dispatcher to claim
		waitFor(t, "the second log's attempt", func() bool { return rcv.Count() > 1 })
		time.Sleep(time.Second) // polls, each of which could take log-1 over

		if l := q.log("log-1"); l.status != attempt.Pending || l.claim.Lease != held {
			t.Errorf("log-1 %s under lease %q; want still pending under the lease it was attempted under, %q", l.status, l.claim.Lease, held)
		}
		if ids := rcv.IDs(); !slices.Equal(ids, []string{"evt-1", "evt-2"}) {
			t.Errorf("sent %v; want evt-1 and evt-2 once each", ids)
		}
		letGo()
		waitFor(t, "both outcomes recorded", func() bool { return len(q.recorded()) == 2 })
		for _, o := range q.recorded() {
			if o.LogID == "log-1" && (o.Result != attempt.Delivered || o.Lease != held) {
				t.Errorf("log-1 recorded %s under %q; want delivered under %q", o.Result, o.Lease, held)
			}
		}
	})
}

// attemptHeldUp runs a dispatcher (polling every 50ms) over a fake queue
// holding one due log, and returns once its attempt is made: its outcome's
// recording is held up until letGo is called.
func attemptHeldUp(t *testing.T, clock func() time.Time, lease time.Duration) (q *fakeQueue, rcv *pipeReceiver, cfg delivery.Config, letGo func()) {
	t.Helper()
	q = newFakeQueue(clock)
	rcv = newPipeReceiver(t, answer(http.StatusNoContent))
	q.add(dueLog("1", 0, rcv.URL))
	letGo = q.holdRecording()
	cfg = delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), AttemptTimeout: time.Second, Lease: lease, PollInterval: 50 * time.Millisecond}
	run(t, delivery.New(q, cfg))
	t.Cleanup(letGo) // before the dispatcher's stop, which waits for the recording
	waitFor(t, "the first attempt", func() bool { return rcv.Count() > 0 })
	return q, rcv, cfg, letGo
}

// A dispatcher whose beats do not land (the database stalled for every
// process, decision 0117) takes over no lease that ended: the log of
// another process, pending under a lease that ended, stays with it however
// long the beats fail, while a log never leased is delivered all the same.
// Once the beats land again, the log is taken over, but only after a run
// of them a beat interval and a quarter long (Lease/3 × 5/4 = 5 s here).
func TestDispatcherUnsureOfItsWritesTakesNoLeaseOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := offsetClock()
		q := newFakeQueue(clock)
		rcv := newPipeReceiver(t, answer(http.StatusNoContent))
		orphan := dueLog("orphan", 0, rcv.URL)
		q.add(orphan)
		q.mu.Lock()
		l := q.find(orphan.LogID)
		l.status, l.due, l.claim.Lease = attempt.Pending, clock().Add(-time.Second), "another-process"
		q.beatsFail = true
		q.mu.Unlock()

		run(t, delivery.New(q, delivery.Config{Now: clock, Dial: rcv.Dial, Logger: logTo(t), AttemptTimeout: time.Second,
			Lease: 12 * time.Second, PollInterval: 100 * time.Millisecond}))
		q.add(dueLog("fresh", 0, rcv.URL))
		waitFor(t, "the fresh log's delivery", func() bool { return len(q.recorded()) == 1 })
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := q.log(orphan.LogID); got.claim.Lease != "another-process" {
			t.Fatalf("the log of an ended lease was taken over while the beats failed (lease %q); want it left", got.claim.Lease)
		}

		q.mu.Lock()
		q.beatsFail = false
		q.mu.Unlock()
		back := clock()
		waitFor(t, "the ended lease to be taken over", func() bool { return len(q.recorded()) == 2 })
		if waited := clock().Sub(back); waited < 5*time.Second {
			t.Errorf("taken over %s after the beats landed again; want a run of 5s of them first", waited)
		}
		if o := q.recorded()[1]; o.LogID != orphan.LogID || o.Result != attempt.Delivered {
			t.Errorf("second outcome %s of %s; want the orphan delivered", o.Result, o.LogID)
		}
	})
}
