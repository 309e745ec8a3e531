package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Change is one statement that makes the change an event reports, for
// ChangeAndFire: an INSERT, UPDATE or DELETE written with ? placeholders
// that returns a row (RETURNING) when it changed something and none when
// it did not (ON CONFLICT DO NOTHING, a WHERE that matched nothing).
type Change struct {
	SQL  string
	Args []any
	// Expiry, when set, plans a license's expiry events with the change,
	// as Tx.PlanExpiry would, when the change returned a row. The caller
	// tells the runner once it is made (ExpiriesChanged).
	Expiry *ExpiryPlan
	// Batch, when set, is the same change written over a set, which
	// PostgreSQL may make in one statement with the changes of other
	// calls (changebatch.go).
	Batch *ChangeBatch
}

// ExpiryPlan is what Tx.PlanExpiry is given: a license of an account and
// its expiresAt.
type ExpiryPlan struct {
	AccountID, LicenseID string
	ExpiresAt            time.Time
}

// ChangeAndFire makes change and, when it returned a row, fires f (as Fire
// would), all or nothing, and says whether the change was made. When it was
// not, nothing is written and nothing fired.
//
// On PostgreSQL the change, the event, its logs and their queue rows are
// one statement run outside any transaction block (decision 0108): a
// change and its event cost the read of the subscribed webhooks and that
// statement, where a transaction costs a BEGIN, each statement and a
// COMMIT, a round trip each. On SQLite, and for a request that carries an
// idempotency key (whose record joins the transaction), it is InTx running
// the change, then Fire.
func (s *Store) ChangeAndFire(ctx context.Context, change Change, f Firing) (bool, error) {
	if s.eng.name() != "postgres" || claimFrom(ctx) != nil {
		var made bool
		err := s.InTx(ctx, func(tx *Tx) error {
			rows, err := tx.Query(ctx, change.SQL, change.Args...)
			if err != nil {
				return err
			}
			made = rows.Next()
			rows.Close()
			if err := rows.Err(); err != nil || !made {
				return err
			}
			if e := change.Expiry; e != nil {
				if err := tx.PlanExpiry(ctx, e.AccountID, e.LicenseID, &e.ExpiresAt); err != nil {
					return err
				}
			}
			_, err = tx.fireAll(ctx, []Firing{f})
			return err
		})
		return made && err == nil, err
	}
	if change.Batch != nil && s.changeDB != nil {
		made, alone, err := s.changeInBatch(ctx, change, f)
		if !alone {
			return made, err
		}
	}
	return s.changeAlone(ctx, change, f)
}

// changeAlone is ChangeAndFire on PostgreSQL by the change's own
// statement.
//
// A webhook deleted between the read of the subscribed webhooks and the
// statement fails it on the logs' foreign key (as a row the change read
// without a lock and that was deleted since fails it on the change's own:
// a license's product, decision 0111), and a set kept from an earlier read
// (webhookset.go) whose webhooks changed since fails it on their version,
// having written nothing: read again, the webhooks are as they are now.
// The last try reads them afresh and checks no version, so that webhooks
// changing without rest cannot fail it.
func (s *Store) changeAlone(ctx context.Context, change Change, f Firing) (bool, error) {
	const tries = 3
	for try := 1; ; try++ {
		made, err := s.changeAndFire(ctx, change, f, try == tries)
		if err != nil && try < tries && (isForeignKeyViolation(err) || isWebhooksChanged(err)) {
			s.webhookSets.forget(f.AccountID)
			continue
		}
		if isAPITokenRefused(err) {
			return false, ErrAPITokenRefused
		}
		return made, s.full(err)
	}
}

// changeAndFire is ChangeAndFire's one try on PostgreSQL.
func (s *Store) changeAndFire(ctx context.Context, change Change, f Firing, uncached bool) (bool, error) {
	conn, err := s.writerFor(ctx).Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	tx := &Tx{s: s, run: conn, change: &change, uncached: uncached, token: tokenCheckFrom(ctx)}
	if h := s.handoffNow(); h != nil {
		tx.handoff = &handoffState{h: h}
		defer tx.endHandoff(false, false) // a panic's
	}
	if _, err := tx.fireAll(ctx, []Firing{f}); err != nil {
		return false, err
	}
	tx.endHandoff(tx.made, false)
	if !tx.made {
		return false, nil
	}
	s.wrote()
	s.firedKinds(tx.kinds)
	if tx.fired {
		s.wake()
		s.eng.announce()
	}
	return true, nil
}

// writeFiredAfterChange is writeFired's statement for ChangeAndFire on
// PostgreSQL: the change, then the events, logs and queue rows if it
// returned a row. It sets tx.made to whether it did.
func (tx *Tx) writeFiredAfterChange(ctx context.Context, evArg, logArg string, reserved []Claim, now time.Time) error {
	t := ms(now)
	args := append([]any{}, tx.change.Args...)
	if e := tx.change.Expiry; e != nil {
		args = append(args, e.LicenseID, e.AccountID, ms(e.ExpiresAt))
	}
	var fired []any
	if len(reserved) > 0 {
		fired = tx.handing(t, evArg, logArg, reserved, now)
	} else {
		fired = []any{t, evArg, t, t, t, t, logArg}
	}
	if tx.seen != nil { // after the events' two placeholders
		fired = slices.Insert(fired, 2, any(tx.seen.account), any(tx.seen.version))
	}
	args = append(args, fired...)
	if c := tx.token; c != nil {
		args = append(args, c.tokenID, c.accountID, t)
	}
	if h := tx.s.beforeChange; h != nil {
		h()
	}
	var n int
	q := afterChange(tx.change, len(reserved) > 0, tx.seen != nil, tx.token != nil)
	if err := tx.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return fmt.Errorf("change and insert events and logs: %w", err)
	}
	if tx.token != nil { // the statement found it valid
		tx.token.made.Store(true)
	}
	tx.made = n > 0
	switch {
	case len(reserved) == 0:
	case tx.made:
		tx.handoff.handed = append(tx.handoff.handed, reserved...)
	default: // nothing written
		tx.handoff.h.Abandon(reserved, false)
	}
	return nil
}

// afterChanges holds firedStatement's text for each change and handing.
var afterChanges sync.Map // afterKey -> string

type afterKey struct {
	change                            string
	expiry, handing, unchanged, token bool
}

// afterChange is firedStatement over c, built once: the change, and the
// plan of its expiry if it has one, are its first WITHs.
func afterChange(c *Change, handing, unchanged, token bool) string {
	k := afterKey{c.SQL, c.Expiry != nil, handing, unchanged, token}
	if v, ok := afterChanges.Load(k); ok {
		return v.(string)
	}
	withs := "change AS (\n" + c.SQL + "\n)"
	if c.Expiry != nil {
		withs += ", expiry AS (\n" + planExpiry(changed) + "\n)"
	}
	q := firedStatement(withs, handing, unchanged)
	if token {
		q = strings.TrimSuffix(q, changeCount) + tokenCheckedCount
	}
	afterChanges.Store(k, q)
	return q
}

// isForeignKeyViolation says whether err is PostgreSQL's SQLSTATE 23503.
func isForeignKeyViolation(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && pg.SQLState() == "23503"
}

// isServerError says whether err is an error PostgreSQL answered, after
// which the statement that got it has not committed.
func isServerError(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg)
}
