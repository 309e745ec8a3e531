package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx"
)

// OpenPostgres opens the database of a herald URL as a test's own
// database/sql handle of one connection (without herald's pool_max_conns,
// which PostgreSQL would refuse), closed at the test's end.
func OpenPostgres(t testing.TB, dbURL string) *sql.DB {
	t.Helper()
	raw, err := RawURL(dbURL)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	db, err := sql.Open("pgx", raw)
	if err != nil {
		t.Fatalf("open the test's database: %v", err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// RawURL is a herald database URL as PostgreSQL takes it: without herald's
// pool_max_conns.
func RawURL(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// WatchStalls samples, every second until the test ends, the statements of
// dbURL's database that have run for two seconds or more: each one's wait
// event, the locks it waits for, the pids blocking it and what they run
// (pg_stat_activity, pg_locks). If the test failed, it logs them: what a
// stall waited for is gone by the time anyone looks, and a failure on a
// busy machine must say whether the database stalled and on what.
func WatchStalls(t testing.TB, dbURL string) {
	t.Helper()
	db := OpenPostgres(t, dbURL)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := stallSample(ctx, db)
			if err != nil {
				continue // the database itself may be what stalls
			}
			mu.Lock()
			seen = append(seen, rows...)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			t.Log("no statement of the database ran for two seconds or more while the test ran")
			return
		}
		const most = 60
		t.Logf("statements of the database that ran for two seconds or more (%d samples, the first %d):", len(seen), min(most, len(seen)))
		for _, r := range seen[:min(most, len(seen))] {
			t.Log(r)
		}
	})
}

// stallSample reads the database's statements running for two seconds or
// more, one line each.
func stallSample(ctx context.Context, db *sql.DB) ([]string, error) {
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := db.QueryContext(c, `SELECT to_char(clock_timestamp(), 'HH24:MI:SS'), a.pid, COALESCE(a.application_name, ''),
  COALESCE(a.state, ''), COALESCE(a.wait_event_type, '') || '/' || COALESCE(a.wait_event, ''),
  EXTRACT(EPOCH FROM clock_timestamp() - a.query_start)::numeric(10,1)::text,
  COALESCE((SELECT string_agg(l.locktype || COALESCE(' ' || l.relation::regclass::text, '') || ' ' || l.mode, ', ')
    FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted), ''),
  COALESCE((SELECT string_agg(b.pid || ' ' || COALESCE(b.state, '') || ': ' || left(COALESCE(b.query, ''), 120), '; ')
    FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))), ''),
  left(COALESCE(a.query, ''), 160)
FROM pg_stat_activity a
WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
  AND a.state <> 'idle' AND a.query_start < clock_timestamp() - interval '2 seconds'
ORDER BY a.query_start LIMIT 20`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var at, app, state, wait, secs, locks, blockers, query string
		var pid int64
		if err := rows.Scan(&at, &pid, &app, &state, &wait, &secs, &locks, &blockers, &query); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s pid %d (%s) %s %ss, waiting on %s for [%s], blocked by [%s]: %s",
			at, pid, app, state, secs, wait, locks, blockers, strings.Join(strings.Fields(query), " ")))
	}
	return out, rows.Err()
}
