package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// The LISTEN connection comes back by itself after it drops (a PostgreSQL
// restart, a failover, a terminated backend), so idle processes keep being
// woken at once, not only by their poll. On a private server, so that
// terminating connections disturbs no other test.
func TestListenerReconnectsAfterItsConnectionDrops(t *testing.T) {
	t.Parallel()
	testdb.SkipUnless(t, os.Getenv(testdb.PostgresEnv) != "", testdb.PostgresEnv+" is not set, so PostgreSQL is untested")
	pg := testdb.StartPostgres(t)
	busy, idle, acct := twoProcesses(t, testdb.NewSchema(t, pg.URL()))
	fire := func() {
		t.Helper()
		if err := busy.InTx(context.Background(), func(tx *store.Tx) error {
			_, err := tx.Fire(context.Background(), acct.ID, event.LicenseCreated, map[string]any{"n": 1})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	wokenWithin := func(d time.Duration) bool {
		ch := idle.Wait()
		fire()
		select {
		case <-ch:
			return true
		case <-time.After(d):
			return false
		}
	}
	testdb.Eventually(t, 10*time.Second, "the idle handle to be listening", func() bool { return wokenWithin(time.Second) })

	raw, err := sql.Open("pgx", pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// The idle handle was heard listening; the busy one's listener may
	// still be connecting on a loaded machine.
	testdb.Eventually(t, 30*time.Second, "both handles' listener connections", func() bool {
		var n int
		err := raw.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'herald-listen'`).Scan(&n)
		return err == nil && n == 2
	})
	var killed int
	if err := raw.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'herald-listen'`).Scan(&killed); err != nil || killed != 2 {
		t.Fatalf("terminated %d listener connections (%v); want the 2 handles' listeners", killed, err)
	}
	// Reconnecting takes a backoff of 100ms; a wake-up within 2s shows the
	// listener is back (the dispatcher's poll is not in play here).
	testdb.Eventually(t, 10*time.Second, "wake-ups after the listener's connection dropped", func() bool { return wokenWithin(2 * time.Second) })
	// The first may be the listener's own wake-up on reconnecting; this one
	// can only come from a notification heard on the new connection.
	time.Sleep(200 * time.Millisecond)
	if !wokenWithin(10 * time.Second) { // at once, unless the machine is very busy
		t.Error("no notification heard on the listener's new connection")
	}
}

// A process is not woken by its own announcements: it woke itself when its
// commit fired the events (Store.wake), and each notification heard back
// cost its dispatcher a second claim that found nothing. Another process
// on the same schema still hears them.
func TestAProcessIsNotWokenByItsOwnAnnouncements(t *testing.T) {
	t.Parallel()
	testdb.SkipUnless(t, os.Getenv(testdb.PostgresEnv) != "", testdb.PostgresEnv+" is not set, so PostgreSQL is untested")
	firing, other, acct := twoProcesses(t, testdb.NewSchema(t, os.Getenv(testdb.PostgresEnv)))
	// fire fires an event in from and returns from's wait channel taken
	// after its commit (and its own wake-up), and whether to heard the
	// announcement within d.
	fire := func(from, to *store.Store, d time.Duration) (<-chan struct{}, bool) {
		t.Helper()
		heard := to.Wait()
		if err := from.InTx(context.Background(), func(tx *store.Tx) error {
			_, err := tx.Fire(context.Background(), acct.ID, event.LicenseCreated, map[string]any{"n": 1})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		own := from.Wait()
		select {
		case <-heard:
			return own, true
		case <-time.After(d):
			return own, false
		}
	}
	// Both listen: each hears the other.
	testdb.Eventually(t, 10*time.Second, "both processes to be listening", func() bool {
		_, a := fire(firing, other, time.Second)
		_, b := fire(other, firing, time.Second)
		return a && b
	})
	// Both listeners were given the notification at the same moment; the
	// firing process's has had a second more to pass it on, had it not
	// passed over it.
	own, heard := fire(firing, other, 10*time.Second)
	if !heard {
		t.Fatal("the other process did not hear the announcement")
	}
	select {
	case <-own:
		t.Error("the firing process was woken by its own announcement")
	case <-time.After(time.Second):
	}
}

// twoProcesses opens two handles on the schema of url, as two herald
// processes would hold, closed at the end of the test; the first has made
// an account with a webhook of license.created, so that firing it announces.
func twoProcesses(t *testing.T, url string) (first, second *store.Store, acct store.Account) {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	open := func() *store.Store {
		st, err := store.Open(context.Background(), url, store.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	first, second = open(), open()
	acct, err := first.CreateAccount(context.Background(), store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{Name: "h", URL: "https://example.com/h",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_listen_test_token_0123456789"}); err != nil {
		t.Fatal(err)
	}
	return first, second, acct
}
