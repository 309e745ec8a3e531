package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
)

// postgresEngine runs herald on PostgreSQL through pgx v5, for several herald
// processes sharing one database: claims skip rows other processes hold
// locked, and a NOTIFY at commit wakes the idle ones.
type postgresEngine struct{ db *sql.DB }

// notifyChannel is the LISTEN/NOTIFY channel on which due logs are announced.
const notifyChannel = "herald_due"

func openPostgres(ctx context.Context, s *Store, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return fmt.Errorf("open postgres: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return fmt.Errorf("open postgres: %w", err)
	}
	s.eng = postgresEngine{db: db}
	s.db, s.writer = db, db
	return nil
}

var _ = stdlib.GetDefaultDriver // the pgx driver is registered by importing stdlib

func (postgresEngine) name() string           { return "postgres" }
func (postgresEngine) rebind(q string) string { return rebindDollar(q) }
func (postgresEngine) forUpdate() string      { return " FOR UPDATE" }
func (e postgresEngine) close() error         { return e.db.Close() }

func (postgresEngine) notify(ctx context.Context, tx *sql.Tx) error {
	// Delivered at commit, and only once per transaction however many fire.
	_, err := tx.ExecContext(ctx, "SELECT pg_notify('"+notifyChannel+"', '')")
	return err
}

// claim locks due rows with FOR UPDATE SKIP LOCKED, so concurrent claims by
// other processes pass over them instead of waiting, then caps each
// webhook's share with a window function and leases what it keeps.
func (postgresEngine) claim(ctx context.Context, s *Store, p ClaimParams) ([]string, error) {
	exclude := p.Exclude
	if exclude == nil {
		exclude = []string{}
	}
	rows, err := s.writer.QueryContext(ctx, `
WITH due AS (
  SELECT id, webhook_id, due_at FROM webhook_event_logs
  WHERE status IN ('queued', 'retrying', 'pending') AND due_at <= $4 AND NOT (webhook_id = ANY($5))
  ORDER BY due_at LIMIT $6
  FOR UPDATE SKIP LOCKED),
ranked AS (
  SELECT id, due_at, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY due_at, id) AS rn FROM due),
picked AS (
  SELECT id FROM ranked WHERE rn <= $7 ORDER BY due_at LIMIT $8)
UPDATE webhook_event_logs l SET status = 'pending', lease = $1, due_at = $2, updated_at = $3
FROM picked WHERE l.id = picked.id
RETURNING l.id`,
		p.Lease, ms(p.LeaseUntil), ms(p.Now), ms(p.Now), exclude, p.Limit*4, p.PerWebhook, p.Limit)
	if err != nil {
		return nil, err
	}
	return scanIDs(rows)
}
