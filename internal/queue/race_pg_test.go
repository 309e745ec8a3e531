package queue_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// pgRace opens a store on a fresh PostgreSQL schema with one webhook, and a
// second, raw connection to the same schema to race it with.
func pgRace(t *testing.T) (*store.Store, *sql.DB, string, string) {
	t.Helper()
	url := testdb.PostgresURL(t)
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), url, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	raw := testdb.OpenPostgres(t, url) // same schema (search_path in URL)
	raw.SetMaxOpenConns(2)             // tests share the server's connections
	acct, err := st.CreateAccount(context.Background(), store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{Name: "h", URL: "https://example.com/h",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
	if err != nil {
		t.Fatal(err)
	}
	return st, raw, acct.ID, w.ID
}

// waitBlocked waits until n backends wait, directly or behind one another,
// for a lock the transaction tx holds: the interleaving a race test needs,
// made sure of rather than given a moment to happen.
func waitBlocked(t *testing.T, raw *sql.DB, tx *sql.Tx, n int) {
	t.Helper()
	var holder int
	if err := tx.QueryRow(`SELECT pg_backend_pid()`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	testdb.Eventually(t, 10*time.Second, fmt.Sprintf("%d statements waiting for the open transaction's locks", n), func() bool {
		var blocked int
		err := raw.QueryRow(`WITH RECURSIVE behind(pid) AS (
  SELECT $1::int
  UNION SELECT a.pid FROM pg_stat_activity a JOIN behind b ON b.pid = ANY(pg_blocking_pids(a.pid)))
SELECT COUNT(*) - 1 FROM behind`, holder).Scan(&blocked)
		if err != nil {
			t.Fatal(err)
		}
		return blocked >= n
	})
}

// lockWebhook opens a transaction on raw that holds webhook hook's row
// under lock (FOR SHARE, FOR UPDATE…), as a concurrent transaction would;
// the caller ends it.
func lockWebhook(t *testing.T, raw *sql.DB, hook, lock string) *sql.Tx {
	t.Helper()
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT id FROM webhooks WHERE id = $1 `+lock, hook); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	return tx
}

func fireOne(st *store.Store, acct string) error {
	return st.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Fire(context.Background(), acct, event.LicenseCreated, map[string]any{"k": 1})
		return err
	})
}

// Deleting a webhook locks it, then its logs (by cascade); recording an
// outcome must take the same order, or the two deadlock.
func TestRecordingAndDeletingAWebhookDoNotDeadlock(t *testing.T) {
	t.Parallel()
	st, raw, acct, hook := pgRace(t)
	if err := fireOne(st, acct); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cs, err := queue.New(st).Claim(context.Background(), store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %v %d", err, len(cs))
	}
	// Something holding a share lock on the webhook for a moment (any
	// reader FOR SHARE) lines the two up; in production it is just timing.
	t0 := lockWebhook(t, raw, hook, "FOR SHARE")
	errs := make(chan error, 2)
	go func() { errs <- st.DeleteWebhook(context.Background(), acct, hook) }()
	waitBlocked(t, raw, t0, 1) // the delete waits for the webhook
	code := 500
	go func() {
		_, err := queue.New(st).Complete(context.Background(), []store.Outcome{{LogID: cs[0].LogID, WebhookID: hook, Lease: cs[0].Lease,
			Trigger: store.TriggerAutomatic, Result: store.Exhausted, Reason: "x",
			Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}}}, 50)
		errs <- err
	}()
	waitBlocked(t, raw, t0, 2) // and so does the recording, behind it
	t0.Commit()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("%v", err)
		}
	}
}

// An event fired while one of its webhooks is being deleted leaves that
// webhook out; the change that fired it must not fail on the foreign key.
func TestFiringWhileAWebhookIsDeletedSucceeds(t *testing.T) {
	t.Parallel()
	st, raw, acct, hook := pgRace(t)
	t1, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := t1.Exec(`DELETE FROM webhooks WHERE id = $1`, hook); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { errs <- fireOne(st, acct) }()
	waitBlocked(t, raw, t1, 1) // the firing waits for the deleted webhook
	t1.Commit()
	if err := <-errs; err != nil {
		t.Errorf("firing an event while a webhook is deleted: %v", err)
	}
}

// Recording a delivery to a webhook that is Healthy with no failure streak
// changes nothing of the webhook, and neither locks nor waits for its row:
// batches of one busy webhook's deliveries are recorded side by side. It
// still waits when the delivery restores an Unhealthy webhook, and neither
// deadlocks with the webhook's deletion.
func TestRecordingADeliveryLocksItsWebhookOnlyToChangeItsHealth(t *testing.T) {
	t.Parallel()
	st, raw, acct, hook := pgRace(t)
	claim := func() store.Claim {
		t.Helper()
		if err := fireOne(st, acct); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		cs, err := queue.New(st).Claim(context.Background(), store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %v %d", err, len(cs))
		}
		return cs[0]
	}
	deliver := func(c store.Claim) <-chan error {
		done := make(chan error, 1)
		code := 200
		go func() {
			_, err := queue.New(st).Complete(context.Background(), []store.Outcome{{LogID: c.LogID, WebhookID: hook, Lease: c.Lease,
				Trigger: store.TriggerAutomatic, Result: store.Delivered,
				Attempt: &store.AttemptRecord{SentAt: time.Now(), StatusCode: &code}}}, 50)
			done <- err
		}()
		return done
	}

	// Healthy: recorded while another transaction holds the webhook.
	first := claim()
	held := lockWebhook(t, raw, hook, "FOR UPDATE")
	select {
	case err := <-deliver(first):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testdb.BusyFloor):
		t.Fatal("recording a delivery to a Healthy webhook waited for the webhook's row lock")
	}
	held.Rollback()

	// Unhealthy: its delivery makes it Healthy, under the webhook's lock.
	if _, err := raw.Exec(`UPDATE webhooks SET status = 'Unhealthy', failure_streak = 2 WHERE id = $1`, hook); err != nil {
		t.Fatal(err)
	}
	second := claim()
	held = lockWebhook(t, raw, hook, "FOR UPDATE")
	done := deliver(second)
	waitBlocked(t, raw, held, 1)
	held.Commit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var status string
	var streak int
	if err := raw.QueryRow(`SELECT status, failure_streak FROM webhooks WHERE id = $1`, hook).Scan(&status, &streak); err != nil {
		t.Fatal(err)
	}
	if status != "Healthy" || streak != 0 {
		t.Errorf("after a delivery the webhook is %s with a streak of %d; want Healthy, 0", status, streak)
	}

	// Healthy again: a delivery recorded while the webhook's deletion waits
	// (behind a reader's share lock) does not deadlock with it.
	third := claim()
	t0 := lockWebhook(t, raw, hook, "FOR SHARE")
	deleted := make(chan error, 1)
	go func() { deleted <- st.DeleteWebhook(context.Background(), acct, hook) }()
	waitBlocked(t, raw, t0, 1)
	if err := <-deliver(third); err != nil {
		t.Fatal(err)
	}
	t0.Commit()
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
}
