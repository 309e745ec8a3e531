package store

import (
	"context"
	"fmt"
	"strconv"
)

// Delivery in each license's order (decision 0131). A webhook whose
// ordering is "license" gets its logs about one license (the license's own
// events and its activations') in the order they fired: each such log's
// queue row carries the license (ordering_key) and the event's number
// among the license's events (sequence, decision 0122), copied at firing
// (orderedQueueColumns), and a claim passes over a row while a row of the
// same webhook and key with a lower sequence is in the queue
// (orderedClaimable). A row leaves the queue when its log ends (delivered,
// failed after its attempts, cancelled), so the next one becomes
// claimable; a row in flight, waiting for a retry or throttled stays, and
// so does one whose lease a dead process left: the later rows wait for
// its take-over. Licenses never wait for each other.
//
// On "hold" (the default), a log of an ordered webhook that ends failed
// keeps its queue row, unleased and due never (heldDue), so the rows after
// it stay blocked until the log is resent and delivered (a delivered
// resend removes the row, as it does any waiting row) or skipped
// (SkipHeld). On "continue" its row goes as any completed log's does.
//
// Handing over at firing (handoff.go) never takes a log of an ordered
// webhook: whether an earlier one waits is the claim's to see.

// Ordering values of a webhook.
const (
	OrderingNone    = "none"
	OrderingLicense = "license"

	OnFailureHold     = "hold"
	OnFailureContinue = "continue"
)

// heldDue is the due time of a held row: 9999-12-31, later than any claim,
// so no claim takes it, and still a time every reader can format.
const heldDue int64 = 253402300799999

// orderedClaimable is the condition a claim puts on a queue row q: it
// belongs to no ordering, or no earlier row of its license waits for the
// same webhook. Read through delivery_queue_ordering.
const orderedClaimable = `(q.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM delivery_queue b
  WHERE b.webhook_id = q.webhook_id AND b.ordering_key IS NOT NULL AND b.ordering_key = q.ordering_key AND b.sequence < q.sequence))`

// orderedKey and orderedSequence are, for a log l (webhook_id) of an event
// e (license_id, sequence), the queue row's ordering_key and sequence: set
// only when the webhook orders by license and the event concerns one.
const (
	orderedKey = `(SELECT CASE WHEN w.ordering = 'license' AND e.sequence IS NOT NULL THEN e.license_id END
  FROM webhooks w WHERE w.id = l.webhook_id)`
	orderedSequence = `(SELECT CASE WHEN w.ordering = 'license' AND e.license_id IS NOT NULL THEN e.sequence END
  FROM webhooks w WHERE w.id = l.webhook_id)`
)

// holdsOnFailure is the condition, over a queue row q and its log's
// outcome v (complete_bulk.go's moveSource), on which the row is held
// rather than deleted as its log completes.
const holdsOnFailure = `(COALESCE(v.new_status, '') = 'failed' AND q.ordering_key IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = q.webhook_id AND w.ordering_on_failure = 'hold'))`

// heldDueSQL is heldDue in a statement's text.
const heldDueSQL = "253402300799999"

// holdFailedSQL keeps the queue row of a log ending failed, leased under
// the outcome's lease, when its webhook orders by license and holds on
// failure: unleased and never due.
const holdFailedSQL = `UPDATE delivery_queue SET due_at = ?, lease = NULL, lease_until = NULL
WHERE log_id = ? AND lease = ? AND ordering_key IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = delivery_queue.webhook_id AND w.ordering_on_failure = 'hold')`

// holdFailed applies holdFailedSQL and reports whether it held the row.
func (tx *Tx) holdFailed(ctx context.Context, logID, lease string) (bool, error) {
	res, err := tx.Exec(ctx, holdFailedSQL, heldDue, logID, lease)
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
func (s *Store) SkipHeld(ctx context.Context, accountID, logID string) error {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var found int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_event_logs WHERE account_id = ? AND id = ?`, accountID, logID).Scan(&found); err != nil {
			return err
		}
		if found == 0 {
			return ErrNotFound
		}
		res, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE log_id = ? AND lease IS NULL AND due_at = ? AND COALESCE(resend_until, 0) <= ?`,
			logID, heldDue, ms(tx.Now()))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if n > 0 {
			tx.fired = true // the rows it held back are due now
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("skip log %s: %w", logID, err)
	}
	if n == 0 {
		return fmt.Errorf("skip log %s: it holds back no later event: %w", logID, ErrConflict)
	}
	return nil
}

// Held reports whether a log holds back the later events of its license.
func (s *Store) Held(ctx context.Context, logID string) (bool, error) {
	var n int
	if err := s.QueryRow(ctx, `SELECT COUNT(*) FROM delivery_queue q WHERE q.log_id = ? AND `+heldQueueRow, logID).Scan(&n); err != nil {
		return false, fmt.Errorf("read hold of log %s: %w", logID, err)
	}
	return n > 0, nil
}

// releaseHeld removes the held rows of a webhook that no longer holds
// (its ordering or its orderingOnFailure changed).
func (tx *Tx) releaseHeld(ctx context.Context, webhookID string) error {
	tx.fired = true // what the held rows held back may be due now
	if _, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE webhook_id = ? AND due_at = ? AND lease IS NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = delivery_queue.webhook_id AND (w.ordering <> 'license' OR w.ordering_on_failure <> 'hold'))`,
		webhookID, heldDue); err != nil {
		return fmt.Errorf("release held logs of webhook %s: %w", webhookID, err)
	}
	return nil
}

// A held row's due time is written in statements' text too.
var _ = func() int { // checked once: heldDueSQL is heldDue
	if strconv.FormatInt(heldDue, 10) != heldDueSQL {
		panic("heldDueSQL is not heldDue")
	}
	return 0
}()

// holdFailedRows holds the rows of logs, just completed under their
// leases, that end failed for an ordered webhook holding on failure
// (SQLite's bulk recording; PostgreSQL's holds in its one statement).
func (tx *Tx) holdFailedRows(ctx context.Context, failed []string) error {
	if len(failed) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE delivery_queue SET due_at = `+heldDueSQL+`, lease = NULL, lease_until = NULL
WHERE log_id IN (SELECT value FROM json_texts(?)) AND ordering_key IS NOT NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = delivery_queue.webhook_id AND w.ordering_on_failure = 'hold')`, jsonTexts(failed))
	if err != nil {
		return fmt.Errorf("hold failed logs: %w", err)
	}
	return nil
}
