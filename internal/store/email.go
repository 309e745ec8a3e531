package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// Email is a notification waiting in the outbox, or sent from it.
type Email struct {
	ID        string
	AccountID string
	To        string
	// Kind is what the email is about (EmailUnhealthy, EmailSuspended,
	// EmailReminder), and Facts what it tells: notify writes Subject and
	// Body from them as it sends, and MarkEmail keeps the words. An email
	// queued before herald kept facts has its words and no Facts.
	Kind      string
	Facts     *EmailFacts
	Subject   string
	Body      string
	CreatedAt time.Time
	SentAt    *time.Time
	Error     string
	Attempts  int // failed sends so far
}

// ClaimEmails leases up to limit unsent emails whose lease (if any) has
// ended, oldest first, and returns them. Several herald processes share one
// outbox: a leased email is passed over by the others, so each is sent once;
// one whose sender died is taken again when its lease ends.
func (s *Store) ClaimEmails(ctx context.Context, limit int, lease time.Duration) ([]Email, error) {
	now := s.now()
	rows, err := s.writer.QueryContext(ctx, s.q(`UPDATE emails SET lease_until = ?
WHERE id IN (SELECT id FROM emails WHERE sent_at IS NULL AND COALESCE(lease_until, 0) <= ?
             ORDER BY created_at LIMIT ?`+s.eng.skipLocked()+`)
RETURNING id, account_id, recipient, COALESCE(kind, ''), facts, subject, body, created_at, attempts`), ms(now.Add(lease)), ms(now), limit)
	if err != nil {
		return nil, s.full(fmt.Errorf("claim emails: %w", err))
	}
	defer rows.Close()
	var out []Email
	for rows.Next() {
		var e Email
		var c int64
		var facts sql.NullString
		if err := rows.Scan(&e.ID, &e.AccountID, &e.To, &e.Kind, &facts, &e.Subject, &e.Body, &c, &e.Attempts); err != nil {
			return nil, s.full(fmt.Errorf("claim emails: %w", err))
		}
		e.CreatedAt, e.Facts = fromMS(c), parseFacts(facts)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.full(fmt.Errorf("claim emails: %w", err))
	}
	slices.SortFunc(out, func(a, b Email) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// MarkEmail records that an email left the outbox: sent, or kept in the
// database because no SMTP server is configured (note says so), with the
// subject and body it was sent (or kept) with.
func (s *Store) MarkEmail(ctx context.Context, id, subject, body, note string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE emails SET sent_at = ?, error = ?, subject = ?, body = ? WHERE id = ? AND sent_at IS NULL`,
			ms(s.now()), nilIfEmpty(note), subject, body, id)
		return err
	})
}

// parseFacts reads emails.facts; nil when there are none (an email queued
// before herald kept them) or they do not parse.
func parseFacts(s sql.NullString) *EmailFacts {
	if !s.Valid {
		return nil
	}
	var f EmailFacts
	if jsonlimit.Unmarshal([]byte(s.String), &f) != nil {
		return nil
	}
	return &f
}

// FailEmail records a failed send and keeps the email in the outbox, not to
// be claimed again before retryAt. It returns how many sends have failed.
func (s *Store) FailEmail(ctx context.Context, id, reason string, retryAt time.Time) (int, error) {
	var attempts int
	err := s.InTx(ctx, func(tx *Tx) error {
		return tx.QueryRow(ctx, `UPDATE emails SET error = ?, lease_until = ?, attempts = attempts + 1 WHERE id = ? RETURNING attempts`,
			reason, ms(retryAt), id).Scan(&attempts)
	})
	if err != nil {
		return 0, fmt.Errorf("record failed email: %w", err)
	}
	return attempts, nil
}

// Emails lists an account's emails, newest first.
func (s *Store) Emails(ctx context.Context, accountID string) ([]Email, error) {
	rows, err := s.Query(ctx, `SELECT id, account_id, recipient, COALESCE(kind, ''), facts, subject, body, created_at, sent_at, COALESCE(error, '')
FROM emails WHERE account_id = ? ORDER BY created_at DESC, id DESC`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list emails: %w", err)
	}
	defer rows.Close()
	var out []Email
	for rows.Next() {
		var e Email
		var c int64
		var sent sql.NullInt64
		var facts sql.NullString
		if err := rows.Scan(&e.ID, &e.AccountID, &e.To, &e.Kind, &facts, &e.Subject, &e.Body, &c, &sent, &e.Error); err != nil {
			return nil, fmt.Errorf("list emails: %w", err)
		}
		e.CreatedAt, e.SentAt, e.Facts = fromMS(c), optTime(sent), parseFacts(facts)
		out = append(out, e)
	}
	return out, rows.Err()
}

// AccountEmails lists a page of an account's emails, newest first, with the
// cursor of the next page ("" on the last).
func (s *Store) AccountEmails(ctx context.Context, accountID string, p Page) ([]Email, string, error) {
	q, args := p.apply(`SELECT id, account_id, recipient, subject, body, created_at, sent_at, COALESCE(error, ''), attempts
FROM emails WHERE account_id = ?`, []any{accountID})
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list emails: %w", err)
	}
	defer rows.Close()
	var out []Email
	for rows.Next() {
		var e Email
		var c int64
		var sent sql.NullInt64
		if err := rows.Scan(&e.ID, &e.AccountID, &e.To, &e.Subject, &e.Body, &c, &sent, &e.Error, &e.Attempts); err != nil {
			return nil, "", fmt.Errorf("list emails: %w", err)
		}
		e.CreatedAt, e.SentAt = fromMS(c), optTime(sent)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list emails: %w", err)
	}
	out, next := cut(out, p.Limit, func(e Email) string { return e.ID })
	return out, next, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
