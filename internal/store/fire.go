package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/tracing"
)

// Fire records an event in the transaction that made the change it reports:
// the event with its exact body, and one log for every webhook of the account
// that subscribes to kind. A log is queued when its webhook is enabled and not
// suspended, and cancelled otherwise, so that it shows and can be resent. It
// returns the event's id.
//
// The event keeps the trace context of the span active in ctx (the request
// that made the change), so that its delivery attempts, in whichever process
// and however much later, continue that trace.
func (tx *Tx) Fire(ctx context.Context, accountID string, kind event.Kind, data any) (string, error) {
	return tx.fire(ctx, accountID, kind, data, "")
}

// FireLicense is Fire for an event that concerns license licenseID (its
// own or one of its activations'): the payload's sequence is the event's
// number among that license's events (sequence.go).
func (tx *Tx) FireLicense(ctx context.Context, accountID, licenseID string, kind event.Kind, data any) (string, error) {
	ids, err := tx.fireAll(ctx, []Firing{{AccountID: accountID, License: licenseID, Kind: kind, Data: data}})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// fire is Fire leaving out the webhook except (an operational event is never
// sent to the webhook it is about; "" leaves out none).
func (tx *Tx) fire(ctx context.Context, accountID string, kind event.Kind, data any, except string) (string, error) {
	ids, err := tx.fireAll(ctx, []Firing{{AccountID: accountID, Kind: kind, Data: data, except: except}})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// FireExcept is Fire to every subscribed webhook but except: an
// operational event about a webhook goes to the account's others.
func (tx *Tx) FireExcept(ctx context.Context, accountID string, kind event.Kind, data any, except string) (string, error) {
	return tx.fire(ctx, accountID, kind, data, except)
}

// Firing is one event for FireBatch: its account, kind and data (marshalled
// as Fire marshals it).
type Firing struct {
	AccountID string
	Kind      event.Kind
	Data      any
	// License is the license the event concerns, its own or one of its
	// activations' ("" for none): the payload carries the event's number
	// among that license's events. First says the event creates the
	// license, so its number is 1.
	License string
	First   bool
	except  string // a webhook left out (see fire)
}

// FireBatch fires several events in this transaction, each as Fire would
// (the same logs for the same webhooks, filters honoured), in the order
// given: their ids, which are time-ordered, follow it. It returns the
// events' ids in that order.
//
// Its cost is a fixed number of statements however many events it fires:
// one read of the subscribed webhooks of the events' accounts, and the
// events and their logs written from one JSON argument each (one statement
// on PostgreSQL, two on SQLite). Firing n events one by one costs n times
// that. Fire is FireBatch of one.
func (tx *Tx) FireBatch(ctx context.Context, firings []Firing) ([]string, error) {
	return tx.fireAll(ctx, firings)
}

// firedEvent is an event row as writeFired inserts it.
type firedEvent struct {
	ID          string  `json:"i"`
	AccountID   string  `json:"a"`
	Kind        string  `json:"k"`
	Body        string  `json:"b"` // the exact bytes: as text on SQLite, base64 on PostgreSQL (see writeFired)
	TraceParent *string `json:"t"`
	License     *string `json:"l"`
	Sequence    *int64  `json:"q"`
	// In a batch of changes (changebatch.go): the key of the change the
	// event reports, and the account and version of the webhooks its
	// logs were decided from, which the statement must still find.
	Change      string `json:"c,omitempty"`
	SeenAccount string `json:"va,omitempty"`
	SeenVersion *int64 `json:"vv,omitempty"`
}

// firedLog is an event log row as writeFired inserts it: queued (due now)
// or cancelled (complete now, with the reason).
type firedLog struct {
	ID        string  `json:"i"`
	AccountID string  `json:"a"`
	WebhookID string  `json:"w"`
	EventID   string  `json:"e"`
	Kind      string  `json:"k"`
	Status    string  `json:"s"`
	Reason    *string `json:"r"`
	// Undelivered is the firing's time for a log cancelled because its
	// webhook is suspended, which counts as undelivered (undelivered_at,
	// migration 0060); nil for any other.
	Undelivered *int64 `json:"u"`
	// Change is the key of the change the log's event reports, in a batch
	// of changes (changebatch.go).
	Change string `json:"c,omitempty"`
}

// fireAll builds each event's body, decides its logs from the subscribed
// webhooks (fireTargets) and writes them (writeFired).
func (tx *Tx) fireAll(ctx context.Context, firings []Firing) ([]string, error) {
	if len(firings) == 0 {
		return nil, nil
	}
	p, err := tx.prepareFired(ctx, firings, tx.Now())
	if err != nil {
		return nil, err
	}
	if err := tx.writeFired(ctx, p.events, p.logs, p.reserved, p.now); err != nil {
		if len(p.reserved) > 0 {
			// A change's statement, run outside a transaction block
			// (ChangeAndFire), may have committed before its answer was
			// lost; within a transaction nothing is committed yet.
			tx.handoff.h.Abandon(p.reserved, tx.change != nil && !isServerError(err))
		}
		return nil, err
	}
	tx.written(firings, p)
	return p.ids, nil
}

// prepared is what firing writes, decided and not yet written: the events
// (ids in the firings' order), their logs, and the logs reserved to hand
// over.
type prepared struct {
	now      time.Time
	ids      []string
	events   []firedEvent
	logs     []firedLog
	reserved []Claim
}

// prepareFired builds each event's body at now and decides its logs from
// the subscribed webhooks (fireTargets), reserving those to hand over.
func (tx *Tx) prepareFired(ctx context.Context, firings []Firing, now time.Time) (prepared, error) {
	traceParent := nullable(tracing.TraceParent(ctx))
	ids := make([]string, len(firings))
	bodies := make([][]byte, len(firings))
	events := make([]firedEvent, len(firings))
	seqs, err := tx.sequences(ctx, firings)
	if err != nil {
		return prepared{}, err
	}
	for i, f := range firings {
		ids[i] = NewIDAt(now)
		body, err := event.BuildSequenced(ids[i], f.Kind, f.Data, now, seqs[i])
		if err != nil {
			return prepared{}, err
		}
		bodies[i] = body
		events[i] = firedEvent{ID: ids[i], AccountID: f.AccountID, Kind: string(f.Kind), TraceParent: traceParent}
		if seqs[i] > 0 {
			events[i].License, events[i].Sequence = &firings[i].License, &seqs[i]
		}
		if tx.s.eng.name() == "postgres" {
			events[i].Body = base64.StdEncoding.EncodeToString(body)
		} else {
			events[i].Body = string(body)
		}
	}
	logs, targets, err := tx.fireTargets(ctx, firings, ids, bodies, now)
	if err != nil {
		return prepared{}, err
	}
	var reserved []Claim
	if targets != nil {
		byEvent := make(map[string][]byte, len(ids))
		for i, id := range ids {
			byEvent[id] = bodies[i]
		}
		if reserved, err = tx.reserve(logs, targets, byEvent, traceParent, now); err != nil {
			return prepared{}, err
		}
	}
	return prepared{now: now, ids: ids, events: events, logs: logs, reserved: reserved}, nil
}

// written notes what p's firings wrote: their kinds, and whether a log
// is left in the queue to claim (a log handed over needs no claim: only
// those left wake this process's dispatcher and the others').
func (tx *Tx) written(firings []Firing, p prepared) {
	for _, f := range firings {
		tx.kinds = append(tx.kinds, f.Kind)
	}
	queued := 0
	for _, l := range p.logs {
		if l.Status == string(Queued) {
			queued++
		}
	}
	if queued > len(p.reserved) {
		tx.fired = true
	}
}

// Statements that write fired events and their logs. A queued log is due
// now, and gets its row in delivery_queue (in the same statement on
// PostgreSQL, queueFiredLogsSQLite on SQLite); a cancelled one
// is complete now. insertFiredLogs is the one INSERT
// of logs at firing, for both engines (on PostgreSQL after the events'
// INSERT in the same statement): a change to what firing writes per log
// goes there.
const (
	insertFiredLogs = `INSERT INTO webhook_event_logs
(id, account_id, webhook_id, event_id, kind, status, due_at, retry_reason, created_at, updated_at, completed_at, undelivered_at)
SELECT value ->> 'i', value ->> 'a', value ->> 'w', value ->> 'e', value ->> 'k', value ->> 's',
       CASE WHEN value ->> 's' = 'queued' THEN CAST(? AS BIGINT) END, value ->> 'r', CAST(? AS BIGINT), CAST(? AS BIGINT),
       CASE WHEN value ->> 's' = 'queued' THEN NULL ELSE CAST(? AS BIGINT) END, CAST(value ->> 'u' AS BIGINT)
FROM json_rows(?)`
	queueFiredLogsSQLite = `INSERT INTO delivery_queue (log_id, webhook_id, due_at, ordering_key, sequence)
SELECT l.log_id, l.webhook_id, CAST(? AS BIGINT), ` + orderedKey + `, ` + orderedSequence + `
FROM (SELECT value ->> 'i' AS log_id, value ->> 'w' AS webhook_id, value ->> 'e' AS event_id FROM json_rows(?) WHERE value ->> 's' = 'queued') l
LEFT JOIN events e ON e.id = l.event_id`
	// queueHandedSQLite is queueFiredLogsSQLite leasing the logs handed
	// over, as queueHandedPostgres does.
	queueHandedSQLite = `INSERT INTO delivery_queue (log_id, webhook_id, due_at, lease, lease_until, claimed_at, ordering_key, sequence)
SELECT l.log_id, l.webhook_id, l.due_at, CASE WHEN take THEN CAST(? AS TEXT) END, CASE WHEN take THEN CAST(? AS BIGINT) END,
  CASE WHEN take THEN l.due_at END, ` + orderedKey + `, ` + orderedSequence + `
FROM (SELECT g.value ->> 'i' AS log_id, g.value ->> 'w' AS webhook_id, g.value ->> 'e' AS event_id, CAST(? AS BIGINT) AS due_at,
  g.value ->> 'i' IN (SELECT value FROM json_texts(?)) AS take
  FROM json_rows(?) g WHERE g.value ->> 's' = 'queued') l
LEFT JOIN events e ON e.id = l.event_id`
	insertFiredEventsSQLite = `INSERT INTO events (id, account_id, kind, body, triggered_at, trace_parent, license_id, sequence)
SELECT value ->> 'i', value ->> 'a', value ->> 'k', CAST(value ->> 'b' AS BLOB), CAST(? AS BIGINT), value ->> 't',
  value ->> 'l', CAST(value ->> 'q' AS BIGINT)
FROM json_rows(?)`
	// PostgreSQL: the events and the logs in data-modifying WITHs, so
	// events, logs and queue rows cost one round trip (firedStatement).
	// The logs' foreign key to their event is checked at the end of the
	// statement, when the events are in.
	insertFiredEventsPostgres = `INSERT INTO events (id, account_id, kind, body, triggered_at, trace_parent, license_id, sequence)
  SELECT value ->> 'i', value ->> 'a', value ->> 'k', decode(value ->> 'b', 'base64'), CAST(? AS BIGINT), value ->> 't',
    value ->> 'l', CAST(value ->> 'q' AS BIGINT)
  FROM json_rows(?)`
	queueFiredPostgres = `INSERT INTO delivery_queue (log_id, webhook_id, due_at, ordering_key, sequence)
SELECT l.id, l.webhook_id, l.due_at, ` + orderedKey + `, ` + orderedSequence + `
FROM logs l LEFT JOIN ev e ON e.id = l.event_id WHERE l.status = 'queued'`
	// A queued log whose id is in the handed list (handoff.go) is leased
	// in its queue row as a claim would lease it (lease, lease_until,
	// claimed_at). Which logs may be handed over is the dispatcher's to
	// say (its room, and whether the webhook may have an older log
	// waiting): the statement reads no other row, so no plan it keeps can
	// cost more than the rows it writes.
	handedPostgres = `queued AS (
  SELECT id, webhook_id, due_at, event_id, id IN (SELECT value FROM json_texts(?)) AS take FROM logs WHERE status = 'queued')`
	queueHandedPostgres = `INSERT INTO delivery_queue (log_id, webhook_id, due_at, lease, lease_until, claimed_at, ordering_key, sequence)
SELECT l.id, l.webhook_id, l.due_at, CASE WHEN take THEN CAST(? AS TEXT) END, CASE WHEN take THEN CAST(? AS BIGINT) END,
  CASE WHEN take THEN l.due_at END, ` + orderedKey + `, ` + orderedSequence + `
FROM queued l LEFT JOIN ev e ON e.id = l.event_id`
)

// PostgreSQL's firing statements, plain and handing logs over.
var (
	insertFiredPostgres        = firedStatement("", false, false)
	insertFiredHandingPostgres = firedStatement("", true, false)
)

// changed is the condition on which a ChangeAndFire's statement writes
// anything besides its change: the change returned a row.
const changed = "EXISTS (SELECT 1 FROM change)"

// firedStatement is PostgreSQL's one statement that writes fired events,
// their logs and the queued logs' queue rows, handing logs over or not.
// Given the WITHs of a change (ChangeAndFire: one named change, which
// returns a row when it was made), the statement makes them first, writes
// the rest only when the change was made, and answers with the number of
// rows it returned; their ? placeholders come first. With unchanged, the
// events are written only while the account's webhooks are at the version
// the firing read them at (two more placeholders, the account and the
// version, after the events'): otherwise the statement fails whole
// (decision 0109).
func firedStatement(change string, handing, unchanged bool) string {
	var b strings.Builder
	b.WriteString("WITH ")
	gate, evGate := "", ""
	if change != "" {
		b.WriteString(change + ", ")
		gate = "\n  WHERE " + changed
		evGate = gate
		if unchanged {
			evGate += "\n    AND ((SELECT webhooks_version FROM accounts WHERE id = CAST(? AS TEXT)) = CAST(? AS BIGINT) OR herald_webhooks_stale())"
		}
	}
	b.WriteString("ev AS (\n  " + insertFiredEventsPostgres + evGate + "\n  RETURNING id, license_id, sequence\n), logs AS (\n" + insertFiredLogs + gate +
		"\n  RETURNING id, webhook_id, event_id, due_at, status\n)")
	queue := queueFiredPostgres
	if handing {
		b.WriteString(", " + handedPostgres)
		queue = queueHandedPostgres
	}
	if change == "" {
		b.WriteString("\n" + queue)
		return b.String()
	}
	b.WriteString(", queue AS (\n" + queue + "\n)\n" + changeCount)
	return b.String()
}

// changeCount ends a statement that makes a change first: how many rows
// the change returned.
const changeCount = "SELECT count(*) FROM change"

// tokenCheckedCount is changeCount checking a kept API token too
// (kepttoken.go): the check is in the result's one row, which is computed
// whatever the change did, so that a refused token learns nothing, not
// even whether a license's key was taken. CASE evaluates its second
// condition only when the first is false: herald_api_token_refused
// (migration 0091) then fails the statement, nothing written.
const tokenCheckedCount = `SELECT (SELECT count(*) FROM change) + CASE WHEN EXISTS (SELECT 1 FROM api_tokens
  WHERE id = CAST(? AS TEXT) AND account_id = CAST(? AS TEXT) AND (expires_at IS NULL OR expires_at > CAST(? AS BIGINT)))
  THEN 0 WHEN herald_api_token_refused() THEN 0 END`

// writeFired inserts events and their logs, each set from one JSON
// argument, so that the statements' text is the same for any number. The
// body goes into the JSON as text on SQLite (CAST AS BLOB keeps its bytes)
// and as base64 on PostgreSQL (decoded to the same bytes whatever the
// server's encoding).
//
// reserved are the claims of logs to hand over, which it leases.
func (tx *Tx) writeFired(ctx context.Context, events []firedEvent, logs []firedLog, reserved []Claim, now time.Time) error {
	evArg, err := JSONRows(events)
	if err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	if logs == nil {
		logs = []firedLog{}
	}
	t := ms(now)
	markUndelivered(logs, t)
	logArg, err := JSONRows(logs)
	if err != nil {
		return fmt.Errorf("insert event logs: %w", err)
	}
	if tx.s.eng.name() == "postgres" {
		if tx.change != nil {
			return tx.writeFiredAfterChange(ctx, evArg, logArg, reserved, now)
		}
		if len(reserved) > 0 {
			return tx.writeFiredHanding(ctx, evArg, logArg, reserved, now)
		}
		if _, err := tx.Exec(ctx, insertFiredPostgres, t, evArg, t, t, t, t, logArg); err != nil {
			return fmt.Errorf("insert events and logs: %w", err)
		}
		return nil
	}
	if _, err := tx.Exec(ctx, insertFiredEventsSQLite, t, evArg); err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	if len(logs) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, insertFiredLogs, t, t, t, t, logArg); err != nil {
		return fmt.Errorf("insert event logs: %w", err)
	}
	if len(reserved) == 0 {
		if _, err := tx.Exec(ctx, queueFiredLogsSQLite, t, logArg); err != nil {
			return fmt.Errorf("queue event logs: %w", err)
		}
		return nil
	}
	handed := make([]string, len(reserved))
	for i, c := range reserved {
		handed[i] = c.LogID
	}
	if _, err := tx.Exec(ctx, queueHandedSQLite, tx.handoff.lease, ms(tx.handoff.h.LeaseUntil(now)), t, JSONTexts(handed), logArg); err != nil {
		return fmt.Errorf("queue event logs: %w", err)
	}
	tx.handoff.handed = append(tx.handoff.handed, reserved...)
	return nil
}

// markUndelivered gives each log cancelled in a way that counts as
// undelivered the firing's time t.
func markUndelivered(logs []firedLog, t int64) {
	for i, l := range logs {
		if l.Reason != nil && attempt.Undelivered(*l.Reason) {
			logs[i].Undelivered = &t
		}
	}
}

// writeFiredHanding is writeFired's statement on PostgreSQL when logs are
// to be handed over: the same rows, the reserved logs' queue rows leased.
func (tx *Tx) writeFiredHanding(ctx context.Context, evArg, logArg string, reserved []Claim, now time.Time) error {
	t := ms(now)
	if _, err := tx.Exec(ctx, insertFiredHandingPostgres, tx.handing(t, evArg, logArg, reserved, now)...); err != nil {
		return fmt.Errorf("insert events and logs: %w", err)
	}
	tx.handoff.handed = append(tx.handoff.handed, reserved...)
	return nil
}

// handing is the arguments of insertFiredHandingPostgres, handing reserved
// over.
func (tx *Tx) handing(t int64, evArg, logArg string, reserved []Claim, now time.Time) []any {
	handed := make([]string, len(reserved))
	for i, c := range reserved {
		handed[i] = c.LogID
	}
	return []any{t, evArg, t, t, t, t, logArg, JSONTexts(handed), tx.handoff.lease, ms(tx.handoff.h.LeaseUntil(now))}
}

// nullable stores "" as NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func subscribes(kinds []event.Kind, k event.Kind) bool {
	for _, e := range kinds {
		if e == k {
			return true
		}
	}
	return false
}

// Reasons a log was cancelled when its event fired.
const (
	ReasonDisabled  = "webhook disabled when the event fired; no delivery attempted"
	ReasonSuspended = "webhook suspended when the event fired; no automatic delivery (resend to deliver)"
	// ReasonSuspendedBefore is attempt's.
	ReasonSuspendedBefore = attempt.ReasonSuspendedBefore
)
