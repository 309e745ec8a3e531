package queue_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// tableWrites is what pg_stat_user_tables counted of one table, with the
// table's indexes that every row enters (partial ones apart: a row enters
// those only when it meets their condition).
type tableWrites struct {
	Inserts, Updates, HOT, Deletes int64
	Indexes                        int64
	Partial                        int64
}

// entries is how many index entries the counted writes made: each insert,
// and each update that is not HOT, enters every full index once (a HOT
// update enters none; a delete enters none, its entries go at vacuum). The
// partial indexes are checked apart, by their condition.
func (w tableWrites) entries() int64 { return (w.Inserts + w.Updates - w.HOT) * w.Indexes }

// TestADeliveryWritesItsLogOnceAndHOT measures on a fresh schema what a
// delivery to one webhook writes on PostgreSQL (decision 0086), over a burst
// whose outcomes are recorded in one batch: each log is
// inserted at firing and updated once, HOT, at its outcome (a claim writes
// only the narrow queue row); the queue row is inserted, leased (HOT: the
// lease's end is not the claim index's due_at, decision 0099) and deleted;
// and the index entries of the whole delivery (event, log, attempt, queue
// row) number 9, where the log as the queue made about 24.
//
// The figures are pg_stat_user_tables' counts, exact once every backend
// that wrote has flushed them: the store is closed (a backend flushes its
// counts as it exits) and the counts are waited for.
func TestADeliveryWritesItsLogOnceAndHOT(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 1)
	url := testdb.PostgresURL(t)
	ctx := context.Background()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(ctx, url, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	acct, hook := storetest.AccountWithWebhook(t, st)
	// A burst: the logs fill several pages, and their outcomes come in one
	// batch, so each page must hold its logs' new versions (the table's
	// fillfactor) for the updates to be HOT.
	const n = 60
	for range n {
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic", "key": "ABCD-EFGH-IJKL-MNOP"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	claims, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 100, PerWebhook: 100})
	if err != nil || len(claims) != n {
		t.Fatalf("claimed %d logs, %v; want %d", len(claims), err, n)
	}
	code := 200
	var outs []store.Outcome
	for _, c := range claims {
		outs = append(outs, store.Outcome{LogID: c.LogID, WebhookID: hook.ID, Lease: c.Lease, Trigger: store.TriggerAutomatic,
			Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, ReceivedAt: &now, StatusCode: &code, ResponseBody: []byte("ok")}})
	}
	if _, err := queue.New(st).Complete(ctx, outs, 50); err != nil {
		t.Fatal(err)
	}
	if l, err := st.Log(ctx, acct.ID, claims[0].LogID); err != nil || l.Status != store.Succeeded {
		t.Fatalf("a log after its delivery: %s, %v; want succeeded", l.Status, err)
	}
	// The completed delivery's queue row is dead; herald's own vacuum
	// reclaims it (autovacuum is not counted on).
	if err := queue.New(st).Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close() // its backends flush their counts as they exit

	raw := testdb.OpenPostgres(t, url)
	tables := []string{"events", "webhook_event_logs", "webhook_attempts", "delivery_queue", "webhooks"}
	writes := map[string]tableWrites{}
	read := func() bool {
		if _, err := raw.Exec(`SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		for _, name := range tables {
			var w tableWrites
			// The history is partitioned by day (migration 0070): its
			// counts are its partitions' together, its indexes the
			// partitioned table's.
			err := raw.QueryRow(`SELECT COALESCE(SUM(s.n_tup_ins), 0), COALESCE(SUM(s.n_tup_upd), 0), COALESCE(SUM(s.n_tup_hot_upd), 0), COALESCE(SUM(s.n_tup_del), 0),
  (SELECT COUNT(*) FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indpred IS NULL),
  (SELECT COUNT(*) FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indpred IS NOT NULL)
FROM pg_stat_user_tables s WHERE s.relid = to_regclass($1) OR s.relid IN (SELECT relid FROM pg_partition_tree(to_regclass($1)) WHERE isleaf)`, name).
				Scan(&w.Inserts, &w.Updates, &w.HOT, &w.Deletes, &w.Indexes, &w.Partial)
			if err != nil {
				t.Fatalf("statistics of %s: %v", name, err)
			}
			writes[name] = w
		}
		// Every count asserted below, once flushed: each backend flushes
		// its own as it exits, the firing's apart from the recording's.
		logs, queue := writes["webhook_event_logs"], writes["delivery_queue"]
		return writes["events"].Inserts >= n && logs.Inserts >= n && logs.Updates >= n && writes["webhook_attempts"].Inserts >= n &&
			queue.Inserts >= n && queue.Updates >= n && queue.Deletes >= n
	}
	testdb.Eventually(t, time.Minute, "the closed store's backends to flush their statistics", read)
	t.Logf("writes of %d deliveries: %+v", n, writes)

	logs, queue := writes["webhook_event_logs"], writes["delivery_queue"]
	if logs.Inserts != n || logs.Updates != n || logs.HOT != n {
		t.Errorf("the logs: %d inserted, %d updates of which %d HOT; want each inserted and updated once, HOT", logs.Inserts, logs.Updates, logs.HOT)
	}
	if queue.Inserts != n || queue.Updates != n || queue.HOT != n || queue.Deletes != n {
		t.Errorf("the queue rows: %+v; want each inserted, leased once (HOT) and deleted", queue)
	}
	if w := writes["webhooks"]; w.Updates != 0 {
		t.Errorf("the webhook was updated %d times by a delivery to a Healthy webhook; want none", w.Updates)
	}
	// (Its dead-row count is no witness: the backends' own counts of the
	// delete may be flushed after the vacuum's report.)
	var vacuums int
	if err := raw.QueryRow(`SELECT vacuum_count FROM pg_stat_user_tables
WHERE schemaname = current_schema() AND relname = 'delivery_queue'`).Scan(&vacuums); err != nil {
		t.Fatal(err)
	}
	if vacuums != 1 {
		t.Errorf("delivery_queue vacuumed %d times; want once, by VacuumQueue", vacuums)
	}
	// The logs' partial indexes (all on undelivered_at IS NOT NULL, three
	// since decision 0096) take an entry from each undelivered log.
	var partial int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM webhook_event_logs WHERE undelivered_at IS NOT NULL`).Scan(&partial); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, name := range []string{"events", "webhook_event_logs", "webhook_attempts", "delivery_queue"} {
		total += writes[name].entries()
	}
	total += int64(partial) * writes["webhook_event_logs"].Partial
	// 8: the event 1 (its key), the log 3 (key, account, webhook), the
	// attempt 2 (key, its webhook and sending time), the queue row 2 at
	// firing. Its claim adds none, nor does the log's outcome. (Before
	// decision 0099, 13: the claim wrote the lease's end into the indexed
	// due_at, 2 more, and the event had an index on its time, 1; before
	// decision 0100, 10: the log had an index on its account and creation
	// time, which its id now tells; before decision 0104, 9: the log had
	// an index on its event, whose id now bounds the log's.)
	if total != 8*n {
		t.Errorf("%d deliveries made %d index entries; want 8 each (ARCHITECTURE.md)", n, total)
	}
}

// ReclaimQueue and VacuumQueue free the dead queue rows' space for the next
// rows and leave the table its pages (decisions 0103 and 0117): giving the
// empty end back takes the table's exclusive lock, which every claim and
// renewal would queue behind. Without the reclaim the next rows would
// extend the table past the dead ones.
func TestVacuumsOfTheQueueKeepItsPages(t *testing.T) {
	t.Parallel()
	st, raw, acct, hook := pgRace(t)
	ctx := context.Background()
	const n = 2000
	// deliver fires n events to the webhook and records each delivered:
	// n queue rows inserted, leased and deleted.
	deliver := func() {
		t.Helper()
		firings := make([]store.Firing, n)
		for i := range firings {
			firings[i] = store.Firing{AccountID: acct, Kind: event.LicenseCreated, Data: map[string]any{"id": i}}
		}
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.FireBatch(ctx, firings)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		claims, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: n, PerWebhook: n})
		if err != nil || len(claims) != n {
			t.Fatalf("claimed %d logs, %v; want %d", len(claims), err, n)
		}
		code := 200
		outs := make([]store.Outcome, len(claims))
		for i, c := range claims {
			outs[i] = store.Outcome{LogID: c.LogID, WebhookID: hook, Lease: c.Lease, Trigger: store.TriggerAutomatic,
				Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, ReceivedAt: &now, StatusCode: &code}}
		}
		if _, err := queue.New(st).Complete(ctx, outs, n); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		t.Helper()
		var b int64
		if err := raw.QueryRowContext(ctx, `SELECT pg_relation_size('delivery_queue')`).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	// settled waits until no other session of the database holds a
	// snapshot or transaction older than now: the parallel tests share the
	// database, and a vacuum cannot remove rows deleted after the oldest
	// of them began.
	settled := func() {
		t.Helper()
		var now string
		if err := raw.QueryRowContext(ctx, `SELECT (txid_current() % 4294967296)::text`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		testdb.Eventually(t, time.Minute, "the other sessions' snapshots to pass the deletions", func() bool {
			var older int
			if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND (age(backend_xmin) > age($1::xid) OR age(backend_xid) > age($1::xid))`, now).Scan(&older); err != nil {
				t.Fatal(err)
			}
			return older == 0
		})
	}

	deliver()
	full := size()
	if full == 0 {
		t.Fatal("delivery_queue is empty after 2,000 deliveries; want their dead rows")
	}
	settled()
	if err := queue.New(st).Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if got := size(); got != full {
		t.Fatalf("delivery_queue %d bytes after the reclaim; want %d, its pages kept", got, full)
	}
	deliver()
	if got := size(); got != full {
		t.Errorf("delivery_queue %d bytes after %d more deliveries; want %d, the reclaimed space reused", got, n, full)
	}
	settled()
	if err := queue.New(st).Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	if got := size(); got != full {
		t.Errorf("delivery_queue %d bytes after the vacuum; want %d, its pages kept", got, full)
	}
	deliver()
	if got := size(); got != full {
		t.Errorf("delivery_queue %d bytes after %d more deliveries; want %d, the vacuumed space reused", got, n, full)
	}
}
