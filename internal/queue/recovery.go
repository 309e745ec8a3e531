package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// RecoveryFilter chooses the logs a recovery covers: those of the webhook
// created at or after Since and before Until (zero: open), whose status is
// among Statuses (failed, cancelled; empty means both). Only logs cancelled
// because the webhook was suspended count as cancelled here: a disabled
// webhook's events were never meant to be sent.
type RecoveryFilter struct {
	Since, Until time.Time
	Statuses     []attempt.LogStatus
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
func (f RecoveryFilter) where(s *store.Store, q string, args []any) (string, []any) {
	q += ` AND l.undelivered_at IS NOT NULL AND l.created_at >= ?`
	args = append(args, store.MS(f.Since))
	if !f.Since.IsZero() {
		if lo := s.LogIDsFrom(f.Since); lo != "" {
			q += ` AND l.id >= ?`
			args = append(args, lo)
		}
	}
	if !f.Until.IsZero() {
		q += ` AND l.created_at < ?`
		args = append(args, store.MS(f.Until))
		if hi := s.LogIDsBefore(f.Until); hi != "" {
			q += ` AND l.id < ?`
			args = append(args, hi)
		}
	}
	if !f.CompletedSince.IsZero() {
		q += ` AND l.completed_at >= ?`
		args = append(args, store.MS(f.CompletedSince))
	}
	failed := len(f.Statuses) == 0 || slices.Contains(f.Statuses, attempt.Failed)
	cancelled := len(f.Statuses) == 0 || slices.Contains(f.Statuses, attempt.Cancelled)
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
// dry run). An unknown webhook, or another account's, is store.ErrNotFound.
func (s *Queue) CountRecoverable(ctx context.Context, accountID, webhookID string, f RecoveryFilter) (int, error) {
	if _, err := s.st.Webhook(ctx, accountID, webhookID); err != nil {
		return 0, err
	}
	q, args := f.where(s.st, `SELECT COUNT(*) FROM webhook_event_logs l WHERE l.account_id = ? AND l.webhook_id = ?`,
		[]any{accountID, webhookID})
	var n int
	if err := s.st.QueryRow(ctx, q, args...).Scan(&n); err != nil {
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
func (s *Queue) StartRecovery(ctx context.Context, accountID, webhookID string, f RecoveryFilter) (attempt.Recovery, error) {
	now := store.FromMS(store.MS(s.st.Now()))
	r := attempt.Recovery{ID: attempt.NewID(), AccountID: accountID, WebhookID: webhookID, Status: attempt.RecoveryRunning, CreatedAt: now}
	statuses, _ := json.Marshal(f.Statuses) // a record of what was asked
	var until any
	if !f.Until.IsZero() {
		until = store.MS(f.Until)
	}
	err := s.inTx(ctx, func(tx txn) error {
		var enabled bool
		err := tx.QueryRow(ctx, `SELECT enabled FROM webhooks WHERE account_id = ? AND id = ?`+tx.ForUpdate(), accountID, webhookID).Scan(&enabled)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
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
VALUES (?, ?, ?, 'running', ?, ?, ?, 0, ?)`, r.ID, accountID, webhookID, store.MS(f.Since), until, string(statuses), store.MS(now)); err != nil {
			return fmt.Errorf("insert recovery: %w", err)
		}
		q, args := f.where(s.st, `INSERT INTO recovery_logs (recovery_id, log_id, state)
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
			r.Status, r.FinishedAt = attempt.RecoveryDone, &now
			_, err = tx.Exec(ctx, `UPDATE recoveries SET status = 'done', finished_at = ? WHERE id = ?`, store.MS(now), r.ID)
		} else {
			_, err = tx.Exec(ctx, `UPDATE recoveries SET total = ? WHERE id = ?`, n, r.ID)
			tx.MarkDue() // wake the runners, here and in other processes
		}
		return err
	})
	if err != nil {
		return attempt.Recovery{}, fmt.Errorf("start recovery: %w", err)
	}
	return r, nil
}

const recoveryColumns = `id, account_id, webhook_id, status, total, sent, succeeded, failed, created_at, finished_at`

func scanRecovery(sc interface{ Scan(...any) error }) (attempt.Recovery, error) {
	var r attempt.Recovery
	var status string
	var created int64
	var finished sql.NullInt64
	if err := sc.Scan(&r.ID, &r.AccountID, &r.WebhookID, &status, &r.Count, &r.Sent, &r.Succeeded, &r.Failed, &created, &finished); err != nil {
		return attempt.Recovery{}, err
	}
	r.Status, r.CreatedAt, r.FinishedAt = attempt.RecoveryStatus(status), store.FromMS(created), store.OptTime(finished)
	return r, nil
}

// Recovery returns one recovery of an account's webhook.
func (s *Queue) Recovery(ctx context.Context, accountID, webhookID, id string) (attempt.Recovery, error) {
	r, err := scanRecovery(s.st.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM recoveries WHERE account_id = ? AND webhook_id = ? AND id = ?`,
		accountID, webhookID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return attempt.Recovery{}, store.ErrNotFound
	}
	if err != nil {
		return attempt.Recovery{}, fmt.Errorf("read recovery: %w", err)
	}
	return r, nil
}

// Recoveries lists a webhook's recoveries, newest first; an unknown
// webhook, or another account's, is store.ErrNotFound.
func (s *Queue) Recoveries(ctx context.Context, accountID, webhookID string, p store.Page) (list []attempt.Recovery, next string, err error) {
	if _, err := s.st.Webhook(ctx, accountID, webhookID); err != nil {
		return nil, "", err
	}
	q, args := p.Apply(`SELECT `+recoveryColumns+` FROM recoveries WHERE account_id = ? AND webhook_id = ?`, []any{accountID, webhookID})
	rows, err := s.st.Query(ctx, q, args...)
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
	list, next = store.Cut(list, p.Limit, func(r attempt.Recovery) string { return r.ID })
	return list, next, nil
}

// CancelRecovery stops a running recovery: no further log of it is sent
// (a resend already in flight is still recorded). One that has ended is
// store.ErrConflict.
func (s *Queue) CancelRecovery(ctx context.Context, accountID, webhookID, id string) (attempt.Recovery, error) {
	err := s.inTx(ctx, func(tx txn) error {
		res, err := tx.Exec(ctx, `UPDATE recoveries SET status = 'cancelled', finished_at = ?, lease = NULL, lease_until = NULL
WHERE account_id = ? AND webhook_id = ? AND id = ? AND status = 'running'`, store.MS(s.st.Now()), accountID, webhookID, id)
		if err != nil {
			return fmt.Errorf("cancel recovery: %w", err)
		}
		return store.MustAffect(res)
	})
	if errors.Is(err, store.ErrNotFound) {
		if _, err := s.Recovery(ctx, accountID, webhookID, id); err != nil {
			return attempt.Recovery{}, err
		}
		return attempt.Recovery{}, fmt.Errorf("the recovery has already ended: %w", store.ErrConflict)
	}
	if err != nil {
		return attempt.Recovery{}, err
	}
	return s.Recovery(ctx, accountID, webhookID, id)
}
