package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// RecoveryFilter chooses the logs a recovery covers: those of the webhook
// created at or after Since and before Until (zero: open), whose status is
// among Statuses (failed, cancelled; empty means both). Only logs cancelled
// because the webhook was suspended count as cancelled here: a disabled
// webhook's events were never meant to be sent.
type RecoveryFilter struct {
	Since, Until time.Time
	Statuses     []LogStatus
	// CompletedSince, when set, also keeps only logs completed at or after
	// it: with a webhook's LeftHealthyAt, exactly its UndeliveredCount.
	CompletedSince time.Time
}

// suspendedReasons matches the reasons of logs cancelled because their
// webhook was suspended: when the event fired (ReasonSuspended) or before
// its attempt (ReasonSuspendedBefore).
const suspendedReasons = `l.retry_reason LIKE 'webhook suspended%'`

// where adds the filter's conditions to a query of logs aliased l. Every
// log a recovery takes is undelivered (a failed log, or one cancelled
// because its webhook was suspended, has its undelivered_at set): saying
// so lets the webhook's index of its undelivered logs find them, and the
// creation time's bounds on the ids (decision 0100) keep the walk to the
// range.
func (f RecoveryFilter) where(s *Store, q string, args []any) (string, []any) {
	q += ` AND l.undelivered_at IS NOT NULL AND l.created_at >= ?`
	args = append(args, ms(f.Since))
	if !f.Since.IsZero() {
		if lo := s.logIDsFrom(f.Since); lo != "" {
			q += ` AND l.id >= ?`
			args = append(args, lo)
		}
	}
	if !f.Until.IsZero() {
		q += ` AND l.created_at < ?`
		args = append(args, ms(f.Until))
		if hi := s.logIDsBefore(f.Until); hi != "" {
			q += ` AND l.id < ?`
			args = append(args, hi)
		}
	}
	if !f.CompletedSince.IsZero() {
		q += ` AND l.completed_at >= ?`
		args = append(args, ms(f.CompletedSince))
	}
	failed := len(f.Statuses) == 0 || slices.Contains(f.Statuses, Failed)
	cancelled := len(f.Statuses) == 0 || slices.Contains(f.Statuses, Cancelled)
	switch {
	case failed && cancelled:
		q += ` AND (l.status = 'failed' OR (l.status = 'cancelled' AND ` + suspendedReasons + `))`
	case failed:
		q += ` AND l.status = 'failed'`
	default:
		q += ` AND l.status = 'cancelled' AND ` + suspendedReasons
	}
	return q, args
}

// CountRecoverable counts the logs a recovery with f would resend now (a
// dry run). An unknown webhook, or another account's, is ErrNotFound.
func (s *Store) CountRecoverable(ctx context.Context, accountID, webhookID string, f RecoveryFilter) (int, error) {
	if _, err := s.Webhook(ctx, accountID, webhookID); err != nil {
		return 0, err
	}
	q, args := f.where(s, `SELECT COUNT(*) FROM webhook_event_logs l WHERE l.account_id = ? AND l.webhook_id = ?`,
		[]any{accountID, webhookID})
	var n int
	if err := s.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count recoverable logs: %w", err)
	}
	return n, nil
}

// ErrWebhookDisabled refuses a recovery of a disabled webhook, which sends
// nothing, whoever asks.
var ErrWebhookDisabled = errors.New("the webhook is disabled; enable it to recover its events")

// ErrRecoveryRunning refuses a second recovery of a webhook while one runs:
// two would send the logs they share twice.
var ErrRecoveryRunning = errors.New("a recovery of this webhook is already running; wait for it or cancel it")

// StartRecovery records a running recovery of the logs f chooses now, for a
// process's recovery runner to take up. A recovery with nothing to resend
// is done at once.
func (s *Store) StartRecovery(ctx context.Context, accountID, webhookID string, f RecoveryFilter) (Recovery, error) {
	now := fromMS(ms(s.now()))
	r := Recovery{ID: NewID(), AccountID: accountID, WebhookID: webhookID, Status: RecoveryRunning, CreatedAt: now}
	statuses, _ := json.Marshal(f.Statuses) // a record of what was asked
	var until any
	if !f.Until.IsZero() {
		until = ms(f.Until)
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		var enabled bool
		err := tx.QueryRow(ctx, `SELECT enabled FROM webhooks WHERE account_id = ? AND id = ?`+tx.ForUpdate(), accountID, webhookID).Scan(&enabled)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock webhook: %w", err)
		}
		if !enabled {
			return ErrWebhookDisabled
		}
		var running int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM recoveries WHERE webhook_id = ? AND status = 'running'`, webhookID).Scan(&running); err != nil {
			return fmt.Errorf("look for running recoveries: %w", err)
		}
		if running > 0 {
			return ErrRecoveryRunning
		}
		if _, err := tx.Exec(ctx, `INSERT INTO recoveries (id, account_id, webhook_id, status, since_at, until_at, statuses, total, created_at)
VALUES (?, ?, ?, 'running', ?, ?, ?, 0, ?)`, r.ID, accountID, webhookID, ms(f.Since), until, string(statuses), ms(now)); err != nil {
			return fmt.Errorf("insert recovery: %w", err)
		}
		q, args := f.where(s, `INSERT INTO recovery_logs (recovery_id, log_id, state)
SELECT ?, l.id, 'waiting' FROM webhook_event_logs l WHERE l.account_id = ? AND l.webhook_id = ?`, []any{r.ID, accountID, webhookID})
		res, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("choose the logs to recover: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		r.Count = int(n)
		if n == 0 {
			r.Status, r.FinishedAt = RecoveryDone, &now
			_, err = tx.Exec(ctx, `UPDATE recoveries SET status = 'done', finished_at = ? WHERE id = ?`, ms(now), r.ID)
		} else {
			_, err = tx.Exec(ctx, `UPDATE recoveries SET total = ? WHERE id = ?`, n, r.ID)
			tx.fired = true // wake the runners, here and in other processes
		}
		return err
	})
	if err != nil {
		return Recovery{}, fmt.Errorf("start recovery: %w", err)
	}
	return r, nil
}

const recoveryColumns = `id, account_id, webhook_id, status, total, sent, succeeded, failed, created_at, finished_at`

func scanRecovery(sc interface{ Scan(...any) error }) (Recovery, error) {
	var r Recovery
	var status string
	var created int64
	var finished sql.NullInt64
	if err := sc.Scan(&r.ID, &r.AccountID, &r.WebhookID, &status, &r.Count, &r.Sent, &r.Succeeded, &r.Failed, &created, &finished); err != nil {
		return Recovery{}, err
	}
	r.Status, r.CreatedAt, r.FinishedAt = RecoveryStatus(status), fromMS(created), optTime(finished)
	return r, nil
}

// Recovery returns one recovery of an account's webhook.
func (s *Store) Recovery(ctx context.Context, accountID, webhookID, id string) (Recovery, error) {
	r, err := scanRecovery(s.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM recoveries WHERE account_id = ? AND webhook_id = ? AND id = ?`,
		accountID, webhookID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Recovery{}, ErrNotFound
	}
	if err != nil {
		return Recovery{}, fmt.Errorf("read recovery: %w", err)
	}
	return r, nil
}

// Recoveries lists a webhook's recoveries, newest first; an unknown
// webhook, or another account's, is ErrNotFound.
func (s *Store) Recoveries(ctx context.Context, accountID, webhookID string, p Page) (list []Recovery, next string, err error) {
	if _, err := s.Webhook(ctx, accountID, webhookID); err != nil {
		return nil, "", err
	}
	q, args := p.apply(`SELECT `+recoveryColumns+` FROM recoveries WHERE account_id = ? AND webhook_id = ?`, []any{accountID, webhookID})
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list recoveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRecovery(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list recoveries: %w", err)
		}
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list recoveries: %w", err)
	}
	list, next = cut(list, p.Limit, func(r Recovery) string { return r.ID })
	return list, next, nil
}

// CancelRecovery stops a running recovery: no further log of it is sent
// (a resend already in flight is still recorded). One that has ended is
// ErrConflict.
func (s *Store) CancelRecovery(ctx context.Context, accountID, webhookID, id string) (Recovery, error) {
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE recoveries SET status = 'cancelled', finished_at = ?, lease = NULL, lease_until = NULL
WHERE account_id = ? AND webhook_id = ? AND id = ? AND status = 'running'`, ms(s.now()), accountID, webhookID, id)
		if err != nil {
			return fmt.Errorf("cancel recovery: %w", err)
		}
		return mustAffect(res)
	})
	if errors.Is(err, ErrNotFound) {
		if _, err := s.Recovery(ctx, accountID, webhookID, id); err != nil {
			return Recovery{}, err
		}
		return Recovery{}, fmt.Errorf("the recovery has already ended: %w", ErrConflict)
	}
	if err != nil {
		return Recovery{}, err
	}
	return s.Recovery(ctx, accountID, webhookID, id)
}
