package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

func testFireQueuesOrCancels(t *testing.T, b *Bundle) {
	on := b.Webhook(t, "on")
	off := b.Webhook(t, "off")
	off.Enabled = false
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, off.ID, store.WebhookPatch{Enabled: &off.Enabled}); err != nil {
		t.Fatal(err)
	}
	suspended := b.Webhook(t, "suspended")
	b.Fire(t, b.St, 1)
	c := b.Claim(t, b.St, 0, time.Minute, 10, 10, on.ID, off.ID)
	if len(c) != 1 || c[0].WebhookID != suspended.ID {
		t.Fatalf("claimed %+v; want the one log of %s", c, suspended.ID)
	}
	if sp := b.Complete(t, b.St, 1, Outcome(c[0], store.Exhausted, 500, b.Clock.Now())); len(sp) != 1 {
		t.Fatalf("suspensions %+v; want 1", sp)
	}
	unsubscribed, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "other", URL: "https://example.com/x",
		Events: []event.Kind{event.LicenseDeleted}, Enabled: true, Token: "whsec_other_0123456789"})
	if err != nil {
		t.Fatal(err)
	}

	ids := b.Fire(t, b.St, 1)
	want := map[string]store.LogStatus{on.ID: store.Queued, off.ID: store.Cancelled, suspended.ID: store.Cancelled}
	logs := b.logs(t, store.LogFilter{EventID: ids[0]})
	if len(logs) != len(want) {
		t.Fatalf("%d logs; want %d", len(logs), len(want))
	}
	// A cancelled log is complete when it is made (retention counts from
	// then); a queued one is not.
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE event_id = ? AND (status = 'cancelled') = (completed_at IS NULL)`, ids[0]); n != 0 {
		t.Errorf("%d logs with a completion time that does not match their status", n)
	}
	for _, l := range logs {
		if l.WebhookID == unsubscribed.ID {
			t.Errorf("a webhook not subscribed to %s got a log", event.LicenseCreated)
		}
		if l.Status != want[l.WebhookID] {
			t.Errorf("log of webhook %s is %s; want %s", l.WebhookID, l.Status, want[l.WebhookID])
		}
		wantReason := map[string]string{off.ID: store.ReasonDisabled, suspended.ID: store.ReasonSuspended}[l.WebhookID]
		if got := ""; l.RetryReason != nil {
			got = *l.RetryReason
			if got != wantReason {
				t.Errorf("log of webhook %s gives reason %q; want %q", l.WebhookID, got, wantReason)
			}
		} else if wantReason != "" {
			t.Errorf("log of webhook %s gives no reason; want %q", l.WebhookID, wantReason)
		}
		// Log ids are UUIDv7s, ordered by time like every id herald makes.
		if u, err := uuid.Parse(l.ID); err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Errorf("log id %q is not a UUIDv7 (%v)", l.ID, err)
		}
		if l.Status == store.Queued && (l.NextAttemptAt == nil || !l.NextAttemptAt.Equal(b.Clock.Now())) {
			t.Errorf("queued log due at %v; want now", l.NextAttemptAt)
		}
	}
}

func testClaimTakesDueLogsUnderALease(t *testing.T, b *Bundle) {
	w := b.Webhook(t, "w")
	b.Fire(t, b.St, 3)
	c := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(c) != 3 {
		t.Fatalf("claimed %d; want 3", len(c))
	}
	for _, x := range c {
		if x.WebhookID != w.ID || x.Lease == "" || x.Token != "whsec_w_0123456789" || !x.Enabled || x.Health != string(store.Healthy) || x.AttemptCount != 0 {
			t.Errorf("claim %+v", x)
		}
		if l := b.log(t, x.LogID); l.Status != store.Pending || string(x.Body) != string(l.Payload) {
			t.Errorf("claimed log is %s, body %q; want pending with its payload", l.Status, x.Body)
		}
	}
	if again := b.Claim(t, b.St, 30*time.Second, time.Minute, 10, 10); len(again) != 0 {
		t.Errorf("leased logs claimed again within their lease: %d", len(again))
	}

	// A retry is not due before its time.
	now := b.Clock.Now()
	b.Complete(t, b.St, 50, Outcome(c[0], store.Retry, 503, now), Outcome(c[1], store.Delivered, 200, now), Outcome(c[2], store.Exhausted, 500, now))
	l := b.log(t, c[0].LogID)
	if l.Status != store.Retrying || l.NextAttemptAt == nil || !l.NextAttemptAt.Equal(now.Add(time.Minute)) || l.AttemptCount != 1 || len(l.Attempts) != 1 {
		t.Fatalf("after a retry: %s next %v, %d attempts", l.Status, l.NextAttemptAt, l.AttemptCount)
	}
	if st := b.log(t, c[1].LogID).Status; st != store.Succeeded {
		t.Errorf("delivered log is %s", st)
	}
	if st := b.log(t, c[2].LogID).Status; st != store.Failed {
		t.Errorf("exhausted log is %s", st)
	}
	if got := b.Claim(t, b.St, 59*time.Second, time.Minute, 10, 10); len(got) != 0 {
		t.Errorf("a retry was claimed before its time")
	}
	got := b.Claim(t, b.St, time.Minute, time.Minute, 10, 10)
	if len(got) != 1 || got[0].LogID != c[0].LogID || got[0].AttemptCount != 1 {
		t.Fatalf("at its time the retry claims as %+v", got)
	}
	if next, ok, err := b.Q.NextDue(b.Ctx); err != nil || !ok || !next.Equal(now.Add(2*time.Minute)) {
		t.Errorf("NextDue = %v, %v, %v; want the lease's end", next, ok, err)
	}
}

func testClaimCapsEachWebhook(t *testing.T, b *Bundle) {
	a, c := b.Webhook(t, "a"), b.Webhook(t, "c")
	b.Fire(t, b.St, 10)
	got := b.Claim(t, b.St, 0, time.Minute, 100, 3)
	per := map[string]int{}
	for _, x := range got {
		per[x.WebhookID]++
	}
	if per[a.ID] != 3 || per[c.ID] != 3 {
		t.Fatalf("claimed %v; want 3 of each webhook", per)
	}
	got = b.Claim(t, b.St, 0, time.Minute, 100, 100, a.ID)
	if len(got) != 7 {
		t.Fatalf("claimed %d; want the 7 left of the webhook not excluded", len(got))
	}
	for _, x := range got {
		if x.WebhookID != c.ID {
			t.Errorf("claimed a log of the excluded webhook")
		}
	}
	if got := b.Claim(t, b.St, 0, time.Minute, 5, 100); len(got) != 5 {
		t.Errorf("claimed %d; want the limit, 5", len(got))
	}
}

func testExpiredLeaseTakenOver(t *testing.T, b *Bundle) {
	w := b.Webhook(t, "w")
	b.Fire(t, b.St, 1)
	other := b.Open(t) // another process
	first := b.Claim(t, b.St, 0, 5*time.Second, 10, 10)
	if len(first) != 1 {
		t.Fatalf("claimed %d; want 1", len(first))
	}
	if got := b.Claim(t, other, 4*time.Second, 5*time.Second, 10, 10); len(got) != 0 {
		t.Fatalf("another process took a log whose lease runs")
	}
	// The first process dies mid-attempt; its lease ends and another takes over.
	second := b.Claim(t, other, 6*time.Second, 5*time.Second, 10, 10)
	if len(second) != 1 || second[0].LogID != first[0].LogID || second[0].Lease == first[0].Lease {
		t.Fatalf("after the lease ended another process claimed %+v", second)
	}
	// PostgreSQL, where processes share a database, says which claims took
	// over an ended lease; SQLite releases them at start instead.
	if first[0].TakenOver || second[0].TakenOver != (b.St.Engine() == "postgres") {
		t.Errorf("taken over: first claim %t, second %t; want false, and true on PostgreSQL", first[0].TakenOver, second[0].TakenOver)
	}

	// The first process's outcome arrives late: dropped, whatever it says.
	now := b.Clock.Now()
	for _, r := range []store.Result{store.Delivered, store.Exhausted, store.Retry, store.Cancel} {
		if sp := b.Complete(t, b.St, 1, Outcome(first[0], r, 500, now)); len(sp) != 0 {
			t.Fatalf("a stale outcome suspended the webhook")
		}
	}
	l := b.log(t, first[0].LogID)
	if l.Status != store.Pending || len(l.Attempts) != 0 || l.AttemptCount != 0 {
		t.Fatalf("after stale outcomes: %s with %d attempts; want pending, none", l.Status, len(l.Attempts))
	}
	if h, streak := b.health(t, w.ID); h != store.Healthy || streak != 0 {
		t.Fatalf("stale outcomes moved health to %s/%d", h, streak)
	}

	// One batch with a stale and the current outcome of that log, and
	// another log's: only the current ones count.
	b.Fire(t, b.St, 1)
	third := b.Claim(t, other, 6*time.Second, 5*time.Second, 10, 10)
	if len(third) != 1 {
		t.Fatalf("claimed %d; want the new log", len(third))
	}
	b.Complete(t, other, 1, Outcome(first[0], store.Exhausted, 500, now), Outcome(second[0], store.Delivered, 200, now),
		Outcome(third[0], store.Retry, 503, now))
	if l := b.log(t, first[0].LogID); l.Status != store.Succeeded || len(l.Attempts) != 1 || *l.Attempts[0].StatusCode != 200 {
		t.Errorf("the current lease's outcome: %s with %d attempts", l.Status, len(l.Attempts))
	}
	if l := b.log(t, third[0].LogID); l.Status != store.Retrying || len(l.Attempts) != 1 || l.AttemptCount != 1 {
		t.Errorf("the other log: %s with %d attempts", l.Status, len(l.Attempts))
	}
	if h, streak := b.health(t, w.ID); h != store.Healthy || streak != 0 {
		t.Errorf("after the batch: %s/%d; want Healthy/0", h, streak)
	}
}

// testConcurrentClaims has several handles (processes) claim at once, in
// small batches, until nothing is left: every log is claimed exactly once.
func testConcurrentClaims(t *testing.T, b *Bundle) {
	for _, name := range []string{"a", "c", "d", "e"} {
		b.Webhook(t, name)
	}
	b.Fire(t, b.St, 60) // 240 logs
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	var mu sync.Mutex
	seen := map[string]int{}
	Parallel(6, func(i int) {
		st := handles[i%len(handles)]
		for {
			now := b.Clock.Now()
			cs, err := queue.New(st).Claim(b.Ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 7, PerWebhook: 3})
			if err != nil {
				t.Errorf("claim: %v", err)
				return
			}
			if len(cs) == 0 {
				return
			}
			mu.Lock()
			for _, c := range cs {
				seen[c.LogID]++
			}
			mu.Unlock()
		}
	})
	if len(seen) != 240 {
		t.Errorf("%d logs claimed; want 240", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("log %s claimed %d times", id, n)
		}
	}
}

func testBeginResend(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	b.Fire(t, b.St, 1)
	logID := b.logs(t, store.LogFilter{})[0].ID
	until := func() time.Time { return b.Clock.Now().Add(time.Minute) }
	c, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, until())
	if err != nil || c.Lease != "" || len(c.Body) == 0 {
		t.Fatalf("resend of a queued log: %+v, %v", c, err)
	}
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, until()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second resend while the first is in flight: %v; want ErrConflict", err)
	}
	if got := b.Claim(t, b.St, 0, time.Minute, 10, 10); len(got) != 0 {
		t.Fatalf("a claim took a log a resend holds: %d", len(got))
	}
	other := b.NewAccount(t, "b@example.com")
	if _, err := b.Q.BeginResend(b.Ctx, other.ID, logID, until()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another account's resend: %v; want ErrNotFound", err)
	}
	// Recording the resend ends its mark.
	failed := store.Outcome{LogID: logID, WebhookID: c.WebhookID, Trigger: store.TriggerResend, Result: store.ResendFailed, Reason: "receiver answered 500"}
	b.Complete(t, b.St, 50, failed)
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, until()); err != nil {
		t.Fatalf("resend after the last one was recorded: %v", err)
	}
	// A resend that was not sent after all ends its mark without an attempt.
	if err := b.Q.EndResend(b.Ctx, logID); err != nil {
		t.Fatal(err)
	}
	claimed := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d after the resend ended; want 1", len(claimed))
	}
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, until()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("resend while an automatic attempt is in flight: %v; want ErrConflict", err)
	}
	b.Complete(t, b.St, 50, Outcome(claimed[0], store.Exhausted, 500, b.Clock.Now()))
	// A process that died mid-resend leaves a mark that ends by itself.
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, b.Clock.Now().Add(time.Second)); err != nil {
		t.Fatalf("resend of a failed log: %v", err)
	}
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, until()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("resend within the first one's mark: %v; want ErrConflict", err)
	}
	b.Clock.Add(2 * time.Second)
	if _, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, until()); err != nil {
		t.Fatalf("resend after the last mark ended: %v", err)
	}
}

// testClaimGivesEachWebhookItsRoom: Room caps the webhooks it names below
// or above PerWebhook, and leaves the others at PerWebhook.
func testClaimGivesEachWebhookItsRoom(t *testing.T, b *Bundle) {
	a, c, d := b.Webhook(t, "a"), b.Webhook(t, "c"), b.Webhook(t, "d")
	b.Fire(t, b.St, 10)
	now := b.Clock.Now()
	got, err := b.Q.Claim(b.Ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(),
		Limit: 100, PerWebhook: 2, Room: map[string]int{a.ID: 1, c.ID: 5}})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, x := range got {
		per[x.WebhookID]++
	}
	if per[a.ID] != 1 || per[c.ID] != 5 || per[d.ID] != 2 {
		t.Fatalf("claimed a=%d c=%d d=%d; want 1, 5 (their room) and 2 (PerWebhook)", per[a.ID], per[c.ID], per[d.ID])
	}
}

// testClaimPassesOverExcludedBeforeItsWindow: a webhook with no room is
// passed over before the claim's window of the oldest due logs is taken, so
// its backlog (a dead receiver's logs stay due) cannot stall the others.
func testClaimPassesOverExcludedBeforeItsWindow(t *testing.T, b *Bundle) {
	dead := b.Webhook(t, "dead")
	b.Fire(t, b.St, 50) // only the dead webhook subscribes yet: the oldest 50 due logs are its
	b.Clock.Add(time.Second)
	live := b.Webhook(t, "live")
	b.Fire(t, b.St, 5)
	got := b.Claim(t, b.St, time.Second, time.Minute, 10, 10, dead.ID) // a window of 40 logs
	if len(got) != 5 {
		t.Fatalf("claimed %d logs; want the live webhook's 5 behind the dead one's 55", len(got))
	}
	for _, c := range got {
		if c.WebhookID != live.ID {
			t.Errorf("claimed a log of the excluded webhook")
		}
	}
}

// testClaimSharesBehindOneBacklog: one webhook's deep backlog, older than
// everything else due, fills no more of a claim than that webhook's room;
// the rest goes to the other webhooks' due logs in the same claim, rather
// than waiting for the backlog to drain below the claim's window.
func testClaimSharesBehindOneBacklog(t *testing.T, b *Bundle) {
	deep := b.Webhook(t, "deep")
	b.Fire(t, b.St, 50) // only the deep webhook subscribes yet
	b.Clock.Add(time.Second)
	x, y := b.Webhook(t, "x"), b.Webhook(t, "y")
	b.Fire(t, b.St, 5)
	got := b.Claim(t, b.St, time.Second, time.Minute, 10, 4)
	per := map[string]int{}
	for _, c := range got {
		per[c.WebhookID]++
	}
	if len(got) != 10 || per[deep.ID] != 4 || per[x.ID] == 0 || per[y.ID] == 0 {
		t.Fatalf("claimed deep=%d x=%d y=%d (%d in all); want the deep webhook's room, 4, and the other 6 shared by x and y",
			per[deep.ID], per[x.ID], per[y.ID], len(got))
	}
}

// testResendOfAWaitingLog: a log waits in the queue until its outcome
// completes it, whoever sends it. A failed resend of a waiting log leaves it
// waiting (due, claimable, counted in the backlog); a delivered one
// completes it, and no automatic attempt follows.
func testResendOfAWaitingLog(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	b.Fire(t, b.St, 1)
	logID := b.logs(t, store.LogFilter{})[0].ID
	backlog := func() int {
		t.Helper()
		g := b.gauges(t)
		return g.Backlog[store.Queued] + g.Backlog[store.Retrying] + g.Backlog[store.Pending]
	}
	resend := func(ok bool) {
		t.Helper()
		c, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		b.Complete(t, b.St, 50, resent(c, "", ok, b.Clock.Now()))
	}
	resend(false)
	if l := b.log(t, logID); l.Status != store.Queued || l.NextAttemptAt == nil || backlog() != 1 {
		t.Fatalf("after a failed resend: %s, next attempt %v, backlog %d; want queued, due, in the backlog", l.Status, l.NextAttemptAt, backlog())
	}
	if _, ok, err := b.Q.NextDue(b.Ctx); err != nil || !ok {
		t.Fatalf("next due after a failed resend: %v, %v; want the log", ok, err)
	}
	resend(true)
	if l := b.log(t, logID); l.Status != store.Succeeded || l.NextAttemptAt != nil || backlog() != 0 {
		t.Fatalf("after a delivered resend: %s, next attempt %v, backlog %d; want succeeded, none, an empty backlog", l.Status, l.NextAttemptAt, backlog())
	}
	if _, ok, err := b.Q.NextDue(b.Ctx); err != nil || ok {
		t.Fatalf("next due after the log was delivered: %v, %v; want none", ok, err)
	}
	if got := b.Claim(t, b.St, time.Hour, time.Minute, 10, 10); len(got) != 0 {
		t.Fatalf("claimed %d logs after the resend delivered the only one; want none", len(got))
	}
}
