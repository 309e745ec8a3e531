package delivery_test

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/receivertest"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// A process whose attempt is made but whose recording is held up for longer
// than the lease (a busy machine, a slow database) still holds its log: it
// renews the lease, and another process does not take the log over and send
// it again. The recording is held up by locking the webhook's row, which
// recording locks first when the outcome changes the webhook's health (the
// webhook is made Unhealthy beforehand, so its delivery restores it); this
// takes PostgreSQL's row locks (on SQLite the
// one writer would hold up every process alike), and a lock wait is a
// network read, which testing/synctest's clock cannot pass. So the store
// and both processes read an injected clock the test moves: each step takes
// it to just before the lease ends, and the next renewal (a real tick, a
// third of a lease) must carry the lease past it. Between steps the clock
// stands still, so a slow machine cannot let a lease end by itself.
func TestHeldLeaseIsNotTakenOver(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	rcv := receivertest.NewReceiver(t)
	clock := newManualClock()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), dbURL, store.Options{Key: key, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(context.Background(), store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := st.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{Name: "h", URL: rcv.URL,
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
	if err != nil {
		t.Fatal(err)
	}
	err = st.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Fire(context.Background(), acct.ID, event.LicenseCreated, event.Sample(event.LicenseCreated, clock.Now()))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Unhealthy, so that recording its delivery must lock the webhook to
	// make it Healthy again; then lock the webhook's row as a long
	// transaction would.
	db := testdb.OpenDB(t, dbURL).SQL()
	if _, err := db.Exec(`UPDATE webhooks SET status = 'Unhealthy', failure_streak = 1 WHERE id = $1`, hook.ID); err != nil {
		t.Fatal(err)
	}
	lock, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.Exec(`SELECT id FROM webhooks WHERE id = $1 FOR UPDATE`, hook.ID); err != nil {
		t.Fatal(err)
	}

	const lease = 1500 * time.Millisecond
	cfg := delivery.Config{AttemptTimeout: time.Second, Lease: lease, RetryInterval: time.Hour, PollInterval: 50 * time.Millisecond, Now: clock.Now}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(st delivery.Store) {
		wg.Add(1)
		go func() { defer wg.Done(); delivery.New(st, cfg).Run(ctx) }()
	}
	run(queue.New(st).ForDelivery()) // process A: sends, then waits to record
	testdb.Eventually(t, 30*time.Second, "the first attempt", func() bool { return rcv.Count() > 0 })
	logID := logOf(t, st, acct.ID)
	held := func() (until time.Time, holder string) {
		var due int64
		if err := st.QueryRow(context.Background(), `SELECT lease_until, lease FROM delivery_queue WHERE log_id = ?`, logID).Scan(&due, &holder); err != nil {
			t.Fatalf("read the log's lease: %v", err)
		}
		return time.UnixMilli(due), holder
	}
	claimed := clock.Now()
	until, aLease := held()
	for clock.Now().Sub(claimed) <= lease+time.Second { // past the lease A's claim took
		clock.Set(until.Add(-100 * time.Millisecond))
		testdb.Eventually(t, 30*time.Second, "A to renew its lease while its recording waits", func() bool {
			until, _ = held()
			return until.After(clock.Now().Add(lease / 2))
		})
		if _, l := held(); l != aLease {
			t.Fatalf("at %s after the claim the log is held under lease %s; want A's %s", clock.Now().Sub(claimed), l, aLease)
		}
	}
	b := &countingClaims{Store: queue.New(st).ForDelivery()}
	run(b) // process B
	testdb.Eventually(t, 30*time.Second, "B to claim 5 times", func() bool { return b.claims.Load() >= 5 })
	lock.Rollback()
	testdb.Eventually(t, 30*time.Second, "the log to be recorded", func() bool {
		l, err := st.Log(context.Background(), acct.ID, logID)
		return err == nil && l.Status == attempt.Succeeded
	})
	cancel()
	wg.Wait()
	if n := rcv.Count(); n != 1 {
		t.Errorf("the event was sent %d times with no process dead and no retry due; want once (the lease was taken over)", n)
	}
}

// manualClock is a time the test moves by hand, from epoch: far from the
// real time, so that a time read from time.Now rather than the clock shows.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock { return &manualClock{now: epoch} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// countingClaims counts a Store's claims.
type countingClaims struct {
	delivery.Store
	claims atomic.Int64
}

func (c *countingClaims) Claim(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, p)
}

// logOf returns the id of the account's one log.
func logOf(t *testing.T, st *store.Store, accountID string) string {
	t.Helper()
	logs, _, err := st.Logs(context.Background(), accountID, store.LogFilter{Page: store.Page{Limit: 10}})
	if err != nil || len(logs) != 1 {
		t.Fatalf("logs: %d, %v; want 1", len(logs), err)
	}
	return logs[0].ID
}
