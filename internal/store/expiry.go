package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Expiry schedule: when license.expiring-soon and license.expired are due.
//
// Each license given an expiresAt has a row in license_expiries, a narrow
// table beside licenses: its expires_at as last planned, the expires_at for
// which each event has fired (soon_fired_for, expired_fired_for) and due_at,
// the instant the next of them is due, indexed. Firing rewrites that short
// row, not the license (decision 0098). What fires and with what data is
// licensing's; the store keeps the schedule, so that a change of the
// account's lead time and a change of a license re-plan it by the same rule.

// Lead time bounds, in seconds: how long before expiresAt
// license.expiring-soon fires.
const (
	DefaultExpiringSoonLead = 7 * 24 * 60 * 60  // 7 days
	MinExpiringSoonLead     = 60 * 60           // 1 hour
	MaxExpiringSoonLead     = 90 * 24 * 60 * 60 // 90 days
)

// expiryPlan is due_at by the rule, over a license_expiries row as it is:
// the soon instant (expires_at less the account's lead) until
// license.expiring-soon has fired for this expires_at, then expires_at until
// license.expired has, then none. An UPDATE sees the row as it was, so one
// that changes the fired columns plans with planOver over their new values.
var expiryPlan = planOver("expires_at", "license_expiries.account_id", "soon_fired_for", "expired_fired_for")

// planOver is the rule of expiryPlan over the given expressions for the
// row's expires_at, account and fired columns, so that one statement can
// set them and plan by their new values.
func planOver(expiresAt, accountID, soonFiredFor, expiredFiredFor string) string {
	return `CASE
  WHEN ` + expiresAt + ` IS NULL THEN NULL
  WHEN COALESCE(` + soonFiredFor + `, ` + expiresAt + ` + 1) <> ` + expiresAt + `
    THEN ` + expiresAt + ` - 1000 * (SELECT a.expiring_soon_lead_seconds FROM accounts a WHERE a.id = ` + accountID + `)
  WHEN COALESCE(` + expiredFiredFor + `, ` + expiresAt + ` + 1) <> ` + expiresAt + ` THEN ` + expiresAt + `
END`
}

// PlanExpiry plans one license's expiry events after its expires_at was set
// or changed in this transaction (a license created with one included) to
// expiresAt (nil: none): its schedule row is made, or given the new
// expires_at and planned by the fired columns it keeps, so that a moved
// instant re-arms both events and the same instant set again fires nothing
// twice. The caller, which wrote expiresAt, gives it, so the license is not
// read again (read by account and id, it cost 10 ms and 1,400 buffers a
// call over the 100,000 creates of scenario x's seeding, as the license's
// own expiry UPDATE by that key did at times before). The caller tells the
// runner after the commit (ExpiriesChanged).
func (tx *Tx) PlanExpiry(ctx context.Context, accountID, licenseID string, expiresAt *time.Time) error {
	var at *int64
	if expiresAt != nil {
		v := ms(*expiresAt)
		at = &v
	}
	if _, err := tx.Exec(ctx, planExpiry("true"), licenseID, accountID, at); err != nil {
		return fmt.Errorf("plan expiry events: %w", err)
	}
	return nil
}

// planExpiry is PlanExpiry's statement, writing when cond holds (a
// ChangeAndFire makes it one of its WITHs, on the change's row); its
// arguments are the license, the account and expires_at.
func planExpiry(cond string) string {
	return planExpiries(`(SELECT CAST(? AS TEXT) AS license_id, CAST(? AS TEXT) AS account_id, CAST(? AS BIGINT) AS expires_at) AS v`, cond)
}

// planExpiries is planExpiry over the licenses of from, a FROM item named v
// with the columns license_id, account_id and expires_at, where cond holds.
func planExpiries(from, cond string) string {
	return `INSERT INTO license_expiries (license_id, account_id, expires_at, due_at)
SELECT v.license_id, v.account_id, v.expires_at, ` + planOver("v.expires_at", "v.account_id", "NULL", "NULL") + `
FROM ` + from + ` WHERE ` + cond + `
ON CONFLICT (license_id) DO UPDATE SET expires_at = excluded.expires_at,
  due_at = ` + planOver("excluded.expires_at", "license_expiries.account_id", "license_expiries.soon_fired_for", "license_expiries.expired_fired_for")
}

// HoldExpiry locks a license's schedule row, if it has one, for a change
// that may move the license's expires_at, taken at once after the
// license's own lock. An expiry firing holds the schedule row alone and
// reads the license unlocked; were the row taken only at PlanExpiry, a
// firing could claim it while the change had already written the license
// and fired its event, and fire the old instant's event after the change's
// with the license as it was before it, and a lead-time change committed
// meanwhile could be planned over with the old lead. Held first, a firing
// goes wholly before the change or after it. SQLite's one writer needs
// none.
func (tx *Tx) HoldExpiry(ctx context.Context, licenseID string) error {
	lock := tx.ForUpdate()
	if lock == "" {
		return nil
	}
	// Its row, if any, is locked and not read.
	if _, err := tx.Exec(ctx, `SELECT license_id FROM license_expiries WHERE license_id = ?`+lock, licenseID); err != nil {
		return fmt.Errorf("hold expiry schedule: %w", err)
	}
	return nil
}

// replanAccount re-plans every license of the account after its lead time
// changed, found through the licenses' own index on the account (the
// schedule has none: it would be written again at every firing). A license
// that has fired license.expiring-soon for its current expires_at keeps its
// plan (license.expired, or nothing), so it never hears it twice.
func (tx *Tx) replanAccount(ctx context.Context, accountID string) error {
	if _, err := tx.Exec(ctx, `UPDATE license_expiries SET due_at = `+expiryPlan+`
WHERE license_id IN (SELECT id FROM licenses WHERE account_id = ?)
  AND expires_at IS NOT NULL AND COALESCE(soon_fired_for, expires_at + 1) <> expires_at`, accountID); err != nil {
		return fmt.Errorf("re-plan expiry events: %w", err)
	}
	return nil
}

// DueExpiry is a license whose next expiry event is due, claimed by
// ClaimDueExpiries: license.expiring-soon when Soon (it has not fired for
// ExpiresAt), else license.expired. One event per claim, so that each is
// fired in the order of its own due instant: a license whose expiring-soon
// and expired both came due while herald was stopped is claimed again for
// its expired at the expired's turn, not ahead of older ones.
type DueExpiry struct {
	LicenseID, AccountID string
	ExpiresAt            time.Time
	Soon                 bool
}

// dueExpiries is the due query: the oldest due first, through the partial
// index on due_at, so its cost follows the rows due, not the licenses held.
// Each engine's row lock is appended.
const dueExpiries = `SELECT license_id, account_id, expires_at,
  COALESCE(soon_fired_for, expires_at + 1) <> expires_at
FROM license_expiries WHERE due_at <= ? ORDER BY due_at LIMIT ?`

// ClaimDueExpiries locks up to limit schedule rows whose expiry events are
// due at now, oldest due first. On PostgreSQL rows another process holds
// are skipped (SKIP LOCKED): each process fires the ones it claimed, and
// once its transaction commits (RecordExpiriesFired moved them on) no other
// claim matches them, so each event fires once however many processes wake
// at the same instant. A change of the license's expires_at holds its row
// from its start (HoldExpiry), so it waits for a firing that holds the row,
// and a firing passes over a row such a change holds.
func (tx *Tx) ClaimDueExpiries(ctx context.Context, now time.Time, limit int) ([]DueExpiry, error) {
	rows, err := tx.Query(ctx, dueExpiries+tx.forUpdateSkipLocked(), ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim due expiries: %w", err)
	}
	defer rows.Close()
	var out []DueExpiry
	for rows.Next() {
		var d DueExpiry
		var at int64
		if err := rows.Scan(&d.LicenseID, &d.AccountID, &at, &d.Soon); err != nil {
			return nil, fmt.Errorf("claim due expiries: %w", err)
		}
		d.ExpiresAt = fromMS(at)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim due expiries: %w", err)
	}
	return out, nil
}

// RecordExpiriesFired records, in the transaction that fired them, the
// event each claimed license fired (as ClaimDueExpiries chose it: its
// expiring-soon when that had not fired for its expires_at, else its
// expired), and plans what comes next. Recorded with the events, a crash
// can lose neither without the other.
func (tx *Tx) RecordExpiriesFired(ctx context.Context, licenseIDs []string) error {
	if len(licenseIDs) == 0 {
		return nil
	}
	// One UPDATE: each expression reads the row as it was before it, as
	// the claim did; expired_fired_for's new value is spelt out again for
	// the plan, which must see it.
	const newExpired = `CASE WHEN COALESCE(soon_fired_for, expires_at + 1) = expires_at THEN expires_at ELSE expired_fired_for END`
	if _, err := tx.Exec(ctx, `UPDATE license_expiries SET soon_fired_for = expires_at,
  expired_fired_for = `+newExpired+`,
  due_at = `+planOver("expires_at", "license_expiries.account_id", "expires_at", newExpired)+`
WHERE license_id IN (SELECT value FROM json_texts(?))`, JSONTexts(licenseIDs)); err != nil {
		return fmt.Errorf("record expiry events: %w", err)
	}
	return nil
}

// NextExpiryDue is when the next expiry event is due, read from the index
// (one row); ok is false when none is planned.
func (s *Store) NextExpiryDue(ctx context.Context) (at time.Time, ok bool, err error) {
	var next sql.NullInt64
	if err := s.QueryRow(ctx, `SELECT MIN(due_at) FROM license_expiries WHERE due_at IS NOT NULL`).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next expiry due: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return fromMS(next.Int64), true, nil
}

// ExplainDueExpiries returns the engine's plan of the due query, as text
// (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN), so a test can check
// that a wake-up reads the index rather than every license.
func (s *Store) ExplainDueExpiries(ctx context.Context, now time.Time) (string, error) {
	prefix := "EXPLAIN "
	if s.eng.name() == "sqlite" {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := s.db.QueryContext(ctx, s.q(prefix+dueExpiries), ms(now), 200)
	if err != nil {
		return "", fmt.Errorf("explain due expiries: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var plan string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		plan += fmt.Sprintln(vals[len(vals)-1])
	}
	return plan, rows.Err()
}

// ExpiriesChanged tells the expiry runners that a committed change may have
// moved the next due instant (a license's expires_at, an account's lead
// time), so that they plan again rather than sleep to an instant that
// moved: this process's at once, and on PostgreSQL the other processes'
// through NOTIFY herald_expiry (at most once per 10 ms).
func (s *Store) ExpiriesChanged() {
	s.wakeExpiries()
	s.eng.announceExpiries()
}

// wakeExpiries wakes this process's expiry runner (ExpiriesWait).
func (s *Store) wakeExpiries() {
	s.mu.Lock()
	ch := s.expiryWaiter
	s.expiryWaiter = nil
	s.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// ExpiriesWait returns a channel closed at the next ExpiriesChanged of this
// process or, on PostgreSQL, of another process on the same schema.
func (s *Store) ExpiriesWait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expiryWaiter == nil {
		s.expiryWaiter = make(chan struct{})
	}
	return s.expiryWaiter
}

// forUpdateSkipLocked locks the selected rows, passing over those another
// transaction holds (PostgreSQL); SQLite's one writer needs nothing.
func (tx *Tx) forUpdateSkipLocked() string {
	if f := tx.s.eng.forUpdate(); f != "" {
		return f + " SKIP LOCKED"
	}
	return ""
}
