package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testAChangeAndItsEventAreOneWrite makes changes with ChangeAndFire (on
// PostgreSQL one statement outside a transaction block, decision 0108): a
// change that returns its row is written with its event, the event's logs
// queued or cancelled as Fire writes them and the queued ones in the queue;
// a change that returns no row writes nothing and fires nothing; a change
// that fails writes nothing, its event neither; a license's expiry planned
// with it is written exactly when the license is.
func testAChangeAndItsEventAreOneWrite(t *testing.T, b *Bundle) {
	on := b.Webhook(t, "on")
	off := b.Webhook(t, "off")
	off.Enabled = false
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, off.ID, store.WebhookPatch{Enabled: &off.Enabled}); err != nil {
		t.Fatal(err)
	}
	product := store.NewID()
	insert := func(id string, name any) store.Change {
		return store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 1, 1 WHERE true
ON CONFLICT (id) DO NOTHING RETURNING id`, Args: []any{id, b.Account.ID, name}}
	}
	fired := store.Firing{AccountID: b.Account.ID, Kind: event.LicenseCreated, Data: map[string]any{"product": product}}
	written := func() (products, events, logs, queued int) {
		return b.Count(t, `SELECT COUNT(*) FROM products WHERE account_id = ?`, b.Account.ID),
			b.Count(t, `SELECT COUNT(*) FROM events WHERE account_id = ?`, b.Account.ID),
			b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE account_id = ?`, b.Account.ID),
			b.Count(t, `SELECT COUNT(*) FROM delivery_queue`)
	}

	made, err := b.St.ChangeAndFire(b.Ctx, insert(product, "p"), fired)
	if err != nil || !made {
		t.Fatalf("change: made %v, %v; want made", made, err)
	}
	if p, e, l, q := written(); p != 1 || e != 1 || l != 2 || q != 1 {
		t.Fatalf("after the change: %d products, %d events, %d logs, %d queued; want 1, 1, 2, 1", p, e, l, q)
	}
	logs := b.logs(t, store.LogFilter{})
	want := map[string]store.LogStatus{on.ID: store.Queued, off.ID: store.Cancelled}
	for _, l := range logs {
		if l.Status != want[l.WebhookID] {
			t.Errorf("log of webhook %s is %s; want %s", l.WebhookID, l.Status, want[l.WebhookID])
		}
	}
	if len(logs) == 2 {
		var body []byte
		if err := b.St.QueryRow(b.Ctx, `SELECT body FROM events WHERE id = ?`, logs[0].EventID).Scan(&body); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), product) || !strings.Contains(string(body), `"event":"license.created"`) {
			t.Errorf("event body %s; want license.created with the change's data", body)
		}
	}
	if c := b.Claim(t, b.St, 0, time.Minute, 10, 10); len(c) != 1 || c[0].WebhookID != on.ID {
		t.Errorf("claimed %+v; want the one log queued, of %s", c, on.ID)
	}

	// The same row again: the change returns none, and nothing is fired.
	if made, err := b.St.ChangeAndFire(b.Ctx, insert(product, "p"), fired); err != nil || made {
		t.Fatalf("repeated change: made %v, %v; want not made, no error", made, err)
	}
	// A change that fails (a name is required) fails whole.
	if made, err := b.St.ChangeAndFire(b.Ctx, insert(store.NewID(), nil), fired); err == nil || made {
		t.Fatalf("failing change: made %v, %v; want an error", made, err)
	}
	if p, e, l, _ := written(); p != 1 || e != 1 || l != 2 {
		t.Fatalf("after a change not made and a failed one: %d products, %d events, %d logs; want 1, 1, 2 as before", p, e, l)
	}

	// A license's expiry planned with it: its schedule row is written when
	// the license is, and not when it is not (its product is another).
	license := func(id, productID string, expires time.Time) store.Change {
		return store.Change{SQL: `INSERT INTO licenses (id, account_id, product_id, key, expires_at, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), 1, 1
WHERE EXISTS (SELECT 1 FROM products WHERE account_id = ? AND id = ?)
ON CONFLICT (account_id, key) DO NOTHING RETURNING id`, Args: []any{id, b.Account.ID, productID, id, expires.UnixMilli(), b.Account.ID, productID},
			Expiry: &store.ExpiryPlan{AccountID: b.Account.ID, LicenseID: id, ExpiresAt: expires}}
	}
	expires := b.Clock.Now().Add(30 * 24 * time.Hour)
	planned := func(id string) int {
		return b.Count(t, `SELECT COUNT(*) FROM license_expiries WHERE license_id = ? AND expires_at = ? AND due_at < ?`,
			id, expires.UnixMilli(), expires.UnixMilli())
	}
	kept, refused := store.NewID(), store.NewID()
	if made, err := b.St.ChangeAndFire(b.Ctx, license(kept, product, expires), fired); err != nil || !made {
		t.Fatalf("license with an expiry: made %v, %v; want made", made, err)
	}
	if made, err := b.St.ChangeAndFire(b.Ctx, license(refused, store.NewID(), expires), fired); err != nil || made {
		t.Fatalf("license of no product: made %v, %v; want not made", made, err)
	}
	if planned(kept) != 1 || b.Count(t, `SELECT COUNT(*) FROM license_expiries WHERE license_id = ?`, refused) != 0 {
		t.Fatalf("schedule rows: %d planned of the license made (want 1, expiring-soon due first), %d of the one not made (want 0)",
			planned(kept), b.Count(t, `SELECT COUNT(*) FROM license_expiries WHERE license_id = ?`, refused))
	}
	if _, e, _, _ := written(); e != 2 {
		t.Fatalf("%d events; want 2: the license made fired, the one not made did not", e)
	}
}
