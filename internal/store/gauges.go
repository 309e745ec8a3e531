package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Gauges is the state of the whole database an operator watches, read at
// each metrics scrape. Processes on one database share it, so each reports
// the same figures.
type Gauges struct {
	// Backlog counts the logs not yet completed: queued, retrying and
	// pending (claimed, an attempt in flight).
	Backlog map[LogStatus]int
	// Due counts the logs whose attempt is due and not in flight (queued
	// or retrying whose time came, and pending whose lease ended), and
	// OldestDue is how long the one due longest has waited (0 when none).
	Due       int
	OldestDue time.Duration
	// Webhooks counts webhooks by status and whether they are enabled.
	Webhooks []WebhookCount
	// EmailsUnsent counts the emails in the outbox, and OldestEmail is the
	// age of the oldest (0 when none).
	EmailsUnsent int
	OldestEmail  time.Duration
	// DB is the connection pool's figures; for SQLite, its readers'.
	DB sql.DBStats
	// DeliveryDB is the dispatcher's own pool's (lane.go), zero where there
	// is none.
	DeliveryDB sql.DBStats
	// Writer is SQLite's one writer's work (group.go); nil on PostgreSQL.
	Writer *WriterStats
}

// WebhookCount is how many webhooks have one status and enabled setting.
type WebhookCount struct {
	Status  Health
	Enabled bool
	N       int
}

// Gauges reads the figures of Gauges, across every account.
func (s *Store) Gauges(ctx context.Context) (Gauges, error) {
	now := s.now()
	g := Gauges{Backlog: map[LogStatus]int{Queued: 0, Retrying: 0, Pending: 0}, DB: s.db.Stats()}
	if s.deliveryDB != nil {
		g.DeliveryDB = s.deliveryDB.Stats()
	}
	if s.group != nil {
		w := s.group.stats()
		g.Writer = &w
	}
	// The backlog is delivery_queue: a leased row is pending, an unleased
	// one queued until its first attempt and retrying after. A held row
	// (ordering.go) is a failed log's, waiting for no attempt.
	rows, err := s.Query(ctx, `SELECT CASE WHEN lease IS NOT NULL THEN 'pending' WHEN attempts = 0 THEN 'queued' ELSE 'retrying' END AS st, COUNT(*)
FROM delivery_queue WHERE due_at <> `+HeldDueSQL+` GROUP BY st`)
	if err != nil {
		return g, fmt.Errorf("gauges: backlog: %w", err)
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return g, fmt.Errorf("gauges: backlog: %w", err)
		}
		g.Backlog[LogStatus(st)] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return g, fmt.Errorf("gauges: backlog: %w", err)
	}

	var oldest sql.NullInt64
	if err := s.QueryRow(ctx, `SELECT COUNT(*), MIN(due_at) FROM delivery_queue
WHERE due_at <= ? AND COALESCE(lease_until, 0) <= ? AND COALESCE(resend_until, 0) <= ?`, ms(now), ms(now), ms(now)).Scan(&g.Due, &oldest); err != nil {
		return g, fmt.Errorf("gauges: due logs: %w", err)
	}
	if oldest.Valid {
		g.OldestDue = now.Sub(fromMS(oldest.Int64))
	}

	rows, err = s.Query(ctx, `SELECT status, enabled, COUNT(*) FROM webhooks GROUP BY status, enabled ORDER BY status, enabled`)
	if err != nil {
		return g, fmt.Errorf("gauges: webhooks: %w", err)
	}
	for rows.Next() {
		var c WebhookCount
		var st string
		if err := rows.Scan(&st, &c.Enabled, &c.N); err != nil {
			rows.Close()
			return g, fmt.Errorf("gauges: webhooks: %w", err)
		}
		c.Status = Health(st)
		g.Webhooks = append(g.Webhooks, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return g, fmt.Errorf("gauges: webhooks: %w", err)
	}

	var oldestEmail sql.NullInt64
	if err := s.QueryRow(ctx, `SELECT COUNT(*), MIN(created_at) FROM emails WHERE sent_at IS NULL`).Scan(&g.EmailsUnsent, &oldestEmail); err != nil {
		return g, fmt.Errorf("gauges: email outbox: %w", err)
	}
	if oldestEmail.Valid {
		g.OldestEmail = now.Sub(fromMS(oldestEmail.Int64))
	}
	return g, nil
}
