package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TokenRotation is a webhook's token rotation under way: from StartedAt
// deliveries carry a second signature, under the next token, and from EndsAt
// the next token is the token.
type TokenRotation struct {
	StartedAt time.Time
	EndsAt    time.Time
}

// WebhookTokens are the tokens that sign a webhook's deliveries now.
type WebhookTokens struct {
	// Current signs the webhook-signature header.
	Current string
	// Next, during a rotation, signs the webhook-signature-next header;
	// "" when no rotation is under way.
	Next string
}

// signingTokens opens a webhook's sealed tokens and says which signs what at
// now. A rotation whose end has come signs with its next token alone even
// before EndTokenRotations has erased the old one, so the switch happens at
// EndsAt on every process, whenever the sweep runs.
func (s *Store) signingTokens(webhookID string, sealed, nextSealed []byte, endsAt sql.NullInt64, now time.Time) (WebhookTokens, error) {
	if nextSealed != nil && endsAt.Valid && endsAt.Int64 <= ms(now) {
		sealed, nextSealed = nextSealed, nil
	}
	cur, err := s.openToken(webhookID, sealed)
	if err != nil {
		return WebhookTokens{}, err
	}
	t := WebhookTokens{Current: cur}
	if nextSealed != nil {
		if t.Next, err = s.openToken(webhookID, nextSealed); err != nil {
			return WebhookTokens{}, err
		}
	}
	return t, nil
}

// WebhookTokens returns the tokens that sign a webhook's deliveries now.
func (s *Store) WebhookTokens(ctx context.Context, accountID, id string) (WebhookTokens, error) {
	var sealed, next []byte
	var ends sql.NullInt64
	err := s.QueryRow(ctx, `SELECT token_sealed, next_token_sealed, rotation_ends_at FROM webhooks WHERE account_id = ? AND id = ?`,
		accountID, id).Scan(&sealed, &next, &ends)
	if errors.Is(err, sql.ErrNoRows) {
		return WebhookTokens{}, ErrNotFound
	}
	if err != nil {
		return WebhookTokens{}, fmt.Errorf("read webhook tokens: %w", err)
	}
	return s.signingTokens(id, sealed, next, ends, s.now())
}

// endRotationSet makes the next token the token and erases the old one.
const endRotationSet = `token_sealed = next_token_sealed, next_token_sealed = NULL, rotation_started_at = NULL, rotation_ends_at = NULL`

// RotateWebhookToken starts a rotation to token that ends after overlap. A
// rotation already under way answers ErrConflict and changes nothing: its
// next token may already be in the receiver, and a second would have to
// replace it. One whose end has come is ended first, in the same
// transaction, so the rotation starts from the token that signs now.
func (s *Store) RotateWebhookToken(ctx context.Context, accountID, id, token string, overlap time.Duration) (Webhook, error) {
	err := s.InTx(ctx, func(tx *Tx) error {
		now := ms(tx.Now())
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET `+endRotationSet+` WHERE account_id = ? AND id = ? AND rotation_ends_at <= ?`,
			accountID, id, now); err != nil {
			return fmt.Errorf("end past rotation: %w", err)
		}
		res, err := tx.Exec(ctx, `UPDATE webhooks SET next_token_sealed = ?, rotation_started_at = ?, rotation_ends_at = ?, updated_at = ?
WHERE account_id = ? AND id = ? AND next_token_sealed IS NULL`,
			s.box.Seal([]byte(token), []byte(id)), now, now+overlap.Milliseconds(), now, accountID, id)
		if err != nil {
			return fmt.Errorf("start rotation: %w", err)
		}
		return s.affectedOrWhy(ctx, tx, res, accountID, id, "a token rotation is already under way")
	})
	if err != nil {
		return Webhook{}, fmt.Errorf("rotate webhook token: %w", err)
	}
	return s.Webhook(ctx, accountID, id)
}

// FinishTokenRotation ends a webhook's rotation now: the next token signs
// webhook-signature from here on and the old token is erased. Without a
// rotation under way it answers ErrConflict; one whose end has come but
// which the sweep has not reached yet is simply ended.
func (s *Store) FinishTokenRotation(ctx context.Context, accountID, id string) (Webhook, error) {
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE webhooks SET `+endRotationSet+`, updated_at = ?
WHERE account_id = ? AND id = ? AND next_token_sealed IS NOT NULL`, ms(tx.Now()), accountID, id)
		if err != nil {
			return fmt.Errorf("end rotation: %w", err)
		}
		return s.affectedOrWhy(ctx, tx, res, accountID, id, "no token rotation is under way")
	})
	if err != nil {
		return Webhook{}, fmt.Errorf("finish webhook token rotation: %w", err)
	}
	return s.Webhook(ctx, accountID, id)
}

// affectedOrWhy tells a conditional UPDATE of one webhook that changed
// nothing apart: ErrNotFound when the account has no such webhook, else
// ErrConflict with why.
func (s *Store) affectedOrWhy(ctx context.Context, tx *Tx, res sql.Result, accountID, id, why string) error {
	n, err := res.RowsAffected()
	if err != nil || n > 0 {
		return err
	}
	var found int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id).Scan(&found); err != nil {
		return err
	}
	if found == 0 {
		return ErrNotFound
	}
	return fmt.Errorf("%s: %w", why, ErrConflict)
}

// EndTokenRotations ends every rotation whose end has come, erasing the old
// tokens, and returns how many it ended. Signing already switched at each
// end (signingTokens); this makes the erasure follow. Each webhook is
// updated in a transaction of its own, so the sweep holds one webhook row
// at a time and cannot deadlock with a batch that locks several in id order.
func (s *Store) EndTokenRotations(ctx context.Context) (int64, error) {
	now := ms(s.now())
	rows, err := s.Query(ctx, `SELECT id FROM webhooks WHERE rotation_ends_at <= ? ORDER BY id LIMIT 1000`, now)
	if err != nil {
		return 0, fmt.Errorf("end token rotations: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("end token rotations: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("end token rotations: %w", err)
	}
	var ended int64
	for _, id := range ids {
		err := s.InTx(ctx, func(tx *Tx) error {
			// Still ended: a finish or a new rotation may have come between.
			res, err := tx.Exec(ctx, `UPDATE webhooks SET `+endRotationSet+` WHERE id = ? AND rotation_ends_at <= ?`, id, now)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			ended += n
			return err
		})
		if err != nil {
			return ended, fmt.Errorf("end token rotation of webhook %s: %w", id, err)
		}
	}
	return ended, nil
}

// TestTarget reads what a test delivery sends to and signs with: the
// webhook's URL, headers, scheme and tokens, as a claim of no log (the
// dispatcher's vocabulary, package attempt).
func (s *Store) TestTarget(ctx context.Context, accountID, webhookID string) (Claim, error) {
	w, err := s.Webhook(ctx, accountID, webhookID)
	if err != nil {
		return Claim{}, err
	}
	tokens, err := s.WebhookTokens(ctx, accountID, webhookID)
	if err != nil {
		return Claim{}, err
	}
	return Claim{AccountID: w.AccountID, WebhookID: w.ID, URL: w.URL, Token: tokens.Current, NextToken: tokens.Next,
		Headers: w.Headers, SignatureScheme: w.SignatureScheme, RateLimit: w.RateLimit, Enabled: w.Enabled, Health: string(w.Status)}, nil
}
