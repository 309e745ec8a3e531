package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// With autovacuum off, as on this project's test server and at some
// operators', herald analyses the tables that changed as autovacuum would
// have: 2,000 logs fired into a fresh schema make the queue and the logs
// stale, AnalyzeStale analyses them (so the planner costs their statements
// by their real size), and a second pass, nothing having changed since,
// analyses nothing. With autovacuum on, herald leaves it to autovacuum.
func TestAnalyzeStaleAnalysesWhatAutovacuumWould(t *testing.T) {
	t.Parallel()
	st, acct, _ := storetest.PostgresWithWebhook(t, nil)
	ctx := context.Background()
	firings := make([]store.Firing, 2000)
	for i := range firings {
		firings[i] = store.Firing{AccountID: acct.ID, Kind: event.LicenseCreated, Data: map[string]int{"n": i}}
	}
	if err := st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.FireBatch(ctx, firings); return err }); err != nil {
		t.Fatal(err)
	}
	num := func(q string) int {
		t.Helper()
		var n int
		if err := st.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	autovacuum := num(`SELECT CASE WHEN current_setting('autovacuum')::bool THEN 1 ELSE 0 END`) == 1
	// The writes reach pg_stat_user_tables when the writing connection
	// reports them: wait for them rather than for a time.
	testdb.Eventually(t, 30*time.Second, "the firing's writes to be counted", func() bool {
		return num(`SELECT COALESCE(SUM(n_mod_since_analyze), 0)::int FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'delivery_queue'`) >= 2000
	})
	analysed, err := st.AnalyzeStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if autovacuum {
		if len(analysed) != 0 {
			t.Errorf("with autovacuum on, herald analysed %v; want none (autovacuum's to do)", analysed)
		}
		return
	}
	if !slices.Contains(analysed, "delivery_queue") || !slices.ContainsFunc(analysed, func(s string) bool { return strings.HasPrefix(s, "webhook_event_logs") }) {
		t.Errorf("analysed %v; want the queue and the logs among them", analysed)
	}
	if n := num(`SELECT reltuples::int FROM pg_class WHERE oid = 'delivery_queue'::regclass`); n != 2000 {
		t.Errorf("the queue's statistics say %d rows; want 2000", n)
	}
	again, err := st.AnalyzeStale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("a second pass analysed %v; nothing changed since the first", again)
	}
}
