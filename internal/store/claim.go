package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/event"
)

// ClaimParams bounds one claim.
type ClaimParams struct {
	Now        time.Time
	LeaseUntil time.Time // after this, another claim may take the log again
	Lease      string    // identifies this claim; completion must present it
	Limit      int       // logs to take at most
	PerWebhook int       // logs of one webhook to take at most
	Exclude    []string  // webhooks to pass over (already at their in-flight cap here)
}

// Claim is a log leased for one attempt, with all the attempt needs.
type Claim struct {
	LogID        string
	AccountID    string
	WebhookID    string
	EventID      string
	Event        event.Kind
	Body         []byte
	URL          string
	Token        string
	Enabled      bool
	Health       Health
	AttemptCount int // automatic attempts made before this one
	Lease        string
}

// Claim moves due logs (queued or retrying whose time has come, and pending
// ones whose lease expired because their process died mid-attempt) to pending
// under p.Lease, and returns them.
func (s *Store) Claim(ctx context.Context, p ClaimParams) ([]Claim, error) {
	ids, err := s.eng.claim(ctx, s, p)
	if err != nil {
		return nil, fmt.Errorf("claim due logs: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.Query(ctx, `SELECT l.id, l.account_id, l.webhook_id, l.event_id, l.kind, l.attempt_count, l.lease,
e.body, w.url, w.token_sealed, w.enabled, w.status
FROM webhook_event_logs l JOIN events e ON e.id = l.event_id JOIN webhooks w ON w.id = l.webhook_id
WHERE l.id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load claimed logs: %w", err)
	}
	defer rows.Close()
	claims := make([]Claim, 0, len(ids))
	for rows.Next() {
		c, err := s.scanClaim(rows)
		if err != nil {
			return nil, fmt.Errorf("load claimed logs: %w", err)
		}
		if c.Lease == p.Lease {
			claims = append(claims, c)
		}
	}
	return claims, rows.Err()
}

func (s *Store) scanClaim(sc interface{ Scan(...any) error }) (Claim, error) {
	var c Claim
	var kind, health string
	var lease sql.NullString
	var sealed []byte
	if err := sc.Scan(&c.LogID, &c.AccountID, &c.WebhookID, &c.EventID, &kind, &c.AttemptCount, &lease,
		&c.Body, &c.URL, &sealed, &c.Enabled, &health); err != nil {
		return Claim{}, err
	}
	c.Event, c.Health, c.Lease = event.Kind(kind), Health(health), lease.String
	tok, err := s.openToken(c.WebhookID, sealed)
	if err != nil {
		return Claim{}, err
	}
	c.Token = tok
	return c, nil
}

// NextDue returns when the earliest waiting log becomes due, and false when
// none waits.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var due sql.NullInt64
	err := s.QueryRow(ctx, `SELECT MIN(due_at) FROM webhook_event_logs WHERE status IN ('queued', 'retrying', 'pending')`).Scan(&due)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	if !due.Valid {
		return time.Time{}, false, nil
	}
	return fromMS(due.Int64), true, nil
}

// ResendTarget loads a log for a manual resend. A log with an attempt in
// flight (pending) answers ErrConflict: its outcome is not known yet.
func (s *Store) ResendTarget(ctx context.Context, accountID, logID string) (Claim, error) {
	c, err := s.scanClaim(s.QueryRow(ctx, `SELECT l.id, l.account_id, l.webhook_id, l.event_id, l.kind, l.attempt_count, l.lease,
e.body, w.url, w.token_sealed, w.enabled, w.status
FROM webhook_event_logs l JOIN events e ON e.id = l.event_id JOIN webhooks w ON w.id = l.webhook_id
WHERE l.account_id = ? AND l.id = ?`, accountID, logID))
	if errors.Is(err, sql.ErrNoRows) {
		return Claim{}, ErrNotFound
	}
	if err != nil {
		return Claim{}, fmt.Errorf("load log for resend: %w", err)
	}
	var status string
	if err := s.QueryRow(ctx, `SELECT status FROM webhook_event_logs WHERE id = ?`, logID).Scan(&status); err != nil {
		return Claim{}, fmt.Errorf("load log for resend: %w", err)
	}
	if LogStatus(status) == Pending {
		return Claim{}, fmt.Errorf("an attempt is in flight: %w", ErrConflict)
	}
	c.Lease = ""
	return c, nil
}

// ReleaseLeases makes every pending log due now. Only a process that knows no
// other process holds leases may call it: herald does on SQLite at start,
// which one process at a time can open, so that attempts a crashed process
// left in flight are made again at once rather than when their leases expire.
func (s *Store) ReleaseLeases(ctx context.Context) (int64, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET due_at = ?, lease = NULL WHERE status = 'pending'`, ms(s.now()))
		if err != nil {
			return fmt.Errorf("release leases: %w", err)
		}
		n, err = res.RowsAffected()
		if n > 0 {
			tx.fired = true
		}
		return err
	})
	return n, err
}
