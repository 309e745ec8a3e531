package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// A pull webhook's type and credentials; its queue is read through the
// queue package (internal/queue, pull.go, decision 0140).

// TypePull is the type of a webhook whose consumer reads its events.
const TypePull = "pull"

// TriggerPull is the trigger of an attempt made by reading a pull
// webhook's event and acknowledging it.
const TriggerPull = "pull"

// DefaultPullRetention is how long a pull webhook without a retry policy of
// its own keeps an event for its consumer: the longest a retry policy may
// span, so that a consumer down over a weekend loses nothing.
const DefaultPullRetention = 72 * time.Hour

// PullToken is a credential for one pull webhook. Its secret is never
// stored, only its SHA-256 (auth.HashToken).
type PullToken struct {
	ID        string
	AccountID string
	WebhookID string
	CreatedAt time.Time
}

// CreatePullToken adds a token whose hash is hash for the account's webhook
// webhookID (ErrNotFound if the account has no such webhook; the caller
// checks its type).
func (s *Store) CreatePullToken(ctx context.Context, accountID, webhookID, hash string) (PullToken, error) {
	t := PullToken{ID: attempt.NewID(), AccountID: accountID, WebhookID: webhookID}
	err := s.InTx(ctx, func(tx *Tx) error {
		now := tx.Now()
		t.CreatedAt = fromMS(ms(now))
		res, err := tx.Exec(ctx, `INSERT INTO webhook_pull_tokens (id, account_id, webhook_id, token_hash, created_at)
SELECT ?, account_id, id, ?, ? FROM webhooks WHERE account_id = ? AND id = ? AND type = '`+TypePull+`'`, t.ID, hash, ms(now), accountID, webhookID)
		if err != nil {
			return fmt.Errorf("insert pull token: %w", err)
		}
		return MustAffect(res)
	})
	return t, err
}

// PullTokenByHash returns the pull token whose hash is hash, with its
// account, or ErrNotFound.
func (s *Store) PullTokenByHash(ctx context.Context, hash string) (Account, PullToken, error) {
	var a Account
	var t PullToken
	var created int64
	fields, done := accountFields(&a)
	err := s.QueryRow(ctx, `SELECT a.id, a.name, a.notification_email, a.created_at, a.updated_at, a.max_webhooks, a.api_requests_per_second,
a.expiring_soon_lead_seconds, t.id, t.account_id, t.webhook_id, t.created_at
FROM webhook_pull_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = ?`, hash).
		Scan(append(fields, &t.ID, &t.AccountID, &t.WebhookID, &created)...)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, PullToken{}, ErrNotFound
	}
	if err != nil {
		return Account{}, PullToken{}, fmt.Errorf("read pull token: %w", err)
	}
	done()
	t.CreatedAt = fromMS(created)
	return a, t, nil
}
