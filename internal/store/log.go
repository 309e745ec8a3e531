package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/event"
)

// EventLog is one event's delivery to one webhook.
type EventLog struct {
	ID           string
	AccountID    string
	WebhookID    string
	EventID      string
	Event        event.Kind
	Status       LogStatus
	Payload      []byte
	StatusCode   *int
	SentAt       *time.Time
	ReceivedAt   *time.Time
	RetryReason  *string
	AttemptCount int // automatic attempts: the retry schedule counts these
	// AttemptsMade counts every attempt recorded, automatic, resent and
	// recovered alike: what the API's attemptCount and the portal show.
	// It is counted where the log is read, from its attempts, so no
	// writer has to keep a second counter in step.
	AttemptsMade  int
	NextAttemptAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// LastDuration is how long its latest attempt took; nil before any.
	LastDuration *time.Duration
	// Holding says a failed log of a webhook ordered by license holds its
	// license's later events back until it is resent and delivered, or
	// skipped (decision 0131).
	Holding  bool
	Attempts []Attempt // filled by Log, not by Logs
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
	Headers      *AttemptHeaders // nil for attempts recorded before herald kept them
}

// logColumns reads the event's body through a subquery rather than a join,
// and a waiting log's next attempt from its row in delivery_queue (a
// release makes it due there without writing the log), and an in-flight
// log's updatedAt as its claim's time, kept there (the portal's "in flight
// since", decision 0074),
// so that the planner drives a list from the logs' own indexes: joined, an
// event id filter was carried over to the events table and SQLite then
// walked the account's whole history for that event's few logs.
const logColumns = `l.id, l.account_id, l.webhook_id, l.event_id, l.kind, ` + logStatus + `,
(SELECT e.body FROM events e WHERE e.id = l.event_id), l.status_code, l.sent_at,
l.received_at, l.retry_reason, l.attempt_count,
CASE WHEN l.status IN ('queued', 'retrying') THEN (SELECT COALESCE(q.lease_until, q.due_at) FROM delivery_queue q WHERE q.log_id = l.id) END, l.created_at,
COALESCE(CASE WHEN l.status IN ('queued', 'retrying') THEN (SELECT q.claimed_at FROM delivery_queue q WHERE q.log_id = l.id AND q.lease IS NOT NULL) END, l.updated_at),
(SELECT a.duration_ms FROM webhook_attempts a WHERE a.log_id = l.id ORDER BY a.number DESC LIMIT 1),
(SELECT COUNT(*) FROM webhook_attempts a WHERE a.log_id = l.id),
CASE WHEN l.status = 'failed' THEN (SELECT COUNT(*) FROM delivery_queue q WHERE ` + heldRow + `) ELSE 0 END`

// heldRow is true of log l's row of delivery_queue q while the log holds
// its license back (as Held reads it): only a failed log of a holding
// webhook keeps its row, unleased and due never (decision 0131).
const heldRow = `q.log_id = l.id AND ` + HeldQueueRow

// HeldQueueRow is true of a row of delivery_queue q that holds its log's
// license back: due never, and not being attempted.
const HeldQueueRow = `q.due_at = ` + HeldDueSQL + ` AND q.lease IS NULL`

// holdingLog is true of a failed log l that holds its license back.
const holdingLog = `l.status = 'failed' AND EXISTS (SELECT 1 FROM delivery_queue q WHERE ` + heldRow + `)`

// logStatus is the status of log l as shown and filtered: pending while its
// row in delivery_queue is leased (an attempt in flight), which a claim
// writes there and not in the log, else the log's own.
const logStatus = `CASE WHEN l.status IN ('queued', 'retrying') AND EXISTS (SELECT 1 FROM delivery_queue q WHERE q.log_id = l.id AND q.lease IS NOT NULL)
THEN 'pending' ELSE l.status END`

func scanLog(sc interface{ Scan(...any) error }) (EventLog, error) {
	var l EventLog
	var kind, status string
	var code sql.NullInt64
	var sent, recv, due sql.NullInt64
	var reason sql.NullString
	var c, u int64
	var duration sql.NullInt64
	var holding int64
	if err := sc.Scan(&l.ID, &l.AccountID, &l.WebhookID, &l.EventID, &kind, &status, &l.Payload, &code, &sent,
		&recv, &reason, &l.AttemptCount, &due, &c, &u, &duration, &l.AttemptsMade, &holding); err != nil {
		return EventLog{}, err
	}
	l.Holding = holding > 0
	if duration.Valid {
		d := time.Duration(duration.Int64) * time.Millisecond
		l.LastDuration = &d
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
	// Statuses keeps logs with any of these statuses, besides Status.
	Statuses []LogStatus
	Event    event.Kind
	EventID  string
	// WebhookSearch keeps logs of the account's webhooks whose name
	// contains it, as WebhookFilter.Search does; "" for any.
	WebhookSearch string
	// searched are the ids of the webhooks WebhookSearch names, once
	// resolved (resolveSearch) before the logs are read.
	searched []string
	resolved bool
	// Holding keeps only the failed logs that hold their license's later
	// events back (EventLog.Holding).
	Holding bool
	// From and To bound the creation time: at or after From, before To;
	// a zero time leaves that end open.
	From, To time.Time
	Page
}

// where completes a query of account's logs, aliased l, of the form
// "SELECT … FROM webhook_event_logs l", with the filter's conditions. With
// walk, the creation-time bounds are written so that no index serves them
// (unary plus), and a page is read by walking the account's logs in id
// order instead.
func (f LogFilter) where(s *Store, accountID, q string, walk bool) (string, []any) {
	q += ` WHERE l.account_id = ?`
	args := []any{accountID}
	created := "l.created_at"
	if walk {
		created = "+l.created_at"
	}
	for _, c := range []struct{ col, val string }{
		{"l.webhook_id", f.WebhookID}, {"(" + logStatus + ")", string(f.Status)}, {"l.kind", string(f.Event)}, {"l.event_id", f.EventID},
	} {
		if c.val != "" {
			q += ` AND ` + c.col + ` = ?`
			args = append(args, c.val)
		}
	}
	if len(f.Statuses) > 0 {
		statuses := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			statuses[i] = string(st)
		}
		q += ` AND (` + logStatus + `) IN (SELECT value FROM json_texts(?))`
		args = append(args, JSONTexts(statuses))
	}
	if f.Holding {
		// undelivered_at, as below, lets the undelivered logs' indexes
		// find them: a holding log is a failed one.
		q += ` AND l.undelivered_at IS NOT NULL AND ` + holdingLog
	} else if f.onlyFailed() {
		// A failed log is always undelivered: every writer that fails a
		// log sets its undelivered_at (and migration 0060 set it on those
		// before). Saying so lets the undelivered logs' own indexes find
		// the failed ones, which are few, where a walk of the history
		// for them read every log when there were none (300 ms at a
		// million logs on PostgreSQL).
		q += ` AND l.undelivered_at IS NOT NULL`
	}
	if f.WebhookSearch != "" {
		// The webhooks the search names are looked up first (resolveSearch),
		// so that their logs are read as those of a webhook filter are. A
		// subquery here ran again for every log (450 ms to count 10,000 of
		// a million on PostgreSQL), and even run once it left PostgreSQL a
		// join over every partition (p99 173 ms at ten million logs).
		switch len(f.searched) {
		case 0:
			q += ` AND 1 = 0`
		case 1:
			q += ` AND l.webhook_id = ?`
			args = append(args, f.searched[0])
		default:
			q += ` AND l.webhook_id IN (SELECT value FROM json_texts(?))`
			args = append(args, JSONTexts(f.searched))
		}
	}
	if !f.From.IsZero() {
		q += ` AND ` + created + ` >= ?`
		args = append(args, ms(f.From))
	}
	if !f.To.IsZero() {
		q += ` AND ` + created + ` < ?`
		args = append(args, ms(f.To))
	}
	lo, hi := f.idBounds(s)
	if lo != "" {
		q += ` AND l.id >= ?`
		args = append(args, lo)
	}
	if hi != "" {
		q += ` AND l.id < ?`
		args = append(args, hi)
	}
	return q, args
}

// onlyFailed reports whether f asks for failed logs and no others.
func (f LogFilter) onlyFailed() bool {
	if f.Status == "" && len(f.Statuses) == 0 {
		return false
	}
	for _, st := range append([]LogStatus{f.Status}, f.Statuses...) {
		if st != "" && st != Failed {
			return false
		}
	}
	return true
}

// idBounds are the bounds on a log's id ("" for open) that f's time of
// creation or event id imply. They keep the days outside the range unread:
// on PostgreSQL the history is partitioned by the ids' time (decision
// 0090), and on both engines a walk in id order starts at the range rather
// than at the newest log (on SQLite a page of logs until 29 days ago walked
// the 29 days after it: 480 ms at a million logs). On PostgreSQL a log's id
// is of its created_at's millisecond (decision 0100), and the bounds are
// exact: a date range is a range of ids, read through the account's or the
// webhook's id index. On SQLite (whose ids are of the same kind but which
// keeps its index on the creation time), and for logs made before that, the
// bounds keep a slack of idSlack: such a log's id was made with its event's,
// by the wall clock, just after its created_at was read, and where the
// store's clock is another (a test's) its created_at says nothing of its
// id. An event's own id bounds its logs' on PostgreSQL only
// (eventLogBounds), where those bounds are how they are found: SQLite,
// given a range of ids from a month ago, walked it rather than take the
// event's index to its few logs (210 ms, not 0.2).
func (f LogFilter) idBounds(s *Store) (lo, hi string) {
	if f.EventID != "" {
		lo, hi = s.eventLogBounds(f.EventID)
	}
	if !f.From.IsZero() {
		if from := s.LogIDsFrom(f.From); from != "" {
			lo = max(lo, from)
		}
	}
	if !f.To.IsZero() {
		if before := s.LogIDsBefore(f.To); before != "" && (hi == "" || before < hi) {
			hi = before
		}
	}
	return lo, hi
}

// eventLogBounds are the bounds, lo inclusive and hi exclusive ("" for
// open), of the ids of the logs of the event eventID on PostgreSQL, where
// they are how the event's logs are found: the logs have no index on their
// event (decision 0104). The logs of an event fired since event_log_ids'
// instant have the ids LogIDOf made (EventLogIDs); older ones were made by
// the wall clock or at the firing's instant, within idSlack of their
// event's id, and are found through their partitions' own index on
// event_id (migration 0088), the bounds keeping the other days unread.
// SQLite keeps its index on the logs' event, and reads by it.
func (s *Store) eventLogBounds(eventID string) (lo, hi string) {
	t, ok := timeOfIDOK(eventID)
	if !ok || s.eng.name() != "postgres" {
		return "", ""
	}
	if s.eventLogIDs && ms(t) >= s.eventLogIDsFrom {
		if lo, hi, ok := EventLogIDs(eventID); ok {
			return lo, hi
		}
	}
	return IDBound(t.Add(-idSlack)), IDBound(t.Add(idSlack))
}

// LogIDsFrom is the least id of a log created at or after t, or "" when
// the ids do not say.
func (s *Store) LogIDsFrom(t time.Time) string {
	switch {
	case s.logIDsExact && ms(t) >= s.logIDsExactFrom:
		return IDBound(t)
	case s.wallClock:
		return IDBound(t.Add(-idSlack))
	}
	return ""
}

// LogIDsBefore is a bound above the id of every log created before t, or
// "" when the ids do not say.
func (s *Store) LogIDsBefore(t time.Time) string {
	exactFrom := time.UnixMilli(s.logIDsExactFrom)
	switch {
	case s.logIDsExact && s.logIDsExactFrom == 0:
		return IDBound(t) // every log's id is exact
	case s.logIDsExact && s.wallClock && !t.Before(exactFrom.Add(idSlack)):
		// Older logs' ids were made by the wall clock within idSlack of
		// their creation, before exactFrom: all before t.
		return IDBound(t)
	case s.logIDsExact && s.wallClock && !t.Before(exactFrom):
		return IDBound(exactFrom.Add(idSlack))
	case s.wallClock:
		return IDBound(t.Add(idSlack))
	}
	return ""
}

// resolveSearch looks up the ids of the account's webhooks whose names
// contain f.WebhookSearch, once.
func (s *Store) resolveSearch(ctx context.Context, accountID string, f LogFilter) (LogFilter, error) {
	if f.WebhookSearch == "" || f.resolved {
		return f, nil
	}
	rows, err := s.Query(ctx, `SELECT id FROM webhooks WHERE account_id = ? AND name `+s.eng.caseInsensitiveLike()+` ? ESCAPE '\' ORDER BY id`,
		accountID, "%"+escapeLike(f.WebhookSearch)+"%")
	if err != nil {
		return f, fmt.Errorf("find webhooks named like %q: %w", f.WebhookSearch, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return f, fmt.Errorf("find webhooks named like %q: %w", f.WebhookSearch, err)
		}
		f.searched = append(f.searched, id)
	}
	if err := rows.Err(); err != nil {
		return f, fmt.Errorf("find webhooks named like %q: %w", f.WebhookSearch, err)
	}
	f.resolved = true
	return f, nil
}

// Logs lists an account's event logs, newest first, without attempts.
func (s *Store) Logs(ctx context.Context, accountID string, f LogFilter) (list []EventLog, next string, err error) {
	w, err := s.LogWindow(ctx, accountID, f)
	return w.Items, w.Older, err
}

// LogWindow lists a page of an account's event logs, newest first, without
// attempts, with the cursors of the pages either side.
func (s *Store) LogWindow(ctx context.Context, accountID string, f LogFilter) (Window[EventLog], error) {
	f, err := s.resolveSearch(ctx, accountID, f)
	if err != nil {
		return Window[EventLog]{}, err
	}
	// On SQLite a date range holding few logs is read through the
	// creation-time index and sorted; one holding many is read by walking
	// the account's logs in id order, which finds a page among them at
	// once. Left to itself SQLite (which has no statistics here) took the
	// index and sorted 36,000 of 50,000 logs (260 ms) for a range from
	// yesterday. Counting up to 1,000 through the index costs under a
	// millisecond. On PostgreSQL the range is one of ids (idBounds), walked
	// whatever it holds.
	walk := s.logIDsExact
	if !walk && (!f.From.IsZero() || !f.To.IsZero()) {
		_, many, err := s.CountLogs(ctx, accountID, f, rangeSortLimit)
		if err != nil {
			return Window[EventLog]{}, err
		}
		walk = many
	}
	q, args := f.where(s, accountID, `SELECT `+logColumns+` FROM webhook_event_logs l`, walk)
	// An event has one log per webhook: those are found through the event
	// index and sorted, an expression rather than the column keeping the
	// planner from walking the account's history in id order for them
	// (SQLite did, 90 ms with 50,000 logs).
	order := "l.id"
	if f.EventID != "" {
		order = "l.id || ''"
	}
	q, args = f.Page.applyTo(order, q, args)
	rows, err := s.Query(ctx, q, s.eng.planned(args)...)
	if err != nil {
		return Window[EventLog]{}, fmt.Errorf("list event logs: %w", err)
	}
	defer rows.Close()
	var list []EventLog
	for rows.Next() {
		l, err := scanLog(rows)
		if err != nil {
			return Window[EventLog]{}, fmt.Errorf("list event logs: %w", err)
		}
		list = append(list, l)
	}
	if err := rows.Err(); err != nil {
		return Window[EventLog]{}, fmt.Errorf("list event logs: %w", err)
	}
	return window(list, f.Page, func(l EventLog) string { return l.ID }), nil
}

// rangeSortLimit is the most logs in a date range that LogWindow sorts.
const rangeSortLimit = 1000

// CountLogs counts an account's event logs that pass f (its Page is
// ignored), up to limit: more reports that there are more than limit, so a
// count over a long history stops early rather than reading all of it.
func (s *Store) CountLogs(ctx context.Context, accountID string, f LogFilter, limit int) (n int, more bool, err error) {
	if f, err = s.resolveSearch(ctx, accountID, f); err != nil {
		return 0, false, err
	}
	q, args := f.where(s, accountID, `SELECT 1 FROM webhook_event_logs l`, false)
	q = `SELECT COUNT(*) FROM (` + q + ` LIMIT ?) c`
	if err := s.QueryRow(ctx, q, s.eng.planned(append(args, limit+1))...).Scan(&n); err != nil {
		return 0, false, fmt.Errorf("count event logs: %w", err)
	}
	if n > limit {
		return limit, true, nil
	}
	return n, false, nil
}

// Log returns one event log with its attempts, oldest first.
func (s *Store) Log(ctx context.Context, accountID, id string) (EventLog, error) {
	l, err := scanLog(s.QueryRow(ctx, `SELECT `+logColumns+` FROM webhook_event_logs l
WHERE l.account_id = ? AND l.id = ?`, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return EventLog{}, ErrNotFound
	}
	if err != nil {
		return EventLog{}, fmt.Errorf("read event log: %w", err)
	}
	rows, err := s.Query(ctx, `SELECT number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers
FROM webhook_attempts WHERE log_id = ? ORDER BY number`, id)
	if err != nil {
		return EventLog{}, fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attempt
		var sent int64
		var recv, code sql.NullInt64
		var errText, headers sql.NullString
		if err := rows.Scan(&a.Number, &a.Trigger, &sent, &recv, &code, &a.DurationMS, &errText, &a.ResponseBody, &headers); err != nil {
			return EventLog{}, fmt.Errorf("read attempts: %w", err)
		}
		if headers.Valid {
			if a.Headers, err = decodeHeaders(&headers.String); err != nil {
				return EventLog{}, fmt.Errorf("read attempt %d of log %s: %w", a.Number, id, err)
			}
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
