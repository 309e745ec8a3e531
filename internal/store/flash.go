package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// FlashTTL is how long a flash waits for its page: a redirect is followed
// at once, so an hour-old flash was never going to be shown.
const FlashTTL = time.Hour

// Flash is one message for one page of one browser. The store keeps it as
// given: the portal seals Body and derives Holder from a secret the browser
// holds.
type Flash struct {
	Holder string
	Path   string
	Body   []byte
}

// AddFlash keeps f for its page, and removes flashes past FlashTTL. It is
// bookkeeping, never the change a form makes, so it does not mark an
// idempotency claim applied.
func (s *Store) AddFlash(ctx context.Context, f Flash) error {
	ctx = withoutClaim(ctx)
	err := s.InTx(ctx, func(tx *Tx) error {
		now := tx.Now()
		if _, err := tx.Exec(ctx, `DELETE FROM portal_flashes WHERE created_at < ?`, ms(now.Add(-FlashTTL))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO portal_flashes (id, holder, path, body, created_at) VALUES (?, ?, ?, ?, ?)`,
			NewID(), f.Holder, f.Path, f.Body, ms(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("add flash: %w", err)
	}
	return nil
}

// TakeFlashes removes and returns the holder's unexpired flashes for path,
// oldest first, or all of the holder's when path is "". Two requests taking
// at once get each flash once. The common case, no flash, costs one read and
// no write.
func (s *Store) TakeFlashes(ctx context.Context, holder, path string) ([]Flash, error) {
	ctx = withoutClaim(ctx)
	var n int
	if err := s.QueryRow(ctx, `SELECT COUNT(*) FROM portal_flashes WHERE holder = ? AND (path = ? OR ? = '')`,
		holder, path, path).Scan(&n); err != nil {
		return nil, fmt.Errorf("look for flashes: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	var out []Flash
	err := s.InTx(ctx, func(tx *Tx) error {
		out = nil
		rows, err := tx.Query(ctx, `DELETE FROM portal_flashes WHERE holder = ? AND (path = ? OR ? = '')
RETURNING path, body, created_at`, holder, path, path)
		if err != nil {
			return err
		}
		defer rows.Close()
		type row struct {
			f  Flash
			at int64
		}
		var got []row
		for rows.Next() {
			r := row{f: Flash{Holder: holder}}
			if err := rows.Scan(&r.f.Path, &r.f.Body, &r.at); err != nil {
				return err
			}
			got = append(got, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		oldest := ms(tx.Now().Add(-FlashTTL))
		// RETURNING promises no order.
		sort.SliceStable(got, func(i, j int) bool { return got[i].at < got[j].at })
		for _, r := range got {
			if r.at >= oldest {
				out = append(out, r.f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("take flashes: %w", err)
	}
	return out, nil
}
