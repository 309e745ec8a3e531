package store

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/filter"
	"github.com/heraldhq/herald/internal/jsonlimit"
)

// filteredOut returns the account's webhooks that subscribe to kind but
// whose filter the event's body fails: Fire makes no log for them, as for a
// webhook that does not subscribe. Filters are evaluated here, in Go,
// before the logs are inserted; an account without filters pays one probe
// of the webhooks_filtered index.
//
// A stored filter that no longer parses (none should: each is parsed
// before it is saved) leaves its webhook in, so that a bug can cost a
// receiver an unwanted delivery but never a lost one.
func (tx *Tx) filteredOut(ctx context.Context, accountID string, kind event.Kind, body []byte) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT id, events, filter FROM webhooks WHERE account_id = ? AND filter IS NOT NULL`, accountID)
	if err != nil {
		return nil, fmt.Errorf("read webhook filters: %w", err)
	}
	defer rows.Close()
	var out []string
	var payload any
	decoded := false
	for rows.Next() {
		var id, events, text string
		if err := rows.Scan(&id, &events, &text); err != nil {
			return nil, fmt.Errorf("read webhook filters: %w", err)
		}
		var kinds []event.Kind
		if err := jsonlimit.Unmarshal([]byte(events), &kinds); err != nil {
			return nil, fmt.Errorf("webhook %s events: %w", id, err)
		}
		if !subscribes(kinds, kind) {
			continue
		}
		f, err := filter.Parse([]byte(text))
		if err != nil {
			continue
		}
		if !decoded {
			if payload, err = filter.Decode(body); err != nil {
				return nil, fmt.Errorf("read event body for filters: %w", err)
			}
			decoded = true
		}
		if !f.MatchValue(payload) {
			out = append(out, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook filters: %w", err)
	}
	return out, nil
}
