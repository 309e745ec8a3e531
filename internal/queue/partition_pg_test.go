package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestPartitionsAreMadeAheadAndRowsLandInTheirDay: opening the store makes
// the history's partitions of today and the week ahead; a fired event, its
// log and the log's attempt land in the partitions of their ids' days; a
// row of a day without a partition lands in the default one, and making
// that day's partition moves it there.
func TestPartitionsAreMadeAheadAndRowsLandInTheirDay(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	st, acct, hook := storetest.PostgresWithWebhook(t, &now)
	ctx := context.Background()
	tables := []string{"events", "webhook_event_logs", "webhook_attempts"}
	today := store.Day(time.Now())
	for i := range store.PartitionsAhead + 1 {
		for _, table := range tables {
			if name := storetest.Partition(table, today.AddDate(0, 0, i)); !storetest.Exists(t, st, name) {
				t.Errorf("%s was not made at open", name)
			}
		}
	}
	for _, table := range tables {
		if !storetest.Exists(t, st, table+"_default") {
			t.Errorf("%s has no default partition", table)
		}
		if name := storetest.Partition(table, today.AddDate(0, 0, store.PartitionsAhead+1)); storetest.Exists(t, st, name) {
			t.Errorf("%s was made, beyond the days ahead", name)
		}
	}

	var eventID string
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		eventID, err = tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"n": 1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	claims, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 1 {
		t.Fatalf("claimed %d, %v; want the one log", len(claims), err)
	}
	code := 200
	if _, err := queue.New(st).Complete(ctx, []store.Outcome{{LogID: claims[0].LogID, WebhookID: hook.ID, Lease: claims[0].Lease, Trigger: store.TriggerAutomatic,
		Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}}}, 50); err != nil {
		t.Fatal(err)
	}
	eventDay, _ := store.DayOfID(eventID)
	logDay, _ := store.DayOfID(claims[0].LogID)
	for _, c := range []struct{ table, key, id, want string }{
		{"events", "id", eventID, storetest.Partition("events", eventDay)},
		{"webhook_event_logs", "id", claims[0].LogID, storetest.Partition("webhook_event_logs", logDay)},
		{"webhook_attempts", "log_id", claims[0].LogID, storetest.Partition("webhook_attempts", logDay)},
	} {
		if got := storetest.Where(t, st, c.table, c.key, c.id); got != c.want {
			t.Errorf("the %s row is in %s; want %s", c.table, got, c.want)
		}
	}

	// Yesterday's partitions, made empty ahead of it and written since,
	// are analysed by the next making (a never analysed table has
	// reltuples -1).
	yesterday := today.AddDate(0, 0, -1)
	if err := st.MakePartitions(ctx, yesterday, yesterday); err != nil {
		t.Fatal(err)
	}
	storetest.History(t, st, acct, hook, yesterday.Add(time.Hour), yesterday.Add(time.Hour), 3, yesterday.Add(2*time.Hour))
	tuples := func() int {
		t.Helper()
		var n int
		if err := st.QueryRow(ctx, `SELECT CAST(reltuples AS INTEGER) FROM pg_class WHERE oid = to_regclass(?)`, storetest.Partition("webhook_event_logs", yesterday)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := tuples(); n != -1 {
		t.Fatalf("yesterday's logs show %d tuples before; want -1, never analysed", n)
	}
	if err := st.MakePartitionsAhead(ctx); err != nil {
		t.Fatal(err)
	}
	if n := tuples(); n != 3 {
		t.Errorf("yesterday's logs show %d tuples after the making; want 3, analysed", n)
	}

	// A day the maker has not reached: its rows wait in the default.
	later := today.AddDate(0, 0, 30).Add(5 * time.Hour)
	ev, lg := store.NewIDAt(later), store.NewIDAt(later.Add(time.Millisecond))
	at := store.MS(now)
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.created', ?, ?)`, []any{ev, acct.ID, []byte(`{}`), at}},
			{`INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, created_at, updated_at, completed_at)
VALUES (?, ?, ?, ?, 'license.created', 'succeeded', 1, ?, ?, ?)`, []any{lg, acct.ID, hook.ID, ev, at, at, at}},
			{`INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, status_code, duration_ms, response_body) VALUES (?, 1, 'automatic', ?, 200, 5, '')`, []any{lg, at}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, key, id string }{{"events", "id", ev}, {"webhook_event_logs", "id", lg}, {"webhook_attempts", "log_id", lg}} {
		if got := storetest.Where(t, st, c.table, c.key, c.id); got != c.table+"_default" {
			t.Errorf("the %s row of a day without a partition is in %s; want the default", c.table, got)
		}
	}
	if err := st.MakePartitions(ctx, later, later); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, key, id string }{{"events", "id", ev}, {"webhook_event_logs", "id", lg}, {"webhook_attempts", "log_id", lg}} {
		if got, want := storetest.Where(t, st, c.table, c.key, c.id), storetest.Partition(c.table, later); got != want {
			t.Errorf("the %s row is in %s once its day was made; want %s", c.table, got, want)
		}
		var n int
		if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM `+c.table+`_default`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s_default holds %d rows, %v; want none", c.table, n, err)
		}
	}
	if l, err := st.Log(ctx, acct.ID, lg); err != nil || l.Status != store.Succeeded || len(l.Attempts) != 1 {
		t.Errorf("the moved log: %+v, %v; want it succeeded with its attempt", l, err)
	}
	// Several processes making the same days at once make each once.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- st.MakePartitions(ctx, today.AddDate(0, 0, 40), today.AddDate(0, 0, 42))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("making partitions at once: %v", err)
		}
	}
	if !storetest.Exists(t, st, storetest.Partition("webhook_attempts", today.AddDate(0, 0, 42))) {
		t.Errorf("the partitions made at once are not there")
	}
}

// TestTimeAndEventFiltersFindEveryLogOfTheirRange: on the wall clock the
// filters by creation time and by event bound the log id too (so that
// PostgreSQL reads only the days in range); over logs written before
// decision 0100, whose ids were made after their created_at, they still
// find every log in range, one created a moment before midnight whose id
// was made after it included, and none outside.
func TestTimeAndEventFiltersFindEveryLogOfTheirRange(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 2)
	url := testdb.PostgresURL(t)
	ctx := context.Background()
	open := func() *store.Store {
		st, err := store.Open(ctx, url, store.Options{Key: make([]byte, 32)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := open()
	acct, hook := storetest.AccountWithWebhook(t, st)
	today := store.Day(time.Now())
	d1, d2, d3 := today.AddDate(0, 0, -3), today.AddDate(0, 0, -2), today.AddDate(0, 0, -1)
	if err := st.MakePartitions(ctx, d1, today); err != nil {
		t.Fatal(err)
	}
	ev1, first := storetest.History(t, st, acct, hook, d1.Add(time.Hour), d1.Add(time.Hour), 2, d1.Add(2*time.Hour))
	_, second := storetest.History(t, st, acct, hook, d2.Add(time.Hour), d2.Add(time.Hour), 3, d2.Add(2*time.Hour))
	_, third := storetest.History(t, st, acct, hook, d3.Add(time.Hour), d3.Add(time.Hour), 1, d3.Add(2*time.Hour))
	// Created a millisecond before d2, its id made ten minutes later (a
	// firing transaction that waited): in d2's partition, of d1 by time.
	lateEv, late := storetest.History(t, st, acct, hook, d2.Add(-time.Millisecond), d2.Add(10*time.Minute), 1, d2.Add(time.Hour))
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET created_at = ? WHERE id = ?`, store.MS(d2.Add(-time.Millisecond)), late[0])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// As migrations 0087 and 0088 find them: written before them.
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE log_ids_exact SET since = (SELECT MAX(created_at) + 1 FROM webhook_event_logs);
UPDATE event_log_ids SET since = (SELECT MAX(created_at) + 1 FROM webhook_event_logs)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st = open()
	ids := func(f store.LogFilter) map[string]bool {
		t.Helper()
		f.Limit = 100
		list, _, err := st.Logs(ctx, acct.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := st.CountLogs(ctx, acct.ID, f, 1000)
		if err != nil || n != len(list) {
			t.Errorf("count %d, %v; the list has %d", n, err, len(list))
		}
		got := map[string]bool{}
		for _, l := range list {
			got[l.ID] = true
		}
		return got
	}
	set := func(lists ...[]string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lists {
			for _, id := range l {
				m[id] = true
			}
		}
		return m
	}
	tests := []struct {
		name string
		f    store.LogFilter
		want map[string]bool
	}{
		{"the first day", store.LogFilter{From: d1, To: d2}, set(first, late)},
		{"the second day", store.LogFilter{From: d2, To: d3}, set(second)},
		{"from the second day", store.LogFilter{From: d2}, set(second, third)},
		{"until the second day", store.LogFilter{To: d2}, set(first, late)},
		{"an hour of the first day", store.LogFilter{From: d1.Add(time.Hour), To: d1.Add(time.Hour + time.Second)}, set(first)},
		{"an event", store.LogFilter{EventID: ev1}, set(first)},
		{"an event of a moment before midnight", store.LogFilter{EventID: lateEv}, set(late)},
		{"an event and a day it is not of", store.LogFilter{EventID: ev1, From: d2}, set()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(tt.f); len(got) != len(tt.want) || !func() bool {
				for id := range tt.want {
					if !got[id] {
						return false
					}
				}
				return true
			}() {
				t.Errorf("got %v; want %v", got, tt.want)
			}
		})
	}
}

// TestALogOfAnotherIdShapeIsRecorded: a log whose id is not NewID's (a
// hand-written row, in the default partition) is still moved when its
// outcome is recorded beside one of NewID's, by the log move's array form
// (the range form holds only for NewID's texts, store.IDRange).
func TestALogOfAnotherIdShapeIsRecorded(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	st, acct, hook := storetest.PostgresWithWebhook(t, &now)
	ctx := context.Background()
	at := store.MS(now)
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]any{"n": 1}); err != nil {
			return err
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES ('ev-hand', ?, 'license.created', ?, ?)`, []any{acct.ID, []byte(`{}`), at}},
			{`INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, created_at, updated_at)
VALUES ('log-hand', ?, ?, 'ev-hand', 'license.created', 'queued', 0, ?, ?)`, []any{acct.ID, hook.ID, at, at}},
			{`INSERT INTO delivery_queue (log_id, webhook_id, due_at) VALUES ('log-hand', ?, ?)`, []any{hook.ID, at}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	claims, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 2 {
		t.Fatalf("claimed %d, %v; want the fired log and the hand-written one", len(claims), err)
	}
	code := 200
	var outs []store.Outcome
	for _, c := range claims {
		outs = append(outs, store.Outcome{LogID: c.LogID, WebhookID: hook.ID, Lease: c.Lease, Trigger: store.TriggerAutomatic,
			Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}})
	}
	if _, err := queue.New(st).Complete(ctx, outs, 50); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if l, err := st.Log(ctx, acct.ID, c.LogID); err != nil || l.Status != store.Succeeded {
			t.Errorf("log %s after its delivery: %s, %v; want succeeded", c.LogID, l.Status, err)
		}
	}
}
