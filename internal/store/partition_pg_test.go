package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// pgStore opens a store on a new PostgreSQL schema whose clock is *now.
func pgStore(t *testing.T, now *time.Time) (*store.Store, store.Account, store.Webhook) {
	t.Helper()
	testdb.PostgresHandles(t, 1)
	st := openPG(t, testdb.PostgresURL(t), now)
	acct, hook := accountWithWebhook(t, st)
	return st, acct, hook
}

// openPG opens a store on the database at url, with the clock that now
// points to (nil: the wall clock), closed at the test's end.
func openPG(t *testing.T, url string, now *time.Time) *store.Store {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	opts := store.Options{Key: make([]byte, 32), Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return *now }}
	if now == nil { // the wall clock, as herald serve has it
		opts.Now = nil
	}
	st, err := store.Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// accountWithWebhook makes an account on st with one webhook of
// license.created.
func accountWithWebhook(t *testing.T, st *store.Store) (store.Account, store.Webhook) {
	t.Helper()
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "h", URL: "https://example.com/h",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_review_token_0123456789abcd"})
	if err != nil {
		t.Fatal(err)
	}
	return acct, hook
}

// where names the partition holding the row of table whose key is id.
func where(t *testing.T, st *store.Store, table, key, id string) string {
	t.Helper()
	var name string
	if err := st.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM `+table+` WHERE `+key+` = ? LIMIT 1`, id).Scan(&name); err != nil {
		t.Fatalf("find %s %s: %v", table, id, err)
	}
	return name
}

func exists(t *testing.T, st *store.Store, name string) bool {
	t.Helper()
	var ok bool
	if err := st.QueryRow(context.Background(), `SELECT to_regclass(?) IS NOT NULL`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func partition(table string, d time.Time) string { return table + "_p" + d.UTC().Format("20060102") }

// TestPartitionsAreMadeAheadAndRowsLandInTheirDay: opening the store makes
// the history's partitions of today and the week ahead; a fired event, its
// log and the log's attempt land in the partitions of their ids' days; a
// row of a day without a partition lands in the default one, and making
// that day's partition moves it there.
func TestPartitionsAreMadeAheadAndRowsLandInTheirDay(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	st, acct, hook := pgStore(t, &now)
	ctx := context.Background()
	tables := []string{"events", "webhook_event_logs", "webhook_attempts"}
	today := store.Day(time.Now())
	for i := range store.PartitionsAhead + 1 {
		for _, table := range tables {
			if name := partition(table, today.AddDate(0, 0, i)); !exists(t, st, name) {
				t.Errorf("%s was not made at open", name)
			}
		}
	}
	for _, table := range tables {
		if !exists(t, st, table+"_default") {
			t.Errorf("%s has no default partition", table)
		}
		if name := partition(table, today.AddDate(0, 0, store.PartitionsAhead+1)); exists(t, st, name) {
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
	claims, err := st.Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 1 {
		t.Fatalf("claimed %d, %v; want the one log", len(claims), err)
	}
	code := 200
	if _, err := st.Complete(ctx, []store.Outcome{{LogID: claims[0].LogID, WebhookID: hook.ID, Lease: claims[0].Lease, Trigger: store.TriggerAutomatic,
		Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}}}, 50); err != nil {
		t.Fatal(err)
	}
	eventDay, _ := store.DayOfID(eventID)
	logDay, _ := store.DayOfID(claims[0].LogID)
	for _, c := range []struct{ table, key, id, want string }{
		{"events", "id", eventID, partition("events", eventDay)},
		{"webhook_event_logs", "id", claims[0].LogID, partition("webhook_event_logs", logDay)},
		{"webhook_attempts", "log_id", claims[0].LogID, partition("webhook_attempts", logDay)},
	} {
		if got := where(t, st, c.table, c.key, c.id); got != c.want {
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
	history(t, st, acct, hook, yesterday.Add(time.Hour), yesterday.Add(time.Hour), 3, yesterday.Add(2*time.Hour))
	tuples := func() int {
		t.Helper()
		var n int
		if err := st.QueryRow(ctx, `SELECT CAST(reltuples AS INTEGER) FROM pg_class WHERE oid = to_regclass(?)`, partition("webhook_event_logs", yesterday)).Scan(&n); err != nil {
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
		if got := where(t, st, c.table, c.key, c.id); got != c.table+"_default" {
			t.Errorf("the %s row of a day without a partition is in %s; want the default", c.table, got)
		}
	}
	if err := st.MakePartitions(ctx, later, later); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, key, id string }{{"events", "id", ev}, {"webhook_event_logs", "id", lg}, {"webhook_attempts", "log_id", lg}} {
		if got, want := where(t, st, c.table, c.key, c.id), partition(c.table, later); got != want {
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
	if !exists(t, st, partition("webhook_attempts", today.AddDate(0, 0, 42))) {
		t.Errorf("the partitions made at once are not there")
	}
}

// history writes, into day d, an event and n logs of it completed at
// completed, each with one attempt, and returns the ids of the logs.
func history(t *testing.T, st *store.Store, acct store.Account, hook store.Webhook, eventAt time.Time, logsAt time.Time, n int, completed time.Time) (string, []string) {
	t.Helper()
	ctx := context.Background()
	ev := store.NewIDAt(eventAt)
	var ids []string
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, 'license.created', ?, ?)`,
			ev, acct.ID, []byte(`{}`), store.MS(eventAt)); err != nil {
			return err
		}
		for i := range n {
			// Logs fired with their event have the ids herald gives them
			// (decision 0104); others model logs written before it, their
			// ids made after their creation (decision 0100).
			id := store.LogIDOf(ev, i)
			if !logsAt.Equal(eventAt) {
				id = store.NewIDAt(logsAt.Add(time.Duration(i) * time.Millisecond))
			}
			ids = append(ids, id)
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, status_code,
  created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, 'license.created', 'succeeded', 1, 200, ?, ?, ?)`,
				id, acct.ID, hook.ID, ev, store.MS(logsAt), store.MS(completed), store.MS(completed)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, status_code, duration_ms, response_body)
VALUES (?, 1, 'automatic', ?, 200, 5, 'ok')`, id, store.MS(logsAt)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ev, ids
}

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
	st := openPG(t, url, &now)
	acct, hook := accountWithWebhook(t, st)
	ctx := context.Background()
	today := store.Day(now)
	d1, d2 := today.AddDate(0, 0, -10), today.AddDate(0, 0, -9)
	if err := st.MakePartitions(ctx, d1, today); err != nil {
		t.Fatal(err)
	}
	_, gone := history(t, st, acct, hook, d1.Add(time.Hour), d1.Add(time.Hour), 3, d1.Add(2*time.Hour))
	// Fired a millisecond before midnight, delivered just after.
	straddler, late := history(t, st, acct, hook, d2.Add(-time.Millisecond), d2.Add(time.Millisecond), 1, d2.Add(time.Hour))
	_, thinned := history(t, st, acct, hook, d2.Add(time.Hour), d2.Add(time.Hour), 2, d2.Add(2*time.Hour))
	_, recent := history(t, st, acct, hook, today.Add(-time.Hour), today.Add(-time.Hour), 2, today.Add(-time.Minute))
	// A log of d2 still queued: it holds its day.
	waitingEvent, waiting := history(t, st, acct, hook, d2.Add(3*time.Hour), d2.Add(3*time.Hour), 1, d2)
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
	st = openPG(t, url, &now)
	var file string
	var size int64
	if err := st.QueryRow(ctx, `SELECT pg_relation_filepath(?), pg_relation_size(?)`, partition("webhook_event_logs", d1), partition("webhook_event_logs", d1)).Scan(&file, &size); err != nil || size == 0 {
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
	for _, name := range []string{partition("webhook_event_logs", d1), partition("webhook_attempts", d1)} {
		if exists(t, st, name) {
			t.Errorf("%s is still there", name)
		}
	}
	if !exists(t, st, partition("events", d1)) {
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
	if !exists(t, st, partition("webhook_event_logs", d2)) {
		t.Fatalf("the day with a waiting log was dropped")
	}

	// Another pass drops d1's events, referred to by no log now.
	if _, _, err := retention.Purge(ctx, st, cfg); err != nil {
		t.Fatal(err)
	}
	if exists(t, st, partition("events", d1)) {
		t.Errorf("the events of %s stay with no log referring to them", d1.Format(time.DateOnly))
	}

	// The waiting log is delivered; once that is older than the retention,
	// its day goes whole.
	claims, err := st.Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 1 || claims[0].LogID != waiting[0] {
		t.Fatalf("claimed %v, %v; want the waiting log", claims, err)
	}
	code := 200
	if _, err := st.Complete(ctx, []store.Outcome{{LogID: waiting[0], WebhookID: hook.ID, Lease: claims[0].Lease, Trigger: store.TriggerAutomatic,
		Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}}}, 50); err != nil {
		t.Fatal(err)
	}
	if _, _, err := retention.Purge(ctx, st, cfg); err != nil {
		t.Fatal(err)
	}
	if !exists(t, st, partition("webhook_event_logs", d2)) {
		t.Errorf("the day of a log completed within the retention was dropped")
	}
	now = now.Add(6 * 24 * time.Hour)
	logs, _, err = retention.Purge(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if exists(t, st, partition("webhook_event_logs", d2)) || exists(t, st, partition("events", d2)) {
		t.Errorf("the day of the last waiting log stays once it completed and aged")
	}
	if logs != 1+len(recent) {
		t.Errorf("purged %d logs; want the once waiting one and the recent ones", logs)
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
	acct, hook := accountWithWebhook(t, st)
	today := store.Day(time.Now())
	d1, d2, d3 := today.AddDate(0, 0, -3), today.AddDate(0, 0, -2), today.AddDate(0, 0, -1)
	if err := st.MakePartitions(ctx, d1, today); err != nil {
		t.Fatal(err)
	}
	ev1, first := history(t, st, acct, hook, d1.Add(time.Hour), d1.Add(time.Hour), 2, d1.Add(2*time.Hour))
	_, second := history(t, st, acct, hook, d2.Add(time.Hour), d2.Add(time.Hour), 3, d2.Add(2*time.Hour))
	_, third := history(t, st, acct, hook, d3.Add(time.Hour), d3.Add(time.Hour), 1, d3.Add(2*time.Hour))
	// Created a millisecond before d2, its id made ten minutes later (a
	// firing transaction that waited): in d2's partition, of d1 by time.
	lateEv, late := history(t, st, acct, hook, d2.Add(-time.Millisecond), d2.Add(10*time.Minute), 1, d2.Add(time.Hour))
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
// (the range form holds only for NewID's texts, store.idRange).
func TestALogOfAnotherIdShapeIsRecorded(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	st, acct, hook := pgStore(t, &now)
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
	claims, err := st.Claim(ctx, store.ClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
	if err != nil || len(claims) != 2 {
		t.Fatalf("claimed %d, %v; want the fired log and the hand-written one", len(claims), err)
	}
	code := 200
	var outs []store.Outcome
	for _, c := range claims {
		outs = append(outs, store.Outcome{LogID: c.LogID, WebhookID: hook.ID, Lease: c.Lease, Trigger: store.TriggerAutomatic,
			Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}})
	}
	if _, err := st.Complete(ctx, outs, 50); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if l, err := st.Log(ctx, acct.ID, c.LogID); err != nil || l.Status != store.Succeeded {
			t.Errorf("log %s after its delivery: %s, %v; want succeeded", c.LogID, l.Status, err)
		}
	}
}
