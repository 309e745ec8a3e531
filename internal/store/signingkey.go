package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/webhook"
)

// SigningKey is the public half of an ed25519 webhook's key pair (its
// token is the private half, sealed like any token): what a receiver
// verifies its "v1a," signatures with.
type SigningKey struct {
	WebhookID string
	// PublicKey signs now, in the Standard Webhooks form ("whpk_").
	PublicKey string
	// NextPublicKey, during a rotation, signs beside it and replaces it
	// at the rotation's end; "" when none is under way.
	NextPublicKey string
}

// SigningKeys returns the signing keys of every ed25519 webhook of an
// account, by webhook id; none (not an error) for an account that has no
// such webhook or does not exist.
func (s *Store) SigningKeys(ctx context.Context, accountID string) ([]SigningKey, error) {
	rows, err := s.Query(ctx, `SELECT id, token_sealed, next_token_sealed, rotation_ends_at FROM webhooks
WHERE account_id = ? AND signature_scheme = ? ORDER BY id`, accountID, SchemeStandardEd25519)
	if err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	defer rows.Close()
	now := s.now()
	var keys []SigningKey
	for rows.Next() {
		var id string
		var sealed, next []byte
		var ends sql.NullInt64
		if err := rows.Scan(&id, &sealed, &next, &ends); err != nil {
			return nil, fmt.Errorf("read signing keys: %w", err)
		}
		tokens, err := s.signingTokens(id, sealed, next, ends, now)
		if err != nil {
			return nil, err
		}
		k, err := signingKey(id, tokens)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	return keys, nil
}

// WebhookSigningKey returns one ed25519 webhook's signing key.
func (s *Store) WebhookSigningKey(ctx context.Context, accountID, id string) (SigningKey, error) {
	tokens, err := s.WebhookTokens(ctx, accountID, id)
	if err != nil {
		return SigningKey{}, err
	}
	return signingKey(id, tokens)
}

func signingKey(id string, t WebhookTokens) (SigningKey, error) {
	k := SigningKey{WebhookID: id}
	var ok bool
	if k.PublicKey, ok = webhook.PublicKeyOf(t.Current); !ok {
		return SigningKey{}, fmt.Errorf("webhook %s: its token is no ed25519 private key", id)
	}
	if t.Next != "" {
		if k.NextPublicKey, ok = webhook.PublicKeyOf(t.Next); !ok {
			return SigningKey{}, fmt.Errorf("webhook %s: its next token is no ed25519 private key", id)
		}
	}
	return k, nil
}

// addSigningKeys sets the signing key of each ed25519 webhook in list, an
// account's, with one query for them all.
func (s *Store) addSigningKeys(ctx context.Context, accountID string, list []Webhook) error {
	some := false
	for _, w := range list {
		some = some || w.SignatureScheme == SchemeStandardEd25519
	}
	if !some {
		return nil
	}
	keys, err := s.SigningKeys(ctx, accountID)
	if err != nil {
		return err
	}
	byID := make(map[string]SigningKey, len(keys))
	for _, k := range keys {
		byID[k.WebhookID] = k
	}
	for i, w := range list {
		if k, ok := byID[w.ID]; ok && w.SignatureScheme == SchemeStandardEd25519 {
			list[i].SigningKey = &k
		}
	}
	return nil
}
