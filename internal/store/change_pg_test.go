package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// On PostgreSQL a change and its event are one statement outside a
// transaction block (decision 0108): the dispatcher is handed the first
// attempts only of what the statement wrote, and gets back the
// reservations of a change not made or refused (which committed nothing);
// a webhook deleted between the read of the subscribed webhooks and the
// statement fails the statement on its log's foreign key, and the change
// is made again without it.
func TestAChangeHandsOverOnlyWhatItWrote(t *testing.T) {
	t.Parallel()
	heraldtest.PostgresHandles(t, 1)
	url := heraldtest.PostgresURL(t)
	ctx := context.Background()
	st := openPG(t, url, nil)
	acct, hook := accountWithWebhook(t, st)
	db := heraldtest.OpenDB(t, url)
	h := &handoffs{}
	st.SetHandoff(h)
	insert := func(id string, name any) store.Change {
		return store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 1, 1 WHERE true
ON CONFLICT (id) DO NOTHING RETURNING id`, Args: []any{id, acct.ID, name}}
	}
	fired := store.Firing{AccountID: acct.ID, Kind: event.LicenseCreated, Data: map[string]any{"id": "lic"}}
	leased := func() int {
		return db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL AND lease_until IS NOT NULL AND claimed_at IS NOT NULL`)
	}

	product := store.NewID()
	if made, err := st.ChangeAndFire(ctx, insert(product, "p"), fired); err != nil || !made {
		t.Fatalf("change: made %v, %v", made, err)
	}
	if len(h.taken) != 1 || h.taken[0].WebhookID != hook.ID || leased() != 1 || h.open() != 0 {
		t.Fatalf("made: taken %d, leased %d, open %d; want its one log handed over and leased", len(h.taken), leased(), h.open())
	}

	// Not made, then refused: each reservation given back, nothing written.
	if made, err := st.ChangeAndFire(ctx, insert(product, "p"), fired); err != nil || made {
		t.Fatalf("repeated change: made %v, %v; want not made", made, err)
	}
	if made, err := st.ChangeAndFire(ctx, insert(store.NewID(), nil), fired); err == nil || made {
		t.Fatalf("failing change: made %v, %v; want an error", made, err)
	}
	if len(h.taken) != 1 || len(h.abandoned) != 2 || h.maybe || h.open() != 0 {
		t.Fatalf("taken %d, abandoned %d, maybe %v, open %d; want two reservations given back, neither maybe committed",
			len(h.taken), len(h.abandoned), h.maybe, h.open())
	}
	if n := db.Int(`SELECT COUNT(*) FROM events`); n != 1 {
		t.Fatalf("%d events; want the first change's alone", n)
	}

	// The webhook "doomed" is deleted, and the deletion committed, after
	// the webhooks were read and before the statement inserts its logs:
	// the statement waits, inside the change, on a lock the test holds.
	doomed, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "doomed", URL: "https://example.com/doomed",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_doomed_token_0123456789ab"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(4242);
  RETURN NEW;
END $$`,
		`CREATE TRIGGER hold BEFORE INSERT ON products FOR EACH ROW EXECUTE FUNCTION hold()`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := db.SQL().Conn(ctx) // the test's one connection, until it unlocks
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		made bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		made, err := st.ChangeAndFire(ctx, insert(store.NewID(), "q"), fired)
		done <- result{made, err}
	}()
	for waiting := 0; waiting == 0; time.Sleep(10 * time.Millisecond) {
		if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteWebhook(ctx, acct.ID, doomed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_unlock(4242)`); err != nil {
		t.Fatal(err)
	}
	holder.Close()
	if r := <-done; r.err != nil || !r.made {
		t.Fatalf("change racing a webhook's deletion: made %v, %v; want made without it", r.made, r.err)
	}
	if n := db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ?`, doomed.ID); n != 0 {
		t.Fatalf("%d logs of the deleted webhook", n)
	}
	if len(h.taken) != 2 || h.taken[1].WebhookID != hook.ID || h.open() != 0 {
		t.Fatalf("taken %d, open %d; want the remaining webhook's log handed over, the deleted one's given back", len(h.taken), h.open())
	}
}

// Webhooks that change between every read and its statement cannot fail a
// change (decision 0109): the first try uses the set kept from the last
// change and the second a fresh read, and each finds the account's
// webhooks_version moved and writes nothing; the third reads afresh and
// checks no version, and its event gets its logs from that read.
func TestAChangeIsMadeThoughItsWebhooksChangeAtEveryTry(t *testing.T) {
	t.Parallel()
	heraldtest.PostgresHandles(t, 2)
	url := heraldtest.PostgresURL(t)
	ctx := context.Background()
	st := openPG(t, url, nil)
	other := openPG(t, url, nil) // another process
	acct, hook := accountWithWebhook(t, st)
	db := heraldtest.OpenDB(t, url)
	product := func() store.Change {
		return store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), 'p', 1, 1 WHERE true RETURNING id`, Args: []any{store.NewID(), acct.ID}}
	}
	fired := store.Firing{AccountID: acct.ID, Kind: event.LicenseCreated, Data: map[string]any{"id": "lic"}}
	if made, err := st.ChangeAndFire(ctx, product(), fired); err != nil || !made {
		t.Fatalf("first change: made %v, %v", made, err)
	}

	// Before every try's statement the other process flips the webhook
	// between enabled and disabled: the try before the third sees it
	// disabled, the third's read enabled.
	enabled, tries := true, 0
	store.SetBeforeChange(st, func() {
		tries++
		enabled = !enabled
		if _, err := other.UpdateWebhook(ctx, acct.ID, hook.ID, store.WebhookPatch{Enabled: &enabled}); err != nil {
			t.Error(err)
		}
	})
	made, err := st.ChangeAndFire(ctx, product(), fired)
	store.SetBeforeChange(st, nil)
	if err != nil || !made {
		t.Fatalf("a change whose webhooks changed before each of its statements: made %v, %v; want made at the third try", made, err)
	}
	if tries != 3 {
		t.Errorf("%d tries; want 3", tries)
	}
	if n := db.Int(`SELECT COUNT(*) FROM products WHERE account_id = ?`, acct.ID); n != 2 {
		t.Errorf("%d products; want 2, each change made once", n)
	}
	if n := db.Int(`SELECT COUNT(*) FROM events WHERE kind = ?`, string(event.LicenseCreated)); n != 2 {
		t.Errorf("%d events; want 2", n)
	}
	var statuses []string
	rows, err := db.SQL().QueryContext(ctx, `SELECT status FROM webhook_event_logs WHERE webhook_id = $1 ORDER BY id`, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, s)
	}
	if len(statuses) != 2 || statuses[1] != string(store.Queued) {
		t.Errorf("the webhook's logs: %v; want two, the second queued as the third try's read found it enabled", statuses)
	}
}
