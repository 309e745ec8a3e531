package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// The pull channel (decision 0140): a pull webhook's logs are queued in
// delivery_queue as every webhook's are, the dispatcher passes over them
// (store.TypePull), and a consumer reads them instead. A read gives each queue
// row it returns for the first time the webhook's next position, which is
// its cursor; an acknowledgement completes every row up to a cursor as
// delivered, one attempt each (store.TriggerPull) from its first read to the
// acknowledgement. A row not acknowledged within the webhook's retention
// (PullRetention) ends failed, undelivered, as an exhausted delivery does.

// ErrCursor is a cursor after the last position a read gave: one this
// webhook never answered.
var ErrCursor = errors.New("cursor beyond the last event read")

// Pulled is one event read from a pull webhook: its cursor, and what a
// POST of it would carry (body, tokens and scheme to sign it with).
type Pulled struct {
	Cursor int64
	attempt.Claim
}

// lockPull takes the webhook's position row (made at its first read),
// locked until tx ends, and returns the last position given; store.ErrNotFound
// when the account has no pull webhook webhookID.
func (tx txn) lockPull(ctx context.Context, accountID, webhookID string) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, `INSERT INTO webhook_pull_positions (webhook_id, last)
SELECT id, 0 FROM webhooks WHERE account_id = ? AND id = ? AND type = '`+store.TypePull+`'
ON CONFLICT (webhook_id) DO UPDATE SET last = webhook_pull_positions.last
RETURNING last`, accountID, webhookID).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("lock pull position: %w", err)
	}
	return last, nil
}

// Pull reads up to limit of the webhook's events after cursor after (0:
// from the first not acknowledged), in the order they were queued: those
// read before and not yet acknowledged first, then new ones, each given
// the next position. A cursor past the last position given is ErrCursor.
// It returns none, without waiting, when none is ready (see PullWait).
func (s *Queue) Pull(ctx context.Context, accountID, webhookID string, after int64, limit int) ([]Pulled, error) {
	var out []Pulled
	err := s.inTx(ctx, func(tx txn) error {
		last, err := tx.lockPull(ctx, accountID, webhookID)
		if err != nil {
			return err
		}
		if after > last {
			return ErrCursor
		}
		var read int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM delivery_queue
WHERE webhook_id = ? AND pull_position > ? ORDER BY pull_position LIMIT ?) r`, webhookID, after, limit).Scan(&read); err != nil {
			return fmt.Errorf("count read events: %w", err)
		}
		if read < limit {
			if err := tx.positionPulls(ctx, webhookID, last, limit-read); err != nil {
				return err
			}
		}
		out, err = tx.loadPulled(ctx, webhookID, after, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pull events: %w", err)
	}
	return out, nil
}

// positionPulls gives up to n of the webhook's queue rows not yet read the
// positions after last, in the order they were queued (due_at is a first
// attempt's firing time; ids break ties in firing order).
func (tx txn) positionPulls(ctx context.Context, webhookID string, last int64, n int) error {
	rows, err := tx.Query(ctx, `SELECT log_id FROM delivery_queue WHERE webhook_id = ? AND pull_position IS NULL
ORDER BY due_at, log_id LIMIT ?`, webhookID, n)
	if err != nil {
		return fmt.Errorf("find unread events: %w", err)
	}
	type position struct {
		Log string `json:"i"`
		At  int64  `json:"p"`
	}
	var next []position
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		next = append(next, position{Log: id, At: last + int64(len(next)) + 1})
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(next) == 0 {
		return err
	}
	arg, err := json.Marshal(next)
	if err != nil {
		return err
	}
	now := store.MS(tx.Now())
	if _, err := tx.Exec(ctx, `UPDATE delivery_queue SET pull_position = CAST(j.value ->> 'p' AS BIGINT), pulled_at = ?
FROM json_rows(?) j WHERE delivery_queue.log_id = j.value ->> 'i'`, now, string(arg)); err != nil {
		return fmt.Errorf("position events: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE webhook_pull_positions SET last = ? WHERE webhook_id = ?`, next[len(next)-1].At, webhookID)
	return err
}

// loadPulled loads the webhook's read rows after after, with what a POST
// of each would carry, in position order.
func (tx txn) loadPulled(ctx context.Context, webhookID string, after int64, limit int) ([]Pulled, error) {
	rows, err := tx.Query(ctx, `SELECT `+store.ClaimColumns+`, l.pull_position
FROM (SELECT g.id, g.account_id, g.webhook_id, g.event_id, g.kind, g.attempt_count, q.lease, q.pull_position
      FROM delivery_queue q JOIN webhook_event_logs g ON g.id = q.log_id
      WHERE q.webhook_id = ? AND q.pull_position > ? ORDER BY q.pull_position LIMIT ?) l
JOIN events e ON e.id = l.event_id JOIN webhooks w ON w.id = l.webhook_id
ORDER BY l.pull_position`, webhookID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("load read events: %w", err)
	}
	defer rows.Close()
	var out []Pulled
	for rows.Next() {
		var p Pulled
		if p.Claim, err = tx.q.st.ScanClaim(rows, &p.Cursor); err != nil {
			return nil, fmt.Errorf("load read events: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// PullWait is Pull waiting up to wait for an event when none is ready:
// woken by this process's firings and, on PostgreSQL, other processes'
// (Wait), and looking again at least every second in case a wake-up was
// lost.
func (s *Queue) PullWait(ctx context.Context, accountID, webhookID string, after int64, limit int, wait time.Duration) ([]Pulled, error) {
	deadline := time.Now().Add(wait)
	for {
		woken := s.st.Wait() // before the read, so that no firing after it is missed
		out, err := s.Pull(ctx, accountID, webhookID, after, limit)
		left := time.Until(deadline)
		if err != nil || len(out) > 0 || left <= 0 {
			return out, err
		}
		t := time.NewTimer(min(left, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-woken:
		case <-t.C:
		}
		t.Stop()
	}
}

// AckPull completes every event of the webhook read up to cursor: each
// log succeeded, with an attempt (store.TriggerPull) from its first read to now,
// and its queue row deleted. A webhook that had left Healthy (events
// expired unacknowledged) is Healthy again. It returns how many it
// completed; a cursor past the last position given is ErrCursor.
func (s *Queue) AckPull(ctx context.Context, accountID, webhookID string, cursor int64) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx txn) error {
		last, err := tx.lockPull(ctx, accountID, webhookID)
		if err != nil {
			return err
		}
		if cursor > last {
			return ErrCursor
		}
		now := store.MS(tx.Now())
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, webhook_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers)
SELECT q.log_id, q.webhook_id, (SELECT COALESCE(MAX(a.number), 0) + 1 FROM webhook_attempts a WHERE a.log_id = q.log_id), ?, q.pulled_at, ?, NULL, ? - q.pulled_at, NULL, '', NULL
FROM delivery_queue q WHERE q.webhook_id = ? AND q.pull_position <= ?`, store.TriggerPull, now, now, webhookID, cursor); err != nil {
			return fmt.Errorf("insert attempts: %w", err)
		}
		res, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET status = 'succeeded', due_at = NULL, lease = NULL, completed_at = ?, undelivered_at = NULL,
retry_reason = NULL, status_code = NULL, received_at = ?, attempt_count = attempt_count + 1, updated_at = ?,
sent_at = (SELECT q.pulled_at FROM delivery_queue q WHERE q.log_id = webhook_event_logs.id)
WHERE id IN (SELECT log_id FROM delivery_queue WHERE webhook_id = ? AND pull_position <= ?)`, now, now, now, webhookID, cursor)
		if err != nil {
			return fmt.Errorf("complete logs: %w", err)
		}
		affected, err := res.RowsAffected()
		if err != nil {
			return err
		}
		n = int(affected)
		if _, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE webhook_id = ? AND pull_position <= ?`, webhookID, cursor); err != nil {
			return fmt.Errorf("dequeue: %w", err)
		}
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE webhooks SET status = 'Healthy', failure_streak = 0, left_healthy_at = NULL
WHERE id = ? AND status = 'Unhealthy'`, webhookID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("acknowledge events: %w", err)
	}
	return n, nil
}

// ReasonPullExpired is the reason of a pull webhook's log that was not
// acknowledged within its retention.
const ReasonPullExpired = "not acknowledged within the webhook's retention of "

// ExpirePulls ends failed, undelivered, every pull webhook's events queued
// longer ago than its retention and not acknowledged (retention says it
// from the webhook's retry policy, nil when it has none of its own), and
// marks each webhook that lost one Unhealthy (so that they count in its
// undelivered count, from when it left Healthy). It returns how many it
// ended.
func (s *Queue) ExpirePulls(ctx context.Context, retention func(*attempt.RetryPolicy) time.Duration) (int, error) {
	rows, err := s.st.Query(ctx, `SELECT id, retry_policy FROM webhooks WHERE type = '`+store.TypePull+`'`)
	if err != nil {
		return 0, fmt.Errorf("expire pulls: %w", err)
	}
	type hook struct {
		id     string
		policy *attempt.RetryPolicy
	}
	var hooks []hook
	for rows.Next() {
		var h hook
		var retry sql.NullString
		if err := rows.Scan(&h.id, &retry); err != nil {
			rows.Close()
			return 0, err
		}
		if h.policy, err = store.ScanRetryPolicy(h.id, retry); err != nil {
			rows.Close()
			return 0, err
		}
		hooks = append(hooks, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	total := 0
	for _, h := range hooks {
		n, err := s.expirePull(ctx, h.id, retention(h.policy))
		if err != nil {
			return total, fmt.Errorf("expire pulls of webhook %s: %w", h.id, err)
		}
		total += n
	}
	return total, nil
}

// expirePull is ExpirePulls for one webhook whose retention is keep.
func (s *Queue) expirePull(ctx context.Context, webhookID string, keep time.Duration) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx txn) error {
		now := tx.Now()
		before := store.MS(now.Add(-keep))
		res, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET status = 'failed', due_at = NULL, completed_at = ?, undelivered_at = ?, updated_at = ?, retry_reason = ?
WHERE id IN (SELECT log_id FROM delivery_queue WHERE webhook_id = ? AND due_at < ?)`,
			store.MS(now), store.MS(now), store.MS(now), ReasonPullExpired+keep.String(), webhookID, before)
		if err != nil {
			return err
		}
		affected, err := res.RowsAffected()
		if err != nil || affected == 0 {
			return err
		}
		n = int(affected)
		if _, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE webhook_id = ? AND due_at < ?`, webhookID, before); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE webhooks SET status = 'Unhealthy', left_healthy_at = COALESCE(left_healthy_at, ?)
WHERE id = ? AND status = 'Healthy'`, store.MS(now), webhookID)
		return err
	})
	return n, err
}

// RequeuePull puts a pull webhook's log back in its queue, for its
// consumer to read again (a resend, or a recovery's): the log queued, its
// queue row due now with no position, so that the next read gives it one
// after every position given. A log still in the queue keeps its place.
// Given a recovery, the log counts as sent by it. The log's resend mark
// ends.
func (s *Queue) RequeuePull(ctx context.Context, logID, recovery string) error {
	err := s.inTx(ctx, func(tx txn) error {
		now := store.MS(tx.Now())
		if _, err := tx.Exec(ctx, `INSERT INTO delivery_queue (log_id, webhook_id, due_at)
SELECT id, webhook_id, ? FROM webhook_event_logs WHERE id = ? AND NOT EXISTS (SELECT 1 FROM delivery_queue WHERE log_id = ?)`,
			now, logID, logID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE delivery_queue SET resend_until = NULL WHERE log_id = ?`, logID); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET status = 'queued', due_at = ?, completed_at = NULL, undelivered_at = NULL,
retry_reason = NULL, resend_until = NULL, updated_at = ? WHERE id = ?`, now, now, logID)
		if err != nil {
			return err
		}
		if err := store.MustAffect(res); err != nil {
			return err
		}
		if recovery != "" {
			return tx.recordRecovery(ctx, attempt.Outcome{LogID: logID, Recovery: recovery, Result: attempt.Delivered})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue log %s again: %w", logID, err)
	}
	s.st.Due() // a consumer waiting for an event reads it at once
	return nil
}
