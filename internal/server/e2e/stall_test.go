package e2e_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/testdb"
)

// A database that stalls for longer than a lease (30 s in tests) must not
// make live processes send an event twice (decision 0117). Three processes
// on one PostgreSQL deliver 1,500 events to a webhook limited to 100/s, as
// TestFleetKeepsOneRateLimitTogether does; a third of the way through, for
// 35 s, the database is held up in one of the ways that held CI up, and
// then let go. Every event arrives once.
//
//   - the throttle's row, which every process's send-slot reservation
//     updates, held by another transaction: the reservations wait, and with
//     them the dispatchers' connections. The lease keepers' connections are
//     their own, so every lease held is renewed throughout: none has ended
//     when the hold is let go.
//   - the queue's table locked (as a truncating vacuum locks it): every
//     claim, recording and renewal waits or fails alike, and no process
//     takes over the leases that end meanwhile, since none is sure its own
//     writes land.
//   - the server paused (every process of a private server stopped): the
//     same, with nothing answering at all.
func TestFleetSendsOnceThroughAStalledDatabase(t *testing.T) {
	t.Parallel()
	for _, stall := range []struct {
		name string
		// private: the stall needs a server of the test's own.
		private bool
		// hold holds the database up and returns what lets it go.
		hold func(t *testing.T, db *sql.DB, pg *heraldtest.PostgresServer) (release func())
		// renewed: the leases held are renewed throughout the hold.
		renewed bool
	}{
		{"the throttle's row held", false, holdInTx(`SELECT * FROM webhook_throttles FOR UPDATE`), true},
		{"the queue locked", false, holdInTx(`LOCK TABLE delivery_queue IN ACCESS EXCLUSIVE MODE`), false},
		{"the server paused", true, func(t *testing.T, _ *sql.DB, pg *heraldtest.PostgresServer) func() {
			pg.Pause(t)
			return func() { pg.Resume(t) }
		}, false},
	} {
		t.Run(stall.name, func(t *testing.T) {
			t.Parallel()
			const rate, events, holdFor = 100, 1500, 35 * time.Second
			var fleet []*heraldtest.Herald
			var pg *heraldtest.PostgresServer
			if stall.private {
				heraldtest.SkipShort(t, "a fleet of heralds on a PostgreSQL of the test's own")
				pg = heraldtest.StartPostgres(t)
				fleet = startFleetOn(t, 3, heraldtest.Options{DatabaseURL: heraldtest.NewSchema(t, pg.URL())})
			} else {
				fleet = startFleet(t, 3, heraldtest.Options{})
			}
			h := fleet[0]
			db, look := testdb.OpenPostgres(t, h.Options.DatabaseURL), testdb.OpenPostgres(t, h.Options.DatabaseURL)
			rcv := heraldtest.NewReceiver(t)
			if _, err := h.API.CreateWebhook(context.Background(), client.WebhookCreate{Name: "shared", URL: rcv.URL,
				Events: []string{"license.created"}, RateLimit: rate}); err != nil {
				t.Fatal(err)
			}
			fireMany(t, h, events)
			heraldtest.Eventually(t, 2*time.Minute, "a third of the deliveries", func() bool { return rcv.Count() >= events/3 })
			at := rcv.Count()
			release := stall.hold(t, db, pg)
			time.Sleep(holdFor)
			if stall.renewed {
				// While the row is still held: no lease of a log held by a
				// live process has ended.
				var ended, held int
				now := time.Now().UnixMilli()
				if err := look.QueryRow(`SELECT COUNT(*) FILTER (WHERE lease_until < $1), COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL`, now).Scan(&ended, &held); err != nil {
					release()
					t.Fatal(err)
				}
				if ended > 0 {
					t.Errorf("%d of %d leases held ended during the %s hold; want every one renewed", ended, held, holdFor)
				}
			}
			release()
			t.Logf("%d delivered when the hold began, %d when it ended", at, rcv.Count())
			heraldtest.Eventually(t, 3*time.Minute, "every delivery", func() bool { return rcv.Count() >= events })
			for _, p := range fleet {
				p.Settled()
			}
			onceEach(t, rcv, events, "the receiver")
		})
	}
}

// holdInTx holds the database up with statement, run in a transaction of
// its own on db until released.
func holdInTx(statement string) func(t *testing.T, db *sql.DB, _ *heraldtest.PostgresServer) func() {
	return func(t *testing.T, db *sql.DB, _ *heraldtest.PostgresServer) func() {
		t.Helper()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(statement); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
		return func() { tx.Rollback() }
	}
}
