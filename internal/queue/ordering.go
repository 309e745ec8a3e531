package queue

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/store"
)

// Delivery in each license's order (decision 0131; store/ordering.go has the
// whole): a claim passes over a row while an earlier one of its license
// waits, and a failed log of a webhook holding on failure keeps its row,
// held, until it is resent or skipped.

// orderedClaimable is the condition a claim puts on a queue row q: it
// belongs to no ordering, or no earlier row of its license waits for the
// same webhook. Read through delivery_queue_ordering.
const orderedClaimable = `(q.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM delivery_queue b
  WHERE b.webhook_id = q.webhook_id AND b.ordering_key IS NOT NULL AND b.ordering_key = q.ordering_key AND b.sequence < q.sequence))`

// holdsOnFailure is the condition, over a queue row q and its log's
// outcome v (complete_bulk.go's moveSource), on which the row is held
// rather than deleted as its log completes.
const holdsOnFailure = `(COALESCE(v.new_status, '') = 'failed' AND q.ordering_key IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = q.webhook_id AND w.ordering_on_failure = 'hold'))`

// holdFailedSQL keeps the queue row of a log ending failed, leased under
// the outcome's lease, when its webhook orders by license and holds on
// failure: unleased and never due.
const holdFailedSQL = `UPDATE delivery_queue SET due_at = ?, lease = NULL, lease_until = NULL
WHERE log_id = ? AND lease = ? AND ordering_key IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = delivery_queue.webhook_id AND w.ordering_on_failure = 'hold')`

// holdFailed applies holdFailedSQL and reports whether it held the row.
func (tx txn) holdFailed(ctx context.Context, logID, lease string) (bool, error) {
	res, err := tx.Exec(ctx, holdFailedSQL, store.HeldDue, logID, lease)
	if err != nil {
		return false, fmt.Errorf("hold log %s: %w", logID, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// SkipHeld lets the later events of a held log's license go on: it removes
// the queue row a failed log of an ordered webhook holds, and the log stays
// failed. A log that holds nothing answers ErrConflict; one not in the
// account, ErrNotFound.
func (s *Queue) SkipHeld(ctx context.Context, accountID, logID string) error {
	var n int64
	err := s.inTx(ctx, func(tx txn) error {
		var found int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_event_logs WHERE account_id = ? AND id = ?`, accountID, logID).Scan(&found); err != nil {
			return err
		}
		if found == 0 {
			return store.ErrNotFound
		}
		res, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE log_id = ? AND lease IS NULL AND due_at = ? AND COALESCE(resend_until, 0) <= ?`,
			logID, store.HeldDue, store.MS(tx.Now()))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if n > 0 {
			tx.MarkDue() // the rows it held back are due now
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("skip log %s: %w", logID, err)
	}
	if n == 0 {
		return fmt.Errorf("skip log %s: it holds back no later event: %w", logID, store.ErrConflict)
	}
	return nil
}

// Held reports whether a log holds back the later events of its license.
func (s *Queue) Held(ctx context.Context, logID string) (bool, error) {
	var n int
	if err := s.st.QueryRow(ctx, `SELECT COUNT(*) FROM delivery_queue q WHERE q.log_id = ? AND `+store.HeldQueueRow, logID).Scan(&n); err != nil {
		return false, fmt.Errorf("read hold of log %s: %w", logID, err)
	}
	return n > 0, nil
}

// holdFailedRows holds the rows of logs, just completed under their
// leases, that end failed for an ordered webhook holding on failure
// (SQLite's bulk recording; PostgreSQL's holds in its one statement).
func (tx txn) holdFailedRows(ctx context.Context, failed []string) error {
	if len(failed) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE delivery_queue SET due_at = `+store.HeldDueSQL+`, lease = NULL, lease_until = NULL
WHERE log_id IN (SELECT value FROM json_texts(?)) AND ordering_key IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = delivery_queue.webhook_id AND w.ordering_on_failure = 'hold')`, store.JSONTexts(failed))
	if err != nil {
		return fmt.Errorf("hold failed logs: %w", err)
	}
	return nil
}
