package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// A webhook's throttle (its rate limit) is kept as the generic cell rate
// algorithm's one number per webhook, the "theoretical arrival time": the
// moment from which its next send slot is free (webhook_throttles.tat,
// migration 0065). Slots are interval apart and never given twice: a
// reservation takes the next ones in one statement, which every process on
// the database runs against the same row, so together they send no faster
// than the limit. What the interval is (the policy) is the dispatcher's; the
// store only hands out slots.

// ReserveSends reserves up to n send slots of a webhook, interval apart,
// none of them earlier than now (an idle webhook's slots start now, not in
// its past) and none later than until: slots further out are left for later
// reservations, so that a log waits for its slot in the queue rather than
// inside a process. interval is rounded up to a whole microsecond (never
// faster than asked). The reservation is one upsert, atomic on both engines,
// so reservations made at once by several processes take disjoint slots.
func (s *Queue) ReserveSends(ctx context.Context, webhookID string, interval time.Duration, n int, now, until time.Time) (attempt.Grant, error) {
	step := max(1, (interval+time.Microsecond-1)/time.Microsecond) // µs
	at, last := now.UnixMicro(), until.UnixMicro()
	// The first reservation of a webhook inserts its row, its slots from now.
	first := int64(0)
	if last >= at && n > 0 {
		first = min(int64(n), (last-at)/int64(step)+1)
	}
	// An existing row's slots start at the later of now and its tat; as
	// many as fit before until, at most n. Each expression reads the row as
	// it was, so granted_from and tat agree.
	const start = `(CASE WHEN webhook_throttles.tat > CAST(? AS BIGINT) THEN webhook_throttles.tat ELSE CAST(? AS BIGINT) END)`
	const count = `(CASE WHEN ` + start + ` > CAST(? AS BIGINT) THEN 0
  WHEN (CAST(? AS BIGINT) - ` + start + `) / CAST(? AS BIGINT) + 1 < CAST(? AS BIGINT)
  THEN (CAST(? AS BIGINT) - ` + start + `) / CAST(? AS BIGINT) + 1 ELSE CAST(? AS BIGINT) END)`
	countArgs := []any{at, at, last, last, at, at, step, n, last, at, at, step, n}
	args := []any{webhookID, at, at + first*int64(step), at, at}
	args = append(args, at, at)
	args = append(args, step)
	args = append(args, countArgs...)
	var from, tat int64
	// One statement on the writer, a transaction of its own.
	err := s.st.Writer(ctx).QueryRowContext(ctx, s.st.Rebind(`INSERT INTO webhook_throttles (webhook_id, granted_from, tat) VALUES (?, ?, ?)
ON CONFLICT (webhook_id) DO UPDATE SET granted_from = `+start+`,
  tat = `+start+` + CAST(? AS BIGINT) * `+count+`
RETURNING granted_from, tat`), args...).Scan(&from, &tat)
	if err != nil {
		return attempt.Grant{}, s.st.Full(fmt.Errorf("reserve send slots of webhook %s: %w", webhookID, err))
	}
	d := time.Duration(step) * time.Microsecond
	return attempt.Grant{First: time.UnixMicro(from), Interval: d, Count: int((tat - from) / int64(step)), Next: time.UnixMicro(tat)}, nil
}

// WaitingLogs counts a webhook's logs waiting for an attempt: in flight or
// waiting for a send slot in a process (leased), first attempts whatever
// their time (a throttled one given back waits for its slot), and retries
// whose time has come; at most limit (a page asks how many, and a count
// past it reads "limit or more"). The queue holds them (decision 0086); the
// webhook's row scopes the count to its account.
func (s *Queue) WaitingLogs(ctx context.Context, accountID, webhookID string, limit int) (int, error) {
	var n int
	err := s.st.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM delivery_queue q JOIN webhooks w ON w.id = q.webhook_id
WHERE q.webhook_id = ? AND w.account_id = ? AND (q.lease IS NOT NULL OR q.attempts = 0 OR q.due_at <= ?)
LIMIT ?) AS waiting`, webhookID, accountID, store.MS(s.st.Now()), limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count waiting logs: %w", err)
	}
	return n, nil
}
