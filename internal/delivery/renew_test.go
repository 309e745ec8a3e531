package delivery_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// A process whose attempt is made but whose recording is held up for longer
// than the lease (a busy machine, a slow database) still holds its log: it
// renews the lease, and another process does not take the log over and send
// it again. The recording is held up by locking the webhook's row, which
// recording locks first; this takes PostgreSQL's row locks (on SQLite the
// one writer would hold up every process alike).
func TestHeldLeaseIsNotTakenOver(t *testing.T) {
	t.Parallel()
	dbURL := heraldtest.PostgresURL(t)
	rcv := heraldtest.NewReceiver(t)
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), dbURL, store.Options{Key: key})
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
		_, err := tx.Fire(context.Background(), acct.ID, event.LicenseCreated, event.Sample(event.LicenseCreated, time.Now()))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Lock the webhook's row as a long transaction would.
	lock, err := heraldtest.OpenDB(t, dbURL).SQL().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.Exec(`SELECT id FROM webhooks WHERE id = $1 FOR UPDATE`, hook.ID); err != nil {
		t.Fatal(err)
	}

	const lease = 3 * time.Second
	cfg := delivery.Config{AttemptTimeout: time.Second, Lease: lease, RetryInterval: time.Hour, PollInterval: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func() {
		wg.Add(1)
		go func() { defer wg.Done(); delivery.New(st, cfg).Run(ctx) }()
	}
	run() // process A: sends, then waits to record
	heraldtest.Eventually(t, 30*time.Second, "the first attempt", func() bool { return rcv.Count() > 0 })
	time.Sleep(lease + time.Second) // past the lease A's claim took
	run()                           // process B
	time.Sleep(time.Second)         // B claims every 50ms
	lock.Rollback()
	heraldtest.Eventually(t, 30*time.Second, "the log to be recorded", func() bool {
		l, err := st.Log(context.Background(), acct.ID, logOf(t, st, acct.ID))
		return err == nil && l.Status == store.Succeeded
	})
	cancel()
	wg.Wait()
	if n := rcv.Count(); n != 1 {
		t.Errorf("the event was sent %d times with no process dead and no retry due; want once (the lease was taken over)", n)
	}
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
