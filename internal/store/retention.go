package store

import (
	"context"
	"database/sql"
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
// found account by account in id order, the ids bounding the creation time
// (a log completes after it was created): the log has no index on its
// completion time, whose change at every outcome would keep that update
// from being HOT (migration 0060). Each account's oldest go first; a log
// created before the cut-off but completed since is read again by each
// batch and kept.
func (s *Store) PurgeLogs(ctx context.Context, before time.Time, limit int) (int, error) {
	q := `DELETE FROM webhook_event_logs WHERE id IN (
  SELECT id FROM webhook_event_logs
  WHERE completed_at < ? AND status IN ('succeeded', 'failed', 'cancelled')
  ORDER BY completed_at LIMIT ?)
RETURNING id, event_id`
	pg := s.eng.name() == "postgres"
	var n int
	err := s.InTx(ctx, func(tx *Tx) error {
		var rows *sql.Rows
		var err error
		if pg {
			// The logs are chosen and locked first, then deleted by an
			// array of their ids: the history is partitioned by id
			// (decision 0090), and planned with the array's value the
			// delete reads only their partitions' index entries, where a
			// join with the chosen ids could read every partition whole.
			var ids []string
			// Made in its created_at's millisecond or, for the oldest,
			// just after (LogIDsBefore), a log's id bounds the walk of
			// the account's logs in id order.
			below, args := "", []any{ms(before), ms(before)}
			if hi := s.LogIDsBefore(before); hi != "" {
				below, args = " AND l.id < ?", append(args, hi)
			}
			chosen, err := tx.Query(ctx, `SELECT p.id FROM accounts a CROSS JOIN LATERAL (
    SELECT l.id FROM webhook_event_logs l
    WHERE l.account_id = a.id AND l.created_at < CAST(? AS BIGINT) AND l.completed_at < CAST(? AS BIGINT)`+below+`
      AND l.status IN ('succeeded', 'failed', 'cancelled')
      AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.log_id = l.id)
    ORDER BY l.id LIMIT CAST(? AS INTEGER) FOR UPDATE SKIP LOCKED) p
  LIMIT CAST(? AS INTEGER)`, append(args, limit, limit)...)
			if err != nil {
				return err
			}
			if ids, err = ScanIDs(chosen); err != nil || len(ids) == 0 {
				return err
			}
			rows, err = tx.Query(ctx, `DELETE FROM webhook_event_logs WHERE id = ANY(CAST(? AS text[])) RETURNING id, event_id`, ids)
			if err != nil {
				return err
			}
		} else if rows, err = tx.Query(ctx, q, ms(before), limit); err != nil {
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
		attempts := `DELETE FROM webhook_attempts WHERE log_id IN (SELECT value FROM json_texts(?))`
		var arg any = JSONTexts(logs)
		if pg {
			attempts, arg = `DELETE FROM webhook_attempts WHERE log_id = ANY(CAST(? AS text[]))`, logs
		}
		if _, err := tx.Exec(ctx, attempts, arg); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM recovery_logs WHERE log_id IN (SELECT value FROM json_texts(?))`, JSONTexts(logs)); err != nil {
			return err
		}
		_, err = tx.deleteOrphanEvents(ctx, events)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge event logs: %w", err)
	}
	return n, nil
}

// EventCursor is where PurgeEvents goes on from: the id of the last event
// it looked at. The zero value starts at the oldest event.
type EventCursor struct {
	ID string
}

// PurgeEvents looks at up to limit events triggered before before, from
// after on, and deletes those no log refers to: events that matched no
// webhook, or whose logs went in an earlier purge. It returns how many it
// deleted, and the cursor of the next call, or done when it reached the end.
//
// It walks the events in id order, through their key: ids are UUIDv7s of
// the instant the event fires (decision 0100; before it, made by the wall
// clock just after), so where the store's clock is the wall clock the ids
// of events triggered before before are bounded (with the slack the older
// ids need, idSlack) and the walk stops there. An
// index on the triggering time served this walk alone, and cost every
// event an entry (decision 0099). Under another clock (a test's) the walk
// reads every event after the cursor.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, after EventCursor, limit int) (deleted int, next EventCursor, done bool, err error) {
	q, args := `SELECT id FROM events WHERE id > ? AND triggered_at < ?`, []any{after.ID, ms(before)}
	if s.wallClock {
		q += ` AND id < ?`
		args = append(args, IDBound(before.Add(idSlack)))
	}
	rows, err := s.Query(ctx, q+` ORDER BY id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return 0, after, false, fmt.Errorf("purge events: %w", err)
	}
	next = after
	var ids []string
	for rows.Next() {
		if err := rows.Scan(&next.ID); err != nil {
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
	if tx.s.eng.name() != "postgres" {
		return tx.deleteEvents(ctx, `DELETE FROM events WHERE id IN (SELECT value FROM json_texts(?))
AND NOT EXISTS (SELECT 1 FROM webhook_event_logs l WHERE l.event_id = events.id)`, JSONTexts(ids))
	}
	// By arrays, as in PurgeLogs; each event's logs are looked for within
	// the bounds of their ids (eventLogBounds), the logs having no index on
	// their event (decision 0104). Herald makes no event id of another
	// shape; one (written by hand) is looked for among every log.
	var shaped, los, his, odd []string
	for _, id := range ids {
		if lo, hi := tx.s.eventLogBounds(id); lo != "" {
			shaped, los, his = append(shaped, id), append(los, lo), append(his, hi)
		} else {
			odd = append(odd, id)
		}
	}
	n, err := tx.deleteEvents(ctx, `DELETE FROM events e USING unnest(CAST(? AS text[]), CAST(? AS text[]), CAST(? AS text[])) AS v(id, lo, hi)
WHERE e.id = v.id
AND NOT EXISTS (SELECT 1 FROM webhook_event_logs l WHERE l.id >= v.lo AND l.id < v.hi AND l.event_id = v.id)`, shaped, los, his)
	if err != nil || len(odd) == 0 {
		return n, err
	}
	m, err := tx.deleteEvents(ctx, `DELETE FROM events WHERE id = ANY(CAST(? AS text[]))
AND NOT EXISTS (SELECT 1 FROM webhook_event_logs l WHERE l.event_id = events.id)`, odd)
	return n + m, err
}

// deleteEvents runs a DELETE of events and returns how many went.
func (tx *Tx) deleteEvents(ctx context.Context, q string, args ...any) (int, error) {
	res, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
