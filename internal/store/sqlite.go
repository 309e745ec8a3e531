package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// sqliteEngine runs herald on one SQLite file: WAL so readers never wait for
// the writer, one writer connection so writes never meet SQLITE_BUSY inside
// the process, and BEGIN IMMEDIATE so a transaction takes the write lock at
// its start rather than failing to upgrade midway.
type sqliteEngine struct{ read, write *sql.DB }

func openSQLite(ctx context.Context, s *Store, path string) error {
	if path == "" {
		return fmt.Errorf("open sqlite: empty path")
	}
	pragmas := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)", "busy_timeout(10000)"} {
		pragmas.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + pragmas.Encode()
	write, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("open sqlite: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxLifetime(0)
	read, err := sql.Open("sqlite", dsn)
	if err != nil {
		write.Close()
		return fmt.Errorf("open sqlite: %w", err)
	}
	read.SetMaxOpenConns(8)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		return fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.eng = sqliteEngine{read: read, write: write}
	s.db, s.writer = read, write
	return nil
}

func (sqliteEngine) name() string           { return "sqlite" }
func (sqliteEngine) rebind(q string) string { return q }
func (sqliteEngine) forUpdate() string      { return "" }
func (sqliteEngine) skipLocked() string     { return "" }
func (sqliteEngine) announce()              {}
func (e sqliteEngine) close() error         { e.read.Close(); return e.write.Close() }

// lockMigrations has nothing to do: the writer begins IMMEDIATE transactions,
// which take SQLite's write lock at once.
func (sqliteEngine) lockMigrations(context.Context, *sql.Tx) error { return nil }

// claim takes due logs in one UPDATE … RETURNING: SQLite has one writer, so
// no other claim can interleave. The window function caps how many logs of
// one webhook a single claim takes, so one slow receiver cannot fill a batch.
func (sqliteEngine) claim(ctx context.Context, s *Store, p ClaimParams) ([]string, error) {
	args := []any{p.Lease, ms(p.LeaseUntil), ms(p.Now), ms(p.Now)}
	exclude := ""
	if len(p.Exclude) > 0 {
		exclude = " AND webhook_id NOT IN (" + placeholders(len(p.Exclude)) + ")"
		for _, id := range p.Exclude {
			args = append(args, id)
		}
	}
	args = append(args, p.Limit*4, p.PerWebhook, p.Limit)
	q := `UPDATE webhook_event_logs SET status = 'pending', lease = ?, due_at = ?, updated_at = ?
WHERE id IN (
  SELECT id FROM (
    SELECT id, due_at, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY due_at, id) AS rn
    FROM (SELECT id, webhook_id, due_at FROM webhook_event_logs
          WHERE status IN ('queued', 'retrying', 'pending') AND due_at <= ?` + exclude + `
          ORDER BY due_at LIMIT ?)
  ) WHERE rn <= ? ORDER BY due_at LIMIT ?)
RETURNING id`
	rows, err := s.writer.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanIDs(rows)
}

func scanIDs(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// rebindDollar turns ? placeholders into $1, $2, … for PostgreSQL. Herald's
// SQL has no ? anywhere else.
func rebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
