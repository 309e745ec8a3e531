package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Idempotency keys: a client sends the same key with each try of one API
// POST, and herald makes its change once and answers every try alike.
//
// The key is claimed in a short transaction of its own before the request
// runs. The request's change then marks the key applied in the change's own
// transaction (InTx does it for a context carrying the claim), and the
// answer is recorded after it. So a change is committed only by the holder
// of the key, and never without the key knowing; what a crash can lose is
// only the answer of a change that was made (see KeyAnswerLost).

// IdempotencyTTL is how long a key answers: a try after it runs as new.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyLock is how long a first request holds its key. A second try
// meanwhile is refused as in progress; after it, a key whose change was
// never made may be claimed again, so a request cut by a crash can be
// retried. It outlasts the slowest API call (a Test waits up to 5 s for a
// slot and 15 s for the receiver).
const IdempotencyLock = time.Minute

// ErrIdempotencyKeyLost answers a change whose request no longer holds its
// key (its lock ran out and another try claimed it); the change is rolled
// back, since the other try makes it.
var ErrIdempotencyKeyLost = errors.New("idempotency key claimed by another request")

// IdempotentRequest is what a key is claimed for.
type IdempotentRequest struct {
	AccountID, Key string
	Method, Path   string
	BodyHash       [32]byte // SHA-256 of the body
}

// IdempotentAnswer is a recorded answer.
type IdempotentAnswer struct {
	Status                int
	ContentType, Location string
	Body                  []byte
}

// ClaimOutcome is what ClaimIdempotencyKey found.
type ClaimOutcome int

const (
	// KeyClaimed: run the request; the claim holds the key.
	KeyClaimed ClaimOutcome = iota
	// KeyDone: the key's answer is recorded; answer it again.
	KeyDone
	// KeyInUse: the first request with the key is still running.
	KeyInUse
	// KeyMismatch: the key was used for another method, path or body.
	KeyMismatch
	// KeyAnswerLost: the first request's change was made, but the process
	// ended before its answer was recorded. The change is not made again.
	KeyAnswerLost
)

// IdempotencyClaim is a claim on a key.
type IdempotencyClaim struct {
	Outcome ClaimOutcome
	Answer  IdempotentAnswer // KeyDone's
	// Until is when a KeyInUse lock runs out.
	Until time.Time

	accountID, key, lockID string
}

type claimCtxKey struct{}

// WithIdempotencyClaim returns ctx carrying a KeyClaimed claim: every write
// transaction run under it (InTx) marks the key applied before committing,
// and fails with ErrIdempotencyKeyLost if the claim no longer holds it.
func WithIdempotencyClaim(ctx context.Context, c IdempotencyClaim) context.Context {
	return context.WithValue(ctx, claimCtxKey{}, &c)
}

func claimFrom(ctx context.Context) *IdempotencyClaim {
	c, _ := ctx.Value(claimCtxKey{}).(*IdempotencyClaim)
	return c
}

// withoutClaim keeps the store's own bookkeeping of a key from marking it.
func withoutClaim(ctx context.Context) context.Context {
	if claimFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, claimCtxKey{}, (*IdempotencyClaim)(nil))
}

// markApplied is run by InTx, last in the transaction of a change made
// under a claim. The UPDATE locks the key's row, so on PostgreSQL a
// concurrent claim of a key whose lock ran out waits for this commit and
// then sees the change applied.
func (tx *Tx) markApplied(ctx context.Context, c *IdempotencyClaim) error {
	res, err := tx.Exec(ctx, `UPDATE idempotency_keys SET applied = 1
WHERE account_id = ? AND key = ? AND lock_id = ?`, c.accountID, c.key, c.lockID)
	if err != nil {
		return fmt.Errorf("mark idempotency key applied: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mark idempotency key applied: %w", err)
	} else if n == 0 {
		return ErrIdempotencyKeyLost
	}
	return nil
}

// ClaimIdempotencyKey claims r's key for its account, or says why not. A
// key older than IdempotencyTTL is claimed as if new.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, r IdempotentRequest) (IdempotencyClaim, error) {
	ctx = withoutClaim(ctx)
	c := IdempotencyClaim{accountID: r.AccountID, key: r.Key, lockID: newLockID()}
	hash := hex.EncodeToString(r.BodyHash[:])
	err := s.InTx(ctx, func(tx *Tx) error {
		now := tx.Now()
		until := ms(now.Add(IdempotencyLock))
		// The row is gone between the two statements only when retention
		// removed it as expired; then the insert succeeds on the next turn.
		for range 3 {
			res, err := tx.Exec(ctx, `INSERT INTO idempotency_keys
  (account_id, key, method, path, request_hash, state, applied, lock_id, locked_until, created_at)
VALUES (?, ?, ?, ?, ?, 'running', 0, ?, ?, ?)
ON CONFLICT (account_id, key) DO UPDATE SET method = excluded.method, path = excluded.path,
  request_hash = excluded.request_hash, state = 'running', applied = 0, lock_id = excluded.lock_id,
  locked_until = excluded.locked_until, status = NULL, content_type = NULL, location = NULL, body = NULL,
  created_at = excluded.created_at
WHERE idempotency_keys.created_at <= ?`,
				r.AccountID, r.Key, r.Method, r.Path, hash, c.lockID, until, ms(now), ms(now.Add(-IdempotencyTTL)))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				c.Outcome = KeyClaimed
				return nil
			}
			found, err := c.decide(ctx, tx, r, hash, now)
			if err != nil || found {
				return err
			}
		}
		return errors.New("the key's row kept disappearing")
	})
	if err != nil {
		return IdempotencyClaim{}, fmt.Errorf("claim idempotency key: %w", err)
	}
	return c, nil
}

// decide reads the key's live row and sets c's outcome; found is false when
// the row is gone.
func (c *IdempotencyClaim) decide(ctx context.Context, tx *Tx, r IdempotentRequest, hash string, now time.Time) (found bool, err error) {
	var (
		method, path, reqHash, state string
		applied                      int
		lockID, contentType, loc     sql.NullString
		lockedUntil, status          sql.NullInt64
		body                         []byte
		sealed                       int
	)
	err = tx.QueryRow(ctx, `SELECT method, path, request_hash, state, applied, lock_id, locked_until,
  status, content_type, location, body, sealed
FROM idempotency_keys WHERE account_id = ? AND key = ?`+tx.ForUpdate(), r.AccountID, r.Key).
		Scan(&method, &path, &reqHash, &state, &applied, &lockID, &lockedUntil, &status, &contentType, &loc, &body, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case method != r.Method || path != r.Path || reqHash != hash:
		c.Outcome = KeyMismatch
	case state == "done":
		if sealed != 0 && body != nil {
			if body, err = tx.s.box.Open(body, answerContext(r.AccountID, r.Key)); err != nil {
				return false, fmt.Errorf("open the kept answer of idempotency key %q: %w", r.Key, err)
			}
		}
		c.Outcome = KeyDone
		c.Answer = IdempotentAnswer{Status: int(status.Int64), ContentType: contentType.String, Location: loc.String, Body: body}
	case lockedUntil.Valid && lockedUntil.Int64 > ms(now):
		c.Outcome, c.Until = KeyInUse, fromMS(lockedUntil.Int64)
	case applied != 0:
		c.Outcome = KeyAnswerLost
	default:
		// The first try ended without a change (its process died); this
		// one takes the key over, and the first, should it still be
		// running, can no longer commit under it (markApplied).
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET lock_id = ?, locked_until = ?
WHERE account_id = ? AND key = ?`, c.lockID, ms(now.Add(IdempotencyLock)), r.AccountID, r.Key)
		c.Outcome = KeyClaimed
	}
	return true, err
}

// RecordIdempotentAnswer stores the answer of a claimed key's request, to
// be answered again to every later try with the key. It does nothing when
// the claim no longer holds the key.
func (s *Store) RecordIdempotentAnswer(ctx context.Context, c IdempotencyClaim, a IdempotentAnswer) error {
	err := s.InTx(withoutClaim(ctx), func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', status = ?, content_type = ?,
  location = ?, body = ?, sealed = 1, lock_id = NULL, locked_until = NULL
WHERE account_id = ? AND key = ? AND lock_id = ?`,
			a.Status, a.ContentType, a.Location, s.sealAnswer(c.accountID, c.key, a.Body), c.accountID, c.key, c.lockID)
		return err
	})
	if err != nil {
		return fmt.Errorf("record idempotent answer: %w", err)
	}
	return nil
}

// ReleaseIdempotencyKey gives up a claimed key whose request has no answer
// to keep (it failed with a 5xx, or was refused for its rate): a key whose
// change was not made is removed, so the next try runs afresh; one whose
// change was made stays, its lock ended, answering KeyAnswerLost.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, c IdempotencyClaim) error {
	err := s.InTx(withoutClaim(ctx), func(tx *Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM idempotency_keys
WHERE account_id = ? AND key = ? AND lock_id = ? AND applied = 0`, c.accountID, c.key, c.lockID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET lock_id = NULL, locked_until = NULL
WHERE account_id = ? AND key = ? AND lock_id = ?`, c.accountID, c.key, c.lockID)
		return err
	})
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes up to limit keys created before before,
// oldest first, and returns how many went.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := s.InTx(withoutClaim(ctx), func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE (account_id, key) IN (
  SELECT account_id, key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?`+s.eng.skipLocked()+`)`,
			ms(before), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return int(n), nil
}

func newLockID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// MarkIdempotencyApplied records, under the claim ctx carries, that the
// request made its change even though the change wrote nothing of its own
// (a portal Test sends and stores nothing). Without a claim it does nothing.
func (s *Store) MarkIdempotencyApplied(ctx context.Context) error {
	if claimFrom(ctx) == nil {
		return nil
	}
	if err := s.InTx(ctx, func(*Tx) error { return nil }); err != nil {
		return fmt.Errorf("mark idempotency key applied: %w", err)
	}
	return nil
}

// SettleIdempotencyKey ends a claimed key's request by what it did: a key
// whose change was made keeps a as its answer; one whose request changed
// nothing (a form refused for its values) is removed, so the same form,
// corrected, can be sent again. It reports whether the answer was kept.
func (s *Store) SettleIdempotencyKey(ctx context.Context, c IdempotencyClaim, a IdempotentAnswer) (bool, error) {
	var kept int64
	err := s.InTx(withoutClaim(ctx), func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', status = ?, content_type = ?,
  location = ?, body = ?, sealed = 1, lock_id = NULL, locked_until = NULL
WHERE account_id = ? AND key = ? AND lock_id = ? AND applied = 1`,
			a.Status, a.ContentType, a.Location, s.sealAnswer(c.accountID, c.key, a.Body), c.accountID, c.key, c.lockID)
		if err != nil {
			return err
		}
		if kept, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM idempotency_keys
WHERE account_id = ? AND key = ? AND lock_id = ? AND applied = 0`, c.accountID, c.key, c.lockID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("settle idempotency key: %w", err)
	}
	return kept == 1, nil
}

// A kept answer's body is sealed with the server key, bound to its account
// and key: the answer of a webhook's creation holds the webhook's signing
// token, which is never in the database in plain text (decision 0118).

// sealAnswer seals a kept answer's body; nil stays nil.
func (s *Store) sealAnswer(accountID, key string, body []byte) []byte {
	if body == nil {
		return nil
	}
	return s.box.Seal(body, answerContext(accountID, key))
}

// answerContext binds a sealed answer to its row.
func answerContext(accountID, key string) []byte {
	return []byte("idempotent answer\x00" + accountID + "\x00" + key)
}

// sealKeptAnswers is migration 0094's step: it seals the bodies kept in
// plain text before it. It first checks the server key as Open does, since
// it runs before that check: a body sealed under the wrong key would never
// open again.
func sealKeptAnswers(ctx context.Context, s *Store, tx *sql.Tx) error {
	var stored string
	err := tx.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = 'key_check'`)).Scan(&stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read key check: %w", err)
	}
	if err == nil && stored != s.box.Check() {
		return errors.New("open store: the secret key is not the one this database was created with")
	}
	rows, err := tx.QueryContext(ctx, `SELECT account_id, key, body FROM idempotency_keys WHERE body IS NOT NULL AND sealed = 0`)
	if err != nil {
		return fmt.Errorf("read kept answers: %w", err)
	}
	type kept struct {
		account, key string
		body         []byte
	}
	var all []kept
	for rows.Next() {
		var k kept
		if err := rows.Scan(&k.account, &k.key, &k.body); err != nil {
			rows.Close()
			return fmt.Errorf("read kept answers: %w", err)
		}
		all = append(all, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read kept answers: %w", err)
	}
	for _, k := range all {
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE idempotency_keys SET body = ?, sealed = 1 WHERE account_id = ? AND key = ?`),
			s.sealAnswer(k.account, k.key, k.body), k.account, k.key); err != nil {
			return fmt.Errorf("seal kept answers: %w", err)
		}
	}
	return nil
}
