package store

import (
	"context"
	"fmt"
	"time"
)

// bulkChunk is how many outcomes one bulk statement carries: about 14
// parameters each, far below either engine's limit on parameters.
const bulkChunk = 200

// recordAutomatic records automatic outcomes, each for a different log, with
// two statements per chunk instead of two per outcome: one UPDATE … FROM
// (a JSON row source) moves every log still held under its outcome's lease, and one
// multi-row INSERT adds the attempts of those it moved. It returns the ids of
// the logs it moved; an outcome whose lease was taken over is left out.
//
// Recording fast matters beyond throughput: an attempt sent but not yet
// recorded is sent again if its process dies, so the shorter the queue of
// outcomes waiting to be written, the fewer duplicates a crash makes.
func (tx *Tx) recordAutomatic(ctx context.Context, outs []Outcome, now time.Time) (map[string]bool, error) {
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
	LogID     string  `json:"l"`
	Lease     string  `json:"h"`
	Status    *string `json:"s"` // nil: queued or retrying, as the attempt count says
	Due       *int64  `json:"d"`
	Completes int     `json:"c"`
	Reason    *string `json:"r"`
	Attempted int     `json:"a"`
	Code      *int    `json:"k"`
	Sent      *int64  `json:"t"`
	Received  *int64  `json:"v"`
}

// moveLogs applies each outcome's transition to its log, where the log is
// still pending under the outcome's lease, and adds the moved ids to applied.
// The outcomes go in as one JSON argument, so the statement has one shape
// (see jsonargs.go).
func (tx *Tx) moveLogs(ctx context.Context, outs []Outcome, now time.Time, applied map[string]bool) error {
	rows := make([]moveRow, 0, len(outs))
	for _, o := range outs {
		r := moveRow{LogID: o.LogID, Lease: o.Lease, Completes: 1}
		status := ""
		switch o.Result {
		case Delivered:
			status = string(Succeeded)
		case Retry:
			due := ms(o.NextAt)
			status, r.Due, r.Completes = string(Retrying), &due, 0
		case Exhausted:
			status = string(Failed)
		case Cancel:
			status = string(Cancelled)
		case Release:
			// No attempt was made: waiting again, queued or retrying as
			// its attempt count says (status null: decided in the UPDATE),
			// due at once or when its webhook's throttle has a slot.
			due := ms(o.releasedUntil(now))
			r.Due, r.Completes = &due, 0
		default:
			return fmt.Errorf("outcome of log %s: result %d is not an automatic one", o.LogID, o.Result)
		}
		if status != "" {
			r.Status = &status
		}
		if o.Reason != "" && o.Result != Delivered {
			reason := cleanText(o.Reason)
			r.Reason = &reason
		}
		if a := o.Attempt; a != nil {
			sent := ms(a.SentAt)
			r.Attempted, r.Sent, r.Code = 1, &sent, a.StatusCode
			if a.ReceivedAt != nil {
				recv := ms(*a.ReceivedAt)
				r.Received = &recv
			}
		}
		rows = append(rows, r)
	}
	arg, err := jsonRows(rows)
	if err != nil {
		return fmt.Errorf("update %d logs: %w", len(outs), err)
	}
	rs, err := tx.Query(ctx, `UPDATE webhook_event_logs AS l SET
  status = COALESCE(v.new_status, CASE WHEN l.attempt_count = 0 THEN 'queued' ELSE 'retrying' END),
  due_at = v.new_due,
  lease = NULL,
  completed_at = CASE WHEN v.completes = 1 THEN ? ELSE l.completed_at END,
  retry_reason = CASE WHEN v.new_status IS NULL THEN l.retry_reason ELSE v.reason END,
  status_code = CASE WHEN v.attempted = 1 THEN v.code ELSE l.status_code END,
  sent_at = CASE WHEN v.attempted = 1 THEN v.sent ELSE l.sent_at END,
  received_at = CASE WHEN v.attempted = 1 THEN v.recv ELSE l.received_at END,
  attempt_count = l.attempt_count + v.attempted,
  updated_at = ?
FROM (SELECT value ->> 'l' AS log_id, value ->> 'h' AS held, value ->> 's' AS new_status,
             CAST(value ->> 'd' AS BIGINT) AS new_due, CAST(value ->> 'c' AS INTEGER) AS completes,
             value ->> 'r' AS reason, CAST(value ->> 'a' AS INTEGER) AS attempted,
             CAST(value ->> 'k' AS INTEGER) AS code, CAST(value ->> 't' AS BIGINT) AS sent,
             CAST(value ->> 'v' AS BIGINT) AS recv
      FROM json_rows(?)) AS v
WHERE l.id = v.log_id AND l.status = 'pending' AND l.lease = v.held
RETURNING id`, ms(now), ms(now), arg)
	if err != nil {
		return fmt.Errorf("update %d logs: %w", len(outs), err)
	}
	ids, err := scanIDs(rs)
	if err != nil {
		return fmt.Errorf("update %d logs: %w", len(outs), err)
	}
	for _, id := range ids {
		applied[id] = true
	}
	return nil
}

// attemptRow is one attempt as insertAttempts reads it from its JSON argument.
type attemptRow struct {
	LogID    string  `json:"l"`
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
func (tx *Tx) insertAttempts(ctx context.Context, outs []Outcome, applied map[string]bool) error {
	rows := make([]attemptRow, 0, len(outs))
	for _, o := range outs {
		a := o.Attempt
		if a == nil || !applied[o.LogID] {
			continue
		}
		r := attemptRow{LogID: o.LogID, Trigger: o.Trigger, Sent: ms(a.SentAt), Code: a.StatusCode,
			Duration: a.Duration.Milliseconds(), Body: cleanBody(a.ResponseBody)}
		if a.ReceivedAt != nil {
			recv := ms(*a.ReceivedAt)
			r.Received = &recv
		}
		if a.Error != "" {
			e := cleanText(a.Error)
			r.Error = &e
		}
		var err error
		if r.Headers, err = encodeHeaders(a.Headers); err != nil {
			return fmt.Errorf("insert attempt of log %s: %w", o.LogID, err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil
	}
	arg, err := jsonRows(rows)
	if err != nil {
		return fmt.Errorf("insert %d attempts: %w", len(rows), err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers)
SELECT v.log_id, (SELECT COALESCE(MAX(number), 0) + 1 FROM webhook_attempts WHERE log_id = v.log_id),
       v.trigger, v.sent, v.recv, v.code, v.duration, v.error, v.body, v.headers
FROM (SELECT value ->> 'l' AS log_id, value ->> 'g' AS trigger, CAST(value ->> 't' AS BIGINT) AS sent,
             CAST(value ->> 'v' AS BIGINT) AS recv, CAST(value ->> 'k' AS INTEGER) AS code,
             CAST(value ->> 'd' AS BIGINT) AS duration, value ->> 'e' AS error, value ->> 'b' AS body,
             value ->> 'x' AS headers
      FROM json_rows(?)) AS v`, arg)
	if err != nil {
		return fmt.Errorf("insert %d attempts: %w", len(rows), err)
	}
	return nil
}
