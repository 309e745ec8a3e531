package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// AcquireRecovery takes one running recovery that no live process holds
// under lease until until, and reports false when there is none. A
// recovery taken from a lease that ended was left by a process that died:
// the logs it had marked sending may or may not have gone out, so they are
// marked interrupted and counted failed rather than sent again.
func (s *Queue) AcquireRecovery(ctx context.Context, lease string, until time.Time) (attempt.Recovery, bool, error) {
	var r attempt.Recovery
	found := false
	err := s.inTx(ctx, func(tx txn) error {
		now := store.MS(s.st.Now())
		var id string
		var prev sql.NullString
		err := tx.QueryRow(ctx, `SELECT id, lease FROM recoveries WHERE status = 'running' AND COALESCE(lease_until, 0) <= ?
ORDER BY id LIMIT 1`+s.st.SkipLocked(), now).Scan(&id, &prev)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find a recovery to run: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE recoveries SET lease = ?, lease_until = ? WHERE id = ?`, lease, store.MS(until), id); err != nil {
			return fmt.Errorf("lease recovery %s: %w", id, err)
		}
		if prev.Valid {
			if err := tx.interrupt(ctx, id); err != nil {
				return err
			}
		}
		r, err = scanRecovery(tx.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM recoveries WHERE id = ?`, id))
		if err != nil {
			return fmt.Errorf("read recovery %s: %w", id, err)
		}
		found = true
		return nil
	})
	if err != nil {
		return attempt.Recovery{}, false, fmt.Errorf("acquire recovery: %w", err)
	}
	return r, found, nil
}

// interrupt marks a recovery's logs left sending interrupted, counted failed.
func (tx txn) interrupt(ctx context.Context, id string) error {
	res, err := tx.Exec(ctx, `UPDATE recovery_logs SET state = 'interrupted' WHERE recovery_id = ? AND state = 'sending'`, id)
	if err != nil {
		return fmt.Errorf("mark interrupted resends of recovery %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE recoveries SET failed = failed + ? WHERE id = ?`, n, id); err != nil {
		return fmt.Errorf("count interrupted resends of recovery %s: %w", id, err)
	}
	return nil
}

// RenewRecovery extends the lease of a recovery still held under lease.
func (s *Queue) RenewRecovery(ctx context.Context, id, lease string, until time.Time) error {
	return s.inTx(ctx, func(tx txn) error {
		res, err := tx.Exec(ctx, `UPDATE recoveries SET lease_until = ? WHERE id = ? AND lease = ? AND status = 'running'`, store.MS(until), id, lease)
		if err != nil {
			return fmt.Errorf("renew recovery %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, attempt.ErrLeaseLost)
		}
		return nil
	})
}

// ReleaseRecovery gives up a recovery's lease at a stop, so that the next
// process takes it up at once; its logs not yet sent wait for it.
func (s *Queue) ReleaseRecovery(ctx context.Context, id, lease string) error {
	return s.inTx(ctx, func(tx txn) error {
		if _, err := tx.Exec(ctx, `UPDATE recovery_logs SET state = 'waiting' WHERE recovery_id = ? AND state = 'sending'
AND EXISTS (SELECT 1 FROM recoveries WHERE id = ? AND lease = ?)`, id, id, lease); err != nil {
			return fmt.Errorf("release recovery %s: %w", id, err)
		}
		_, err := tx.Exec(ctx, `UPDATE recoveries SET lease = NULL, lease_until = NULL WHERE id = ? AND lease = ?`, id, lease)
		return err
	})
}

// ReleaseRecoveries ends every recovery lease. Only a process that knows no
// other holds one may call it: herald does on SQLite at start, as it does
// ReleaseLeases, so a crashed predecessor's recovery resumes at once.
func (s *Queue) ReleaseRecoveries(ctx context.Context) error {
	return s.inTx(ctx, func(tx txn) error {
		_, err := tx.Exec(ctx, `UPDATE recoveries SET lease_until = 0 WHERE status = 'running' AND lease IS NOT NULL`)
		if err != nil {
			return fmt.Errorf("release recoveries: %w", err)
		}
		return nil
	})
}

// NextRecoveryLogs marks up to n of a recovery's waiting logs sending, and
// each such log in flight until markUntil as a manual resend does (so no
// claim or other resend takes it meanwhile), and returns what resending
// them needs. A log delivered, or in flight, since the recovery started is
// skipped. With none left to send, the recovery is done; if its webhook
// was disabled meanwhile, it is cancelled. Either way the answer is empty.
// A recovery no longer held under lease answers ErrLeaseLost.
//
// The caller sends the logs and records each with Complete (an Outcome
// naming the recovery), or gives it back with ReturnRecoveryLogs.
func (s *Queue) NextRecoveryLogs(ctx context.Context, id, lease string, n int, markUntil time.Time) ([]attempt.Claim, error) {
	var ids []string
	err := s.inTx(ctx, func(tx txn) error {
		ids = ids[:0]
		now := store.MS(s.st.Now())
		var status string
		var held sql.NullString
		var enabled bool
		// Locks in the order a webhook's deletion takes them (the webhook,
		// then what cascades from it): the webhook FOR KEY SHARE, which
		// Complete's lock of it does not wait for, then the recovery.
		// Complete takes the recovery last, after the webhook and the log,
		// and this takes no log it records.
		var webhookID string
		err := tx.QueryRow(ctx, `SELECT webhook_id FROM recoveries WHERE id = ?`, id).Scan(&webhookID)
		if errors.Is(err, sql.ErrNoRows) {
			return attempt.ErrLeaseLost // its webhook was deleted
		}
		if err != nil {
			return fmt.Errorf("read recovery: %w", err)
		}
		err = tx.QueryRow(ctx, `SELECT enabled FROM webhooks WHERE id = ?`+tx.ForKeyShare(), webhookID).Scan(&enabled)
		if errors.Is(err, sql.ErrNoRows) {
			return attempt.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("read webhook of recovery: %w", err)
		}
		err = tx.QueryRow(ctx, `SELECT status, lease FROM recoveries WHERE id = ?`+tx.ForUpdate(), id).Scan(&status, &held)
		if errors.Is(err, sql.ErrNoRows) {
			return attempt.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("lock recovery: %w", err)
		}
		if status != string(attempt.RecoveryRunning) || held.String != lease {
			return attempt.ErrLeaseLost
		}
		if !enabled {
			_, err := tx.Exec(ctx, `UPDATE recoveries SET status = 'cancelled', finished_at = ?, lease = NULL, lease_until = NULL WHERE id = ?`, now, id)
			return err
		}
		q := `SELECT rl.log_id, l.status, COALESCE(l.resend_until, 0) FROM recovery_logs rl
JOIN webhook_event_logs l ON l.id = rl.log_id
WHERE rl.recovery_id = ? AND rl.state = 'waiting' ORDER BY rl.log_id LIMIT ?`
		if tx.q.postgres {
			// Each log read by its id, in its partition (decision 0090).
			q = `SELECT rl.log_id, l.status, COALESCE(l.resend_until, 0) FROM recovery_logs rl
CROSS JOIN LATERAL (SELECT status, resend_until FROM webhook_event_logs WHERE id = rl.log_id OFFSET 0) l
WHERE rl.recovery_id = ? AND rl.state = 'waiting' ORDER BY rl.log_id LIMIT ?`
		}
		rows, err := tx.Query(ctx, q, id, n)
		if err != nil {
			return fmt.Errorf("read waiting logs: %w", err)
		}
		var skip []string
		for rows.Next() {
			var logID, st string
			var resendUntil int64
			if err := rows.Scan(&logID, &st, &resendUntil); err != nil {
				rows.Close()
				return fmt.Errorf("read waiting logs: %w", err)
			}
			if (st == string(attempt.Failed) || st == string(attempt.Cancelled)) && resendUntil <= now {
				ids = append(ids, logID)
			} else {
				skip = append(skip, logID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read waiting logs: %w", err)
		}
		if len(skip) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE recovery_logs SET state = 'skipped' WHERE recovery_id = ? AND log_id IN (SELECT value FROM json_texts(?))`,
				id, store.JSONTexts(skip)); err != nil {
				return fmt.Errorf("skip logs: %w", err)
			}
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE recovery_logs SET state = 'sending' WHERE recovery_id = ? AND log_id IN (SELECT value FROM json_texts(?))`,
				id, store.JSONTexts(ids)); err != nil {
				return fmt.Errorf("mark logs sending: %w", err)
			}
			_, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET resend_until = ? WHERE id IN (SELECT value FROM json_texts(?))`, store.MS(markUntil), store.JSONTexts(ids))
			if err != nil {
				return fmt.Errorf("mark logs in flight: %w", err)
			}
			return nil
		}
		if len(skip) > 0 {
			return nil // more may wait behind the skipped ones
		}
		// Nothing waits: whatever is still marked sending is not this
		// runner's (it asks only once its own are recorded).
		if err := tx.interrupt(ctx, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE recoveries SET status = 'done', finished_at = ?, lease = NULL, lease_until = NULL WHERE id = ?`, now, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("next logs of recovery %s: %w", id, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	q, arg := `SELECT `+store.ClaimColumns+`
FROM webhook_event_logs l JOIN events e ON e.id = l.event_id JOIN webhooks w ON w.id = l.webhook_id
WHERE l.id IN (SELECT value FROM json_texts(?)) ORDER BY l.id`, any(store.JSONTexts(ids))
	if s.postgres {
		// The logs by an array of their ids and each event by its id, so
		// that only their partitions are read (decision 0090).
		q, arg = `SELECT `+store.ClaimColumns+`
FROM webhook_event_logs l
CROSS JOIN LATERAL (SELECT body, trace_parent FROM events WHERE id = l.event_id OFFSET 0) e
JOIN webhooks w ON w.id = l.webhook_id
WHERE l.id = ANY(CAST(? AS text[])) ORDER BY l.id`, ids
	}
	rows, err := s.st.Query(ctx, q, arg)
	if err != nil {
		return nil, fmt.Errorf("load logs of recovery %s: %w", id, err)
	}
	defer rows.Close()
	var claims []attempt.Claim
	for rows.Next() {
		c, err := s.st.ScanClaim(rows)
		if err != nil {
			return nil, fmt.Errorf("load logs of recovery %s: %w", id, err)
		}
		c.Lease = ""
		claims = append(claims, c)
	}
	return claims, rows.Err()
}

// ReturnRecoveryLogs gives back logs NextRecoveryLogs marked and that were
// not sent (no slot freed, or the process is stopping): they wait again.
func (s *Queue) ReturnRecoveryLogs(ctx context.Context, id string, logIDs []string) error {
	return s.inTx(ctx, func(tx txn) error {
		if _, err := tx.Exec(ctx, `UPDATE recovery_logs SET state = 'waiting' WHERE recovery_id = ? AND state = 'sending'
AND log_id IN (SELECT value FROM json_texts(?))`, id, store.JSONTexts(logIDs)); err != nil {
			return fmt.Errorf("return logs of recovery %s: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET resend_until = NULL WHERE id IN (SELECT value FROM json_texts(?))`, store.JSONTexts(logIDs)); err != nil {
			return fmt.Errorf("return logs of recovery %s: %w", id, err)
		}
		return nil
	})
}

// recordRecovery counts a recorded resend in its recovery, in the
// transaction that records it, so a log counted sent was sent and is
// never sent by the recovery again. A log no longer marked sending (the
// recovery was taken over meanwhile and counted it interrupted) is left so.
func (tx txn) recordRecovery(ctx context.Context, o attempt.Outcome) error {
	res, err := tx.Exec(ctx, `UPDATE recovery_logs SET state = 'sent' WHERE recovery_id = ? AND log_id = ? AND state = 'sending'`, o.Recovery, o.LogID)
	if err != nil {
		return fmt.Errorf("record resend of recovery %s: %w", o.Recovery, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	ok := 0
	if o.Result == attempt.Delivered {
		ok = 1
	}
	if _, err := tx.Exec(ctx, `UPDATE recoveries SET sent = sent + 1, succeeded = succeeded + ?, failed = failed + ? WHERE id = ?`,
		ok, 1-ok, o.Recovery); err != nil {
		return fmt.Errorf("count resend of recovery %s: %w", o.Recovery, err)
	}
	return nil
}
