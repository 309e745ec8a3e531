package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session is an account owner signed in to the portal. The store keeps only
// the SHA-256 of the session id the browser holds, so a copy of the database
// signs nobody in.
type Session struct {
	IDHash     string
	AccountID  string
	OwnerID    string
	OwnerEmail string
	OwnerRole  Role // what the signed-in user may do, read with the session
	// AccountName is the account's name, read with the session, for the
	// portal's header.
	AccountName string
	CSRFToken   string
	CreatedAt   time.Time
	SeenAt      time.Time
	ExpiresAt   time.Time
}

// CreateSession stores a new session, and removes sessions that have expired.
func (s *Store) CreateSession(ctx context.Context, n Session) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM portal_sessions WHERE expires_at <= ?`, ms(s.now())); err != nil {
			return fmt.Errorf("remove expired sessions: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO portal_sessions (id_hash, account_id, owner_id, csrf_token, created_at, seen_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, n.IDHash, n.AccountID, n.OwnerID, n.CSRFToken, ms(n.CreatedAt), ms(n.SeenAt), ms(n.ExpiresAt))
		if err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		return nil
	})
}

// SessionByHash returns the unexpired session whose id hashes to idHash, or
// ErrNotFound.
func (s *Store) SessionByHash(ctx context.Context, idHash string) (Session, error) {
	var x Session
	var c, seen, exp int64
	err := s.QueryRow(ctx, `SELECT p.id_hash, p.account_id, p.owner_id, o.email, o.role, p.csrf_token, p.created_at, p.seen_at, p.expires_at,
COALESCE((SELECT a.name FROM accounts a WHERE a.id = p.account_id), '')
FROM portal_sessions p JOIN owners o ON o.id = p.owner_id WHERE p.id_hash = ? AND p.expires_at > ?`, idHash, ms(s.now())).
		Scan(&x.IDHash, &x.AccountID, &x.OwnerID, &x.OwnerEmail, &x.OwnerRole, &x.CSRFToken, &c, &seen, &exp, &x.AccountName)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	x.CreatedAt, x.SeenAt, x.ExpiresAt = fromMS(c), fromMS(seen), fromMS(exp)
	return x, nil
}

// TouchSession records that a session was used and moves its expiry.
func (s *Store) TouchSession(ctx context.Context, idHash string, seen, expires time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE portal_sessions SET seen_at = ?, expires_at = ? WHERE id_hash = ?`, ms(seen), ms(expires), idHash)
		if err != nil {
			return fmt.Errorf("touch session: %w", err)
		}
		return MustAffect(res)
	})
}

// DeleteSession ends a session; ending one that is gone is not an error.
func (s *Store) DeleteSession(ctx context.Context, idHash string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM portal_sessions WHERE id_hash = ?`, idHash); err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
		return nil
	})
}
