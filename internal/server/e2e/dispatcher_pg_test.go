package e2e_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// An idle herald whose one webhook is stuck (its receiver holds the one
// attempt its cap allows) with 20,000 logs queued behind it reads a few rows
// a second, not the backlog: its claims pass over the webhook at its cap,
// and the probe of the next due time reads one index entry per webhook.
// Until the dispatcher's statements were planned at each run (decision
// 0095), such a herald read 20,000 rows a second: the probe of the next due
// time ran on a plan cached while the queue was empty, a scan of all of it.
func TestIdleHeraldWithAStuckWebhookReadsFewRows(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "20,000 logs on PostgreSQL")
	heraldtest.PostgresHandles(t, 2)
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.PostgresURL(t),
		Delivery: delivery.Config{PerWebhook: 1, AttemptTimeout: 10 * time.Minute}})
	rcv := heraldtest.NewReceiver(t)
	held := rcv.Hold(t)
	h.CreateWebhook("stuck", rcv.URL, string(event.LicenseCreated))
	st := h.Server.Store
	ctx := context.Background()
	accounts, _, err := st.Accounts(ctx, store.Page{Limit: 1})
	if err != nil || len(accounts) != 1 {
		t.Fatalf("accounts: %v, %v", accounts, err)
	}
	const queued = 20_000
	for range queued / 1000 {
		firings := make([]store.Firing, 1000)
		for i := range firings {
			firings[i] = store.Firing{AccountID: accounts[0].ID, Kind: event.LicenseCreated, Data: map[string]int{"n": i}}
		}
		if err := st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.FireBatch(ctx, firings); return err }); err != nil {
			t.Fatal(err)
		}
	}
	held.Wait(t, 30*time.Second, "the first attempt")

	db := heraldtest.OpenDB(t, h.Options.DatabaseURL)
	read := func() int {
		// Rows fetched from the queue and the logs by any scan, as the
		// statistics of herald's connections have reported them.
		return db.Int(`SELECT COALESCE(SUM(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)), 0) FROM pg_stat_user_tables
WHERE schemaname = current_schema() AND (relname = 'delivery_queue' OR relname LIKE 'webhook_event_logs%')`)
	}
	// A connection reports its statistics within a second of a statement,
	// or when idle for longer: wait out the firing's reports first.
	time.Sleep(3 * time.Second)
	before, start := read(), time.Now()
	time.Sleep(6 * time.Second)
	rows, secs := read()-before, time.Since(start).Seconds()
	if rows > 2_000 {
		t.Errorf("an idle herald read %d rows of the queue and the logs in %.0f s with %d logs behind a stuck webhook; want a few a second", rows, secs, queued)
	}
	t.Logf("%d rows read in %.1f s", rows, secs)
	if n := rcv.Count(); n != 1 {
		t.Errorf("the receiver got %d requests; want the one its cap allows", n)
	}
}

// On PostgreSQL the dispatcher has connections of its own: with every
// connection of the main pool held by transactions that do not end (a
// saturated API), attempts in flight are recorded and the logs queued
// behind them are claimed, sent and recorded all the same.
func TestDeliveriesGoOnWhileTheAPIHoldsEveryConnection(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "a herald on PostgreSQL")
	heraldtest.PostgresHandles(t, 2)
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.PostgresURL(t)})
	rcv := heraldtest.NewReceiver(t)
	held := rcv.Hold(t)
	hook := h.CreateWebhook("w", rcv.URL, string(event.LicenseCreated))
	var product struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	const events = 20
	for range events {
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
	}
	held.Wait(t, 30*time.Second, "the first attempt")

	// Take every connection of the main pool, and keep them.
	st := h.Server.Store
	g, err := st.Gauges(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mainPool := g.DB.MaxOpenConnections
	if g.DeliveryDB.MaxOpenConnections == 0 {
		t.Fatalf("pools: main %d, the dispatcher's none; want one of its own", mainPool)
	}
	block := make(chan struct{})
	var inside, holders sync.WaitGroup
	inside.Add(mainPool)
	for range mainPool {
		holders.Add(1)
		go func() {
			defer holders.Done()
			st.InTx(context.Background(), func(*store.Tx) error {
				inside.Done()
				<-block
				return nil
			})
		}()
	}
	inside.Wait()
	t.Cleanup(func() { close(block); holders.Wait() })

	held.Release()
	db := heraldtest.OpenDB(t, h.Options.DatabaseURL)
	heraldtest.Eventually(t, 60*time.Second, "every log delivered and recorded", func() bool {
		return db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE webhook_id = ? AND status = 'succeeded'`, hook.ID) == events
	})
	if n := db.Int(`SELECT COUNT(*) FROM delivery_queue`); n != 0 {
		t.Errorf("%d logs still queued", n)
	}
}
