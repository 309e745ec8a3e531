package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Accounts lists every account, newest first: the operator's view, the one
// query in the store not scoped to an account.
func (s *Store) Accounts(ctx context.Context, p Page) (list []Account, next string, err error) {
	// apply adds its keyset condition with AND.
	q, args := p.apply(`SELECT `+accountColumns+` FROM accounts WHERE 1 = 1`, nil)
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list accounts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Account
		fields, done := accountFields(&a)
		if err := rows.Scan(fields...); err != nil {
			return nil, "", fmt.Errorf("list accounts: %w", err)
		}
		done()
		list = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list accounts: %w", err)
	}
	list, next = cut(list, p.Limit, func(a Account) string { return a.ID })
	return list, next, nil
}

// DeleteAccount removes an account and everything in it: webhooks with
// their logs and attempts, events, queued emails, licensing resources,
// users, sessions, tokens and links. A missing account is ErrNotFound.
//
// Its webhooks are locked in id order before anything is deleted, the order
// the dispatcher's recorder locks them in, so the two cannot deadlock on
// PostgreSQL. Logs a dispatcher claimed before this commits are not
// attempted after it: the dispatcher checks, before an attempt that did not
// start at once, that the log is still held under its lease
// (queue.StillHeld).
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		var found string
		if err := tx.QueryRow(ctx, `SELECT id FROM accounts WHERE id = ?`+tx.ForUpdate(), id).Scan(&found); err != nil {
			return notFound(err, "delete account")
		}
		rows, err := tx.Query(ctx, `SELECT id FROM webhooks WHERE account_id = ? ORDER BY id`+tx.ForUpdate(), id)
		if err != nil {
			return fmt.Errorf("delete account: lock webhooks: %w", err)
		}
		for rows.Next() { // the rows are locked as they are read; their ids are not needed
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("delete account: lock webhooks: %w", err)
		}
		// Events and emails carry account_id without a foreign key (events
		// are written on the hottest path), so they go explicitly, events
		// after the logs that reference them.
		// Attempts have no foreign key on PostgreSQL's partitioned history
		// (decision 0090): they go before the logs the webhooks take.
		for _, q := range []string{
			`DELETE FROM webhook_attempts WHERE log_id IN (SELECT id FROM webhook_event_logs WHERE account_id = ?)`,
			`DELETE FROM webhooks WHERE account_id = ?`,
			`DELETE FROM events WHERE account_id = ?`,
			`DELETE FROM emails WHERE account_id = ?`,
			`DELETE FROM accounts WHERE id = ?`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return fmt.Errorf("delete account: %s: %w", q, err)
			}
		}
		return nil
	})
}

// notFound turns sql.ErrNoRows into ErrNotFound and wraps anything else
// with what was being done.
func notFound(err error, doing string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return fmt.Errorf("%s: %w", doing, err)
}
