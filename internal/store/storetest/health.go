package storetest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

func testHealthStreak(t *testing.T, b *Bundle) {
	const suspendAfter = 3
	w := b.Webhook(t, "w")
	b.Fire(t, b.St, 8)
	c := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if len(c) != 8 {
		t.Fatalf("claimed %d; want 8", len(c))
	}
	now := b.Clock.Now()
	step := func(o store.Outcome, wantHealth store.Health, wantStreak, wantSuspensions int) {
		t.Helper()
		sp := b.Complete(t, b.St, suspendAfter, o)
		if h, streak := b.health(t, w.ID); h != wantHealth || streak != wantStreak || len(sp) != wantSuspensions {
			t.Fatalf("after %v on log %s: %s, streak %d, %d suspensions; want %s, %d, %d",
				o.Result, o.LogID, h, streak, len(sp), wantHealth, wantStreak, wantSuspensions)
		}
	}
	step(Outcome(c[0], store.Retry, 500, now), store.Healthy, 0, 0) // one failed attempt: status unchanged
	step(Outcome(c[1], store.Exhausted, 500, now), store.Unhealthy, 1, 0)
	step(Outcome(c[2], store.Exhausted, 500, now), store.Unhealthy, 2, 0)
	step(Outcome(c[3], store.Delivered, 200, now), store.Healthy, 0, 0)
	step(Outcome(c[4], store.Exhausted, 500, now), store.Unhealthy, 1, 0)
	step(Outcome(c[5], store.Cancel, 0, now), store.Unhealthy, 1, 0) // a cancelled log is not a completed event
	step(Outcome(c[6], store.Exhausted, 500, now), store.Unhealthy, 2, 0)
	step(Outcome(c[7], store.Exhausted, 500, now), store.Suspended, 3, 1)
	if n := b.Count(t, `SELECT COUNT(*) FROM emails WHERE account_id = ? AND recipient = ? AND kind = 'suspended'`, b.Account.ID, b.Account.NotificationEmail); n != 1 {
		t.Fatalf("%d suspension emails; want 1", n)
	}
	// Each turn to Unhealthy warned once: at c[1], and at c[4] after c[3]
	// restored it; a failure more while Unhealthy did not.
	if n := b.Count(t, `SELECT COUNT(*) FROM emails WHERE account_id = ? AND kind = 'unhealthy'`, b.Account.ID); n != 2 {
		t.Fatalf("%d Unhealthy emails; want 2", n)
	}

	// The retry fails for good while suspended: no second suspension or email.
	retry := b.Claim(t, b.St, time.Minute, time.Minute, 10, 10)
	if len(retry) != 1 || retry[0].Health != string(store.Suspended) {
		t.Fatalf("retry claim %+v", retry)
	}
	step(Outcome(retry[0], store.Exhausted, 500, now), store.Suspended, 4, 0)
	if n := b.Count(t, `SELECT COUNT(*) FROM emails WHERE account_id = ?`, b.Account.ID); n != 3 {
		t.Fatalf("%d emails; want still 3", n)
	}

	// A failed resend changes nothing; a delivered one makes it Healthy at once.
	resend := func(logID string, r store.Result, code int) store.Outcome {
		o := Outcome(store.Claim{LogID: logID, WebhookID: w.ID}, store.Delivered, code, now)
		o.Trigger, o.Result = store.TriggerResend, r
		return o
	}
	step(resend(c[1].LogID, store.ResendFailed, 500), store.Suspended, 4, 0)
	if l := b.log(t, c[1].LogID); l.Status != store.Failed || len(l.Attempts) != 2 || l.Attempts[1].Trigger != store.TriggerResend || l.AttemptCount != 1 || l.AttemptsMade != 2 {
		t.Fatalf("after a failed resend: %s, %d attempts (automatic %d, made %d)", l.Status, len(l.Attempts), l.AttemptCount, l.AttemptsMade)
	}
	step(resend(c[1].LogID, store.Delivered, 200), store.Healthy, 0, 0)
	if l := b.log(t, c[1].LogID); l.Status != store.Succeeded || len(l.Attempts) != 3 || l.AttemptsMade != 3 {
		t.Fatalf("after a good resend: %s, %d attempts (made %d)", l.Status, len(l.Attempts), l.AttemptsMade)
	}
	for _, l := range b.logs(t, store.LogFilter{WebhookID: w.ID}) { // a list counts the same way
		if l.ID == c[1].LogID && l.AttemptsMade != 3 {
			t.Fatalf("listed with %d attempts made; want 3", l.AttemptsMade)
		}
	}
}

// testConcurrentFailuresSuspendOnce records many failed events of one
// webhook at once, each in its own transaction, through several handles:
// every failure counts (no lost update), the webhook is suspended once, and
// one email is queued.
func testConcurrentFailuresSuspendOnce(t *testing.T, b *Bundle) {
	const n, suspendAfter = 40, 10
	w := b.Webhook(t, "w")
	b.Fire(t, b.St, n)
	c := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if len(c) != n {
		t.Fatalf("claimed %d; want %d", len(c), n)
	}
	handles := []*store.Store{b.St, b.Open(t), b.Open(t), b.Open(t)}
	var suspensions atomic.Int32
	now := b.Clock.Now()
	Parallel(n, func(i int) {
		sp, err := queue.New(handles[i%len(handles)]).Complete(b.Ctx, []store.Outcome{Outcome(c[i], store.Exhausted, 500, now)}, suspendAfter)
		if err != nil {
			t.Errorf("complete: %v", err)
		}
		suspensions.Add(int32(len(sp)))
	})
	if h, streak := b.health(t, w.ID); h != store.Suspended || streak != n {
		t.Errorf("webhook %s with streak %d; want Suspended, %d", h, streak, n)
	}
	if got := suspensions.Load(); got != 1 {
		t.Errorf("%d suspensions reported; want 1", got)
	}
	// And warned once of each state: Unhealthy, then Suspended.
	for _, kind := range []string{store.EmailUnhealthy, store.EmailSuspended} {
		if got := b.Count(t, `SELECT COUNT(*) FROM emails WHERE account_id = ? AND kind = ?`, b.Account.ID, kind); got != 1 {
			t.Errorf("%d %s emails queued; want 1", got, kind)
		}
	}
}

// testConcurrentDeliveryNotLost races one delivery against failures on a
// webhook one failure short of suspension. Whatever order the transactions
// take, the result must be one of the orders played out in full: the
// delivery is never lost and a suspension is never half made.
func testConcurrentDeliveryNotLost(t *testing.T, b *Bundle) {
	const suspendAfter, failures = 5, 3
	handles := []*store.Store{b.St, b.Open(t), b.Open(t), b.Open(t)}
	for round := range 6 {
		w := b.Webhook(t, "w")
		b.Fire(t, b.St, suspendAfter-1+failures+1)
		c := b.Claim(t, b.St, 0, time.Minute, 100, 100, b.others(t, w.ID)...)
		if len(c) != suspendAfter+failures {
			t.Fatalf("claimed %d; want %d", len(c), suspendAfter+failures)
		}
		now := b.Clock.Now()
		for _, x := range c[:suspendAfter-1] {
			b.Complete(t, b.St, suspendAfter, Outcome(x, store.Exhausted, 500, now))
		}
		emailsBefore := b.Count(t, `SELECT COUNT(*) FROM emails WHERE kind = 'suspended'`)
		racing := c[suspendAfter-1:]
		var suspensions atomic.Int32
		Parallel(len(racing), func(i int) {
			r, code := store.Exhausted, 500
			if i == round%len(racing) {
				r, code = store.Delivered, 200
			}
			sp, err := queue.New(handles[i%len(handles)]).Complete(b.Ctx, []store.Outcome{Outcome(racing[i], r, code, now)}, suspendAfter)
			if err != nil {
				t.Errorf("complete: %v", err)
			}
			suspensions.Add(int32(len(sp)))
		})
		h, streak := b.health(t, w.ID)
		emails := b.Count(t, `SELECT COUNT(*) FROM emails WHERE kind = 'suspended'`) - emailsBefore
		sp := int(suspensions.Load())
		ok := false
		switch sp {
		case 0: // the delivery came first: a fresh streak of every failure
			ok = streak == failures && h == store.Unhealthy
		case 1: // some failures suspended it, the delivery restored it, the rest count anew
			ok = streak < failures && h != store.Suspended && (streak == 0) == (h == store.Healthy)
		}
		if !ok || emails != sp {
			t.Errorf("round %d: %s with streak %d after %d suspensions and %d emails: no order of the outcomes gives that",
				round, h, streak, sp, emails)
		}
	}
}

// others lists the test account's webhooks other than id.
func (b *Bundle) others(t testing.TB, id string) []string {
	t.Helper()
	list, _, err := b.St.Webhooks(b.Ctx, b.Account.ID, store.WebhookFilter{Page: store.Page{Limit: 500}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range list {
		if w.ID != id {
			ids = append(ids, w.ID)
		}
	}
	return ids
}

// testBatchesDoNotDeadlock records batches that touch the same webhooks in
// different orders, through several handles at once, while events fire for
// those webhooks: none may fail (PostgreSQL fails one side of a deadlock).
func testBatchesDoNotDeadlock(t *testing.T, b *Bundle) {
	var hooks []string
	for _, name := range []string{"a", "c", "d", "e"} {
		hooks = append(hooks, b.Webhook(t, name).ID)
	}
	b.Fire(t, b.St, 40)
	c := b.Claim(t, b.St, 0, time.Minute, 1000, 1000)
	if len(c) != 160 {
		t.Fatalf("claimed %d; want 160", len(c))
	}
	byHook := map[string][]store.Claim{}
	for _, x := range c {
		byHook[x.WebhookID] = append(byHook[x.WebhookID], x)
	}
	// Batch i takes 5 logs of each webhook, the webhooks in an order of its own.
	const batches = 8
	now := b.Clock.Now()
	outs := make([][]store.Outcome, batches)
	for i := range batches {
		order := slices.Clone(hooks)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		order = append(order[i%4:], order[:i%4]...)
		for _, h := range order {
			for j, x := range byHook[h][i*5 : i*5+5] {
				r := store.Exhausted
				if j%2 == 0 {
					r = store.Delivered
				}
				outs[i] = append(outs[i], Outcome(x, r, 500, now))
			}
		}
	}
	handles := []*store.Store{b.St, b.Open(t), b.Open(t), b.Open(t)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			if err := handles[3].InTx(b.Ctx, func(tx *store.Tx) error {
				_, err := tx.Fire(b.Ctx, b.Account.ID, "license.created", map[string]any{})
				return err
			}); err != nil {
				t.Errorf("fire: %v", err)
			}
		}
	}()
	Parallel(batches, func(i int) {
		if _, err := queue.New(handles[i%len(handles)]).Complete(b.Ctx, outs[i], 1000); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	})
	wg.Wait()
	if n := b.Count(t, `SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL`); n != 0 {
		t.Errorf("%d logs still pending after every batch was recorded", n)
	}
}
