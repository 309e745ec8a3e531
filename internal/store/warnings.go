package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/jsonlimit"
)

// What an email is about (emails.kind).
const (
	EmailUnhealthy = "unhealthy" // a webhook turned Unhealthy
	EmailSuspended = "suspended" // a webhook was suspended
	EmailReminder  = "reminder"  // a webhook is still suspended
	EmailDisabled  = "disabled"  // herald disabled a webhook: its receiver answered 410 Gone
)

// EmailFacts are what a warning's email tells, as the store knows them;
// package notify writes the subject and body from them (and from the
// portal's address, which the store does not know).
type EmailFacts struct {
	WebhookID string `json:"webhookId"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	// Streak is the webhook's failed completed events in a row, and
	// SuspendAfter the streak that suspends it (unhealthy, suspended).
	Streak       int `json:"streak"`
	SuspendAfter int `json:"suspendAfter,omitempty"`
	// Failure is the latest failed event, when known.
	Failure *event.Failure `json:"failure,omitempty"`
	// Since is when the webhook was suspended, and Every the reminders'
	// period (reminder).
	Since time.Time     `json:"since,omitzero"`
	Every time.Duration `json:"every,omitempty"`
	// Reason is why herald disabled the webhook (disabled).
	Reason string `json:"reason,omitempty"`
	// ExpiresAt is when its client certificate expires
	// (certificate-expiring).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// QueueEmail puts an email to the account's notification address in the
// outbox, in the transaction that decided it: its kind and facts, its words
// left for notify to write.
func (tx *Tx) QueueEmail(ctx context.Context, accountID, kind string, facts EmailFacts, now time.Time) error {
	b, err := json.Marshal(facts)
	if err != nil {
		return fmt.Errorf("queue %s email: %w", kind, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO emails (id, account_id, recipient, subject, body, created_at, kind, facts)
SELECT ?, id, notification_email, '', '', ?, ?, ? FROM accounts WHERE id = ?`, NewID(), ms(now), kind, string(b), accountID)
	if err != nil {
		return fmt.Errorf("queue %s email: %w", kind, err)
	}
	return nil
}

// RemindSuspended queues a reminder for each enabled webhook that has been
// Suspended for every, at now, since its suspension or its last reminder,
// and returns how many it queued. now is the caller's clock, so that a test
// can move the reminders' time without moving the deliveries'. A webhook is marked reminded by a conditional UPDATE
// in the transaction that queues its email, so however many processes run
// this at once, each period gives each webhook one reminder. A disabled
// webhook gets none: its owner switched it off, and a suspension matters only
// once it is enabled again.
func (s *Store) RemindSuspended(ctx context.Context, now time.Time, every time.Duration) (int, error) {
	if every <= 0 {
		return 0, nil
	}
	var n int
	err := s.InTx(ctx, func(tx *Tx) error {
		n = 0
		// Suspended before herald kept the time: the period starts now.
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET suspended_at = ? WHERE status = 'Suspended' AND suspended_at IS NULL`, ms(now)); err != nil {
			return fmt.Errorf("date suspensions: %w", err)
		}
		// Locked in id order, passing over rows another transaction holds
		// (they are reminded at the next look), so this never deadlocks with
		// the recording of outcomes, which locks webhooks in id order too.
		lock := ""
		if tx.ForUpdate() != "" {
			lock = tx.ForUpdate() + " SKIP LOCKED"
		}
		due := `status = 'Suspended' AND enabled AND COALESCE(reminded_at, suspended_at) <= ?`
		rows, err := tx.Query(ctx, `UPDATE webhooks SET reminded_at = ?
WHERE id IN (SELECT id FROM webhooks WHERE `+due+` ORDER BY id LIMIT 100`+lock+`) AND `+due+`
RETURNING id, account_id, name, url, failure_streak, last_failure, suspended_at`,
			ms(now), ms(now.Add(-every)), ms(now.Add(-every)))
		if err != nil {
			return fmt.Errorf("mark reminders: %w", err)
		}
		var due2 []reminder
		for rows.Next() {
			var r reminder
			var failure sql.NullString
			var since int64
			if err := rows.Scan(&r.webhookID, &r.accountID, &r.name, &r.url, &r.streak, &failure, &since); err != nil {
				rows.Close()
				return fmt.Errorf("mark reminders: %w", err)
			}
			r.failure, r.since = ParseFailure(failure), fromMS(since)
			due2 = append(due2, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("mark reminders: %w", err)
		}
		for _, r := range due2 {
			facts := EmailFacts{WebhookID: r.webhookID, Name: r.name, URL: r.url, Streak: r.streak, Failure: r.failure,
				Since: r.since.UTC(), Every: every}
			if err := tx.QueueEmail(ctx, r.accountID, EmailReminder, facts, now); err != nil {
				return err
			}
		}
		n = len(due2)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("remind of suspended webhooks: %w", err)
	}
	if n > 0 && s.onEmail != nil {
		s.onEmail()
	}
	return n, nil
}

type reminder struct {
	webhookID, accountID, name, url string
	streak                          int
	failure                         *event.Failure
	since                           time.Time
}

// ParseFailure reads webhooks.last_failure; nil when there is none.
func ParseFailure(s sql.NullString) *event.Failure {
	if !s.Valid {
		return nil
	}
	var f event.Failure
	if jsonlimit.Unmarshal([]byte(s.String), &f) != nil {
		return nil
	}
	return &f
}
