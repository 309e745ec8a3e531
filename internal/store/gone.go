package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// EmailDisabled is the email of a webhook herald disabled because its
// receiver answered 410 Gone.
const EmailDisabled = "disabled"

// disableGone disables the webhook of an applied outcome that asks for it
// (Outcome.Disable: its receiver answered 410 Gone), keeping why, and
// queues the owner's email; a webhook already disabled is left as it is,
// so that of several such outcomes one email goes. It reports whether it
// queued an email.
func (tx *Tx) disableGone(ctx context.Context, o Outcome, now time.Time) (bool, error) {
	var accountID, name, url string
	err := tx.QueryRow(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = ?, updated_at = ?
WHERE id = ? AND enabled RETURNING account_id, name, url`, o.Disable, ms(now), o.WebhookID).Scan(&accountID, &name, &url)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("disable webhook %s: %w", o.WebhookID, err)
	}
	facts := EmailFacts{WebhookID: o.WebhookID, Name: name, URL: url, Reason: o.Disable}
	if err := tx.queueEmail(ctx, accountID, EmailDisabled, facts, now); err != nil {
		return false, err
	}
	return true, nil
}
