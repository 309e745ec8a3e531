package store

import "context"

// TypeHTTP is the type of a webhook that POSTs to its url, the
// specification's; a pull webhook (TypePull, pull.go) has no url.
const TypeHTTP = "http"

// setType writes a new webhook's type, in its own statement after the
// insert, as the ordering's.
func setType(ctx context.Context, tx *Tx, w Webhook) error {
	if w.Type == TypeHTTP {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE webhooks SET type = ? WHERE id = ?`, w.Type, w.ID)
	return err
}
