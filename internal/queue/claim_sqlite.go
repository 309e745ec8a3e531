package queue

import (
	"context"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// claimSQLite leases due rows of delivery_queue in one UPDATE … RETURNING (the
// logs are only read): SQLite has one writer, so
// no other claim can interleave. Each webhook not passed over (at its
// in-flight cap, or excluded by the caller) contributes at most its room of
// its oldest due rows, found through the (webhook_id, due_at) index, so one
// slow receiver cannot fill a batch and the work is bounded by webhooks
// times their room, however deep the backlog. Each account takes at most
// its room, and the claim is ordered as ClaimParams says.
//
// An earlier form scanned the oldest Limit×4 due logs in due order and
// passed over full webhooks inside the scan. In a deep backlog whose
// webhooks all have their slots full, that scan stepped over the whole
// backlog at every wake-up: 73% of herald's CPU in the backlog benchmark.
// PostgreSQL keeps the single scan (claimPostgres), where the
// per-webhook form measured slower.
//
// It reports no take-over: RETURNING sees only the new row, and on SQLite,
// one process per file, a lease ends only when that process died, and its
// successor releases every such lease at start (ReleaseLeases).
func (s *Queue) claimSQLite(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error) {
	most := p.PerWebhook
	for _, n := range p.Room {
		most = max(most, n)
	}
	args := []any{roomJSON(p.Room), p.PerWebhook, store.JSONTexts(p.Exclude), store.MS(p.Now), takeoverBefore(p), store.MS(p.Now), most,
		roomJSON(p.AccountRoom), accountBound(p), p.Limit, p.Lease, store.MS(p.LeaseUntil), store.MS(p.Now)}
	// The limits are "? + 0", not "?": SQLite plans a bare LIMIT ? with the
	// value bound, and prepares the statement again whenever that value
	// moves between 0 or 1 and more, which the room of a busy webhook does
	// at nearly every claim (two fifths of the claim's CPU in bench a).
	q := `WITH hooks AS (
  SELECT id, account_id, COALESCE((SELECT value FROM json_each(?) WHERE key = webhooks.id), ?) AS room FROM webhooks
  WHERE id NOT IN (SELECT value FROM json_texts(?)) AND type <> '` + store.TypePull + `'),
due AS (
  SELECT q.log_id, q.due_at, q.attempts > 0 AS retry, h.account_id, h.room,
    ROW_NUMBER() OVER (PARTITION BY h.id ORDER BY q.due_at, q.log_id) AS rn
  FROM hooks h JOIN delivery_queue q ON q.log_id IN (
    SELECT q.log_id FROM delivery_queue q
    WHERE q.webhook_id = h.id AND q.due_at <= ? AND COALESCE(q.lease_until, 0) <= ? AND COALESCE(q.resend_until, 0) <= ?
      AND ` + orderedClaimable + `
    ORDER BY q.due_at LIMIT ? + 0)),
fit AS (
  SELECT log_id, due_at, retry, account_id, ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY retry, due_at, log_id) AS arn
  FROM due WHERE rn <= room),
picked AS (
  SELECT log_id FROM fit WHERE arn <= COALESCE((SELECT value FROM json_each(?) WHERE key = fit.account_id), ?)
  ORDER BY retry, arn, due_at, log_id LIMIT ? + 0)
UPDATE delivery_queue SET lease = ?, lease_until = ?, claimed_at = ?
WHERE log_id IN (SELECT log_id FROM picked)
RETURNING log_id`
	rows, err := s.st.QueryWriter(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	ids, err := store.ScanIDs(rows)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return s.loadClaims(ctx, p.Lease, ids)
}
