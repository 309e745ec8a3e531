package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// takeoverBefore is the instant a lease must have ended by for the claim to
// take its log over: now, or the epoch (no lease ends before it) when the
// claim takes none over. A log never leased, or released, has no lease end
// and is taken either way.
func takeoverBefore(p attempt.ClaimParams) int64 {
	if p.NoTakeover {
		return 0
	}
	return store.MS(p.Now)
}

// Order of a claim. When more is due than a claim may take, what it takes
// is shared: first attempts before retries (a retry whose time came never
// takes a slot another webhook's first attempt wants), and within each,
// account by account (each account's oldest due first, then each account's
// second, …), so a deep backlog of one account, older than everything
// else, cannot fill the claim while another account's logs are due.
// Within a webhook the oldest due go first, retries or not.

// accountBound is p's default account room as the statements take it.
func accountBound(p attempt.ClaimParams) int {
	if p.PerAccount <= 0 {
		return p.Limit
	}
	return p.PerAccount
}

// Claim leases due logs (queued or retrying whose time has come, and pending
// ones whose lease expired because their process died mid-attempt) under
// p.Lease, and returns them. The lease is kept on the log's row of
// delivery_queue; the log itself is not written, and reads as pending while
// its queue row is leased (the store's logStatus). A pull webhook's rows are never
// claimed: its consumer reads them (pull.go).
func (s *Queue) Claim(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error) {
	var claims []attempt.Claim
	var err error
	if s.postgres {
		claims, err = s.claimPostgres(ctx, p)
	} else {
		claims, err = s.claimSQLite(ctx, p)
	}
	if err != nil {
		return nil, s.st.Full(fmt.Errorf("claim due logs: %w", err))
	}
	s.churn.Add(int64(len(claims)))
	return claims, nil
}

// loadClaims loads the logs a claim under lease took, by id.
func (s *Queue) loadClaims(ctx context.Context, lease string, ids []string) ([]attempt.Claim, error) {
	rows, err := s.st.Query(ctx, `SELECT `+store.ClaimColumns+`
FROM (SELECT g.id, g.account_id, g.webhook_id, g.event_id, g.kind, g.attempt_count, q.lease
      FROM delivery_queue q JOIN webhook_event_logs g ON g.id = q.log_id
      WHERE q.log_id IN (SELECT value FROM json_texts(?))) l
JOIN events e ON e.id = l.event_id JOIN webhooks w ON w.id = l.webhook_id`, store.JSONTexts(ids))
	if err != nil {
		return nil, fmt.Errorf("load claimed logs: %w", err)
	}
	defer rows.Close()
	claims := make([]attempt.Claim, 0, len(ids))
	for rows.Next() {
		c, err := s.st.ScanClaim(rows)
		if err != nil {
			return nil, fmt.Errorf("load claimed logs: %w", err)
		}
		if c.Lease == lease {
			claims = append(claims, c)
		}
	}
	return claims, rows.Err()
}

// NextDue returns when the earliest waiting log becomes due, or the
// earliest lease ends, and false when no log waits and none is leased.
func (s *Queue) NextDue(ctx context.Context) (time.Time, bool, error) {
	var due sql.NullInt64
	// One answer per webhook, each read through the queue's (webhook_id,
	// due_at) index, whatever the backlog. A leased row keeps the due_at it
	// had when claimed (decision 0099), which has passed, so a webhook's
	// rows in due order start with those in flight and its first row says
	// nothing alone. The answer is now if a row due by now is not leased;
	// else the earlier of its first row due later and the earliest lease
	// end among its rows due by now (all leased then: its attempts in
	// flight, a few; the bound is against a runaway count). (A row due
	// later is leased only if a claim ran by a clock ahead of this one: its
	// lease's end is taken as its time, at worst later than the next row's,
	// and the poll interval bounds the rest.)
	//
	// Every read is a range of due_at, so that no plan PostgreSQL keeps
	// reads a webhook's whole backlog: the look for an unleased row due by
	// now stops at the first it finds however it is planned, and the other
	// two carry no filter that the planner could take for selective.
	// Looking for the first unleased row by filtering the rows in due order
	// was planned, on a queue still empty when the plan was kept, as a
	// bitmap scan of all the webhook's rows and a sort (20,000 rows at
	// every sleep behind one stuck webhook, in one run of
	// server.TestIdleHeraldWithAStuckWebhookReadsFewRows of fifteen); and
	// MIN(due_at), which PostgreSQL rewrites as the first row, was priced
	// against a scan of the whole queue without statistics.
	now := store.MS(s.st.Now())
	err := s.st.QueryRow(ctx, `SELECT MIN((SELECT CASE
  WHEN EXISTS (SELECT 1 FROM delivery_queue d WHERE d.webhook_id = w.id AND d.due_at <= ? AND d.lease IS NULL) THEN CAST(? AS BIGINT)
  ELSE (SELECT MIN(t) FROM (
    SELECT (SELECT CASE WHEN COALESCE(f.lease_until, 0) > f.due_at THEN f.lease_until ELSE f.due_at END FROM delivery_queue f WHERE f.webhook_id = w.id AND f.due_at > ? ORDER BY f.due_at LIMIT 1) AS t
    UNION ALL
    SELECT (SELECT MIN(r.lease_until) FROM (
      SELECT l.lease_until FROM delivery_queue l WHERE l.webhook_id = w.id AND l.due_at <= ? ORDER BY l.due_at LIMIT 1000) r)) x)
  END)) FROM webhooks w WHERE w.type <> '`+store.TypePull+`'`, s.st.Cached([]any{now, now, now, now})...).Scan(&due)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	if !due.Valid {
		return time.Time{}, false, nil
	}
	return store.FromMS(due.Int64), true, nil
}

// roomJSON writes a claim's Room as one JSON object, so the claim statement
// keeps one shape however many webhooks it names.
func roomJSON(room map[string]int) string {
	if len(room) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(room) // a map of strings to ints always marshals
	return string(b)
}

// BeginResend marks a log in flight for a manual resend until until, and
// loads what the resend needs. A log with an attempt in flight (claimed, or
// marked by another resend whose mark has not ended) answers store.ErrConflict: one
// log is never sent twice at once, by one process or several. The mark keeps
// claims off the log, and ends when the resend is recorded (Complete), by
// EndResend, or at until if the process died meanwhile.
func (s *Queue) BeginResend(ctx context.Context, accountID, logID string, until time.Time) (attempt.Claim, error) {
	var n int64
	err := s.inTx(ctx, func(tx txn) error {
		res, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET resend_until = ?
WHERE account_id = ? AND id = ? AND COALESCE(resend_until, 0) <= ?
AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.log_id = webhook_event_logs.id AND q.lease IS NOT NULL)`, store.MS(until), accountID, logID, store.MS(tx.Now()))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		// A log still waiting in the queue carries the mark there too, where
		// claims read it. A claim that leased it since the check above (on
		// PostgreSQL, committed after this statement's snapshot) wins: the
		// update then finds it leased, and the resend answers store.ErrConflict.
		if _, err := tx.Exec(ctx, `UPDATE delivery_queue SET resend_until = ? WHERE log_id = ? AND lease IS NULL`, store.MS(until), logID); err != nil {
			return err
		}
		var leased int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM delivery_queue WHERE log_id = ? AND lease IS NOT NULL`, logID).Scan(&leased); err != nil {
			return err
		}
		if leased > 0 {
			return errInFlight
		}
		return nil
	})
	if errors.Is(err, errInFlight) {
		return attempt.Claim{}, fmt.Errorf("an attempt is in flight: %w", store.ErrConflict)
	}
	if err != nil {
		return attempt.Claim{}, fmt.Errorf("mark log for resend: %w", err)
	}
	if n == 0 {
		var left int
		if err := s.st.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_event_logs WHERE account_id = ? AND id = ?`, accountID, logID).Scan(&left); err != nil {
			return attempt.Claim{}, fmt.Errorf("mark log for resend: %w", err)
		}
		if left == 0 {
			return attempt.Claim{}, store.ErrNotFound
		}
		return attempt.Claim{}, fmt.Errorf("an attempt is in flight: %w", store.ErrConflict)
	}
	c, err := s.st.ScanClaim(s.st.QueryRow(ctx, `SELECT `+store.ClaimColumns+`
FROM webhook_event_logs l JOIN events e ON e.id = l.event_id JOIN webhooks w ON w.id = l.webhook_id
WHERE l.account_id = ? AND l.id = ?`, accountID, logID))
	if errors.Is(err, sql.ErrNoRows) {
		return attempt.Claim{}, store.ErrNotFound // deleted since it was marked
	}
	if err != nil {
		s.EndResend(context.WithoutCancel(ctx), logID)
		return attempt.Claim{}, fmt.Errorf("load log for resend: %w", err)
	}
	c.Lease = ""
	return c, nil
}

// EndResend ends a resend's mark without recording an attempt: the resend
// was not sent after all.
func (s *Queue) EndResend(ctx context.Context, logID string) error {
	err := s.inTx(ctx, func(tx txn) error {
		if _, err := tx.Exec(ctx, `UPDATE delivery_queue SET resend_until = NULL WHERE log_id = ?`, logID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_event_logs SET resend_until = NULL WHERE id = ?`, logID)
		return err
	})
	if err != nil {
		return fmt.Errorf("end resend of log %s: %w", logID, err)
	}
	return nil
}

// errInFlight rolls back a resend's mark that found the log claimed.
var errInFlight = errors.New("an attempt is in flight")

// ReleaseLeases makes every pending log due now. Only a process that knows no
// other process holds leases may call it: herald does on SQLite at start,
// which one process at a time can open, so that attempts a crashed process
// left in flight are made again at once rather than when their leases expire.
func (s *Queue) ReleaseLeases(ctx context.Context) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx txn) error {
		res, err := tx.Exec(ctx, `UPDATE delivery_queue SET due_at = ?, lease = NULL, lease_until = NULL WHERE lease IS NOT NULL`, store.MS(s.st.Now()))
		if err != nil {
			return fmt.Errorf("release leases: %w", err)
		}
		n, err = res.RowsAffected()
		if n > 0 {
			tx.MarkDue()
		}
		return err
	})
	return n, err
}
