package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/health"
	"github.com/heraldhq/herald/internal/store"
)

// releasedUntil is when a Release outcome's log is due again: at NextAt
// when it says, else at once.
func releasedUntil(o attempt.Outcome, now time.Time) time.Time {
	if o.NextAt.After(now) {
		return o.NextAt
	}
	return now
}

// Complete records a batch of outcomes in one transaction: the attempts, the
// logs' new statuses and the webhooks' health (on PostgreSQL a batch that
// changes no webhook's health in one round trip: recordAtOnce). An
// automatic outcome whose lease another claim has since taken over is
// dropped, so a process that outlived its lease cannot overwrite the newer
// attempt.
//
// store.Health follows the specification's table. A webhook keeps a streak of
// completed events that failed in a row; an event that exhausts its attempts
// adds one and makes the webhook Unhealthy, or store.Suspended once the streak
// reaches suspendAfter (the most recent suspendAfter completed events all
// failed). Any 2xx, a resend included, resets the streak and restores Healthy.
// The webhook row is locked while it is read and written, so concurrent
// completions in several processes neither lose a transition nor suspend twice.
// Each change of health warns in the same transaction (warnings.go): one
// email when a webhook turns Unhealthy, one when it is suspended, and an
// operational event to the account's other webhooks.
func (s *Queue) Complete(ctx context.Context, outs []attempt.Outcome, suspendAfter int) ([]attempt.Suspension, error) {
	if done, err := s.recordAtOnce(ctx, outs); err != nil {
		return nil, fmt.Errorf("record outcomes: %w", err)
	} else if done {
		s.churn.Add(int64(len(outs)))
		return nil, nil
	}
	var suspended []attempt.Suspension
	var emailed bool
	err := s.inTx(ctx, func(tx txn) error {
		suspended = suspended[:0]
		now := s.st.Now()
		// Automatic outcomes, one per log, go in bulk; the rest (resends,
		// and a log's second outcome in one batch, which only a lease that
		// expired under its own process makes) one by one.
		var bulk []attempt.Outcome
		perLog := map[string]int{}
		for _, o := range outs {
			perLog[o.LogID]++
		}
		for _, o := range outs {
			if o.Trigger == attempt.TriggerAutomatic && perLog[o.LogID] == 1 {
				bulk = append(bulk, o)
			}
		}
		changing, err := tx.healthMayChange(ctx, outs)
		if err != nil {
			return err
		}
		if err := tx.lockWebhooks(ctx, changing); err != nil {
			return err
		}
		moved, err := tx.recordAutomatic(ctx, bulk, now)
		if err != nil {
			return err
		}
		var effects []healthEffect
		goneEmailed := false
		for _, o := range outs {
			applied := moved[o.LogID]
			if o.Trigger != attempt.TriggerAutomatic || perLog[o.LogID] > 1 {
				if applied, err = tx.recordOutcome(ctx, o, now); err != nil {
					return err
				}
			}
			if applied && o.Recovery != "" {
				if err := tx.recordRecovery(ctx, o); err != nil {
					return err
				}
			}
			if !applied {
				continue
			}
			if o.Disable != "" {
				sent, err := tx.disableGone(ctx, o, now)
				if err != nil {
					return err
				}
				goneEmailed = goneEmailed || sent
			}
			if !changing[o.WebhookID] {
				continue
			}
			switch o.Result {
			case attempt.Delivered:
				effects = append(effects, healthEffect{o.WebhookID, true, nil})
			case attempt.Exhausted:
				effects = append(effects, healthEffect{o.WebhookID, false, &o})
			}
		}
		suspended, emailed, err = tx.applyHealth(ctx, effects, suspendAfter, now)
		emailed = emailed || goneEmailed
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record outcomes: %w", err)
	}
	s.churn.Add(int64(len(outs)))
	if emailed {
		s.st.Emailed()
	}
	return suspended, nil
}

// healthMayChange names the webhooks whose health the batch may move: those
// with an event that exhausted its attempts, and those with a delivery that
// are not Healthy with an empty failure streak. A delivery to a webhook that
// is Healthy with no streak changes nothing, and the batch neither reads
// nor locks that webhook again: so batches of one webhook's deliveries,
// recorded at once by one process or several, do not queue behind one
// another on its row. On PostgreSQL the read takes no lock; a failure
// recorded meanwhile by another transaction leaves the webhook Unhealthy,
// as if that transaction had come after this one, which is an order the two
// could have committed in.
func (tx txn) healthMayChange(ctx context.Context, outs []attempt.Outcome) (map[string]bool, error) {
	changing := map[string]bool{}
	var delivered []string
	for _, o := range outs {
		if o.Disable != "" {
			// Locked first, as a change of health is: the outcome
			// writes the webhook's row (disableGone).
			changing[o.WebhookID] = true
		}
		switch o.Result {
		case attempt.Exhausted:
			changing[o.WebhookID] = true
		case attempt.Delivered:
			delivered = append(delivered, o.WebhookID)
		}
	}
	delivered = slices.DeleteFunc(delivered, func(id string) bool { return changing[id] })
	if len(delivered) == 0 {
		return changing, nil
	}
	slices.Sort(delivered)
	delivered = slices.Compact(delivered)
	// Its plan is kept (engine.cached): a probe of the webhooks' key per id,
	// whatever the ids; planned at each batch it cost the database 0.13 ms.
	rows, err := tx.Query(ctx, notSettled, tx.q.st.Cached([]any{store.JSONTexts(delivered)})...)
	if err != nil {
		return nil, fmt.Errorf("read health of webhooks: %w", err)
	}
	ids, err := store.ScanIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("read health of webhooks: %w", err)
	}
	for _, id := range ids {
		changing[id] = true
	}
	return changing, nil
}

// notSettled reads which of the webhooks in its JSON argument are not
// Healthy with an empty failure streak: those a delivery changes.
const notSettled = `SELECT id FROM webhooks WHERE id IN (SELECT value FROM json_texts(?))
AND (status <> 'Healthy' OR failure_streak <> 0)`

// lockWebhooks locks the webhooks whose health the batch may change, in id
// order, before any of their logs: the order a webhook's deletion takes too
// (the webhook, then its logs by cascade), and the order every other batch
// takes, so recording deadlocks with neither. A batch that changes no
// webhook's health locks none: it writes only logs and attempts, which a
// deletion waits for and which wait for nothing. (SQLite's one writer needs
// no row locks.)
func (tx txn) lockWebhooks(ctx context.Context, changing map[string]bool) error {
	if tx.ForUpdate() == "" || len(changing) == 0 {
		return nil
	}
	ids := make([]string, 0, len(changing))
	for id := range changing {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	rows, err := tx.Query(ctx, `SELECT id FROM webhooks WHERE id IN (SELECT value FROM json_texts(?)) ORDER BY id`+tx.ForUpdate(), store.JSONTexts(ids))
	if err != nil {
		return fmt.Errorf("lock webhooks: %w", err)
	}
	return rows.Close()
}

// recordOutcome writes one outcome's log transition and attempt. It reports
// false when the log was no longer this outcome's to record.
func (tx txn) recordOutcome(ctx context.Context, o attempt.Outcome, now time.Time) (bool, error) {
	a := o.Attempt
	var code, recv any
	var sent any
	reason := sql.NullString{String: o.Reason, Valid: o.Reason != ""}
	if a != nil {
		sent = store.MS(a.SentAt)
		if a.StatusCode != nil {
			code = *a.StatusCode
		}
		if a.ReceivedAt != nil {
			recv = store.MS(*a.ReceivedAt)
		}
	}
	auto := 0
	if o.Trigger == attempt.TriggerAutomatic && a != nil {
		auto = 1
	}
	var set string
	var args []any
	switch o.Result {
	case attempt.Delivered:
		set, args = `status = 'succeeded', due_at = NULL, lease = NULL, completed_at = ?, undelivered_at = NULL, retry_reason = NULL`, []any{store.MS(now)}
	case attempt.Retry:
		set, args = `status = 'retrying', due_at = ?, lease = NULL, retry_reason = ?`, []any{store.MS(o.NextAt), reason}
	case attempt.Exhausted:
		set, args = `status = 'failed', due_at = NULL, lease = NULL, completed_at = ?, undelivered_at = ?, retry_reason = ?`, []any{store.MS(now), store.MS(now), reason}
	case attempt.Cancel:
		var undelivered any
		if attempt.Undelivered(o.Reason) {
			undelivered = store.MS(now)
		}
		set, args = `status = 'cancelled', due_at = NULL, lease = NULL, completed_at = ?, undelivered_at = ?, retry_reason = ?`, []any{store.MS(now), undelivered, reason}
	case attempt.Release:
		set, args = `due_at = ?, lease = NULL`, []any{store.MS(releasedUntil(o, now))}
	case attempt.ResendFailed:
		// A log still waiting for an automatic attempt keeps waiting, and a
		// delivered event stays succeeded; a failed or cancelled log is now
		// failed, its latest delivery having failed, and so undelivered.
		set, args = `status = CASE WHEN status IN ('queued', 'retrying', 'succeeded') THEN status ELSE 'failed' END,
undelivered_at = CASE WHEN status IN ('queued', 'retrying', 'succeeded') THEN undelivered_at ELSE COALESCE(undelivered_at, completed_at) END,
retry_reason = ?`, []any{reason}
	default:
		return false, fmt.Errorf("outcome of log %s: unknown result %d", o.LogID, o.Result)
	}
	if o.Trigger != attempt.TriggerAutomatic {
		set += `, resend_until = NULL` // the resend's mark ends as it is recorded
	}
	if a != nil {
		set += `, status_code = ?, sent_at = ?, received_at = ?`
		args = append(args, code, sent, recv)
	}
	if o.Trigger == attempt.TriggerAutomatic {
		// The queue row first, under the outcome's lease: a row another
		// claim took over is that claim's to record.
		held, err := tx.moveQueueRow(ctx, o, now)
		if err != nil || !held {
			return false, err
		}
	}
	q := `UPDATE webhook_event_logs SET ` + set + `, attempt_count = attempt_count + ?, updated_at = ? WHERE id = ?`
	args = append(args, auto, store.MS(now), o.LogID)
	if o.Trigger != attempt.TriggerAutomatic {
		// A resend never takes over an automatic attempt in flight.
		q += ` AND NOT EXISTS (SELECT 1 FROM delivery_queue q WHERE q.log_id = webhook_event_logs.id AND q.lease IS NOT NULL)`
	}
	res, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("update log %s: %w", o.LogID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n == 0 && o.Trigger == attempt.TriggerAutomatic {
		return false, nil
	}
	if n == 0 {
		// A resend of a log that is gone (purged by retention, or its
		// webhook deleted) while the request was in flight.
		var left int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_event_logs WHERE id = ?`, o.LogID).Scan(&left); err != nil {
			return false, fmt.Errorf("look up log %s: %w", o.LogID, err)
		}
		if left == 0 {
			return false, fmt.Errorf("log %s: %w", o.LogID, store.ErrNotFound)
		}
	}
	if o.Trigger != attempt.TriggerAutomatic && n > 0 {
		// A delivered resend completes a log still waiting in the queue;
		// a failed one leaves it waiting, unmarked.
		q := `UPDATE delivery_queue SET resend_until = NULL WHERE log_id = ?`
		if o.Result == attempt.Delivered {
			q = `DELETE FROM delivery_queue WHERE log_id = ? AND lease IS NULL`
		}
		if _, err := tx.Exec(ctx, q, o.LogID); err != nil {
			return false, fmt.Errorf("dequeue log %s: %w", o.LogID, err)
		}
	}
	if a == nil {
		return true, nil
	}
	var errText any
	if a.Error != "" {
		errText = a.Error
	}
	headers, err := store.EncodeHeaders(a.Headers)
	if err != nil {
		return false, fmt.Errorf("insert attempt of log %s: %w", o.LogID, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO webhook_attempts (log_id, webhook_id, number, trigger, sent_at, received_at, status_code, duration_ms, error, response_body, headers)
VALUES (?, ?, (SELECT COALESCE(MAX(number), 0) + 1 FROM webhook_attempts WHERE log_id = ?), ?, ?, ?, ?, ?, ?, ?, ?)`,
		o.LogID, o.WebhookID, o.LogID, o.Trigger, sent, recv, code, a.Duration.Milliseconds(), errText, cleanBody(a.ResponseBody), headers)
	if err != nil {
		return false, fmt.Errorf("insert attempt of log %s: %w", o.LogID, err)
	}
	// A resend that raced a claim still happened and is recorded; its 2xx
	// still counts for health.
	return true, nil
}

// moveQueueRow applies an automatic outcome to its log's queue row, where
// the row is still held under the outcome's lease, and reports whether it
// was: a completion deletes the row, a retry or a release makes it wait
// again, unleased.
func (tx txn) moveQueueRow(ctx context.Context, o attempt.Outcome, now time.Time) (bool, error) {
	var q string
	var args []any
	switch o.Result {
	case attempt.Retry:
		q, args = `UPDATE delivery_queue SET due_at = ?, lease = NULL, lease_until = NULL, attempts = attempts + 1 WHERE log_id = ? AND lease = ?`, []any{store.MS(o.NextAt)}
	case attempt.Release:
		q, args = `UPDATE delivery_queue SET due_at = ?, lease = NULL, lease_until = NULL WHERE log_id = ? AND lease = ?`, []any{store.MS(releasedUntil(o, now))}
	case attempt.Exhausted:
		held, err := tx.holdFailed(ctx, o.LogID, o.Lease)
		if err != nil || held {
			return held, err
		}
		q = `DELETE FROM delivery_queue WHERE log_id = ? AND lease = ?`
	default:
		q = `DELETE FROM delivery_queue WHERE log_id = ? AND lease = ?`
	}
	res, err := tx.Exec(ctx, q, append(args, o.LogID, o.Lease)...)
	if err != nil {
		return false, fmt.Errorf("dequeue log %s: %w", o.LogID, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

type healthEffect struct {
	webhookID string
	delivered bool
	outcome   *attempt.Outcome // the failed event's outcome, when not delivered
}

// applyHealth folds a batch's completions into each webhook's health, in
// completion order (the transitions are health.Apply's), reading and
// writing each webhook once, and then warns
// of what changed (warnings.go): an email when a webhook turns Unhealthy or
// store.Suspended, and an operational event to the account's other webhooks for
// each change. A batch that takes a webhook through several states reports
// where it ends: Healthy to store.Suspended is one suspension, and Unhealthy to
// Healthy and back to Unhealthy is no change.
//
// Webhook rows are locked in id order: two batches recorded at once by two
// processes may touch the same webhooks, and taking their locks in one
// global order means neither can hold one lock while waiting for another
// that the other holds (a deadlock PostgreSQL would break by failing one).
func (tx txn) applyHealth(ctx context.Context, effects []healthEffect, suspendAfter int, now time.Time) ([]attempt.Suspension, bool, error) {
	var order []string
	byHook := map[string][]healthEffect{}
	for _, e := range effects {
		if _, ok := byHook[e.webhookID]; !ok {
			order = append(order, e.webhookID)
		}
		byHook[e.webhookID] = append(byHook[e.webhookID], e)
	}
	slices.Sort(order)
	var suspended []attempt.Suspension
	var changes []healthChange
	for _, id := range order {
		var hook healthChange
		var status string
		var streak int
		var lastFailure sql.NullString
		var suspendedAt, remindedAt sql.NullInt64
		err := tx.QueryRow(ctx, `SELECT account_id, name, url, status, failure_streak, last_failure, suspended_at, reminded_at
FROM webhooks WHERE id = ?`+tx.ForUpdate(), id).
			Scan(&hook.accountID, &hook.name, &hook.url, &status, &streak, &lastFailure, &suspendedAt, &remindedAt)
		if errors.Is(err, sql.ErrNoRows) {
			// Deleted since the attempt: nothing to keep healthy.
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("lock webhook %s: %w", id, err)
		}
		hook.webhookID, hook.suspendAfter = id, suspendAfter
		// The transition is package health's; the queue persists its answer.
		var completions []health.Completion
		var failed *attempt.Outcome
		for _, e := range byHook[id] {
			if e.delivered {
				completions = append(completions, health.Delivered)
				continue
			}
			failed = e.outcome
			completions = append(completions, health.Failed)
		}
		answer := health.Apply(health.State{Status: store.Health(status), Streak: streak}, completions, suspendAfter)
		if !answer.Changed {
			continue
		}
		next, nextStreak := answer.State.Status, answer.State.Streak
		failure := lastFailure
		if failed != nil {
			f, err := tx.failureOf(ctx, *failed, now)
			if err != nil {
				return nil, false, err
			}
			b, _ := json.Marshal(f)
			failure = sql.NullString{String: string(b), Valid: true}
		}
		switch {
		case next != store.Suspended:
			suspendedAt, remindedAt = sql.NullInt64{}, sql.NullInt64{}
		case answer.Warning == health.BecameSuspended:
			suspendedAt, remindedAt = sql.NullInt64{Int64: store.MS(now), Valid: true}, sql.NullInt64{}
		}
		// left_healthy_at marks where its undelivered logs begin: set as it
		// leaves Healthy, kept while it stays out, cleared on its return.
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET status = ?, failure_streak = ?, last_failure = ?, suspended_at = ?, reminded_at = ?,
left_healthy_at = CASE WHEN CAST(? AS TEXT) = 'Healthy' THEN NULL ELSE COALESCE(left_healthy_at, ?) END WHERE id = ?`,
			string(next), nextStreak, failure, suspendedAt, remindedAt, string(next), store.MS(now), id); err != nil {
			return nil, false, fmt.Errorf("update health of webhook %s: %w", id, err)
		}
		hook.status, hook.streak, hook.failure = next, nextStreak, store.ParseFailure(failure)
		switch answer.Warning {
		case health.BecameSuspended:
			hook.kind = event.WebhookSuspended
			suspended = append(suspended, attempt.Suspension{AccountID: hook.accountID, WebhookID: id, Name: hook.name})
		case health.BecameUnhealthy:
			hook.kind = event.WebhookUnhealthy
		case health.Recovered:
			hook.kind = event.WebhookRecovered
		default:
			continue // a failure more while Unhealthy or Suspended
		}
		changes = append(changes, hook)
	}
	emailed, err := tx.warn(ctx, changes, now)
	if err != nil {
		return nil, false, err
	}
	return suspended, emailed, nil
}

// cleanBody keeps at most MaxResponseBody bytes of a response as valid UTF-8
// text without NUL bytes, which PostgreSQL's text type refuses.
func cleanBody(b []byte) string {
	if len(b) > attempt.MaxResponseBody {
		b = b[:attempt.MaxResponseBody]
		// Do not leave half a character at the cut.
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	return store.CleanText(string(b))
}
