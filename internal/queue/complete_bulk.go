package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// bulkChunk is how many outcomes one bulk statement carries: about 14
// parameters each, far below either engine's limit on parameters.
const bulkChunk = 200

// recordAutomatic records automatic outcomes, each for a different log, with
// a few statements per chunk instead of several per outcome: the queue rows
// still held under their outcome's lease are deleted (or moved to the
// retry's time), the logs of those rows moved, in one statement on
// PostgreSQL (three on SQLite, whose one writer needs no atomic form), and
// the attempts of those added in one multi-row INSERT. It returns the ids of
// the logs it moved; an outcome whose lease was taken over is left out.
//
// Recording fast matters beyond throughput: an attempt sent but not yet
// recorded is sent again if its process dies, so the shorter the queue of
// outcomes waiting to be written, the fewer duplicates a crash makes.
func (tx txn) recordAutomatic(ctx context.Context, outs []attempt.Outcome, now time.Time) (map[string]bool, error) {
	applied := make(map[string]bool, len(outs))
	for len(outs) > 0 {
		n := min(len(outs), bulkChunk)
		chunk := outs[:n]
		outs = outs[n:]
		if err := tx.moveLogs(ctx, chunk, now, applied); err != nil {
			return nil, err
		}
		if err := tx.insertAttempts(ctx, chunk, applied); err != nil {
			return nil, err
		}
	}
	return applied, nil
}

// moveRow is one outcome as moveLogs reads it from its JSON argument.
type moveRow struct {
	LogID       string  `json:"l"`
	Lease       string  `json:"h"`
	Status      *string `json:"s"` // nil: not attempted (Release), the log keeps its status
	Due         *int64  `json:"d"` // nil: the log completes and leaves the queue
	Completes   int     `json:"c"`
	Undelivered int     `json:"u"` // 1: failed, or cancelled for a suspension (see undeliveredAt)
	Reason      *string `json:"r"`
	Attempted   int     `json:"a"`
	Code        *int    `json:"k"`
	Sent        *int64  `json:"t"`
	Received    *int64  `json:"v"`
}

// moveSource reads moveLogs' JSON argument as rows v.
const moveSource = `SELECT value ->> 'l' AS log_id, value ->> 'h' AS held, value ->> 's' AS new_status,
       CAST(value ->> 'd' AS BIGINT) AS new_due, CAST(value ->> 'c' AS INTEGER) AS completes,
       CAST(value ->> 'u' AS INTEGER) AS undelivered,
       value ->> 'r' AS reason, CAST(value ->> 'a' AS INTEGER) AS attempted,
       CAST(value ->> 'k' AS INTEGER) AS code, CAST(value ->> 't' AS BIGINT) AS sent,
       CAST(value ->> 'v' AS BIGINT) AS recv
FROM json_rows(?)`

// moveSet is a log's transition, over the log l and its outcome v. On
// PostgreSQL a delivery changes no column of an index of the log, and no
// column of a partial index's condition (undelivered_at stays NULL), so
// the update is HOT: it adds no index entry.
const moveSet = `status = COALESCE(v.new_status, l.status),
  due_at = v.new_due,
  lease = NULL,
  completed_at = CASE WHEN v.completes = 1 THEN CAST(? AS BIGINT) ELSE l.completed_at END,
  undelivered_at = CASE WHEN v.undelivered = 1 THEN CAST(? AS BIGINT) ELSE l.undelivered_at END,
  retry_reason = CASE WHEN v.new_status IS NULL THEN l.retry_reason ELSE v.reason END,
  status_code = CASE WHEN v.attempted = 1 THEN v.code ELSE l.status_code END,
  sent_at = CASE WHEN v.attempted = 1 THEN v.sent ELSE l.sent_at END,
  received_at = CASE WHEN v.attempted = 1 THEN v.recv ELSE l.received_at END,
  attempt_count = l.attempt_count + v.attempted,
  updated_at = CAST(? AS BIGINT)`

// moveLogs applies each outcome's transition to its queue row and its log,
// where the row is still held under the outcome's lease, and adds the moved
// ids to applied. The outcomes go in as one JSON argument, so each statement
// has one shape (see jsonargs.go).
func (tx txn) moveLogs(ctx context.Context, outs []attempt.Outcome, now time.Time, applied map[string]bool) error {
	rows := make([]moveRow, 0, len(outs))
	for _, o := range outs {
		r, err := moveRowOf(o, now)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	arg, err := store.JSONRows(rows)
	if err != nil {
		return fmt.Errorf("update %d logs: %w", len(outs), err)
	}
	var ids []string
	if tx.q.postgres {
		logIDs := make([]string, len(rows))
		for i, r := range rows {
			logIDs[i] = r.LogID
		}
		ids, err = tx.moveLogsPostgres(ctx, arg, logIDs, now)
	} else {
		ids, err = tx.moveLogsSQLite(ctx, rows, arg, now)
	}
	if err != nil {
		return fmt.Errorf("update %d logs: %w", len(outs), err)
	}
	for _, id := range ids {
		applied[id] = true
	}
	return nil
}

// moveRowOf is an automatic outcome's transition.
func moveRowOf(o attempt.Outcome, now time.Time) (moveRow, error) {
	r := moveRow{LogID: o.LogID, Lease: o.Lease, Completes: 1}
	status := ""
	switch o.Result {
	case attempt.Delivered:
		status = string(attempt.Succeeded)
	case attempt.Retry:
		due := store.MS(o.NextAt)
		status, r.Due, r.Completes = string(attempt.Retrying), &due, 0
	case attempt.Exhausted:
		status, r.Undelivered = string(attempt.Failed), 1
	case attempt.Cancel:
		status = string(attempt.Cancelled)
		if attempt.Undelivered(o.Reason) {
			r.Undelivered = 1
		}
	case attempt.Release:
		// No attempt was made: waiting again, the log as it was, due at
		// once or when its webhook's throttle has a slot.
		due := store.MS(releasedUntil(o, now))
		r.Due, r.Completes = &due, 0
	default:
		return r, fmt.Errorf("outcome of log %s: result %d is not an automatic one", o.LogID, o.Result)
	}
	if status != "" {
		r.Status = &status
	}
	if o.Reason != "" && o.Result != attempt.Delivered {
		reason := store.CleanText(o.Reason)
		r.Reason = &reason
	}
	if a := o.Attempt; a != nil {
		sent := store.MS(a.SentAt)
		r.Attempted, r.Sent, r.Code = 1, &sent, a.StatusCode
		if a.ReceivedAt != nil {
			recv := store.MS(*a.ReceivedAt)
			r.Received = &recv
		}
	}
	return r, nil
}

// moveLogsPostgres is one statement: the held queue rows deleted (or moved
// to the retry's time), and the logs of those rows moved, each only if its
// row was still held under the outcome's lease; a Release leaves its log
// unwritten. Both DELETE and UPDATE re-check the lease on a row another
// transaction changed meanwhile (EvalPlanQual), so a row taken over by
// another process's claim is left to that claim.
//
// The logs are also bounded by the least and the greatest of their ids:
// the history is partitioned by id (decision 0090), and a join of the
// batch's rows with the partitioned table looks to the planner like a
// probe of every partition per row, so that below some half a million logs
// it would rather read every partition whole. PostgreSQL prunes by the
// bounds when the statement starts, so its plan is kept (decision 0097):
// planned at each batch it cost 0.6 ms of the database's CPU, at 200
// events a second a batch of two or three deliveries. The bounds replaced
// an array of the ids, which was also a condition of the index scan of
// each log and so sorted again for each of them (a twentieth of
// PostgreSQL's time in fan-out). Ids of another shape than NewID's (a
// test's hand-written rows) keep the array, planned for its value.
func (tx txn) moveLogsPostgres(ctx context.Context, arg string, logIDs []string, now time.Time) ([]string, error) {
	bound, args := `l.id = ANY(CAST(? AS text[]))`, []any{arg, store.MS(now), store.MS(now), store.MS(now), logIDs}
	if lo, hi, ok := store.IDRange(logIDs); ok {
		bound = `l.id BETWEEN CAST(? AS text) AND CAST(? AS text)`
		args = tx.q.st.Cached([]any{arg, store.MS(now), store.MS(now), store.MS(now), lo, hi})
		// Left to choose, PostgreSQL would plan each batch anew: it
		// prices a kept plan with every partition in it, the pruning at
		// its start unseen. For the rest of this transaction only.
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
			return nil, err
		}
	}
	rs, err := tx.Query(ctx, `WITH v AS (`+moveSource+`),
`+queueAndLogMoves("", bound)+`
SELECT log_id FROM held`, args...)
	if err != nil {
		return nil, err
	}
	return store.ScanIDs(rs)
}

// queueAndLogMoves is the WITH clauses of moveLogsPostgres after v: the
// held queue rows deleted (done) or moved to the retry's time (again),
// their ids (held), and their logs moved (moved). guard, when not "", is a
// further condition on the queue rows; bound bounds the logs' ids.
func queueAndLogMoves(guard, bound string) string {
	if guard != "" {
		guard = " AND " + guard
	}
	return `done AS (
  DELETE FROM delivery_queue q USING v
  WHERE q.log_id = v.log_id AND q.lease = v.held AND v.new_due IS NULL AND NOT ` + holdsOnFailure + guard + `
  RETURNING q.log_id),
kept AS (
  UPDATE delivery_queue q SET due_at = ` + store.HeldDueSQL + `, lease = NULL, lease_until = NULL
  FROM v WHERE q.log_id = v.log_id AND q.lease = v.held AND v.new_due IS NULL AND ` + holdsOnFailure + guard + `
  RETURNING q.log_id),
again AS (
  UPDATE delivery_queue q SET due_at = v.new_due, lease = NULL, lease_until = NULL, attempts = q.attempts + v.attempted
  FROM v WHERE q.log_id = v.log_id AND q.lease = v.held AND v.new_due IS NOT NULL` + guard + `
  RETURNING q.log_id),
held AS (SELECT log_id FROM done UNION ALL SELECT log_id FROM kept UNION ALL SELECT log_id FROM again),
moved AS (
  UPDATE webhook_event_logs AS l SET ` + moveSet + `
  FROM v WHERE l.id = v.log_id AND ` + bound + ` AND l.id IN (SELECT log_id FROM held)
    AND (v.new_status IS NOT NULL OR v.attempted = 1)
  RETURNING l.id)`
}

// moveLogsSQLite moves the logs still held under their outcome's lease
// (SQLite's one writer keeps the check and the writes together), then
// deletes the completed ones' queue rows and moves the others'.
func (tx txn) moveLogsSQLite(ctx context.Context, rows []moveRow, arg string, now time.Time) ([]string, error) {
	rs, err := tx.Query(ctx, `UPDATE webhook_event_logs AS l SET `+moveSet+`
FROM (`+moveSource+`) AS v
WHERE l.id = v.log_id AND EXISTS (SELECT 1 FROM delivery_queue q WHERE q.log_id = v.log_id AND q.lease = v.held)
RETURNING id`, store.MS(now), store.MS(now), store.MS(now), arg)
	if err != nil {
		return nil, err
	}
	ids, err := store.ScanIDs(rs)
	if err != nil {
		return nil, err
	}
	moved := make(map[string]bool, len(ids))
	for _, id := range ids {
		moved[id] = true
	}
	var done, failed []string
	for _, r := range rows {
		if moved[r.LogID] && r.Due == nil {
			done = append(done, r.LogID)
			if r.Status != nil && *r.Status == string(attempt.Failed) {
				failed = append(failed, r.LogID)
			}
		}
	}
	if err := tx.holdFailedRows(ctx, failed); err != nil {
		return nil, err
	}
	if len(done) > 0 {
		// A row held just now is unleased, and stays.
		if _, err := tx.Exec(ctx, `DELETE FROM delivery_queue WHERE log_id IN (SELECT value FROM json_texts(?)) AND lease IS NOT NULL`, store.JSONTexts(done)); err != nil {
			return nil, err
		}
	}
	if len(done) < len(ids) {
		if _, err := tx.Exec(ctx, `UPDATE delivery_queue SET due_at = v.new_due, lease = NULL, lease_until = NULL, attempts = attempts + v.attempted
FROM (`+moveSource+`) AS v
WHERE delivery_queue.log_id = v.log_id AND delivery_queue.lease = v.held AND v.new_due IS NOT NULL`, arg); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// attemptRow is one attempt as insertAttempts reads it from its JSON argument.
type attemptRow struct {
	LogID    string  `json:"l"`
	Webhook  string  `json:"w"`
	Trigger  string  `json:"g"`
	Sent     int64   `json:"t"`
	Received *int64  `json:"v"`
	Code     *int    `json:"k"`
	Duration int64   `json:"d"`
	Error    *string `json:"e"`
	Body     string  `json:"b"`
	Headers  *string `json:"x"` // the encoded headers, a string, so the statement reads it as text
}

// insertAttempts adds the attempts of the outcomes whose logs moved, in one
// statement of one shape.
func (tx txn) insertAttempts(ctx context.Context, outs []attempt.Outcome, applied map[string]bool) error {
	arg, n, err := attemptRows(outs, func(o attempt.Outcome) bool { return applied[o.LogID] })
	if err != nil || n == 0 {
		return err
	}
	_, err = tx.Exec(ctx, insertAttemptsFrom+`
FROM (`+attemptSource+`) AS v`, tx.q.st.Cached([]any{arg})...)
	if err != nil {
		return fmt.Errorf("insert %d attempts: %w", n, err)
	}
	return nil
}

// insertAttemptsFrom inserts attempts read from rows v (attemptSource), each
// numbered after its log's last.
const insertAttemptsFrom = `INSERT INTO webhook_attempts (log_id, webhook_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers)
SELECT v.log_id, v.webhook_id, (SELECT COALESCE(MAX(number), 0) + 1 FROM webhook_attempts WHERE log_id = v.log_id),
       v.trigger, v.sent, v.recv, v.code, v.duration, v.error, v.body, v.headers`

// attemptSource reads attemptRows' JSON argument as rows.
const attemptSource = `SELECT value ->> 'l' AS log_id, value ->> 'w' AS webhook_id, value ->> 'g' AS trigger, CAST(value ->> 't' AS BIGINT) AS sent,
             CAST(value ->> 'v' AS BIGINT) AS recv, CAST(value ->> 'k' AS INTEGER) AS code,
             CAST(value ->> 'd' AS BIGINT) AS duration, value ->> 'e' AS error, value ->> 'b' AS body,
             value ->> 'x' AS headers
      FROM json_rows(?)`

// attemptRows is the JSON argument of attemptSource: the attempts of the
// outcomes that made one and that keep says to write; n counts them.
func attemptRows(outs []attempt.Outcome, keep func(attempt.Outcome) bool) (arg string, n int, err error) {
	rows := make([]attemptRow, 0, len(outs))
	for _, o := range outs {
		a := o.Attempt
		if a == nil || !keep(o) {
			continue
		}
		r := attemptRow{LogID: o.LogID, Webhook: o.WebhookID, Trigger: o.Trigger, Sent: store.MS(a.SentAt), Code: a.StatusCode,
			Duration: a.Duration.Milliseconds(), Body: cleanBody(a.ResponseBody)}
		if a.ReceivedAt != nil {
			recv := store.MS(*a.ReceivedAt)
			r.Received = &recv
		}
		if a.Error != "" {
			e := store.CleanText(a.Error)
			r.Error = &e
		}
		if r.Headers, err = store.EncodeHeaders(a.Headers); err != nil {
			return "", 0, fmt.Errorf("insert attempt of log %s: %w", o.LogID, err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return "", 0, nil
	}
	if arg, err = store.JSONRows(rows); err != nil {
		return "", 0, fmt.Errorf("insert %d attempts: %w", len(rows), err)
	}
	return arg, len(rows), nil
}
