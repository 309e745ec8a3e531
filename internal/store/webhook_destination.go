package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// TypeHTTP is the type of a webhook that POSTs to its url, the
// specification's; any other type publishes to a broker with its config
// (internal/destination, decision 0133).
const TypeHTTP = "http"

// A destination's config is sealed as one JSON object under a context of
// its own, as the custom headers are, so that no other sealed value of the
// webhook opens as it.
func configContext(webhookID string) []byte { return []byte(webhookID + "\x00config") }

// sealConfig seals a destination's config; none is stored as NULL.
func (s *Store) sealConfig(webhookID string, c json.RawMessage) []byte {
	if len(c) == 0 {
		return nil
	}
	return s.box.Seal(c, configContext(webhookID))
}

// openConfig opens what sealConfig sealed; NULL is none.
func (s *Store) openConfig(webhookID string, sealed []byte) (json.RawMessage, error) {
	if sealed == nil {
		return nil, nil
	}
	b, err := s.box.Open(sealed, configContext(webhookID))
	if err != nil {
		return nil, fmt.Errorf("webhook %s config: %w", webhookID, err)
	}
	return json.RawMessage(b), nil
}

// setDestination writes a new webhook's type and config, in its own
// statement after the insert, as the ordering's.
func (s *Store) setDestination(ctx context.Context, tx *Tx, w Webhook) error {
	if w.Type == TypeHTTP {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE webhooks SET type = ?, config_sealed = ? WHERE id = ?`, w.Type, s.sealConfig(w.ID, w.Config), w.ID)
	return err
}

// patchConfig replaces a destination's config when p sets one.
func (s *Store) patchConfig(ctx context.Context, tx *Tx, accountID, id string, p WebhookPatch) error {
	if p.Config == nil {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE webhooks SET config_sealed = ? WHERE account_id = ? AND id = ?`, s.sealConfig(id, *p.Config), accountID, id)
	return err
}

// WebhookDestination reads what a destination webhook's attempt publishes
// with: its type and its config, opened. It is read at each attempt (one
// look-up by key), so a change of config applies to the next one.
func (s *Store) WebhookDestination(ctx context.Context, webhookID string) (typ string, config json.RawMessage, err error) {
	var sealed []byte
	err = s.QueryRow(ctx, `SELECT type, config_sealed FROM webhooks WHERE id = ?`, webhookID).Scan(&typ, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, ErrNotFound
	}
	if err != nil {
		return "", nil, fmt.Errorf("read webhook destination: %w", err)
	}
	config, err = s.openConfig(webhookID, sealed)
	return typ, config, err
}
