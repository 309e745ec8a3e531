package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/jsonlimit"
)

// What an email is about (emails.kind).
const (
	EmailUnhealthy = "unhealthy" // a webhook turned Unhealthy
	EmailSuspended = "suspended" // a webhook was suspended
	EmailReminder  = "reminder"  // a webhook is still suspended
)

// healthChange is a webhook whose health a batch changed, as it is after the
// change, and what to tell about it.
type healthChange struct {
	kind         event.Kind // WebhookUnhealthy, WebhookSuspended or WebhookRecovered
	accountID    string
	webhookID    string
	name, url    string
	status       Health
	streak       int
	suspendAfter int
	failure      *event.Failure
}

// failureOf describes the failed event of an Exhausted outcome.
func (tx *Tx) failureOf(ctx context.Context, o Outcome, now time.Time) (event.Failure, error) {
	f := event.Failure{LogID: o.LogID, Reason: cleanText(o.Reason), FailedAt: now.UTC().Format(event.TimeFormat)}
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

// parseFailure reads webhooks.last_failure; nil when there is none.
func parseFailure(s sql.NullString) *event.Failure {
	if !s.Valid {
		return nil
	}
	var f event.Failure
	if jsonlimit.Unmarshal([]byte(s.String), &f) != nil {
		return nil
	}
	return &f
}

// warn queues, for each change, its email (none for a recovery: the owner
// sees it on the page, and the event tells their systems) and fires its
// operational event to the account's other webhooks that subscribe to it.
// It reports whether it queued an email.
func (tx *Tx) warn(ctx context.Context, changes []healthChange, now time.Time) (bool, error) {
	emailed := false
	for _, c := range changes {
		var subject, body string
		switch c.kind {
		case event.WebhookUnhealthy:
			subject, body = tx.s.unhealthyEmail(c)
		case event.WebhookSuspended:
			subject, body = tx.s.suspendedEmail(c)
		}
		if subject != "" {
			if err := tx.queueEmail(ctx, c.accountID, string(emailKind(c.kind)), subject, body, now); err != nil {
				return false, err
			}
			emailed = true
		}
		data := event.WebhookHealth{ID: c.webhookID, Name: c.name, URL: c.url, Status: string(c.status), LatestFailure: c.failure}
		if _, err := tx.fire(ctx, c.accountID, c.kind, data, c.webhookID); err != nil {
			return false, fmt.Errorf("fire %s for webhook %s: %w", c.kind, c.webhookID, err)
		}
	}
	return emailed, nil
}

func emailKind(k event.Kind) string {
	if k == event.WebhookUnhealthy {
		return EmailUnhealthy
	}
	return EmailSuspended
}

// queueEmail puts an email to the account's notification address in the
// outbox, in the transaction that decided it.
func (tx *Tx) queueEmail(ctx context.Context, accountID, kind, subject, body string, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO emails (id, account_id, recipient, subject, body, created_at, kind)
SELECT ?, id, notification_email, ?, ?, ?, ? FROM accounts WHERE id = ?`, NewID(), subject, body, ms(now), kind, accountID)
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
			r.failure, r.since = parseFailure(failure), fromMS(since)
			due2 = append(due2, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("mark reminders: %w", err)
		}
		for _, r := range due2 {
			subject, body := s.reminderEmail(r, every)
			if err := tx.queueEmail(ctx, r.accountID, EmailReminder, subject, body, now); err != nil {
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

// The emails. Plain text, short lines; each names the webhook, says what its
// state means and what to do, and links to its page in the portal.

func (s *Store) unhealthyEmail(c healthChange) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q is now Unhealthy: an event failed after every retry.\n\n", c.name)
	writeHook(&b, c.webhookID, c.url)
	writeFailure(&b, c.failure)
	left := c.suspendAfter - c.streak
	fmt.Fprintf(&b, `
Herald keeps sending new events to it. If %d more %s after all retries,
with none delivered in between, herald suspends the webhook and stops
sending to it.

What to do: fix the receiving endpoint, then check it with Test on the
webhook's page. The next successful delivery makes it Healthy again.

`, left, plural(left, "event fails", "events fail"))
	s.writeLink(&b, c.webhookID)
	return fmt.Sprintf("Webhook %q is Unhealthy", c.name), b.String()
}

func (s *Store) suspendedEmail(c healthChange) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q has been suspended.\n\n", c.name)
	writeHook(&b, c.webhookID, c.url)
	writeFailure(&b, c.failure)
	fmt.Fprintf(&b, `
Its %d most recent completed events all failed after every retry, so herald
has stopped sending to it. Events that fire meanwhile are still recorded in
its event log, as cancelled, so that they can be resent.

To restore it: fix the receiving endpoint, check it with Test on the
webhook's page (a successful Test does not lift the suspension), then
resend the events it missed from that page (or one at a time with
POST /v3/webhook-event-logs/{id}/resend). The first successful delivery
makes the webhook Healthy again.

`, c.suspendAfter)
	s.writeLink(&b, c.webhookID)
	return fmt.Sprintf("Webhook %q suspended", c.name), b.String()
}

func (s *Store) reminderEmail(r reminder, every time.Duration) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q is still suspended, since %s.\n\n", r.name, r.since.UTC().Format("2006-01-02 15:04 UTC"))
	writeHook(&b, r.webhookID, r.url)
	writeFailure(&b, r.failure)
	fmt.Fprintf(&b, `
Herald sends it nothing while it is suspended; the events that fire are
recorded in its event log, as cancelled, so that they can be resent.

To restore it: fix the receiving endpoint, check it with Test on the
webhook's page, then resend the events it missed from that page. The first
successful delivery makes it Healthy again. If it is no longer needed,
disable or delete it, and these reminders stop.

This reminder comes every %s while the webhook stays suspended.

`, formatPeriod(every))
	s.writeLink(&b, r.webhookID)
	return fmt.Sprintf("Webhook %q is still suspended", r.name), b.String()
}

// writeHook names the webhook and its receiver's origin only: a receiver's
// path or query may carry its own secret (as chat services' incoming-webhook
// URLs do), and an email travels and is kept where the API's answers are not.
func writeHook(b *strings.Builder, id, rawURL string) {
	origin := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		origin = u.Scheme + "://" + u.Host
	}
	fmt.Fprintf(b, "Webhook id: %s\nSends to:   %s\n", id, origin)
}

func writeFailure(b *strings.Builder, f *event.Failure) {
	if f == nil {
		return
	}
	answer := "no answer"
	if f.StatusCode != nil {
		answer = fmt.Sprintf("HTTP %d", *f.StatusCode)
	}
	fmt.Fprintf(b, `
Latest failed event: %s (event id %s)
Event log:           %s
Failed at:           %s
Receiver's answer:   %s
Reason:              %s
`, f.Event, f.EventID, f.LogID, f.FailedAt, answer, f.Reason)
}

// writeLink names the webhook's portal page. Without --public-url herald
// does not know the address its users reach it at (its listening address is
// often a private one behind a proxy), so it names the page's path rather
// than invent a host.
func (s *Store) writeLink(b *strings.Builder, webhookID string) {
	path := "/webhooks/" + webhookID
	if s.publicURL != "" {
		fmt.Fprintf(b, "The webhook's page: %s%s\n", s.publicURL, path)
		return
	}
	fmt.Fprintf(b, "The webhook's page: %s in herald's portal (Developer -> Webhooks).\n(The portal's address is not configured: herald's operator can set --public-url.)\n", path)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// formatPeriod writes a reminder period as people say it: "7 days", "12h0m0s".
func formatPeriod(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		days := int(d / (24 * time.Hour))
		return fmt.Sprintf("%d %s", days, plural(days, "day", "days"))
	}
	return d.String()
}
