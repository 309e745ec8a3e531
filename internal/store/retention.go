package store

import (
	"context"
	"fmt"
	"time"
)

// PurgeLogs deletes up to limit event logs that completed (succeeded, failed
// or cancelled) before before, oldest first, with their attempts, then the
// events among theirs that no log refers to any more. It never touches a
// queued, pending or retrying log. It returns how many logs went.
//
// On PostgreSQL the rows are taken with SKIP LOCKED, so several processes
// purging at once split the work rather than queue behind each other, and
// found account by account through the creation index (a log completes
// after it was created): the log has no index on its completion time, whose
// change at every outcome would keep that update from being HOT
// (migration 0060). Each account's oldest go first; a log created before
// before but completed since is read again by each batch and kept.
func (s *Store) PurgeLogs(ctx context.Context, before time.Time, limit int) (int, error) {
	q := `DELETE FROM webhook_event_logs WHERE id IN (
  SELECT id FROM webhook_event_logs
  WHERE completed_at < ? AND status IN ('succeeded', 'failed', 'cancelled')
  ORDER BY completed_at LIMIT ?)
RETURNING id, event_id`
	if s.eng.name() == "postgres" {
		q = `DELETE FROM webhook_event_logs WHERE id IN (
  SELECT p.id FROM accounts a CROSS JOIN LATERAL (
    SELECT l.id FROM webhook_event_logs l
    WHERE l.account_id = a.id AND l.created_at < CAST(? AS BIGINT) AND l.completed_at < CAST(? AS BIGINT)
      AND l.status IN ('succeeded', 'failed', 'cancelled')
      AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.log_id = l.id)
    ORDER BY l.created_at LIMIT CAST(? AS INTEGER) FOR UPDATE SKIP LOCKED) p
  LIMIT CAST(? AS INTEGER))
RETURNING id, event_id`
	}
	var n int
	err := s.InTx(ctx, func(tx *Tx) error {
		args := []any{ms(before), limit}
		if s.eng.name() == "postgres" {
			args = []any{ms(before), ms(before), limit, limit}
		}
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		var logs, events []string
		for rows.Next() {
			var id, event string
			if err := rows.Scan(&id, &event); err != nil {
				rows.Close()
				return err
			}
			logs, events = append(logs, id), append(events, event)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(logs)
		if n == 0 {
			return nil
		}
		// What the foreign keys' cascades did before PostgreSQL's history
		// was partitioned (decision 0090); on SQLite the cascades still do
		// it, and these find nothing left.
		for _, q := range []string{
			`DELETE FROM webhook_attempts WHERE log_id IN (SELECT value FROM json_texts(?))`,
			`DELETE FROM recovery_logs WHERE log_id IN (SELECT value FROM json_texts(?))`,
		} {
			if _, err := tx.Exec(ctx, q, jsonTexts(logs)); err != nil {
				return err
			}
		}
		_, err = tx.deleteOrphanEvents(ctx, events)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge event logs: %w", err)
	}
	return n, nil
}

// EventCursor is where PurgeEvents goes on from; the zero value starts at
// the oldest event.
type EventCursor struct {
	TriggeredAt int64
	ID          string
}

// PurgeEvents looks at up to limit events triggered before before, from
// after on, and deletes those no log refers to: events that matched no
// webhook, or whose logs went in an earlier purge. It returns how many it
// deleted, and the cursor of the next call, or done when it reached the end.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, after EventCursor, limit int) (deleted int, next EventCursor, done bool, err error) {
	rows, err := s.Query(ctx, `SELECT id, triggered_at FROM events
WHERE triggered_at < ? AND (triggered_at > ? OR (triggered_at = ? AND id > ?))
ORDER BY triggered_at, id LIMIT ?`, ms(before), after.TriggeredAt, after.TriggeredAt, after.ID, limit)
	if err != nil {
		return 0, after, false, fmt.Errorf("purge events: %w", err)
	}
	var ids []string
	for rows.Next() {
		if err := rows.Scan(&next.ID, &next.TriggeredAt); err != nil {
			rows.Close()
			return 0, after, false, fmt.Errorf("purge events: %w", err)
		}
		ids = append(ids, next.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, after, false, fmt.Errorf("purge events: %w", err)
	}
	if len(ids) == 0 {
		return 0, after, true, nil
	}
	err = s.InTx(ctx, func(tx *Tx) error {
		deleted, err = tx.deleteOrphanEvents(ctx, ids)
		return err
	})
	if err != nil {
		return 0, after, false, fmt.Errorf("purge events: %w", err)
	}
	return deleted, next, len(ids) < limit, nil
}

// deleteOrphanEvents deletes those of the given events that no log refers to.
func (tx *Tx) deleteOrphanEvents(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := tx.Exec(ctx, `DELETE FROM events WHERE id IN (SELECT value FROM json_texts(?))
AND NOT EXISTS (SELECT 1 FROM webhook_event_logs l WHERE l.event_id = events.id)`, jsonTexts(ids))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
