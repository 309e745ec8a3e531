package queue_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestMigrationPartitionsTheHistoryKeepingEveryLog: a PostgreSQL database
// written before the history was partitioned (migration 0070) keeps every
// event, log, attempt and recovery entry, each in the partition of its
// id's day (one of another shape in the default partition), the tables
// analysed; the waiting logs keep their places in the queue and are
// delivered, and the undelivered count is what it was.
func TestMigrationPartitionsTheHistoryKeepingEveryLog(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 1)
	url := testdb.PostgresURL(t)
	ctx := context.Background()
	real := time.Now().UTC()
	now := real
	opts := store.Options{Key: make([]byte, 32), Now: func() time.Time { return now }}
	old, err := store.OpenAtVersion(ctx, url, opts, 65)
	if err != nil {
		t.Fatal(err)
	}
	acct, hook := storetest.AccountWithWebhook(t, old)
	at := store.MS(now)
	today := store.Day(real)
	logs := []struct {
		name, status string
		made         time.Time
		attempts     int
		due          any // in the queue when set
		completed    any
		undelivered  any
	}{
		{"delivered", "succeeded", today.AddDate(0, 0, -3).Add(time.Hour), 1, nil, at - 60_000, nil},
		{"failed", "failed", today.AddDate(0, 0, -3).Add(2 * time.Hour), 5, nil, at - 60_000, at - 60_000},
		{"queued", "queued", today.AddDate(0, 0, -2).Add(time.Hour), 0, at - 1000, nil, nil},
		{"later", "retrying", today.AddDate(0, 0, -1).Add(time.Hour), 1, at + 3_600_000, nil, nil},
		{"legacy", "succeeded", time.Time{}, 1, nil, at - 60_000, nil},
	}
	ids, events := map[string]string{}, map[string]string{}
	err = old.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET left_healthy_at = 0, status = 'Unhealthy' WHERE id = ?`, hook.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO recoveries (id, account_id, webhook_id, status, since_at, statuses, total, created_at) VALUES ('r', ?, ?, 'done', 0, '[]', 1, 0)`, acct.ID, hook.ID); err != nil {
			return err
		}
		for _, l := range logs {
			ids[l.name], events[l.name] = "legacy-log", "legacy-event"
			if !l.made.IsZero() {
				ids[l.name], events[l.name] = store.NewIDAt(l.made.Add(time.Millisecond)), store.NewIDAt(l.made)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.created', ?, ?)`,
				events[l.name], acct.ID, []byte(`{"n":1}`), at); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count,
  created_at, updated_at, completed_at, undelivered_at) VALUES (?, ?, ?, ?, 'license.created', ?, ?, ?, ?, ?, ?)`,
				ids[l.name], acct.ID, hook.ID, events[l.name], l.status, l.attempts, at-120_000, at-120_000, l.completed, l.undelivered); err != nil {
				return err
			}
			for n := 1; n <= l.attempts; n++ {
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, status_code, duration_ms, response_body)
VALUES (?, ?, 'automatic', ?, 503, 5, '')`, ids[l.name], n, at-100_000); err != nil {
					return err
				}
			}
			if l.due != nil {
				if _, err := tx.Exec(ctx, `INSERT INTO delivery_queue (log_id, webhook_id, due_at, attempts) VALUES (?, ?, ?, ?)`, ids[l.name], hook.ID, l.due, l.attempts); err != nil {
					return err
				}
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO recovery_logs (recovery_id, log_id, state) VALUES ('r', ?, 'sent')`, ids["failed"])
		return err
	})
	old.Close()
	if err != nil {
		t.Fatalf("write as version 65: %v", err)
	}

	st, err := store.Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, l := range logs {
		got, err := st.Log(ctx, acct.ID, ids[l.name])
		if err != nil || string(got.Status) != l.status || len(got.Attempts) != l.attempts {
			t.Errorf("the %s log after migration: %s with %d attempts, %v; want %s with %d", l.name, got.Status, len(got.Attempts), err, l.status, l.attempts)
		}
		want := map[bool]string{true: "_default", false: "_p" + l.made.Format("20060102")}[l.made.IsZero()]
		for _, c := range []struct{ table, key, id string }{
			{"events", "id", events[l.name]}, {"webhook_event_logs", "id", ids[l.name]},
		} {
			if got := storetest.Where(t, st, c.table, c.key, c.id); got != c.table+want {
				t.Errorf("the %s log's %s row is in %s; want %s", l.name, c.table, got, c.table+want)
			}
		}
		if l.attempts > 0 {
			if got := storetest.Where(t, st, "webhook_attempts", "log_id", ids[l.name]); got != "webhook_attempts"+want {
				t.Errorf("the %s log's attempts are in %s; want %s", l.name, got, "webhook_attempts"+want)
			}
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
	// Migration 0075 gave the attempts of the last eight days their webhook,
	// which the webhook's charts read them by.
	if n := count(`SELECT COUNT(*) FROM webhook_attempts WHERE webhook_id = ?`, hook.ID); n != 8 {
		t.Errorf("%d attempts carry their webhook after migration; want all 8", n)
	}
	if hours, err := st.AttemptsByHour(ctx, acct.ID, hook.ID, real.Add(-time.Hour)); err != nil || len(hours) != 1 || hours[0].Attempts != 8 {
		t.Errorf("the webhook's chart after migration: %+v, %v; want its 8 attempts", hours, err)
	}
	if n := count(`SELECT COUNT(*) FROM recovery_logs WHERE log_id = ?`, ids["failed"]); n != 1 {
		t.Errorf("%d recovery entries of the failed log; want 1", n)
	}
	for _, name := range []string{"events_unpartitioned", "webhook_event_logs_unpartitioned", "webhook_attempts_unpartitioned"} {
		if storetest.Exists(t, st, name) {
			t.Errorf("%s is left over", name)
		}
	}
	// Analysed: a table never analysed has reltuples -1.
	if n := count(`SELECT CAST(reltuples AS INTEGER) FROM pg_class WHERE oid = to_regclass(?)`, storetest.Partition("webhook_event_logs", today.AddDate(0, 0, -3))); n != 2 {
		t.Errorf("the statistics count %d logs of three days ago; want 2", n)
	}
	for i := range store.PartitionsAhead + 1 {
		if name := storetest.Partition("webhook_event_logs", today.AddDate(0, 0, i)); !storetest.Exists(t, st, name) {
			t.Errorf("%s was not made", name)
		}
	}
	if w, err := st.Webhook(ctx, acct.ID, hook.ID); err != nil || w.UndeliveredCount != 1 {
		t.Errorf("undelivered count after migration: %d, %v; want 1", w.UndeliveredCount, err)
	}
	g, err := st.Gauges(ctx)
	if err != nil || g.Backlog[store.Queued] != 1 || g.Backlog[store.Retrying] != 1 {
		t.Errorf("gauges after migration: %+v, %v; want 1 queued, 1 retrying", g.Backlog, err)
	}
	code := 200
	for _, step := range []struct {
		at   time.Time
		name string
	}{{now, "queued"}, {now.Add(2 * time.Hour), "later"}} {
		claims, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: step.at, LeaseUntil: step.at.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
		if err != nil || len(claims) != 1 || claims[0].LogID != ids[step.name] {
			t.Fatalf("claimed %v, %v at %v; want the %s log", claims, err, step.at, step.name)
		}
		if _, err := queue.New(st).Complete(ctx, []store.Outcome{{LogID: claims[0].LogID, WebhookID: hook.ID, Lease: claims[0].Lease, Trigger: store.TriggerAutomatic,
			Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: step.at, StatusCode: &code}}}, 50); err != nil {
			t.Fatal(err)
		}
		if l, err := st.Log(ctx, acct.ID, ids[step.name]); err != nil || l.Status != store.Succeeded {
			t.Errorf("the migrated %s log after its delivery: %s, %v; want succeeded", step.name, l.Status, err)
		}
	}
}

// TestMigrationKeepsTheSlackOfOlderLogIDs: logs written before migration
// 0087, whose ids were made by the wall clock after their created_at, are
// still found by date ranges that end just after them, their one-hour
// slack kept; log_ids_exact's instant lies after every one of them, and a
// database with no logs has every id exact (0).
func TestMigrationKeepsTheSlackOfOlderLogIDs(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 2)
	ctx := context.Background()
	key := make([]byte, 32)

	url := testdb.PostgresURL(t)
	old, err := store.OpenAtVersion(ctx, url, store.Options{Key: key}, 86)
	if err != nil {
		t.Fatal(err)
	}
	acct, hook := storetest.AccountWithWebhook(t, old)
	// Created a moment ago; ids made 30 minutes after (a firing that
	// waited, and the newest id later than the server's clock).
	created := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	_, ids := writeEarlierHistory(t, old, acct, hook, created, 3, func(i int) string {
		return store.NewIDAt(created.Add(30*time.Minute + time.Duration(i)*time.Millisecond))
	})
	old.Close()
	st, err := store.Open(ctx, url, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var since int64
	if err := st.QueryRow(ctx, `SELECT since FROM log_ids_exact`).Scan(&since); err != nil {
		t.Fatal(err)
	}
	if newest := created.Add(30*time.Minute + 2*time.Millisecond).UnixMilli(); since <= newest {
		t.Errorf("log_ids_exact.since %d; want after the newest id's time, %d", since, newest)
	}
	for _, f := range []store.LogFilter{
		{From: created, To: created.Add(time.Millisecond)},
		{To: created.Add(time.Millisecond)},
		{From: created},
	} {
		f.Limit = 10
		list, _, err := st.Logs(ctx, acct.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(ids) {
			t.Errorf("from %v to %v: %d logs; want the %d made before the migration", f.From, f.To, len(list), len(ids))
		}
		if n, _, err := st.CountLogs(ctx, acct.ID, f, 10); err != nil || n != len(ids) {
			t.Errorf("from %v to %v: counted %d, %v; want %d", f.From, f.To, n, err, len(ids))
		}
	}

	empty, err := store.Open(ctx, testdb.PostgresURL(t), store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if err := empty.QueryRow(ctx, `SELECT since FROM log_ids_exact`).Scan(&since); err != nil || since != 0 {
		t.Errorf("log_ids_exact.since of a database with no logs: %d, %v; want 0", since, err)
	}
}

// TestMigrationFindsOlderLogsOfAnEventThroughTheirDaysIndex: migration
// 0088 drops the logs' index on their event. Logs written before it, whose
// ids are not made from their event's, are still found by their event,
// through an index of their own day's partition, which only the days
// holding logs get; the logs of an event fired after it are found by the
// range of their ids, and event_log_ids' instant lies between the two. A
// database with no logs gets no such index and an instant of 0.
func TestMigrationFindsOlderLogsOfAnEventThroughTheirDaysIndex(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 2)
	ctx := context.Background()
	key := make([]byte, 32)

	url := testdb.PostgresURL(t)
	old, err := store.OpenAtVersion(ctx, url, store.Options{Key: key}, 87)
	if err != nil {
		t.Fatal(err)
	}
	acct, hook := storetest.AccountWithWebhook(t, old)
	now := time.Now().UTC().Truncate(time.Millisecond)
	yesterday := store.Day(now).AddDate(0, 0, -1)
	if err := old.MakePartitions(ctx, yesterday, now); err != nil {
		t.Fatal(err)
	}
	// As herald fired them before: the logs' ids of the firing's instant,
	// but not of their event's.
	older := map[string][]string{}
	for _, at := range []time.Time{yesterday.Add(time.Hour), now.Add(-time.Minute)} {
		ev, ids := writeEarlierHistory(t, old, acct, hook, at, 2, func(int) string { return store.NewIDAt(at) })
		for _, id := range ids {
			if lo, hi, _ := store.EventLogIDs(ev); id >= lo && id < hi {
				t.Fatalf("log id %s made before the migration lies in its event's range", id)
			}
		}
		older[ev] = ids
	}
	old.Close()

	st, err := store.Open(ctx, url, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if storetest.Exists(t, st, "webhook_event_logs_event") {
		t.Errorf("the logs' index on their event is still there")
	}
	eventIndexes := func() map[string]bool {
		t.Helper()
		rows, err := st.Query(ctx, `SELECT c.relname FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('webhook_event_logs')) AND a.attname = 'event_id'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]bool{}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			got[name] = true
		}
		return got
	}
	want := map[string]bool{storetest.Partition("webhook_event_logs", yesterday): true, storetest.Partition("webhook_event_logs", now): true}
	if got := eventIndexes(); !maps.Equal(got, want) {
		t.Errorf("indexes on event_id on %v; want on the days that held logs, %v", got, want)
	}
	var since int64
	if err := st.QueryRow(ctx, `SELECT since FROM event_log_ids`).Scan(&since); err != nil || since <= now.UnixMilli() {
		t.Errorf("event_log_ids.since %d, %v; want after the newest log's time, %d", since, err, now.UnixMilli())
	}
	byEvent := func(ev string) []string {
		t.Helper()
		list, _, err := st.Logs(ctx, acct.ID, store.LogFilter{EventID: ev, Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, err := st.CountLogs(ctx, acct.ID, store.LogFilter{EventID: ev}, 10); err != nil || n != len(list) {
			t.Errorf("counted %d logs of %s, %v; listed %d", n, ev, err, len(list))
		}
		var ids []string
		for _, l := range list {
			ids = append(ids, l.ID)
		}
		slices.Sort(ids)
		return ids
	}
	for ev, ids := range older {
		if got := byEvent(ev); !slices.Equal(got, ids) {
			t.Errorf("logs of %s, fired before the migration: %v; want %v", ev, got, ids)
		}
	}
	var ev string
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		ev, err = tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"id": "lic"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := byEvent(ev)
	if lo, hi, _ := store.EventLogIDs(ev); len(got) != 1 || got[0] < lo || got[0] >= hi {
		t.Errorf("logs of %s, fired after the migration: %v; want one, in [%s, %s)", ev, got, lo, hi)
	}
	// The days made after it never get the index.
	if err := st.MakePartitions(ctx, now, now.AddDate(0, 0, store.PartitionsAhead+2)); err != nil {
		t.Fatal(err)
	}
	if got := eventIndexes(); !maps.Equal(got, want) {
		t.Errorf("indexes on event_id on %v after more days were made; want %v", got, want)
	}

	empty, err := store.Open(ctx, testdb.PostgresURL(t), store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if err := empty.QueryRow(ctx, `SELECT since FROM event_log_ids`).Scan(&since); err != nil || since != 0 {
		t.Errorf("event_log_ids.since of a database with no logs: %d, %v; want 0", since, err)
	}
}

// writeEarlierHistory writes, as an earlier herald did, an event fired at
// at and n succeeded logs of it, the i-th with the id logID(i), and
// returns their ids.
func writeEarlierHistory(t *testing.T, st *store.Store, acct store.Account, hook store.Webhook, at time.Time, n int, logID func(int) string) (string, []string) {
	t.Helper()
	ctx := context.Background()
	ev := store.NewIDAt(at)
	var ids []string
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.created', '{}', ?)`,
			ev, acct.ID, store.MS(at)); err != nil {
			return err
		}
		for i := range n {
			id := logID(i)
			ids = append(ids, id)
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count,
  created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, 'license.created', 'succeeded', 1, ?, ?, ?)`,
				id, acct.ID, hook.ID, ev, store.MS(at), store.MS(at), store.MS(at)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ev, ids
}
