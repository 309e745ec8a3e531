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
// that fails writes nothing, its event neither.
func testAChangeAndItsEventAreOneWrite(t *testing.T, b *bundle) {
	on := b.webhook(t, "on")
	off := b.webhook(t, "off")
	off.Enabled = false
	if _, err := b.st.UpdateWebhook(b.ctx, b.account.ID, off.ID, store.WebhookPatch{Enabled: &off.Enabled}); err != nil {
		t.Fatal(err)
	}
	product := store.NewID()
	insert := func(id string, name any) store.Change {
		return store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 1, 1 WHERE true
ON CONFLICT (id) DO NOTHING RETURNING id`, Args: []any{id, b.account.ID, name}}
	}
	fired := store.Firing{AccountID: b.account.ID, Kind: event.LicenseCreated, Data: map[string]any{"product": product}}
	written := func() (products, events, logs, queued int) {
		return b.count(t, `SELECT COUNT(*) FROM products WHERE account_id = ?`, b.account.ID),
			b.count(t, `SELECT COUNT(*) FROM events WHERE account_id = ?`, b.account.ID),
			b.count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE account_id = ?`, b.account.ID),
			b.count(t, `SELECT COUNT(*) FROM delivery_queue`)
	}

	made, err := b.st.ChangeAndFire(b.ctx, insert(product, "p"), fired)
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
		if err := b.st.QueryRow(b.ctx, `SELECT body FROM events WHERE id = ?`, logs[0].EventID).Scan(&body); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), product) || !strings.Contains(string(body), `"event":"license.created"`) {
			t.Errorf("event body %s; want license.created with the change's data", body)
		}
	}
	if c := b.claim(t, b.st, 0, time.Minute, 10, 10); len(c) != 1 || c[0].WebhookID != on.ID {
		t.Errorf("claimed %+v; want the one log queued, of %s", c, on.ID)
	}

	// The same row again: the change returns none, and nothing is fired.
	if made, err := b.st.ChangeAndFire(b.ctx, insert(product, "p"), fired); err != nil || made {
		t.Fatalf("repeated change: made %v, %v; want not made, no error", made, err)
	}
	// A change that fails (a name is required) fails whole.
	if made, err := b.st.ChangeAndFire(b.ctx, insert(store.NewID(), nil), fired); err == nil || made {
		t.Fatalf("failing change: made %v, %v; want an error", made, err)
	}
	if p, e, l, _ := written(); p != 1 || e != 1 || l != 2 {
		t.Fatalf("after a change not made and a failed one: %d products, %d events, %d logs; want 1, 1, 2 as before", p, e, l)
	}
}
