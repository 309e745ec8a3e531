package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// testRateLimitIsKeptAndClaimed: a webhook's rate limit is stored, read
// back, carried by every claim, changed, left by a patch of another field
// and removed; another account cannot change it.
func testRateLimitIsKeptAndClaimed(t *testing.T, b *Bundle) {
	plain := b.Webhook(t, "plain")
	if plain.RateLimit != 0 {
		t.Errorf("default rate limit %d; want 0 (none)", plain.RateLimit)
	}
	slow, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "slow", URL: "https://example.com/slow",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_slow_0123456789", RateLimit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.St.Webhook(b.Ctx, b.Account.ID, slow.ID); err != nil || got.RateLimit != 50 {
		t.Fatalf("read back rate limit %d, %v; want 50", got.RateLimit, err)
	}
	b.Fire(t, b.St, 1)
	rates := map[string]int{}
	for _, c := range b.Claim(t, b.St, 0, time.Minute, 10, 10) {
		rates[c.WebhookID] = c.RateLimit
	}
	if len(rates) != 2 || rates[plain.ID] != 0 || rates[slow.ID] != 50 {
		t.Errorf("claims carry rate limits %v; want 0 for %s and 50 for %s", rates, plain.ID, slow.ID)
	}

	other := b.NewAccount(t, "other@example.com")
	one := 1
	if _, err := b.St.UpdateWebhook(b.Ctx, other.ID, slow.ID, store.WebhookPatch{RateLimit: &one}); err == nil {
		t.Errorf("another account changed the rate limit")
	}
	for _, tt := range []struct {
		name string
		rate *int
		want int
	}{
		{"changed", ptr(store.MaxRateLimit), store.MaxRateLimit},
		{"left by another field's patch", nil, store.MaxRateLimit},
		{"removed", ptr(0), 0},
		{"set again", ptr(1), 1},
	} {
		name := "slow " + tt.name
		u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, slow.ID, store.WebhookPatch{Name: &name, RateLimit: tt.rate})
		if err != nil || u.RateLimit != tt.want {
			t.Errorf("%s: rate limit %d, %v; want %d", tt.name, u.RateLimit, err, tt.want)
		}
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhooks WHERE rate_limit IS NULL AND id = ?`, plain.ID); n != 1 {
		t.Errorf("no limit is not stored as NULL")
	}
}

// testReservationsTakeDisjointSlots: send slots are interval apart, never
// before now nor past the horizon, and reservations made at once through
// several store handles (processes) never take the same slot or two slots
// closer than the interval. An idle webhook's slots start at now again.
func testReservationsTakeDisjointSlots(t *testing.T, b *Bundle) {
	w := b.Webhook(t, "throttled")
	const interval = 20 * time.Millisecond // 50/s
	now := b.Clock.Now()
	until := now.Add(time.Second)

	g, err := b.Q.ReserveSends(b.Ctx, w.ID, interval, 10, now, until)
	if err != nil {
		t.Fatal(err)
	}
	if g.Count != 10 || !g.First.Equal(now) || g.Interval != interval || !g.Next.Equal(now.Add(10*interval)) {
		t.Fatalf("first grant %+v; want 10 slots from now, 20ms apart", g)
	}

	// Reservations at once through several handles, until the horizon is
	// full: 51 slots fit in [now, now+1s]; 10 are taken.
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	var mu sync.Mutex
	slots := []time.Time{}
	for i := range g.Count {
		slots = append(slots, g.Slot(i))
	}
	Parallel(6, func(i int) {
		for range 4 {
			g, err := queue.New(handles[i%len(handles)]).ReserveSends(b.Ctx, w.ID, interval, 3, now, until)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for j := range g.Count {
				slots = append(slots, g.Slot(j))
			}
			mu.Unlock()
		}
	})
	if t.Failed() {
		return
	}
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	if len(slots) != 51 {
		t.Errorf("%d slots granted in a second at 50/s; want 51 (the horizon's)", len(slots))
	}
	for i, s := range slots {
		if s.Before(now) || s.After(until) {
			t.Errorf("slot %d at %v: outside [now, until]", i, s.Sub(now))
		}
		if i > 0 && s.Sub(slots[i-1]) < interval {
			t.Errorf("slots %d and %d %v apart; want at least %v", i-1, i, s.Sub(slots[i-1]), interval)
		}
	}

	// The horizon is full: nothing more, and Next says when a slot frees.
	g, err = b.Q.ReserveSends(b.Ctx, w.ID, interval, 5, now, until)
	if err != nil || g.Count != 0 || !g.Next.After(until) {
		t.Errorf("past the horizon: %+v, %v; want no slot and Next after the horizon", g, err)
	}
	// Later, idle: the slots start at the new now, not in the past.
	later := now.Add(time.Hour)
	g, err = b.Q.ReserveSends(b.Ctx, w.ID, interval, 2, later, later.Add(time.Second))
	if err != nil || g.Count != 2 || !g.First.Equal(later) {
		t.Errorf("an hour later: %+v, %v; want 2 slots from then", g, err)
	}
	// A sub-millisecond interval (10,000/s) is kept to the microsecond.
	g, err = b.Q.ReserveSends(b.Ctx, w.ID, 100*time.Microsecond, 100, later.Add(time.Minute), later.Add(time.Minute+time.Second))
	if err != nil || g.Count != 100 || g.Interval != 100*time.Microsecond || g.Next.Sub(g.First) != 10*time.Millisecond {
		t.Errorf("at 10,000/s: %+v, %v; want 100 slots over 10ms", g, err)
	}
}

// testReleaseAtATimeDefersWithoutAnAttempt: a log given back to wait for
// its webhook's send slot (a Release outcome with a due time) is not an
// attempt: no attempt row, its attempt count, retry reason and status
// family kept, the webhook's health untouched; it is not claimed before
// its time and is claimed at it.
func testReleaseAtATimeDefersWithoutAnAttempt(t *testing.T, b *Bundle) {
	w := b.Webhook(t, "throttled")
	b.Fire(t, b.St, 2)
	now := b.Clock.Now()
	claims := b.Claim(t, b.St, 0, time.Hour, 10, 10) // held while the clock moves
	if len(claims) != 2 {
		t.Fatalf("claimed %d; want 2", len(claims))
	}
	// One of them failed once: it is retrying when its turn is deferred.
	b.Complete(t, b.St, 50, Outcome(claims[1], store.Retry, 503, now))
	b.Clock.Add(2 * time.Minute)
	now = b.Clock.Now()
	retried := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	first := b.Claim(t, b.St, 0, time.Minute, 10, 10) // nothing more due
	if len(retried) != 1 || len(first) != 0 {
		t.Fatalf("claimed %d then %d; want the retry alone", len(retried), len(first))
	}
	statusBefore, streakBefore := b.health(t, w.ID)
	due := now.Add(10 * time.Second)
	b.Complete(t, b.St, 50,
		store.Outcome{LogID: claims[0].LogID, WebhookID: w.ID, Lease: claims[0].Lease, Trigger: store.TriggerAutomatic, Result: store.Release, NextAt: due},
		store.Outcome{LogID: retried[0].LogID, WebhookID: w.ID, Lease: retried[0].Lease, Trigger: store.TriggerAutomatic, Result: store.Release, NextAt: due})

	for _, tt := range []struct {
		id       string
		status   store.LogStatus
		attempts int
		reason   string
	}{
		{claims[0].LogID, store.Queued, 0, ""},
		{retried[0].LogID, store.Retrying, 1, "receiver answered 503"},
	} {
		l := b.log(t, tt.id)
		reason := ""
		if l.RetryReason != nil {
			reason = *l.RetryReason
		}
		if l.Status != tt.status || l.AttemptCount != tt.attempts || reason != tt.reason ||
			l.NextAttemptAt == nil || !l.NextAttemptAt.Equal(due) {
			t.Errorf("deferred log: %s, %d attempts, reason %q, next %v; want %s, %d, %q, due in 10s",
				l.Status, l.AttemptCount, reason, l.NextAttemptAt, tt.status, tt.attempts, tt.reason)
		}
		if n := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts WHERE log_id = ?`, tt.id); n != tt.attempts {
			t.Errorf("%d attempt rows; want %d (a deferral is no attempt)", n, tt.attempts)
		}
	}
	if status, streak := b.health(t, w.ID); status != statusBefore || streak != streakBefore {
		t.Errorf("health %s/%d after a deferral; want %s/%d unchanged", status, streak, statusBefore, streakBefore)
	}
	if n, err := b.Q.WaitingLogs(b.Ctx, b.Account.ID, w.ID, 100); err != nil || n != 1 {
		t.Errorf("waiting logs %d, %v; want 1 (the queued one; the retry is not due)", n, err)
	}
	if c := b.Claim(t, b.St, 9*time.Second, time.Minute, 10, 10); len(c) != 0 {
		t.Errorf("claimed %d before their slot; want none", len(c))
	}
	if c := b.Claim(t, b.St, 10*time.Second, time.Minute, 10, 10); len(c) != 2 {
		t.Errorf("claimed %d at their slot; want 2", len(c))
	}
	// Another account's count of this webhook is nothing.
	other := b.NewAccount(t, "other@example.com")
	if n, err := b.Q.WaitingLogs(b.Ctx, other.ID, w.ID, 100); err != nil || n != 0 {
		t.Errorf("another account counts %d waiting, %v; want 0", n, err)
	}
}
