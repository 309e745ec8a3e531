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
// (orderedKey, orderedSequence), and a claim passes over a row while a row of the
// same webhook and key with a lower sequence is in the queue
// (the queue's orderedClaimable). A row leaves the queue when its log ends (delivered,
// failed after its attempts, cancelled), so the next one becomes
// claimable; a row in flight, waiting for a retry or throttled stays, and
// so does one whose lease a dead process left: the later rows wait for
// its take-over. Licenses never wait for each other.
//
// On "hold" (the default), a log of an ordered webhook that ends failed
// keeps its queue row, unleased and due never (HeldDue), so the rows after
// it stay blocked until the log is resent and delivered (a delivered
// resend removes the row, as it does any waiting row) or skipped
// (queue.SkipHeld). On "continue" its row goes as any completed log's does.
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

// HeldDue is the due time of a held row: 9999-12-31, later than any claim,
// so no claim takes it, and still a time every reader can format.
const HeldDue int64 = 253402300799999

// orderedKey and orderedSequence are, for a log l (webhook_id) of an event
// e (license_id, sequence), the queue row's ordering_key and sequence: set
// only when the webhook orders by license and the event concerns one.
const (
	orderedKey = `(SELECT CASE WHEN w.ordering = 'license' AND e.sequence IS NOT NULL THEN e.license_id END
  FROM webhooks w WHERE w.id = l.webhook_id)`
	orderedSequence = `(SELECT CASE WHEN w.ordering = 'license' AND e.license_id IS NOT NULL THEN e.sequence END
  FROM webhooks w WHERE w.id = l.webhook_id)`
)

// HeldDueSQL is HeldDue in a statement's text.
const HeldDueSQL = "253402300799999"

// releaseHeld removes the held rows of a webhook that no longer holds
// (its ordering or its orderingOnFailure changed).
func (tx *Tx) releaseHeld(ctx context.Context, webhookID string) error {
	tx.fired = true // what the held rows held back may be due now
	if _, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE webhook_id = ? AND due_at = ? AND lease IS NULL
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = delivery_queue.webhook_id AND (w.ordering <> 'license' OR w.ordering_on_failure <> 'hold'))`,
		webhookID, HeldDue); err != nil {
		return fmt.Errorf("release held logs of webhook %s: %w", webhookID, err)
	}
	return nil
}

// A held row's due time is written in statements' text too.
var _ = func() int { // checked once: HeldDueSQL is HeldDue
	if strconv.FormatInt(HeldDue, 10) != HeldDueSQL {
		panic("HeldDueSQL is not HeldDue")
	}
	return 0
}()
