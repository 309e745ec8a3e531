package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// A batch that PostgreSQL refuses partway through its one round trip
// (decision 0106) writes nothing, and the next batch is recorded: the
// refusal left its connection in an aborted transaction, which the pool,
// here of one connection for the dispatcher, does not hand out again.
func TestARefusedRecordingWritesNothing(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 1)
	url := testdb.PostgresURL(t)
	ctx := context.Background()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	// Three connections: one of them the dispatcher's (deliveryPoolSize).
	st := storetest.OpenPostgres(t, url+sep+"pool_max_conns=3", nil)
	acct, _ := storetest.AccountWithWebhook(t, st)
	db := testdb.OpenDB(t, url)
	// The database refuses an attempt answered 599, as it would refuse a
	// row for a constraint or a full disk.
	for _, q := range []string{
		`CREATE FUNCTION refuse_599() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status_code = 599 THEN RAISE EXCEPTION 'refused in a test'; END IF;
  RETURN NEW;
END $$`,
		`CREATE TRIGGER refuse_599 BEFORE INSERT ON webhook_attempts FOR EACH ROW EXECUTE FUNCTION refuse_599()`,
	} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	d := queue.New(st).ForDelivery()
	now := time.Now()
	claims, err := d.Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 2 {
		t.Fatalf("claimed %d (%v); want 2", len(claims), err)
	}
	answered := func(c store.Claim, r store.Result, code int) store.Outcome {
		o := store.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: store.TriggerAutomatic, Result: r,
			Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code, Duration: time.Millisecond}}
		if r == store.Retry {
			o.NextAt, o.Reason = now.Add(time.Minute), "receiver answered 500"
		}
		return o
	}
	// written counts what the batch's logs have made: attempts, logs moved
	// on from waiting, queue rows no longer held.
	written := func() (attempts, moved, released int) {
		t.Helper()
		for _, c := range claims {
			attempts += db.Int(`SELECT COUNT(*) FROM webhook_attempts WHERE log_id = ?`, c.LogID)
			moved += db.Int(`SELECT COUNT(*) FROM webhook_event_logs WHERE id = ? AND status NOT IN ('queued', 'pending')`, c.LogID)
			released += db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE log_id = ? AND lease IS NULL`, c.LogID) +
				1 - db.Int(`SELECT COUNT(*) FROM delivery_queue WHERE log_id = ?`, c.LogID)
		}
		return
	}

	if _, err := d.Complete(ctx, []store.Outcome{answered(claims[0], store.Delivered, 200), answered(claims[1], store.Delivered, 599)}, 5); err == nil {
		t.Fatal("a batch the database refused was recorded")
	}
	if a, m, r := written(); a != 0 || m != 0 || r != 0 {
		t.Fatalf("the refused batch wrote %d attempts, moved %d logs and let go of %d queue rows; want nothing", a, m, r)
	}
	if _, err := d.Complete(ctx, []store.Outcome{answered(claims[0], store.Delivered, 200), answered(claims[1], store.Retry, 500)}, 5); err != nil {
		t.Fatalf("the next batch: %v", err)
	}
	if a, m, r := written(); a != 2 || m != 2 || r != 2 {
		t.Fatalf("the next batch wrote %d attempts, moved %d logs and let go of %d queue rows; want 2 of each", a, m, r)
	}
}
