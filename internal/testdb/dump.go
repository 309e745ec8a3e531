package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	_ "modernc.org/sqlite"             // the "sqlite" driver
)

// DB is a plain connection to a herald database for a test to inspect,
// beside (or after) the herald using it: one connection, no lock taken.
type DB struct {
	t      testing.TB
	db     *sql.DB
	dollar bool // PostgreSQL: ? placeholders become $1, $2, …
}

// OpenDB opens the database at dbURL (sqlite:… or postgres://…); it closes at
// the end of the test.
func OpenDB(t testing.TB, dbURL string) *DB {
	t.Helper()
	driver, dsn, dollar := "sqlite", "", false
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)"
	} else {
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatalf("database URL: %v", err)
		}
		q := u.Query()
		q.Del("pool_max_conns") // herald's, not PostgreSQL's
		u.RawQuery = q.Encode()
		driver, dsn, dollar = "pgx", u.String(), true
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return &DB{t: t, db: db, dollar: dollar}
}

func (d *DB) rebind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Query runs a query with ? placeholders.
func (d *DB) Query(q string, args ...any) (*sql.Rows, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := d.db.QueryContext(ctx, d.rebind(q), args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// Int runs a query that answers one number, failing the test on an error.
func (d *DB) Int(q string, args ...any) int {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := d.db.QueryRowContext(ctx, d.rebind(q), args...).Scan(&n); err != nil {
		d.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// DumpLogs prints what the event logs of the database at dbURL say: how many
// are in each status, how many pending ones hold a lease that has ended, and
// the most frequent last retry reasons, so that a delivery test that gives up
// waiting says why.
func DumpLogs(t testing.TB, dbURL string) {
	t.Helper()
	d := OpenDB(t, dbURL)
	var b strings.Builder
	b.WriteString("event logs by status:")
	if err := d.each(&b, `SELECT status, COUNT(*) FROM webhook_event_logs GROUP BY status ORDER BY status`); err != nil {
		t.Logf("dump logs: %v", err)
		return
	}
	now := time.Now().UnixMilli()
	// A log in flight is a leased row of delivery_queue (its log still reads queued or retrying).
	fmt.Fprintf(&b, "\n  in flight (leased in the queue): %d", d.intOr(`SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL`))
	fmt.Fprintf(&b, "\n  pending with an ended lease: %d", d.intOr(`SELECT COUNT(*) FROM delivery_queue WHERE lease IS NOT NULL AND lease_until < ?`, now))
	fmt.Fprintf(&b, "\n  leases held: %d", d.intOr(`SELECT COUNT(DISTINCT lease) FROM delivery_queue WHERE lease IS NOT NULL`))
	b.WriteString("\nlast retry reasons of logs not succeeded (most frequent first):")
	d.each(&b, `SELECT COALESCE(retry_reason, '(none)'), COUNT(*) FROM webhook_event_logs WHERE status <> 'succeeded'
GROUP BY retry_reason ORDER BY COUNT(*) DESC LIMIT 10`)
	b.WriteString("\nerrors of the latest failed attempts:")
	d.each(&b, `SELECT COALESCE(error, 'status ' || CAST(status_code AS TEXT)), COUNT(*) FROM
(SELECT error, status_code FROM webhook_attempts WHERE error IS NOT NULL OR status_code >= 300 ORDER BY sent_at DESC LIMIT 1000) a
GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 10`)
	t.Log(b.String())
}

// DumpLogsOnFailure has DumpLogs print the logs at the end of the test if it
// failed (before its database is removed).
func DumpLogsOnFailure(t testing.TB, dbURL string) {
	t.Cleanup(func() {
		if t.Failed() {
			DumpLogs(t, dbURL)
		}
	})
}

func (d *DB) intOr(q string, args ...any) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := d.db.QueryRowContext(ctx, d.rebind(q), args...).Scan(&n); err != nil {
		return -1
	}
	return n
}

// each writes each (text, count) row of q on a line of its own.
func (d *DB) each(b *strings.Builder, q string) error {
	rows, err := d.Query(q)
	if err != nil {
		fmt.Fprintf(b, " %v", err)
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var what string
		var n int
		if err := rows.Scan(&what, &n); err != nil {
			return err
		}
		fmt.Fprintf(b, "\n  %6d  %s", n, what)
	}
	return rows.Err()
}

// SQL is the connection itself, for a test that needs a transaction of its
// own (statements take the engine's placeholders: $1 on PostgreSQL).
func (d *DB) SQL() *sql.DB { return d.db }
