package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

type logJSON struct {
	ID            string          `json:"id"`
	WebhookID     string          `json:"webhookId"`
	EventID       string          `json:"eventId"`
	Event         event.Kind      `json:"event"`
	Status        store.LogStatus `json:"status"`
	Payload       string          `json:"payload"`
	StatusCode    *int            `json:"statusCode"`
	SentAt        *string         `json:"sentAt"`
	ReceivedAt    *string         `json:"receivedAt"`
	RetryReason   *string         `json:"retryReason"`
	AttemptCount  int             `json:"attemptCount"`
	NextAttemptAt *string         `json:"nextAttemptAt"`
	Holding       bool            `json:"holding"`
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
	Attempts      *[]attemptJSON  `json:"attempts,omitempty"` // absent from lists; present, even empty, for one log
}

type attemptJSON struct {
	Number       int          `json:"number"`
	Trigger      string       `json:"trigger"`
	SentAt       string       `json:"sentAt"`
	ReceivedAt   *string      `json:"receivedAt"`
	StatusCode   *int         `json:"statusCode"`
	DurationMS   int64        `json:"durationMs"`
	Error        *string      `json:"error"`
	ResponseBody string       `json:"responseBody"`
	Headers      *headersJSON `json:"headers"`
}

// headersJSON is an attempt's headers; lines never null, so clients can range.
type headersJSON struct {
	Request  []headerLine `json:"request"`
	Response []headerLine `json:"response"`
	Omitted  int          `json:"omitted"`
}

type headerLine struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func toHeadersJSON(h *store.AttemptHeaders) *headersJSON {
	if h == nil {
		return nil
	}
	out := &headersJSON{Request: make([]headerLine, 0, len(h.Request)), Response: make([]headerLine, 0, len(h.Response)), Omitted: h.Omitted}
	for _, l := range h.Request {
		out.Request = append(out.Request, headerLine(l))
	}
	for _, l := range h.Response {
		out.Response = append(out.Response, headerLine(l))
	}
	return out
}

func toLogJSON(l store.EventLog, withAttempts bool) logJSON {
	out := logJSON{ID: l.ID, WebhookID: l.WebhookID, EventID: l.EventID, Event: l.Event, Status: l.Status,
		Payload: string(l.Payload), StatusCode: l.StatusCode, SentAt: optTS(l.SentAt), ReceivedAt: optTS(l.ReceivedAt),
		RetryReason: l.RetryReason, AttemptCount: l.AttemptsMade, NextAttemptAt: optTS(l.NextAttemptAt),
		Holding: l.Holding, CreatedAt: ts(l.CreatedAt), UpdatedAt: ts(l.UpdatedAt)}
	if withAttempts {
		attempts := make([]attemptJSON, len(l.Attempts))
		out.Attempts = &attempts
		for i, a := range l.Attempts {
			attempts[i] = attemptJSON{Number: a.Number, Trigger: a.Trigger, SentAt: ts(a.SentAt), ReceivedAt: optTS(a.ReceivedAt),
				StatusCode: a.StatusCode, DurationMS: a.DurationMS, Error: a.Error, ResponseBody: a.ResponseBody,
				Headers: toHeadersJSON(a.Headers)}
		}
	}
	return out
}

func (a *API) listLogs(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var v Invalid
	f := store.LogFilter{Page: p, WebhookID: queryID(r, "webhookId", &v),
		Event: event.Kind(q.Get("event")), EventID: queryID(r, "eventId", &v)}
	// status may be given several times (?status=failed&status=cancelled):
	// logs with any of them.
	for _, s := range q["status"] {
		st := store.LogStatus(s)
		if !st.Valid() {
			v.Add("status", "each must be queued, pending, retrying, succeeded, failed or cancelled")
			break
		}
		f.Statuses = append(f.Statuses, st)
	}
	if len(f.Statuses) == 1 {
		f.Status, f.Statuses = f.Statuses[0], nil
	}
	switch q.Get("holding") {
	case "", "false":
	case "true":
		f.Holding = true
	default:
		v.Add("holding", "must be true or false")
	}
	f.From, f.To = queryTime(r, "since", &v), queryTime(r, "until", &v)
	if !f.From.IsZero() && !f.To.IsZero() && !f.To.After(f.From) {
		v.Add("until", "must be after since")
	}
	if f.Event != "" && !f.Event.Valid() {
		v.Add("event", "is not a known event kind")
	}
	if err := v.Err(); err != nil {
		return err
	}
	logs, next, err := a.store.Logs(r.Context(), accountID(r), f)
	if err != nil {
		return err
	}
	out := make([]logJSON, len(logs))
	for i, l := range logs {
		out[i] = toLogJSON(l, false)
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getLog(w http.ResponseWriter, r *http.Request) error {
	return a.writeLog(w, r)
}

// writeLog answers with the log the path names, as it stands now (after a
// resend or a skip, too).
func (a *API) writeLog(w http.ResponseWriter, r *http.Request) error {
	l, err := a.store.Log(r.Context(), accountID(r), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("event log")
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toLogJSON(l, true))
}

func (a *API) resendLog(w http.ResponseWriter, r *http.Request) error {
	err := a.delivery.Resend(r.Context(), accountID(r), pathID(r, "id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("event log")
	case errors.Is(err, delivery.ErrWebhookDisabled):
		return problem(http.StatusConflict, "conflict", "Conflict", "the webhook is disabled, and a disabled webhook sends nothing; enable it, then resend")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "conflict", "Conflict",
			"an attempt of this log (automatic, or another resend) is in flight; resend once it completes")
	case err != nil:
		return err
	}
	return a.writeLog(w, r)
}

// skipLog lets the later events of a held log's license go on (decision
// 0131): the log stays failed, and is no longer waited for.
func (a *API) skipLog(w http.ResponseWriter, r *http.Request) error {
	err := a.queue.SkipHeld(r.Context(), accountID(r), pathID(r, "id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("event log")
	case errors.Is(err, store.ErrConflict):
		return problem(http.StatusConflict, "conflict", "Conflict",
			"this log holds back no later event: only a failed log of a webhook ordered by license that holds on failure can be skipped")
	case err != nil:
		return err
	}
	return a.writeLog(w, r)
}

// queryTime reads an optional RFC 3339 time from the query: zero when
// absent, an entry in v when malformed.
func queryTime(r *http.Request, name string, v *Invalid) time.Time {
	s := r.URL.Query().Get(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		v.Add(name, "must be an RFC 3339 time, e.g. 2026-11-21T08:00:00Z")
	}
	return t
}
