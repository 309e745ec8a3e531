package client

import (
	"context"
	"time"
)

// EventLog is one event for one webhook: its delivery and every attempt.
type EventLog struct {
	ID            string     `json:"id"`
	WebhookID     string     `json:"webhookId"`
	EventID       string     `json:"eventId"`
	Event         string     `json:"event"`
	Status        string     `json:"status"` // queued, pending, retrying, succeeded, failed, cancelled
	Payload       string     `json:"payload"`
	StatusCode    *int       `json:"statusCode"`
	SentAt        *time.Time `json:"sentAt"`
	ReceivedAt    *time.Time `json:"receivedAt"`
	RetryReason   *string    `json:"retryReason"`
	AttemptCount  int        `json:"attemptCount"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	// Holding: a failed log of a webhook ordered by license that holds its
	// license's later events back until it is resent and delivered, or
	// skipped.
	Holding   bool      `json:"holding"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Attempts is nil in lists; EventLog and ResendEventLog fill it.
	Attempts []Attempt `json:"attempts"`
}

// Attempt is one POST of a log's event.
type Attempt struct {
	Number       int        `json:"number"`
	Trigger      string     `json:"trigger"` // automatic or resend
	SentAt       time.Time  `json:"sentAt"`
	ReceivedAt   *time.Time `json:"receivedAt"`
	StatusCode   *int       `json:"statusCode"`
	DurationMS   int64      `json:"durationMs"`
	Error        *string    `json:"error"`
	ResponseBody string     `json:"responseBody"`
	// Headers are those sent and answered; nil for attempts recorded
	// before herald kept them.
	Headers *AttemptHeaders `json:"headers"`
}

// AttemptHeaders are an attempt's headers: those herald sent (the signature
// among them) and those the receiver answered with, names in lower case, at
// most 50 lines and 8 KiB together; Omitted counts the lines left out.
type AttemptHeaders struct {
	Request  []Header `json:"request"`
	Response []Header `json:"response"`
	Omitted  int      `json:"omitted"`
}

// Header is one header line.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// LogFilter narrows ListEventLogs; empty fields do not filter.
type LogFilter struct {
	WebhookID string
	Status    string
	// Statuses keeps logs with any of these statuses (with Status too).
	Statuses []string
	Event    string
	EventID  string
	// Holding keeps only the failed logs that hold their license's later
	// events back (EventLog.Holding).
	Holding bool
	// Since and Until bound the event's time: at or after Since, before
	// Until; zero leaves that end open.
	Since, Until time.Time
	ListOptions
}

// ListEventLogs lists event logs, newest first, without their attempts.
func (c *Client) ListEventLogs(ctx context.Context, f LogFilter) (Page[EventLog], error) {
	q := f.values()
	for k, v := range map[string]string{"webhookId": f.WebhookID, "status": f.Status, "event": f.Event, "eventId": f.EventID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for _, s := range f.Statuses {
		q.Add("status", s)
	}
	if f.Holding {
		q.Set("holding", "true")
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	var p Page[EventLog]
	err := c.do(ctx, "GET", "/v3/webhook-event-logs", q, nil, &p)
	return p, err
}

// EventLog reads one log with its attempts.
func (c *Client) EventLog(ctx context.Context, id string) (EventLog, error) {
	var out EventLog
	err := c.do(ctx, "GET", "/v3/webhook-event-logs/"+esc(id), nil, nil, &out)
	return out, err
}

// SkipEventLog lets the later events of a held log's license go on to
// its webhook ordered by license (orderingOnFailure "hold"): the log stays
// failed. A log that holds nothing back answers a 409 APIError.
func (c *Client) SkipEventLog(ctx context.Context, id string) (EventLog, error) {
	var out EventLog
	err := c.do(ctx, "POST", "/v3/webhook-event-logs/"+esc(id)+"/skip", nil, nil, &out)
	return out, err
}

// ResendEventLog attempts the log's event again now, with the same bytes,
// and answers once the attempt is over: the log with the new attempt last.
func (c *Client) ResendEventLog(ctx context.Context, id string) (EventLog, error) {
	var out EventLog
	err := c.do(ctx, "POST", "/v3/webhook-event-logs/"+esc(id)+"/resend", nil, nil, &out)
	return out, err
}
