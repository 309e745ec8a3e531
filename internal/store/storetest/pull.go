package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// pullWebhook creates a pull webhook of the test's account subscribed to
// license.created.
func (b *Bundle) pullWebhook(t testing.TB, name string) store.Webhook {
	t.Helper()
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: name, Type: store.TypePull,
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_" + name + "_0123456789"})
	if err != nil {
		t.Fatalf("create pull webhook: %v", err)
	}
	return w
}

// pull reads the pull webhook's events after after, failing the test on
// an error.
func (b *Bundle) pull(t testing.TB, hook store.Webhook, after int64, limit int) []queue.Pulled {
	t.Helper()
	got, err := b.Q.Pull(b.Ctx, b.Account.ID, hook.ID, after, limit)
	if err != nil {
		t.Fatalf("pull after %d: %v", after, err)
	}
	return got
}

// events says which events pulls are, with their cursors, for comparisons.
func events(ps []queue.Pulled) (ids []string, cursors []int64) {
	for _, p := range ps {
		ids, cursors = append(ids, p.EventID), append(cursors, p.Cursor)
	}
	return ids, cursors
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A pull webhook's logs are queued and never claimed; a read gives them
// cursors in firing order, gives the unacknowledged ones again, and an
// acknowledgement completes every one up to its cursor, each with one
// attempt of trigger pull. Only the account's pull webhook is read.
func testPullReadsInOrderAndAcknowledgesByCursor(t *testing.T, b *Bundle) {
	hook := b.pullWebhook(t, "pulled")
	posted := b.Webhook(t, "posted")
	fired := b.Fire(t, b.St, 5)

	for _, c := range b.Claim(t, b.St, time.Second, time.Minute, 100, 100) {
		if c.WebhookID == hook.ID {
			t.Fatalf("a claim took log %s of the pull webhook; want its logs left to its consumer", c.LogID)
		}
	}
	first := b.pull(t, hook, 0, 3)
	if ids, cursors := events(first); !equal(ids, fired[:3]) || !equal(cursors, []int64{1, 2, 3}) {
		t.Fatalf("first read: events %v cursors %v; want %v, 1 2 3", ids, cursors, fired[:3])
	}
	if string(first[0].Body) == "" || first[0].Token == "" || first[0].WebhookID != hook.ID {
		t.Fatalf("first read: %+v; want the body and the token that signs it", first[0])
	}
	again := b.pull(t, hook, 0, 10)
	if ids, cursors := events(again); !equal(ids, fired) || !equal(cursors, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("read again from the start: events %v cursors %v; want %v, 1 to 5", ids, cursors, fired)
	}
	if rest := b.pull(t, hook, 3, 10); len(rest) != 2 || rest[0].EventID != fired[3] {
		t.Fatalf("read after 3: %d events; want the last two", len(rest))
	}

	n, err := b.Q.AckPull(b.Ctx, b.Account.ID, hook.ID, 3)
	if err != nil || n != 3 {
		t.Fatalf("ack 3: %d, %v; want 3 completed", n, err)
	}
	if n, err := b.Q.AckPull(b.Ctx, b.Account.ID, hook.ID, 2); err != nil || n != 0 {
		t.Fatalf("ack 2 after 3: %d, %v; want nothing more completed", n, err)
	}
	if left := b.pull(t, hook, 0, 10); len(left) != 2 || left[0].Cursor != 4 {
		t.Fatalf("read after the ack: %d events; want the two not acknowledged, from cursor 4", len(left))
	}
	logs := b.logs(t, store.LogFilter{WebhookID: hook.ID, Status: store.Succeeded})
	if len(logs) != 3 {
		t.Fatalf("%d logs succeeded; want 3", len(logs))
	}
	l, err := b.St.Log(b.Ctx, b.Account.ID, logs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Attempts) != 1 || l.Attempts[0].Trigger != store.TriggerPull || l.SentAt == nil {
		t.Fatalf("acknowledged log: %d attempts %+v; want one of trigger pull, from the read", len(l.Attempts), l.Attempts)
	}

	if _, err := b.Q.AckPull(b.Ctx, b.Account.ID, hook.ID, 6); !errors.Is(err, queue.ErrCursor) {
		t.Errorf("ack 6, never read: %v; want ErrCursor", err)
	}
	if _, err := b.Q.Pull(b.Ctx, b.Account.ID, hook.ID, 9, 10); !errors.Is(err, queue.ErrCursor) {
		t.Errorf("read after 9, never read: %v; want ErrCursor", err)
	}
	if _, err := b.Q.Pull(b.Ctx, b.Account.ID, posted.ID, 0, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read of an http webhook: %v; want ErrNotFound", err)
	}
	other := b.NewAccount(t, "other@example.com")
	if _, err := b.Q.Pull(b.Ctx, other.ID, hook.ID, 0, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read by another account: %v; want ErrNotFound", err)
	}
}

// A read waiting for an event is woken by a firing, in this process or,
// on PostgreSQL, another.
func testPullWaitsForAFiring(t *testing.T, b *Bundle) {
	hook := b.pullWebhook(t, "waiting")
	other := b.Open(t)
	got := make(chan []queue.Pulled, 1)
	go func() {
		ps, err := b.Q.PullWait(b.Ctx, b.Account.ID, hook.ID, 0, 10, time.Minute)
		if err != nil {
			t.Errorf("pull wait: %v", err)
		}
		got <- ps
	}()
	fired := b.Fire(t, other, 1)
	select {
	case ps := <-got:
		if len(ps) != 1 || ps[0].EventID != fired[0] {
			t.Fatalf("woken read: %d events; want the one fired", len(ps))
		}
	case <-time.After(50 * time.Second):
		t.Fatal("the read was not woken by the firing within 50 s")
	}
}

// An event not acknowledged within the webhook's retention ends failed and
// undelivered, counted on the webhook, which leaves Healthy until an
// acknowledgement; a pull token reads as its webhook's, and goes with it.
func testUnacknowledgedPullsExpire(t *testing.T, b *Bundle) {
	hook := b.pullWebhook(t, "expiring")
	b.Fire(t, b.St, 2)
	b.pull(t, hook, 0, 1)
	b.Clock.Add(2 * time.Hour)
	keep := func(*store.RetryPolicy) time.Duration { return time.Hour }
	if n, err := b.Q.ExpirePulls(b.Ctx, keep); err != nil || n != 2 {
		t.Fatalf("expire: %d, %v; want both events expired", n, err)
	}
	w, err := b.St.Webhook(b.Ctx, b.Account.ID, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != store.Unhealthy || w.UndeliveredCount != 2 {
		t.Fatalf("webhook after expiry: %s, %d undelivered; want Unhealthy, 2", w.Status, w.UndeliveredCount)
	}
	if failed := b.logs(t, store.LogFilter{WebhookID: hook.ID, Status: store.Failed}); len(failed) != 2 {
		t.Fatalf("%d logs failed; want 2", len(failed))
	}
	if left := b.pull(t, hook, 0, 10); len(left) != 0 {
		t.Fatalf("read after expiry: %d events; want none", len(left))
	}
	// A resend (or a recovery) queues an expired event again, read after
	// every position given.
	failed := b.logs(t, store.LogFilter{WebhookID: hook.ID, Status: store.Failed})
	if err := b.Q.RequeuePull(b.Ctx, failed[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	again := b.pull(t, hook, 0, 10)
	if len(again) != 1 || again[0].LogID != failed[0].ID || again[0].Cursor != 2 {
		t.Fatalf("read after a requeue: %+v; want the requeued log at cursor 2", again)
	}
	if _, err := b.Q.AckPull(b.Ctx, b.Account.ID, hook.ID, again[0].Cursor); err != nil {
		t.Fatal(err)
	}
	b.Fire(t, b.St, 1)
	ps := b.pull(t, hook, 0, 10)
	if _, err := b.Q.AckPull(b.Ctx, b.Account.ID, hook.ID, ps[0].Cursor); err != nil {
		t.Fatal(err)
	}
	if w, _ = b.St.Webhook(b.Ctx, b.Account.ID, hook.ID); w.Status != store.Healthy {
		t.Fatalf("webhook after an acknowledgement: %s; want Healthy", w.Status)
	}

	if _, err := b.St.CreatePullToken(b.Ctx, b.Account.ID, hook.ID, "hash-of-pull"); err != nil {
		t.Fatal(err)
	}
	acct, tok, err := b.St.PullTokenByHash(b.Ctx, "hash-of-pull")
	if err != nil || acct.ID != b.Account.ID || tok.WebhookID != hook.ID {
		t.Fatalf("pull token: %s %+v %v; want the account's, for the webhook", acct.ID, tok, err)
	}
	other := b.NewAccount(t, "other@example.com")
	if _, err := b.St.CreatePullToken(b.Ctx, other.ID, hook.ID, "hash-2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pull token for another account's webhook: %v; want ErrNotFound", err)
	}
	if err := b.St.DeleteWebhook(b.Ctx, b.Account.ID, hook.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.St.PullTokenByHash(b.Ctx, "hash-of-pull"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pull token of a deleted webhook: %v; want ErrNotFound", err)
	}
}
