package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// bulkChunk is how many outcomes one bulk statement carries: about 14
// parameters each, far below either engine's limit on parameters.
const bulkChunk = 200

// recordAutomatic records automatic outcomes, each for a different log, with
// two statements per chunk instead of two per outcome: one UPDATE … FROM
// (VALUES …) moves every log still held under its outcome's lease, and one
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

// moveLogs applies each outcome's transition to its log, where the log is
// still pending under the outcome's lease, and adds the moved ids to applied.
// VALUES columns are named column1, column2, … on both engines; every value
// is cast so that PostgreSQL knows its type.
func (tx *Tx) moveLogs(ctx context.Context, outs []Outcome, now time.Time, applied map[string]bool) error {
	var rows []string
	var args []any
	for _, o := range outs {
		status, due, completes := "", any(nil), 1
		switch o.Result {
		case Delivered:
			status = string(Succeeded)
		case Retry:
			status, due, completes = string(Retrying), ms(o.NextAt), 0
		case Exhausted:
			status = string(Failed)
		case Cancel:
			status = string(Cancelled)
		case Release:
			// No attempt was made: waiting again, queued or retrying as
			// its attempt count says (status NULL: decided in the UPDATE).
			status, due, completes = "", ms(now), 0
		default:
			return fmt.Errorf("outcome of log %s: result %d is not an automatic one", o.LogID, o.Result)
		}
		reason := nilIfEmpty(o.Reason)
		if o.Result == Delivered {
			reason = nil
		}
		attempted, code, sent, recv := 0, any(nil), any(nil), any(nil)
		if a := o.Attempt; a != nil {
			attempted, sent = 1, ms(a.SentAt)
			if a.StatusCode != nil {
				code = *a.StatusCode
			}
			if a.ReceivedAt != nil {
				recv = ms(*a.ReceivedAt)
			}
		}
		rows = append(rows, `(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS BIGINT))`)
		args = append(args, o.LogID, o.Lease, nilIfEmpty(status), due, completes, reason, attempted, code, sent, recv)
	}
	q := `UPDATE webhook_event_logs AS l SET
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
FROM (SELECT column1 AS log_id, column2 AS held, column3 AS new_status, column4 AS new_due, column5 AS completes,
             column6 AS reason, column7 AS attempted, column8 AS code, column9 AS sent, column10 AS recv
      FROM (VALUES ` + strings.Join(rows, ", ") + `) AS x) AS v
WHERE l.id = v.log_id AND l.status = 'pending' AND l.lease = v.held
RETURNING id`
	args = append([]any{ms(now), ms(now)}, args...)
	rs, err := tx.Query(ctx, q, args...)
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

// insertAttempts adds the attempts of the outcomes whose logs moved.
func (tx *Tx) insertAttempts(ctx context.Context, outs []Outcome, applied map[string]bool) error {
	var rows []string
	var args []any
	for _, o := range outs {
		a := o.Attempt
		if a == nil || !applied[o.LogID] {
			continue
		}
		var code, recv, errText any
		if a.StatusCode != nil {
			code = *a.StatusCode
		}
		if a.ReceivedAt != nil {
			recv = ms(*a.ReceivedAt)
		}
		if a.Error != "" {
			errText = a.Error
		}
		rows = append(rows, `(?, (SELECT COALESCE(MAX(number), 0) + 1 FROM webhook_attempts WHERE log_id = ?), ?, ?, ?, ?, ?, ?, ?)`)
		args = append(args, o.LogID, o.LogID, o.Trigger, ms(a.SentAt), recv, code, a.Duration.Milliseconds(), errText, cleanBody(a.ResponseBody))
	}
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body)
VALUES `+strings.Join(rows, ", "), args...)
	if err != nil {
		return fmt.Errorf("insert %d attempts: %w", len(rows), err)
	}
	return nil
}
