package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/event"
)

// LogStatus is where an event log stands.
type LogStatus string

// Event log statuses. queued: waiting for its first attempt; pending: an
// attempt is in flight under a lease; retrying: waiting for its next attempt;
// succeeded and failed: complete; cancelled: its webhook was disabled or
// suspended, so no automatic attempt is made.
const (
	Queued    LogStatus = "queued"
	Pending   LogStatus = "pending"
	Retrying  LogStatus = "retrying"
	Succeeded LogStatus = "succeeded"
	Failed    LogStatus = "failed"
	Cancelled LogStatus = "cancelled"
)

// Valid reports whether st is a known status.
func (st LogStatus) Valid() bool {
	switch st {
	case Queued, Pending, Retrying, Succeeded, Failed, Cancelled:
		return true
	}
	return false
}

// Attempt triggers.
const (
	TriggerAutomatic = "automatic"
	TriggerResend    = "resend"
)

// EventLog is one event's delivery to one webhook.
type EventLog struct {
	ID            string
	AccountID     string
	WebhookID     string
	EventID       string
	Event         event.Kind
	Status        LogStatus
	Payload       []byte
	StatusCode    *int
	SentAt        *time.Time
	ReceivedAt    *time.Time
	RetryReason   *string
	AttemptCount  int // automatic attempts
	NextAttemptAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Attempts      []Attempt // filled by Log, not by Logs
}

// Attempt is one POST of a log's payload.
type Attempt struct {
	Number       int
	Trigger      string
	SentAt       time.Time
	ReceivedAt   *time.Time
	StatusCode   *int
	DurationMS   int64
	Error        *string
	ResponseBody string
}

const logColumns = `l.id, l.account_id, l.webhook_id, l.event_id, l.kind, l.status, e.body, l.status_code, l.sent_at,
l.received_at, l.retry_reason, l.attempt_count, l.due_at, l.created_at, l.updated_at`

func scanLog(sc interface{ Scan(...any) error }) (EventLog, error) {
	var l EventLog
	var kind, status string
	var code sql.NullInt64
	var sent, recv, due sql.NullInt64
	var reason sql.NullString
	var c, u int64
	if err := sc.Scan(&l.ID, &l.AccountID, &l.WebhookID, &l.EventID, &kind, &status, &l.Payload, &code, &sent,
		&recv, &reason, &l.AttemptCount, &due, &c, &u); err != nil {
		return EventLog{}, err
	}
	l.Event, l.Status = event.Kind(kind), LogStatus(status)
	if code.Valid {
		v := int(code.Int64)
		l.StatusCode = &v
	}
	if reason.Valid {
		l.RetryReason = &reason.String
	}
	l.SentAt, l.ReceivedAt = optTime(sent), optTime(recv)
	if l.Status == Queued || l.Status == Retrying {
		l.NextAttemptAt = optTime(due)
	}
	l.CreatedAt, l.UpdatedAt = fromMS(c), fromMS(u)
	return l, nil
}

// LogFilter narrows a log list.
type LogFilter struct {
	WebhookID string
	Status    LogStatus
	Event     event.Kind
	EventID   string
	Page
}

// Logs lists an account's event logs, newest first, without attempts.
func (s *Store) Logs(ctx context.Context, accountID string, f LogFilter) (list []EventLog, next string, err error) {
	q := `SELECT ` + logColumns + ` FROM webhook_event_logs l JOIN events e ON e.id = l.event_id WHERE l.account_id = ?`
	args := []any{accountID}
	for _, c := range []struct{ col, val string }{
		{"l.webhook_id", f.WebhookID}, {"l.status", string(f.Status)}, {"l.kind", string(f.Event)}, {"l.event_id", f.EventID},
	} {
		if c.val != "" {
			q += ` AND ` + c.col + ` = ?`
			args = append(args, c.val)
		}
	}
	if f.Cursor != "" {
		q += ` AND l.id < ?`
		args = append(args, f.Cursor)
	}
	q += ` ORDER BY l.id DESC LIMIT ?`
	args = append(args, f.Limit+1)
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list event logs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLog(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list event logs: %w", err)
		}
		list = append(list, l)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list event logs: %w", err)
	}
	list, next = cut(list, f.Limit, func(l EventLog) string { return l.ID })
	return list, next, nil
}

// Log returns one event log with its attempts, oldest first.
func (s *Store) Log(ctx context.Context, accountID, id string) (EventLog, error) {
	l, err := scanLog(s.QueryRow(ctx, `SELECT `+logColumns+` FROM webhook_event_logs l JOIN events e ON e.id = l.event_id
WHERE l.account_id = ? AND l.id = ?`, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return EventLog{}, ErrNotFound
	}
	if err != nil {
		return EventLog{}, fmt.Errorf("read event log: %w", err)
	}
	rows, err := s.Query(ctx, `SELECT number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body
FROM webhook_attempts WHERE log_id = ? ORDER BY number`, id)
	if err != nil {
		return EventLog{}, fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attempt
		var sent int64
		var recv, code sql.NullInt64
		var errText sql.NullString
		if err := rows.Scan(&a.Number, &a.Trigger, &sent, &recv, &code, &a.DurationMS, &errText, &a.ResponseBody); err != nil {
			return EventLog{}, fmt.Errorf("read attempts: %w", err)
		}
		a.SentAt, a.ReceivedAt = fromMS(sent), optTime(recv)
		if code.Valid {
			v := int(code.Int64)
			a.StatusCode = &v
		}
		if errText.Valid {
			a.Error = &errText.String
		}
		l.Attempts = append(l.Attempts, a)
	}
	return l, rows.Err()
}
