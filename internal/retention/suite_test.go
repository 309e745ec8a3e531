package retention_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// testRetentionWalksEventsByID purges events without logs under the wall
// clock, where the walk goes by id and stops at the id of the retention's
// bound (decision 0099): events made 40 days ago go, in batches of 2 (the
// cursor carried over), one of 20 days ago stays, and so does one whose
// time says 40 days ago but whose id was made now, past the walk's end:
// the witness that the walk stops at the bound rather than reading every
// event after the cursor.
func testRetentionWalksEventsByID(t *testing.T, b *storetest.Bundle) {
	st, err := store.Open(b.Ctx, b.NewURL(t), store.Options{Key: b.Key}) // the wall clock
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acct, err := st.CreateAccount(b.Ctx, store.Bootstrap{AccountName: "w", OwnerEmail: "w@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, recent := now.Add(-40*24*time.Hour), now.Add(-20*24*time.Hour)
	events := []struct {
		id string
		at time.Time
	}{
		{store.NewIDAt(old), old}, {store.NewIDAt(old.Add(time.Second)), old.Add(time.Second)},
		{store.NewIDAt(old.Add(2 * time.Second)), old.Add(2 * time.Second)},
		{store.NewIDAt(recent), recent}, {store.NewID(), old},
	}
	if err := st.InTx(b.Ctx, func(tx *store.Tx) error {
		for _, e := range events {
			if _, err := tx.Exec(b.Ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.deleted', '{}', ?)`,
				e.id, acct.ID, store.MS(e.at)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	deleted, calls := 0, 0
	for cursor := (store.EventCursor{}); ; calls++ {
		n, next, done, err := st.PurgeEvents(b.Ctx, now.Add(-30*24*time.Hour), cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		deleted += n
		if done || calls > 10 {
			break
		}
		cursor = next
	}
	if deleted != 3 {
		t.Errorf("purged %d events; want the 3 made 40 days ago", deleted)
	}
	for i, e := range events {
		var n int
		if err := st.QueryRow(b.Ctx, `SELECT COUNT(*) FROM events WHERE id = ?`, e.id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[i < 3]; n != want {
			t.Errorf("event %d (made %v, at %v): %d left; want %d", i, e.id, e.at.Format(time.DateOnly), n, want)
		}
	}
}

// testRetention fills logs of every status, lets 40 days pass, and purges
// with a 30-day retention in batches of 2: completed logs older than that go
// with their attempts and the events left without logs; queued, pending and
// retrying logs stay, however old, and so do their events.

func testRetention(t *testing.T, b *storetest.Bundle) {
	ok, bad, off, slow, idle, busy := b.Webhook(t, "ok"), b.Webhook(t, "bad"), b.Webhook(t, "off"), b.Webhook(t, "slow"), b.Webhook(t, "idle"), b.Webhook(t, "busy")
	disabled := false
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, off.ID, store.WebhookPatch{Enabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	settle := func() {
		t.Helper()
		now := b.Clock.Now()
		var outs []store.Outcome
		for _, c := range b.Claim(t, b.St, 0, 100*24*time.Hour, 1000, 1000, idle.ID) {
			switch c.WebhookID {
			case ok.ID:
				outs = append(outs, storetest.Outcome(c, store.Delivered, 200, now))
			case bad.ID:
				outs = append(outs, storetest.Outcome(c, store.Exhausted, 500, now))
			case slow.ID:
				o := storetest.Outcome(c, store.Retry, 503, now)
				o.NextAt = now.Add(1000 * time.Hour)
				outs = append(outs, o)
			case busy.ID: // left pending: its attempt is in flight
			}
		}
		b.Complete(t, b.St, 1000, outs...)
	}
	old := b.Fire(t, b.St, 5)
	settle()
	fireKind := func(kind event.Kind) {
		t.Helper()
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(b.Ctx, b.Account.ID, kind, map[string]any{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	fireKind(event.LicenseDeleted) // no webhook subscribes: an event without logs
	b.Clock.Add(40 * 24 * time.Hour)
	fireKind(event.LicenseDeleted)
	b.Fire(t, b.St, 1)
	settle()

	active := `SELECT COUNT(*) FROM webhook_event_logs WHERE status IN ('queued', 'pending', 'retrying')`
	activeBefore := b.Count(t, active)
	if activeBefore != 3*6 {
		t.Fatalf("%d active logs before; want 18", activeBefore)
	}
	logs, events, err := retention.Purge(b.Ctx, b.St, retention.Config{Keep: 30 * 24 * time.Hour, Batch: 2, Pause: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The old events without logs: the license.deleted, and the
	// webhook.unhealthy of bad's first failure, which no webhook subscribes to.
	if logs != 3*5 || events != 2 {
		t.Errorf("purged %d logs and %d events; want 15 and 2", logs, events)
	}
	if n := b.Count(t, active); n != activeBefore {
		t.Errorf("%d active logs after; want %d", n, activeBefore)
	}
	cutoff := store.MS(b.Clock.Now().Add(-30 * 24 * time.Hour))
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE completed_at < ?`, cutoff); n != 0 {
		t.Errorf("%d expired completed logs left", n)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE completed_at >= ?`, cutoff); n != 3 {
		t.Errorf("%d recent completed logs; want the 3 of the recent event", n)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts a WHERE NOT EXISTS (SELECT 1 FROM webhook_event_logs l WHERE l.id = a.log_id)`); n != 0 {
		t.Errorf("%d attempts of removed logs left", n)
	}
	for _, id := range old {
		if n := b.Count(t, `SELECT COUNT(*) FROM events WHERE id = ?`, id); n != 1 {
			t.Errorf("event %s with active logs was removed", id)
		}
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM events`); n != 5+1+1 {
		t.Errorf("%d events left; want the 5 with active logs and the 2 recent", n)
	}
	if logs, events, err := retention.Purge(b.Ctx, b.St, retention.Config{Keep: 30 * 24 * time.Hour}); logs != 0 || events != 0 || err != nil {
		t.Errorf("a second purge: %d logs, %d events, %v; want nothing", logs, events, err)
	}
}

// testConcurrentOpens starts several processes at once on an empty database:
// migrations run once, and one first account is created between them. On
// SQLite, which serves one process, exactly one open succeeds and the others
// are refused with the reason.

// TestRetentionSuite runs retention's cases of the store's behaviour suite
// on every engine.
func TestRetentionSuite(t *testing.T) {
	for _, s := range testdb.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, s.URL, []storetest.Case{
				{Name: "RetentionRemovesOnlyCompletedLogs", Handles: 1, Fn: testRetention},
				{Name: "RetentionWalksEventsByIDUnderTheWallClock", Handles: 1, Fn: testRetentionWalksEventsByID},
			})
		})
	}
}
