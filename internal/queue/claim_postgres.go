package queue

import (
	"context"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// claimPostgres takes each webhook's oldest due rows of delivery_queue through its
// (webhook_id, due_at) index (migration 0060), locking them FOR NO KEY
// UPDATE SKIP LOCKED, so concurrent claims by other processes pass over them
// instead of waiting; then caps each account's share with a window function
// and leases what it keeps, in the order ClaimParams gives. The logs
// themselves are only read: a claim writes one narrow queue row per log.
//
// Each webhook's scan reads and locks at most what the webhook may take
// (its room; and at most four times its account's room and the claim's
// limit, a window wide enough that within a webhook first attempts still
// go before retries that fell due earlier), so a webhook with
// no room costs nothing (a dead receiver's backlog of 20,000 due logs was
// read at every claim by the scan in due order this replaced) and one
// webhook's deep backlog cannot fill the claim while others' logs are due.
// A claim costs one index probe per webhook not passed over; the rows it
// locks and does not take (more room than the claim's limit) are released
// when the statement ends.
//
// Under READ COMMITTED a row that another claim changed and committed after
// this statement's snapshot is re-checked against the WHERE clause once
// locked (PostgreSQL's EvalPlanQual), so a row another process has just
// leased (claimable again only when its lease ends) is not taken twice.
//
// A row that was leased (its lease ended: its process died mid-attempt) is
// reported as taken over; a claim that may take none over (NoTakeover)
// passes over every leased row.
//
// The lease's end is a column of its own, lease_until, which no index
// holds (decision 0099): the claim's update changes no indexed column, so
// where the row's page has room it is HOT and adds no index entry. The scan
// of a webhook's due rows steps over those in flight (their due_at has
// passed; they are read, not locked), at most the webhook's attempts in
// flight.
//
// The statement also returns what each attempt needs of the log, its event
// and its webhook, so a claim is one round trip: claims are serial in a
// process, and under a busy API every round trip waits its turn for the
// database's CPU. The log and the event are each read by its id in a
// lateral subquery (OFFSET 0 keeps it one): the history is partitioned by
// id (decision 0090), and each such read goes to the one partition of its
// id, where a join would look to the planner like a probe of every
// partition per row, and below some half a million logs it would rather
// read every partition whole.
//
// Its plan is kept (store.Cached, decision 0097): those lateral reads
// prune to one partition per row when they run, in a kept plan as in a
// fresh one, and the update finds the picked rows by their key as an array
// (one index scan), not by a join that a plan made over a small queue
// could keep as a hash over the whole of it. Planned at each claim, it cost
// 0.9 ms of the database's CPU against 0.1 ms of running.
func (s *Queue) claimPostgres(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error) {
	exclude := p.Exclude
	if exclude == nil {
		exclude = []string{}
	}
	args := s.st.Cached([]any{p.Lease, store.MS(p.LeaseUntil), store.MS(p.Now), store.MS(p.Now), exclude, p.Limit * 4, p.PerWebhook, p.Limit,
		roomJSON(p.Room), roomJSON(p.AccountRoom), accountBound(p), takeoverBefore(p)})
	rows, err := s.st.Writer(ctx).QueryContext(ctx, `
WITH hooks AS (
  SELECT w.id, w.account_id, COALESCE(($9::jsonb ->> w.id)::int, $7) AS room
  FROM webhooks w WHERE NOT (w.id = ANY($5)) AND w.type <> '`+store.TypePull+`'),
due AS (
  SELECT d.log_id, h.account_id, d.due_at, d.lease IS NOT NULL AS was, d.attempts > 0 AS retry
  FROM hooks h CROSS JOIN LATERAL (
    SELECT log_id, due_at, lease, attempts FROM delivery_queue q
    WHERE webhook_id = h.id AND due_at <= $4 AND COALESCE(lease_until, 0) <= $12 AND COALESCE(resend_until, 0) <= $4
      AND `+orderedClaimable+`
    ORDER BY due_at
    LIMIT LEAST(h.room, $6, 4 * COALESCE(($10::jsonb ->> h.account_id)::int, $11))
    FOR NO KEY UPDATE SKIP LOCKED) d
  WHERE h.room > 0),
fit AS (
  SELECT log_id, account_id, due_at, was, retry,
    ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY retry, due_at, log_id) AS arn
  FROM due),
picked AS (
  SELECT log_id, was FROM fit WHERE arn <= COALESCE(($10::jsonb ->> fit.account_id)::int, $11)
  ORDER BY retry, arn, due_at, log_id LIMIT $8),
taken AS (
  UPDATE delivery_queue q SET lease = $1, lease_until = $2, claimed_at = $3
  WHERE q.log_id = ANY(ARRAY(SELECT log_id FROM picked))
  RETURNING q.log_id, q.lease)
SELECT `+store.ClaimColumns+`, l.was
FROM (SELECT g.id, g.account_id, g.webhook_id, g.event_id, g.kind, g.attempt_count, t.lease, p.was
      FROM taken t JOIN picked p ON p.log_id = t.log_id CROSS JOIN LATERAL (
        SELECT id, account_id, webhook_id, event_id, kind, attempt_count FROM webhook_event_logs WHERE id = t.log_id OFFSET 0) g) l
CROSS JOIN LATERAL (SELECT body, trace_parent FROM events WHERE id = l.event_id OFFSET 0) e
JOIN webhooks w ON w.id = l.webhook_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var claims []attempt.Claim
	for rows.Next() {
		var was bool
		c, err := s.st.ScanClaim(rows, &was)
		if err != nil {
			return nil, err
		}
		c.TakenOver = was
		claims = append(claims, c)
	}
	return claims, rows.Err()
}
