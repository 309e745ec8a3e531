package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testOrdinaryBatchRecordsEachOutcome records one batch of every outcome
// an attempt ordinarily has, and a stale one, to a webhook whose health
// they cannot change (on PostgreSQL the batch of one round trip, decision
// 0106), then a batch whose delivery restores a webhook that is not
// Healthy (which that round trip hands to Complete's transaction): each
// log moves as its outcome says, each attempt is numbered and kept once,
// and the delivery restores the webhook.
func testOrdinaryBatchRecordsEachOutcome(t *testing.T, b *Bundle) {
	w, u := b.Webhook(t, "w"), b.Webhook(t, "u")
	b.Fire(t, b.St, 6)
	byHook := map[string][]store.Claim{}
	for _, c := range b.Claim(t, b.St, 0, time.Minute, 100, 100) {
		byHook[c.WebhookID] = append(byHook[c.WebhookID], c)
	}
	ws, us := byHook[w.ID], byHook[u.ID]
	if len(ws) != 6 || len(us) != 6 {
		t.Fatalf("claimed %d and %d; want 6 of each webhook", len(ws), len(us))
	}
	now := b.Clock.Now()
	b.Complete(t, b.St, 5, Outcome(us[0], store.Exhausted, 500, now))
	if h, streak := b.health(t, u.ID); h != store.Unhealthy || streak != 1 {
		t.Fatalf("u is %s/%d; want Unhealthy/1", h, streak)
	}

	stale := Outcome(ws[4], store.Delivered, 200, now)
	stale.Lease = store.NewID()
	released := Outcome(ws[2], store.Release, 0, now)
	released.Attempt = nil
	b.Complete(t, b.St, 5, Outcome(ws[0], store.Delivered, 200, now), Outcome(ws[1], store.Retry, 503, now),
		released, Outcome(ws[3], store.Cancel, 0, now), stale)
	for _, c := range []struct {
		claim    store.Claim
		status   store.LogStatus
		attempts int
	}{
		{ws[0], store.Succeeded, 1},
		{ws[1], store.Retrying, 1},
		{ws[2], store.Queued, 0},
		{ws[3], store.Cancelled, 0},
		{ws[4], store.Pending, 0}, // its lease runs: the stale outcome is dropped
	} {
		l := b.log(t, c.claim.LogID)
		if l.Status != c.status || len(l.Attempts) != c.attempts || l.AttemptCount != c.attempts {
			t.Errorf("log %s: %s with %d attempts (%d counted); want %s with %d", l.ID, l.Status, len(l.Attempts), l.AttemptCount, c.status, c.attempts)
		}
		if c.attempts == 1 && (l.Attempts[0].Number != 1 || l.Attempts[0].Trigger != store.TriggerAutomatic) {
			t.Errorf("log %s: attempt %+v; want number 1, automatic", l.ID, l.Attempts[0])
		}
	}
	if h, streak := b.health(t, w.ID); h != store.Healthy || streak != 0 {
		t.Errorf("w is %s/%d after the batch; want Healthy/0", h, streak)
	}
	// The released log is due again at once; the retry is not yet.
	again := b.Claim(t, b.St, 0, time.Minute, 100, 100)
	if len(again) != 1 || again[0].LogID != ws[2].LogID {
		t.Errorf("claimed %d logs after the batch; want the released one alone", len(again))
	}

	b.Complete(t, b.St, 5, Outcome(us[1], store.Delivered, 200, now), Outcome(ws[4], store.Delivered, 200, now))
	if h, streak := b.health(t, u.ID); h != store.Healthy || streak != 0 {
		t.Errorf("u is %s/%d after its delivery; want Healthy/0", h, streak)
	}
	for _, c := range []store.Claim{us[1], ws[4]} {
		if l := b.log(t, c.LogID); l.Status != store.Succeeded || len(l.Attempts) != 1 {
			t.Errorf("log %s: %s with %d attempts; want succeeded with 1", l.ID, l.Status, len(l.Attempts))
		}
	}
}
