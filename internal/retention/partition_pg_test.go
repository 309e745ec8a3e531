package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestRetentionDropsWholeDaysButNotWaitingLogs: retention drops the
// partitions of a day past the retention whose logs all completed, and
// their files are gone (the space is the file system's again); a day that
// still holds a queued log keeps it and loses its completed logs row by
// row, and goes whole once its last log completed and aged; a day's events
// referred to by a log of the next day (fired just before midnight) wait
// for that log.
func TestRetentionDropsWholeDaysButNotWaitingLogs(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	testdb.PostgresHandles(t, 2)
	url := testdb.PostgresURL(t)
	st := storetest.OpenPostgres(t, url, &now)
	acct, hook := storetest.AccountWithWebhook(t, st)
	ctx := context.Background()
	today := store.Day(now)
	d1, d2 := today.AddDate(0, 0, -10), today.AddDate(0, 0, -9)
	if err := st.MakePartitions(ctx, d1, today); err != nil {
		t.Fatal(err)
	}
	_, gone := storetest.History(t, st, acct, hook, d1.Add(time.Hour), d1.Add(time.Hour), 3, d1.Add(2*time.Hour))
	// Fired a millisecond before midnight, delivered just after.
	straddler, late := storetest.History(t, st, acct, hook, d2.Add(-time.Millisecond), d2.Add(time.Millisecond), 1, d2.Add(time.Hour))
	_, thinned := storetest.History(t, st, acct, hook, d2.Add(time.Hour), d2.Add(time.Hour), 2, d2.Add(2*time.Hour))
	_, recent := storetest.History(t, st, acct, hook, today.Add(-time.Hour), today.Add(-time.Hour), 2, today.Add(-time.Minute))
	// A log of d2 still queued: it holds its day.
	waitingEvent, waiting := storetest.History(t, st, acct, hook, d2.Add(3*time.Hour), d2.Add(3*time.Hour), 1, d2)
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`UPDATE webhook_event_logs SET status = 'queued', completed_at = NULL WHERE id = ?`, []any{waiting[0]}},
			{`INSERT INTO delivery_queue (log_id, webhook_id, due_at) VALUES (?, ?, ?)`, []any{waiting[0], hook.ID, store.MS(now)}},
			{`INSERT INTO recoveries (id, account_id, webhook_id, status, since_at, statuses, total, created_at) VALUES ('r', ?, ?, 'done', 0, '[]', 3, 0)`, []any{acct.ID, hook.ID}},
			{`INSERT INTO recovery_logs (recovery_id, log_id, state) VALUES ('r', ?, 'sent'), ('r', ?, 'sent'), ('r', ?, 'sent')`, []any{gone[0], recent[0], waiting[0]}},
			// The straddler's log was written before decision 0104, its
			// id made after its event's, as migration 0088 finds such
			// logs; the events fired since have logs of their ids.
			{`UPDATE event_log_ids SET since = ?`, []any{store.MS(d2.Add(2 * time.Millisecond))}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st = storetest.OpenPostgres(t, url, &now)
	var file string
	var size int64
	if err := st.QueryRow(ctx, `SELECT pg_relation_filepath(?), pg_relation_size(?)`, storetest.Partition("webhook_event_logs", d1), storetest.Partition("webhook_event_logs", d1)).Scan(&file, &size); err != nil || size == 0 {
		t.Fatalf("the day's logs take %d bytes at %s, %v; want some", size, file, err)
	}

	cfg := retention.Config{Keep: 5 * 24 * time.Hour, Batch: 2, Pause: time.Millisecond}
	logs, events, err := retention.Purge(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// d1's 3 logs go with their partition; d2's 3 completed ones row by
	// row, with their events (counted as logs' events are, not at all);
	// d1's event by the events' own pass, as d1's partition of events is
	// kept while the straddling log referred to one.
	if logs != 6 || events != 1 {
		t.Errorf("purged %d logs and %d events; want 6 and 1", logs, events)
	}
	for _, name := range []string{storetest.Partition("webhook_event_logs", d1), storetest.Partition("webhook_attempts", d1)} {
		if storetest.Exists(t, st, name) {
			t.Errorf("%s is still there", name)
		}
	}
	if !storetest.Exists(t, st, storetest.Partition("events", d1)) {
		t.Errorf("the events of %s were dropped while a log of the next day referred to one", d1.Format(time.DateOnly))
	}
	var left *int64
	if err := st.QueryRow(ctx, `SELECT (pg_stat_file(?, true)).size`, file).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != nil && *left != 0 {
		t.Errorf("the dropped partition's file %s still holds %d bytes", file, *left)
	}
	for _, id := range append(append(gone, late...), thinned...) {
		if _, err := st.Log(ctx, acct.ID, id); err == nil {
			t.Errorf("expired log %s is still there", id)
		}
	}
	for _, id := range append(waiting, recent...) {
		if _, err := st.Log(ctx, acct.ID, id); err != nil {
			t.Errorf("log %s went: %v", id, err)
		}
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := st.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM recovery_logs`); n != 2 {
		t.Errorf("%d recovery entries left; want those of the recent and the waiting logs", n)
	}
	if n := count(`SELECT COUNT(*) FROM events WHERE id IN (?, ?)`, straddler, waitingEvent); n != 1 {
		t.Errorf("%d of the straddling and the waiting log's events left; want the waiting one's", n)
	}
	if !storetest.Exists(t, st, storetest.Partition("webhook_event_logs", d2)) {
		t.Fatalf("the day with a waiting log was dropped")
	}

	// Another pass drops d1's events, referred to by no log now.
	if _, _, err := retention.Purge(ctx, st, cfg); err != nil {
		t.Fatal(err)
	}
	if storetest.Exists(t, st, storetest.Partition("events", d1)) {
		t.Errorf("the events of %s stay with no log referring to them", d1.Format(time.DateOnly))
	}

	// The waiting log is delivered; once that is older than the retention,
	// its day goes whole.
	claims, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 1 || claims[0].LogID != waiting[0] {
		t.Fatalf("claimed %v, %v; want the waiting log", claims, err)
	}
	code := 200
	if _, err := queue.New(st).Complete(ctx, []store.Outcome{{LogID: waiting[0], WebhookID: hook.ID, Lease: claims[0].Lease, Trigger: store.TriggerAutomatic,
		Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}}}, 50); err != nil {
		t.Fatal(err)
	}
	if _, _, err := retention.Purge(ctx, st, cfg); err != nil {
		t.Fatal(err)
	}
	if !storetest.Exists(t, st, storetest.Partition("webhook_event_logs", d2)) {
		t.Errorf("the day of a log completed within the retention was dropped")
	}
	now = now.Add(6 * 24 * time.Hour)
	logs, _, err = retention.Purge(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if storetest.Exists(t, st, storetest.Partition("webhook_event_logs", d2)) || storetest.Exists(t, st, storetest.Partition("events", d2)) {
		t.Errorf("the day of the last waiting log stays once it completed and aged")
	}
	if logs != 1+len(recent) {
		t.Errorf("purged %d logs; want the once waiting one and the recent ones", logs)
	}
}
