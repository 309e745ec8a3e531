package queue

import (
	"context"
	"fmt"
	"slices"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// A batch of ordinary outcomes recorded in one round trip on PostgreSQL
// (decision 0106). Complete's transaction takes six round trips (its
// begin, the plan setting, the health read, the logs' move, the attempts,
// the commit), and at 200 events a second, where a batch carries two or
// three deliveries, the round trips cost PostgreSQL more CPU than the
// statements themselves. The common batch (deliveries, retries, releases
// and cancels, to webhooks whose health they cannot change) is one
// statement instead, sent with its begin, its plan setting and its commit
// in one pipeline.

// recordAtOnceName names recordAtOnceSQL, prepared on each connection of
// the dispatcher's pool that records.
const recordAtOnceName = "herald_record_at_once"

// recordAtOnceSQL moves the batch's held queue rows and their logs as
// moveLogsPostgres does, and adds the attempts of the moved logs as
// insertAttempts does, unless one of the webhooks it delivered to is not
// settled (notSettled): then it writes nothing and names those webhooks.
// Its rows are ('l', a log moved) and ('w', a webhook not settled).
var recordAtOnceSQL = `WITH v AS (` + moveSource + `),
unsettled AS (` + notSettled + `),
` + queueAndLogMoves("NOT EXISTS (SELECT 1 FROM unsettled)", `l.id BETWEEN CAST(? AS text) AND CAST(? AS text)`) + `,
added AS (` + insertAttemptsFrom + `
  FROM (` + attemptSource + `) AS v
  WHERE v.log_id IN (SELECT log_id FROM held))
SELECT 'l', log_id FROM held UNION ALL SELECT 'w', id FROM unsettled`

// recordAtOnce records outs in one round trip, when they are the common
// batch: automatic outcomes, one per log, none exhausting its attempts or
// counted by a recovery, on PostgreSQL with its plans kept. Such a batch
// changes a webhook's health only by a delivery to a webhook that is not
// settled; the statement reads the batch's delivered webhooks first and
// writes nothing if one is not. It reports false, having written nothing,
// for any other batch and for that one: Complete's transaction records
// them.
//
// Its health read takes no lock, as healthMayChange's does not, and with
// the same reasoning: a failure recorded meanwhile by another transaction
// leaves the webhook Unhealthy, as if it had committed after this one.
func (s *Queue) recordAtOnce(ctx context.Context, outs []attempt.Outcome) (bool, error) {
	if !s.st.CachesPlans() || len(outs) == 0 || len(outs) > bulkChunk {
		return false, nil
	}
	logIDs := make([]string, 0, len(outs))
	seen := make(map[string]bool, len(outs))
	var delivered []string
	for _, o := range outs {
		if o.Trigger != attempt.TriggerAutomatic || o.Recovery != "" || o.Result == attempt.Exhausted || o.Disable != "" || seen[o.LogID] {
			return false, nil
		}
		seen[o.LogID] = true
		logIDs = append(logIDs, o.LogID)
		if o.Result == attempt.Delivered {
			delivered = append(delivered, o.WebhookID)
		}
	}
	lo, hi, ok := store.IDRange(logIDs)
	if !ok {
		return false, nil
	}
	now := s.st.Now()
	moves := make([]moveRow, 0, len(outs))
	for _, o := range outs {
		r, err := moveRowOf(o, now)
		if err != nil {
			return false, err
		}
		moves = append(moves, r)
	}
	moveArg, err := store.JSONRows(moves)
	if err != nil {
		return false, fmt.Errorf("update %d logs: %w", len(outs), err)
	}
	attemptArg, n, err := attemptRows(outs, func(attempt.Outcome) bool { return true })
	if err != nil {
		return false, err
	}
	if n == 0 {
		attemptArg = "[]"
	}
	slices.Sort(delivered)
	delivered = slices.Compact(delivered)
	args := []any{moveArg, store.JSONTexts(delivered), store.MS(now), store.MS(now), store.MS(now), lo, hi, attemptArg}

	conn, err := s.st.Writer(ctx).Conn(ctx)
	if err != nil {
		return false, s.st.Full(err)
	}
	defer conn.Close()
	var held, unsettled int
	err = conn.Raw(func(dc any) error {
		c := dc.(*stdlib.Conn).Conn()
		if _, err := c.Prepare(ctx, recordAtOnceName, s.st.Rebind(recordAtOnceSQL)); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		// The kept plan, whose partitions are pruned when it starts
		// (moveLogsPostgres says why it must be forced).
		b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
		q := b.Queue(recordAtOnceName, args...)
		q.Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var kind, id string
				if err := rows.Scan(&kind, &id); err != nil {
					return err
				}
				if kind == "w" {
					unsettled++
				} else {
					held++
				}
			}
			return rows.Err()
		})
		b.Queue("COMMIT")
		// A statement refused leaves the transaction open and aborted (a
		// pipeline skips what follows an error): the pool drops a
		// connection returned in a transaction (stdlib's ResetSession).
		return c.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return false, s.st.Full(err)
	}
	if unsettled > 0 {
		return false, nil
	}
	if held > 0 {
		s.st.Wrote()
	}
	return true, nil
}
