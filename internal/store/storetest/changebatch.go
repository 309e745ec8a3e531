package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testChangesMadeAtOnceAreEachMadeAsAlone makes many changes with
// ChangeAndFire at once, each written over a set too (store.ChangeBatch: on
// PostgreSQL those that wait share statements, decision 0112), some with
// the key of another: each key is made once, by one of its changes, and
// every change made has its own event with its own data and that event its
// log; a change not made wrote nothing.
func testChangesMadeAtOnceAreEachMadeAsAlone(t *testing.T, b *Bundle) {
	hook := b.Webhook(t, "on")
	const distinct, again = 24, 8
	ids := make([]string, distinct)
	for i := range ids {
		ids[i] = store.NewID()
	}
	type result struct {
		id   string
		n    int
		made bool
		err  error
	}
	results := make(chan result, distinct+again)
	var wg sync.WaitGroup
	for n := range distinct + again {
		id := ids[n%distinct]
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 1, 1 WHERE true ON CONFLICT (id) DO NOTHING RETURNING id`,
				Args: []any{id, b.Account.ID, fmt.Sprint(n)},
				Batch: &store.ChangeBatch{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT r.id, r.account_id, r.name, 1, 1 FROM changes r ORDER BY r.herald_item ON CONFLICT (id) DO NOTHING RETURNING id`,
					Columns: `id TEXT, account_id TEXT, name TEXT`, Row: map[string]any{"id": id, "account_id": b.Account.ID, "name": fmt.Sprint(n)}, Key: id}}
			made, err := b.St.ChangeAndFire(b.Ctx, c, store.Firing{AccountID: b.Account.ID, Kind: event.LicenseCreated,
				Data: map[string]any{"product": id, "n": n}})
			results <- result{id, n, made, err}
		}()
	}
	wg.Wait()
	close(results)
	made := map[string]int{} // id -> the n of the change that made it
	for r := range results {
		if r.err != nil {
			t.Fatalf("change %d: %v", r.n, r.err)
		}
		if !r.made {
			continue
		}
		if _, twice := made[r.id]; twice {
			t.Fatalf("product %s made twice", r.id)
		}
		made[r.id] = r.n
	}
	if len(made) != distinct {
		t.Fatalf("%d products made; want %d", len(made), distinct)
	}
	for id, n := range made {
		if got := b.Count(t, `SELECT COUNT(*) FROM products WHERE id = ? AND name = ?`, id, fmt.Sprint(n)); got != 1 {
			t.Errorf("product %s: not the row of the change (%d) that said it made it", id, n)
		}
		want := fmt.Sprintf(`%%"n":%d,"product":"%s"%%`, n, id)
		if got := b.Count(t, `SELECT COUNT(*) FROM events WHERE account_id = ? AND `+b.bodyText()+` LIKE ?`, b.Account.ID, want); got != 1 {
			t.Errorf("product %s: %d events with the data of change %d; want 1", id, got, n)
		}
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM events WHERE account_id = ?`, b.Account.ID); n != distinct {
		t.Errorf("%d events; want %d", n, distinct)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ?`, hook.ID); n != distinct {
		t.Errorf("%d logs; want one for each event", n)
	}
}

// bodyText is the engine's expression of an event's body as text.
func (b *Bundle) bodyText() string {
	if b.St.Engine() == "postgres" {
		return `convert_from(body, 'UTF8')`
	}
	return `CAST(body AS TEXT)`
}
