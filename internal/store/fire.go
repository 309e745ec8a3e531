package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/event"
)

// Fire records an event in the transaction that made the change it reports:
// the event with its exact body, and one log for every webhook of the account
// that subscribes to kind. A log is queued when its webhook is enabled and not
// suspended, and cancelled otherwise, so that it shows and can be resent. It
// returns the event's id.
func (tx *Tx) Fire(ctx context.Context, accountID string, kind event.Kind, data any) (string, error) {
	now := tx.Now()
	id := NewID()
	body, err := event.Build(id, kind, data, now)
	if err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES (?, ?, ?, ?, ?)`,
		id, accountID, string(kind), body, ms(now)); err != nil {
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
		reason    any
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
		if err := json.Unmarshal([]byte(events), &kinds); err != nil {
			rows.Close()
			return "", fmt.Errorf("webhook %s events: %w", wid, err)
		}
		if !subscribes(kinds, kind) {
			continue
		}
		switch {
		case !enabled:
			targets = append(targets, target{wid, Cancelled, ReasonDisabled})
		case Health(health) == Suspended:
			targets = append(targets, target{wid, Cancelled, ReasonSuspended})
		default:
			targets = append(targets, target{wid, Queued, nil})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("match webhooks: %w", err)
	}
	// One statement for all the event's logs (chunks keep SQLite's limit
	// on bound values far away).
	for chunk := range slices.Chunk(targets, 200) {
		rows := make([]string, 0, len(chunk))
		args := make([]any, 0, 11*len(chunk))
		for _, t := range chunk {
			var due, completed any
			if t.status == Queued {
				due = ms(now)
				tx.fired = true
			} else {
				completed = ms(now)
			}
			rows = append(rows, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, NewID(), accountID, t.webhookID, id, string(kind), string(t.status), due, t.reason, ms(now), ms(now), completed)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs
(id, account_id, webhook_id, event_id, kind, status, due_at, retry_reason, created_at, updated_at, completed_at)
VALUES `+strings.Join(rows, ", "), args...); err != nil {
			return "", fmt.Errorf("insert event logs: %w", err)
		}
	}
	return id, nil
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
)
