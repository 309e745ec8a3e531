package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// RateCount is one rate-limit key's requests in one window, as the
// processes on one database share them (see internal/ratelimit).
type RateCount struct {
	Key    string
	Window int64
	N      int64
}

// AddRateCounts adds each count to its key's shared total in its window.
func (s *Store) AddRateCounts(ctx context.Context, counts []RateCount) error {
	type row struct {
		K string `json:"k"`
		W int64  `json:"w"`
		N int64  `json:"n"`
	}
	rows := make([]row, len(counts))
	for i, c := range counts {
		rows[i] = row{c.Key, c.Window, c.N}
	}
	arg, err := JSONRows(rows)
	if err != nil {
		return fmt.Errorf("add rate counts: %w", err)
	}
	err = s.InTx(ctx, func(tx *Tx) error {
		// ORDER BY: concurrent upserts from several processes take the
		// rows' locks in one order, so they never deadlock.
		_, err := tx.Exec(ctx, `INSERT INTO rate_limit_counts (key, window_no, n)
SELECT value ->> 'k', CAST(value ->> 'w' AS BIGINT), CAST(value ->> 'n' AS BIGINT) FROM json_rows(?)
WHERE true ORDER BY 1, 2
ON CONFLICT (key, window_no) DO UPDATE SET n = rate_limit_counts.n + excluded.n`, arg)
		return err
	})
	if err != nil {
		return fmt.Errorf("add rate counts: %w", err)
	}
	return nil
}

// RateCounts returns the shared totals of keys in the windows from since on.
func (s *Store) RateCounts(ctx context.Context, keys []string, since int64) ([]RateCount, error) {
	rows, err := s.Query(ctx, `SELECT key, window_no, n FROM rate_limit_counts
WHERE key IN (SELECT value FROM json_texts(?)) AND window_no >= ?`, JSONTexts(keys), since)
	if err != nil {
		return nil, fmt.Errorf("read rate counts: %w", err)
	}
	defer rows.Close()
	var out []RateCount
	for rows.Next() {
		var c RateCount
		if err := rows.Scan(&c.Key, &c.Window, &c.N); err != nil {
			return nil, fmt.Errorf("read rate counts: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// PruneRateCounts forgets the windows before before.
func (s *Store) PruneRateCounts(ctx context.Context, before int64) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM rate_limit_counts WHERE window_no < ?`, before); err != nil {
			return fmt.Errorf("prune rate counts: %w", err)
		}
		return nil
	})
}

// SignInLimit is one count a sign-in attempt takes: at most Max failures of
// Key within the window.
type SignInLimit struct {
	Key string
	Max int
}

// TakeSignIn counts a sign-in attempt against every limit, in one
// transaction, and returns 0; or, when any limit has used its attempts in
// the current window, counts nothing and returns how long until that window
// ends. Counting before the password is checked is what makes the limits
// hold for parallel attempts, from one process or several.
func (s *Store) TakeSignIn(ctx context.Context, limits []SignInLimit, window time.Duration) (time.Duration, error) {
	var wait time.Duration
	err := s.InTx(ctx, func(tx *Tx) error {
		wait = 0
		now := tx.Now()
		for _, l := range limits {
			var start int64
			var n int
			err := tx.QueryRow(ctx, `SELECT window_start, n FROM signin_failures WHERE key = ?`+tx.ForUpdate(), l.Key).Scan(&start, &n)
			if err != nil && !isNoRows(err) {
				return err
			}
			if err == nil && now.Sub(fromMS(start)) < window {
				if n >= l.Max {
					wait = max(wait, fromMS(start).Add(window).Sub(now))
				}
			}
		}
		if wait > 0 {
			return nil
		}
		cutoff := ms(now.Add(-window))
		for _, l := range limits {
			// One upsert, so parallel first attempts (no row to lock yet)
			// still add up.
			if _, err := tx.Exec(ctx, `INSERT INTO signin_failures (key, window_start, n) VALUES (?, ?, 1)
ON CONFLICT (key) DO UPDATE SET
  n = CASE WHEN signin_failures.window_start <= ? THEN 1 ELSE signin_failures.n + 1 END,
  window_start = CASE WHEN signin_failures.window_start <= ? THEN excluded.window_start ELSE signin_failures.window_start END`,
				l.Key, ms(now), cutoff, cutoff); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count sign-in attempt: %w", err)
	}
	return wait, nil
}

// SignInSucceeded gives back what a successful sign-in's attempt took: the
// keys in forget start afresh, and giveBack's count loses one.
func (s *Store) SignInSucceeded(ctx context.Context, forget []string, giveBack string) error {
	err := s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM signin_failures WHERE key IN (SELECT value FROM json_texts(?))`, JSONTexts(forget)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE signin_failures SET n = n - 1 WHERE key = ? AND n > 0`, giveBack)
		return err
	})
	if err != nil {
		return fmt.Errorf("record sign-in: %w", err)
	}
	return nil
}

// PruneSignInFailures forgets windows that began before before.
func (s *Store) PruneSignInFailures(ctx context.Context, before time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM signin_failures WHERE window_start < ?`, ms(before))
		return err
	})
}
