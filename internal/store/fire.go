package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/tracing"
)

// Fire records an event in the transaction that made the change it reports:
// the event with its exact body, and one log for every webhook of the account
// that subscribes to kind. A log is queued when its webhook is enabled and not
// suspended, and cancelled otherwise, so that it shows and can be resent. It
// returns the event's id.
//
// The event keeps the trace context of the span active in ctx (the request
// that made the change), so that its delivery attempts, in whichever process
// and however much later, continue that trace.
func (tx *Tx) Fire(ctx context.Context, accountID string, kind event.Kind, data any) (string, error) {
	return tx.fire(ctx, accountID, kind, data, "")
}

// fire is Fire leaving out the webhook except (an operational event is never
// sent to the webhook it is about; "" leaves out none), and the webhooks
// whose filter the event fails (see filteredOut).
func (tx *Tx) fire(ctx context.Context, accountID string, kind event.Kind, data any, except string) (string, error) {
	now := tx.Now()
	id := NewID()
	body, err := event.Build(id, kind, data, now)
	if err != nil {
		return "", err
	}
	tx.kinds = append(tx.kinds, kind)
	traceParent := nullable(tracing.TraceParent(ctx))
	skip, err := tx.filteredOut(ctx, accountID, kind, body)
	if err != nil {
		return "", err
	}
	if except != "" {
		skip = append(skip, except)
	}
	if tx.s.eng.name() == "postgres" {
		return id, tx.firePostgres(ctx, accountID, id, kind, body, now, traceParent, skip)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at, trace_parent) VALUES (?, ?, ?, ?, ?, ?)`,
		id, accountID, string(kind), body, ms(now), traceParent); err != nil {
		return "", fmt.Errorf("insert event: %w", err)
	}
	// FOR KEY SHARE: a webhook deleted meanwhile is waited for and then
	// left out, rather than failing this change on its logs' foreign key.
	rows, err := tx.Query(ctx, `SELECT id, events, enabled, status FROM webhooks WHERE account_id = ? ORDER BY id`+tx.ForKeyShare(), accountID)
	if err != nil {
		return "", fmt.Errorf("match webhooks: %w", err)
	}
	type target struct {
		webhookID string
		status    LogStatus
		reason    string
	}
	var targets []target
	for rows.Next() {
		var wid, events, health string
		var enabled bool
		if err := rows.Scan(&wid, &events, &enabled, &health); err != nil {
			rows.Close()
			return "", fmt.Errorf("match webhooks: %w", err)
		}
		var kinds []event.Kind
		if err := jsonlimit.Unmarshal([]byte(events), &kinds); err != nil {
			rows.Close()
			return "", fmt.Errorf("webhook %s events: %w", wid, err)
		}
		if !subscribes(kinds, kind) || slices.Contains(skip, wid) {
			continue
		}
		switch {
		case !enabled:
			targets = append(targets, target{wid, Cancelled, ReasonDisabled})
		case Health(health) == Suspended:
			targets = append(targets, target{wid, Cancelled, ReasonSuspended})
		default:
			targets = append(targets, target{wid, Queued, ""})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("match webhooks: %w", err)
	}
	if len(targets) == 0 {
		return id, nil
	}
	// One statement of one shape for all the event's logs (see jsonargs.go).
	type logRow struct {
		ID        string  `json:"i"`
		WebhookID string  `json:"w"`
		Status    string  `json:"s"`
		Reason    *string `json:"r"`
	}
	logs := make([]logRow, 0, len(targets))
	for _, t := range targets {
		r := logRow{ID: NewID(), WebhookID: t.webhookID, Status: string(t.status)}
		if t.status == Queued {
			tx.fired = true
		} else {
			reason := t.reason
			r.Reason = &reason
		}
		logs = append(logs, r)
	}
	arg, err := jsonRows(logs)
	if err != nil {
		return "", fmt.Errorf("insert event logs: %w", err)
	}
	// A queued log is due now; a cancelled one is complete now, and
	// undelivered when its webhook was suspended (see undeliveredAt).
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs
(id, account_id, webhook_id, event_id, kind, status, due_at, retry_reason, created_at, updated_at, completed_at, undelivered_at)
SELECT value ->> 'i', CAST(? AS TEXT), value ->> 'w', CAST(? AS TEXT), CAST(? AS TEXT), value ->> 's',
       CASE WHEN value ->> 's' = 'queued' THEN CAST(? AS BIGINT) END, value ->> 'r', CAST(? AS BIGINT), CAST(? AS BIGINT),
       CASE WHEN value ->> 's' = 'queued' THEN NULL ELSE CAST(? AS BIGINT) END,
       CASE WHEN value ->> 'r' = CAST(? AS TEXT) THEN CAST(? AS BIGINT) END
FROM json_rows(?)`, accountID, id, string(kind), ms(now), ms(now), ms(now), ms(now), ReasonSuspended, ms(now), arg); err != nil {
		return "", fmt.Errorf("insert event logs: %w", err)
	}
	// Each queued log's place in the queue, due now.
	if _, err := tx.Exec(ctx, `INSERT INTO delivery_queue (log_id, webhook_id, due_at)
SELECT value ->> 'i', value ->> 'w', CAST(? AS BIGINT) FROM json_rows(?) WHERE value ->> 's' = 'queued'`, ms(now), arg); err != nil {
		return "", fmt.Errorf("queue event logs: %w", err)
	}
	return id, nil
}

// firePostgres is Fire on PostgreSQL in one statement, one round trip
// instead of four: the event, the subscribed webhooks (locked FOR KEY SHARE
// in id order, as the steps on SQLite lock them), their logs and the queued
// logs' rows in delivery_queue. A log's id
// is a UUIDv7 with the event's time and fresh random bits
// (gen_random_uuid's, its version digit made 7).
func (tx *Tx) firePostgres(ctx context.Context, accountID, id string, kind event.Kind, body []byte, now time.Time, traceParent *string, skip []string) error {
	var queued int
	err := tx.QueryRow(ctx, `WITH ev AS (
  INSERT INTO events (id, account_id, kind, body, triggered_at, trace_parent) VALUES (?, ?, ?, ?, ?, ?) RETURNING id
), hooks AS (
  SELECT id, enabled AND status <> 'Suspended' AS live, enabled FROM webhooks
  WHERE account_id = ? AND events::jsonb @> jsonb_build_array(CAST(? AS TEXT)) AND id NOT IN (SELECT value FROM json_texts(?))
  ORDER BY id FOR KEY SHARE
), logs AS (
  INSERT INTO webhook_event_logs
    (id, account_id, webhook_id, event_id, kind, status, due_at, retry_reason, created_at, updated_at, completed_at, undelivered_at)
  SELECT left(ev.id, 14) || '7' || substr(gen_random_uuid()::text, 16), CAST(? AS TEXT), h.id, ev.id, CAST(? AS TEXT),
         CASE WHEN h.live THEN 'queued' ELSE 'cancelled' END,
         CASE WHEN h.live THEN CAST(? AS BIGINT) END,
         CASE WHEN h.live THEN NULL WHEN NOT h.enabled THEN CAST(? AS TEXT) ELSE CAST(? AS TEXT) END,
         CAST(? AS BIGINT), CAST(? AS BIGINT),
         CASE WHEN h.live THEN NULL ELSE CAST(? AS BIGINT) END,
         CASE WHEN h.enabled AND NOT h.live THEN CAST(? AS BIGINT) END
  FROM hooks h CROSS JOIN ev
  RETURNING id, webhook_id, due_at, status
), queued AS (
  INSERT INTO delivery_queue (log_id, webhook_id, due_at)
  SELECT id, webhook_id, due_at FROM logs WHERE status = 'queued'
  RETURNING log_id
)
SELECT COUNT(*) FROM queued`,
		id, accountID, string(kind), body, ms(now), traceParent,
		accountID, string(kind), jsonTexts(skip),
		accountID, string(kind), ms(now), ReasonDisabled, ReasonSuspended, ms(now), ms(now), ms(now), ms(now)).Scan(&queued)
	if err != nil {
		return fmt.Errorf("insert event and logs: %w", err)
	}
	if queued > 0 {
		tx.fired = true
	}
	return nil
}

// nullable stores "" as NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func subscribes(kinds []event.Kind, k event.Kind) bool {
	for _, e := range kinds {
		if e == k {
			return true
		}
	}
	return false
}

// Reasons a log was cancelled when its event fired.
const (
	ReasonDisabled  = "webhook disabled when the event fired; no delivery attempted"
	ReasonSuspended = "webhook suspended when the event fired; no automatic delivery (resend to deliver)"
	// ReasonSuspendedBefore cancels a claimed log whose webhook was
	// suspended before its attempt. Both suspended reasons begin alike,
	// which is how a recovery tells them from a disabled webhook's.
	ReasonSuspendedBefore = "webhook suspended before this attempt; no automatic delivery (resend to deliver)"
)
