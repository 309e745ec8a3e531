package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
)

// BenchmarkRetentionWAL measures the WAL PostgreSQL writes when retention
// removes a day of history (decision 0090): each op seeds a day, 40 days
// back, with logs that each have an event and an attempt, all completed,
// and runs retention.Purge with a 30-day retention. "whole" is such a day,
// dropped with its partitions; "row-by-row" is the same day held by one
// log still queued, so that its completed logs go one by one, as SQLite's
// and a held day's do. It reports WAL bytes per removed log and per op,
// read from pg_current_wal_insert_lsn() around the purge alone.
//
//	HERALD_TEST_POSTGRES_URL=… go test -run '^$' -bench RetentionWAL -benchtime 3x ./internal/store/
func BenchmarkRetentionWAL(b *testing.B) {
	for _, logs := range []int{1_000, 10_000} {
		for _, held := range []bool{false, true} {
			name := map[bool]string{false: "whole", true: "row-by-row"}[held]
			b.Run(fmt.Sprintf("%s/logs=%d", name, logs), func(b *testing.B) {
				benchmarkRetentionWAL(b, logs, held)
			})
		}
	}
}

func benchmarkRetentionWAL(b *testing.B, logs int, held bool) {
	w := storetest.NewWALBench(b, 1)
	st, acct, hook, raw, ctx := w.St, w.Acct, w.Hooks[0], w.Raw, context.Background()
	day := store.Day(time.Now()).AddDate(0, 0, -40)
	if err := st.MakePartitions(ctx, day, day); err != nil {
		b.Fatal(err)
	}
	var wal, removed int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		// A day of history: each log its own event, fired and completed
		// within the day, with one attempt.
		at := day.Add(time.Hour)
		ids, events := make([]string, logs), make([]string, logs)
		for i := range logs {
			t := at.Add(time.Duration(i) * time.Millisecond)
			ids[i], events[i] = store.NewIDAt(t), store.NewIDAt(t)
		}
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO events (id, account_id, kind, body, triggered_at)
SELECT e, ?, 'license.created', '{"id":"lic","key":"ABCD-EFGH-IJKL-MNOP"}', ? FROM unnest(CAST(? AS text[])) AS e`,
					[]any{acct.ID, store.MS(at), events}},
				{`INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, status_code, created_at, updated_at, completed_at)
SELECT l, ?, ?, e, 'license.created', 'succeeded', 1, 200, ?, ?, ? FROM unnest(CAST(? AS text[]), CAST(? AS text[])) AS x(l, e)`,
					[]any{acct.ID, hook.ID, store.MS(at), store.MS(at), store.MS(at), ids, events}},
				{`INSERT INTO webhook_attempts (log_id, webhook_id, number, trigger, sent_at, status_code, duration_ms, response_body)
SELECT l, ?, 1, 'automatic', ?, 200, 5, 'ok' FROM unnest(CAST(? AS text[])) AS l`,
					[]any{hook.ID, store.MS(at), ids}},
			} {
				if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
					return err
				}
			}
			if held { // one more log of the day, still queued, holds it
				id := store.NewIDAt(at.Add(-time.Minute))
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, created_at, updated_at)
VALUES (?, ?, ?, ?, 'license.created', 'queued', 0, ?, ?)`, id, acct.ID, hook.ID, events[0], store.MS(at), store.MS(at)); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO delivery_queue (log_id, webhook_id, due_at) VALUES (?, ?, ?)`, id, hook.ID, store.MS(time.Now().Add(time.Hour))); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if _, err := raw.ExecContext(ctx, `CHECKPOINT`); err != nil { // the purge's WAL, not the seeding's full-page images
			b.Fatal(err)
		}
		b.StartTimer()
		before := w.LSN()
		n, _, err := retention.Purge(ctx, st, retention.Config{Keep: 30 * 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		wal += w.LSN() - before
		removed += int64(n)
		b.StopTimer()
		if n != logs {
			b.Fatalf("retention removed %d logs; want %d", n, logs)
		}
		if held { // the day goes whole next time
			if _, err := raw.ExecContext(ctx, `DELETE FROM delivery_queue; DELETE FROM webhook_event_logs`); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.MakePartitions(ctx, day, day); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(wal)/float64(removed), "WAL-B/log")
	b.ReportMetric(float64(wal)/float64(b.N), "WAL-B/op")
}
