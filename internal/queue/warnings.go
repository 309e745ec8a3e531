package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// The warnings of a webhook's health and of its receiver's 410 Gone, decided
// as a batch of outcomes is recorded: emails queued in the store's outbox
// (their words are package notify's) and operational events fired, in the
// batch's transaction.

// healthChange is a webhook whose health a batch changed, as it is after the
// change, and what to tell about it.
type healthChange struct {
	kind         event.Kind // WebhookUnhealthy, WebhookSuspended or WebhookRecovered
	accountID    string
	webhookID    string
	name, url    string
	status       store.Health
	streak       int
	suspendAfter int
	failure      *event.Failure
}

// failureOf describes the failed event of an Exhausted outcome.
func (tx txn) failureOf(ctx context.Context, o attempt.Outcome, now time.Time) (event.Failure, error) {
	f := event.Failure{LogID: o.LogID, Reason: store.CleanText(o.Reason), FailedAt: now.UTC().Format(event.TimeFormat)}
	var kind string
	if err := tx.QueryRow(ctx, `SELECT event_id, kind FROM webhook_event_logs WHERE id = ?`, o.LogID).Scan(&f.EventID, &kind); err != nil {
		return f, fmt.Errorf("read failed log %s: %w", o.LogID, err)
	}
	f.Event = event.Kind(kind)
	if o.Attempt != nil {
		f.StatusCode = o.Attempt.StatusCode
	}
	return f, nil
}

// warn queues, for each change, its email (none for a recovery: the owner
// sees it on the page, and the event tells their systems) and fires its
// operational event to the account's other webhooks that subscribe to it.
// An email is queued with its facts; package notify writes its words. It
// reports whether it queued an email.
func (tx txn) warn(ctx context.Context, changes []healthChange, now time.Time) (bool, error) {
	emailed := false
	for _, c := range changes {
		if c.kind == event.WebhookUnhealthy || c.kind == event.WebhookSuspended {
			facts := store.EmailFacts{WebhookID: c.webhookID, Name: c.name, URL: c.url, Streak: c.streak,
				SuspendAfter: c.suspendAfter, Failure: c.failure}
			if err := tx.QueueEmail(ctx, c.accountID, emailKind(c.kind), facts, now); err != nil {
				return false, err
			}
			emailed = true
		}
		data := event.WebhookHealth{ID: c.webhookID, Name: c.name, URL: c.url, Status: string(c.status), LatestFailure: c.failure}
		if _, err := tx.FireExcept(ctx, c.accountID, c.kind, data, c.webhookID); err != nil {
			return false, fmt.Errorf("fire %s for webhook %s: %w", c.kind, c.webhookID, err)
		}
	}
	return emailed, nil
}

func emailKind(k event.Kind) string {
	if k == event.WebhookUnhealthy {
		return store.EmailUnhealthy
	}
	return store.EmailSuspended
}

// disableGone disables the webhook of an applied outcome that asks for it
// (Outcome.Disable: its receiver answered 410 Gone), keeping why, and
// queues the owner's email; a webhook already disabled is left as it is,
// so that of several such outcomes one email goes. It reports whether it
// queued an email.
func (tx txn) disableGone(ctx context.Context, o attempt.Outcome, now time.Time) (bool, error) {
	var accountID, name, url string
	err := tx.QueryRow(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = ?, updated_at = ?
WHERE id = ? AND enabled RETURNING account_id, name, url`, o.Disable, store.MS(now), o.WebhookID).Scan(&accountID, &name, &url)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("disable webhook %s: %w", o.WebhookID, err)
	}
	facts := store.EmailFacts{WebhookID: o.WebhookID, Name: name, URL: url, Reason: o.Disable}
	if err := tx.QueueEmail(ctx, accountID, store.EmailDisabled, facts, now); err != nil {
		return false, err
	}
	return true, nil
}
