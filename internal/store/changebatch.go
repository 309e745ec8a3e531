package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// ChangeBatch is a change written over a set, so that the changes of
// concurrent ChangeAndFire calls on PostgreSQL can share one statement
// (decision 0112). SQL reads the changes from a WITH named changes, whose
// columns are Columns (a column definition list, as jsonb_to_recordset
// takes it) and whose one row per change is Row with those names; it takes
// no placeholders, and returns each change it made as Key in a column named
// id. The Change's own SQL and Args make the same change alone, as on
// SQLite, with an idempotency key, or after a shared statement failed.
type ChangeBatch struct {
	SQL, Columns string
	Row          map[string]any
	Key          string
}

// Shared statements: how many run at once, and how many changes one takes
// at most. Changes that arrive while the statements run wait for the next,
// which takes them all: under load a statement carries as many changes as
// came during the last, and alone a change runs at once, as before. Two at
// once keep PostgreSQL's two-core hosts busy without splitting the
// batches; the cap bounds one statement's argument and its time.
const (
	changeBatchesAtOnce = 2
	changeBatchMax      = 64
)

// changeBatcher gathers the changes waiting for a shared statement.
type changeBatcher struct {
	mu      sync.Mutex
	waiting []*batchedChange
	running int
	// atOnce is changeBatchesAtOnce, which a test may lower.
	atOnce int
	// ran counts the rounds run, a lone change's included (for tests).
	ran int
}

// batchedChange is one ChangeAndFire call waiting for its statement.
type batchedChange struct {
	ctx    context.Context
	change Change
	f      Firing
	token  *TokenCheck
	done   chan batchResult
	// answered is set once done has its answer; only the round that took
	// the change reads or sets it.
	answered bool
}

// answer gives the change's caller its answer, once.
func (c *batchedChange) answer(r batchResult) {
	if !c.answered {
		c.answered = true
		c.done <- r
	}
}

// batchResult is a batched change's answer: made, or an error, or alone
// (the shared statement could not carry it and wrote nothing of it: it is
// made again by itself).
type batchResult struct {
	made  bool
	err   error
	alone bool
}

// changeInBatch makes change and fires f in a statement shared with the
// changes of other calls waiting at the same time. alone says that it did
// not, having written nothing: the caller makes the change by itself.
func (s *Store) changeInBatch(ctx context.Context, change Change, f Firing) (made, alone bool, err error) {
	c := &batchedChange{ctx: context.WithoutCancel(ctx), change: change, f: f, token: tokenCheckFrom(ctx), done: make(chan batchResult, 1)}
	b := &s.changeBatches
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	lead := b.running < b.atOnce
	if lead {
		b.running++
	}
	b.mu.Unlock()
	if lead {
		// This caller runs the first round itself: a change alone goes
		// from its request to its statement with no other goroutine.
		s.leadRound()
	}
	// The shared statement runs under its own deadline, whatever this
	// caller's context does: it carries others' changes, and this one's
	// outcome must be known before it is answered.
	r := <-c.done
	return r.made, r.alone, r.err
}

// leadRound runs one round on the caller's goroutine, holding a place
// among the statements at once, and hands the place on to leadBatches.
func (s *Store) leadRound() {
	if s.round() {
		go s.leadBatches()
	}
}

// leadBatches runs rounds while changes wait, holding a place among the
// statements at once, and gives it back.
func (s *Store) leadBatches() {
	for s.round() {
	}
}

// round runs the next round, holding a place among the statements at
// once; with no change waiting (taken meanwhile by a round already
// running) it gives the place back and says so.
func (s *Store) round() bool {
	b := &s.changeBatches
	b.mu.Lock()
	if len(b.waiting) == 0 {
		b.running--
		b.mu.Unlock()
		return false
	}
	take := b.takeLocked()
	b.mu.Unlock()
	s.runRound(take)
	return true
}

// runRound runs a round's statement. A panic in it (none is expected)
// answers the round's changes not yet answered with an error, rather than
// leaving their callers waiting for ever, and the round's place goes on to
// the next round, rather than being lost with the goroutine that held it.
func (s *Store) runRound(take []*batchedChange) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("shared statement panicked; its changes not yet answered fail (they may have been made)",
				"panic", p, "stack", string(debug.Stack()))
			for _, c := range take {
				c.answer(batchResult{err: fmt.Errorf("shared statement: panic: %v", p)})
			}
		}
	}()
	s.runBatch(take)
}

// takeLocked takes the changes of the next round from those waiting, of
// which there is one at least, b.mu held: the first waiting change's SQL
// (with or without expiries), with every waiting change of the same up to
// the cap. A change whose key one taken already has waits for the next:
// the statement tells its changes apart by their keys.
func (b *changeBatcher) takeLocked() []*batchedChange {
	k := batchKeyOf(b.waiting[0].change)
	var take, rest []*batchedChange
	keys := map[string]bool{}
	for _, c := range b.waiting {
		if batchKeyOf(c.change) == k && len(take) < changeBatchMax && !keys[c.change.Batch.Key] {
			take = append(take, c)
			keys[c.change.Batch.Key] = true
		} else {
			rest = append(rest, c)
		}
	}
	b.waiting = rest
	b.ran++
	return take
}

// batchItem is a batched change as its statement is built: its Tx (its
// handoff, its webhooks' version) and what its firing writes.
type batchItem struct {
	c       *batchedChange
	tx      *Tx
	p       prepared
	settled bool // its reservations taken or given back
}

// runBatch makes the changes of take in one statement and answers each.
// A change that found none waiting beside it is made alone, by the
// statement written for one, which costs PostgreSQL less than a set of
// one; it holds its place among the statements at once all the same.
//
// Both run on the shared statements' own connections, whose statements
// give up a wait for a lock after changeLockTimeout, writing nothing: a
// change that waits on a row another transaction holds (a product being
// deleted with its many licenses, say) is then made alone by its caller,
// on the API's connections, outside the places, and waits there, while
// the other accounts' changes go on.
func (s *Store) runBatch(take []*batchedChange) {
	if len(take) == 1 {
		c := take[0]
		ctx, cancel := context.WithTimeout(context.WithValue(c.ctx, changeLane{}, true), batchTimeout)
		made, err := s.changeAlone(ctx, c.change, c.f)
		cancel()
		if isLockTimeout(err) {
			c.answer(batchResult{alone: true})
			return
		}
		c.answer(batchResult{made: made, err: err})
		return
	}
	now := s.now()
	t := ms(now)
	h := s.handoffNow()
	var items []batchItem
	for _, c := range take {
		tx := &Tx{s: s, run: s.writer, change: &c.change, token: c.token}
		if h != nil {
			tx.handoff = &handoffState{h: h}
		}
		p, err := tx.prepareFired(c.ctx, []Firing{c.f}, now)
		if err != nil {
			c.answer(batchResult{alone: true})
			continue
		}
		items = append(items, batchItem{c: c, tx: tx, p: p})
	}
	if len(items) == 0 {
		return
	}
	// A panic (none is expected) leaves the reservations not yet taken or
	// given back to the dispatcher, whose slots they hold: they are given
	// back, their logs released in case the statement committed, before
	// runRound answers the changes.
	defer func() {
		if p := recover(); p != nil {
			for _, it := range items {
				if !it.settled && len(it.p.reserved) > 0 {
					it.tx.handoff.h.Abandon(it.p.reserved, true)
				}
			}
			panic(p)
		}
	}()
	made, ok, err := s.writeBatch(items, t)
	wrote := false
	for i := range items {
		it := &items[i]
		tx, reserved := it.tx, it.p.reserved
		switch {
		case err != nil && (isServerError(err) || errors.As(err, new(notSent))):
			// Nothing committed: each change is made again by itself,
			// which reads what failed this one (a webhook or product
			// deleted, webhooks changed) as it does alone.
			if len(reserved) > 0 {
				tx.handoff.h.Abandon(reserved, false)
			}
			it.settled = true
			it.c.answer(batchResult{alone: true})
			continue
		case err != nil:
			if len(reserved) > 0 {
				tx.handoff.h.Abandon(reserved, true)
			}
			it.settled = true
			it.c.answer(batchResult{err: s.full(err)})
			continue
		}
		if tx.token != nil && ok[i] {
			tx.token.made.Store(true)
		}
		if !made[i] {
			if len(reserved) > 0 {
				tx.handoff.h.Abandon(reserved, false)
			}
			it.settled = true
			if !ok[i] {
				it.c.answer(batchResult{err: ErrAPITokenRefused})
			} else {
				it.c.answer(batchResult{})
			}
			continue
		}
		if len(reserved) > 0 {
			tx.handoff.handed = append(tx.handoff.handed, reserved...)
		}
		wrote = true
		tx.written([]Firing{it.c.f}, it.p)
		tx.endHandoff(true, false)
		it.settled = true
		s.firedKinds(tx.kinds)
		if tx.fired {
			s.wake()
			s.eng.announce()
		}
		it.c.answer(batchResult{made: true})
	}
	if wrote {
		s.wrote()
	}
}

// writeBatch runs the shared statement of items, whose firings were
// prepared at t, and says for each whether its change was made and
// whether its API token, if it carries one, was valid.
func (s *Store) writeBatch(items []batchItem, t int64) (made, ok []bool, err error) {
	var rows []map[string]any
	var events []firedEvent
	var logs []firedLog
	type handed struct {
		Log   string `json:"i"`
		Lease string `json:"l"`
		Until int64  `json:"u"`
	}
	hand := []handed{}
	for i, it := range items {
		b := it.c.change.Batch
		row := make(map[string]any, len(b.Row)+4)
		for k, v := range b.Row {
			row[k] = v
		}
		row["herald_item"], row["herald_key"] = i, b.Key
		if c := it.c.token; c != nil {
			row["herald_token"], row["herald_token_account"] = c.tokenID, c.accountID
		}
		if e := it.c.change.Expiry; e != nil {
			row["herald_expiry_license"], row["herald_expiry_account"], row["herald_expiry_at"] = e.LicenseID, e.AccountID, ms(e.ExpiresAt)
		}
		rows = append(rows, row)
		for _, e := range it.p.events {
			e.Change = b.Key
			if seen := it.tx.seen; seen != nil {
				v := seen.version
				e.SeenAccount, e.SeenVersion = seen.account, &v
			}
			events = append(events, e)
		}
		markUndelivered(it.p.logs, t)
		for _, l := range it.p.logs {
			l.Change = b.Key
			logs = append(logs, l)
		}
		for _, c := range it.p.reserved {
			hand = append(hand, handed{c.LogID, it.tx.handoff.lease, ms(it.tx.handoff.h.LeaseUntil(it.p.now))})
		}
	}
	rowArg, err := json.Marshal(rows)
	if err != nil {
		return nil, nil, notSent{fmt.Errorf("batch changes: %w", err)}
	}
	evArg, err := JSONRows(events)
	if err != nil {
		return nil, nil, notSent{fmt.Errorf("insert events: %w", err)}
	}
	if logs == nil {
		logs = []firedLog{}
	}
	logArg, err := JSONRows(logs)
	if err != nil {
		return nil, nil, notSent{fmt.Errorf("insert event logs: %w", err)}
	}
	handArg, err := json.Marshal(hand)
	if err != nil {
		return nil, nil, notSent{fmt.Errorf("hand over logs: %w", err)}
	}
	if h := s.beforeChange; h != nil {
		h()
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	q := batchStatement(batchKeyOf(items[0].c.change))
	res, err := s.changeDB.QueryContext(ctx, s.q(q), t, string(rowArg), t, evArg, t, t, t, t, logArg, string(handArg))
	if err != nil {
		return nil, nil, fmt.Errorf("change and insert events and logs: %w", err)
	}
	defer res.Close()
	made, ok = make([]bool, len(items)), make([]bool, len(items))
	for res.Next() {
		var i int
		var m, k bool
		if err := res.Scan(&i, &m, &k); err != nil {
			return nil, nil, fmt.Errorf("change and insert events and logs: %w", err)
		}
		if i >= 0 && i < len(items) {
			made[i], ok[i] = m, k
		}
	}
	if err := res.Err(); err != nil {
		return nil, nil, fmt.Errorf("change and insert events and logs: %w", err)
	}
	return made, ok, nil
}

// notSent is an error met before a shared statement was sent: nothing of
// it can have been written.
type notSent struct{ err error }

func (e notSent) Error() string { return e.err.Error() }
func (e notSent) Unwrap() error { return e.err }

// batchTimeout bounds a statement that holds a place among those at once,
// which no one caller's context may cancel.
const batchTimeout = 30 * time.Second

// changeLockTimeout is how long a statement on the shared statements'
// connections waits for a lock (lock_timeout) before it gives up, writing
// nothing, and its changes are made alone: far beyond what one takes
// (a shared statement of 64 licenses runs in about 10 ms), and short
// enough that a change held up by one account's long transaction does not
// hold up the others'.
const changeLockTimeout = 100 * time.Millisecond

// isLockTimeout says whether err is PostgreSQL's lock_not_available
// (SQLSTATE 55P03), which lock_timeout raises.
func isLockTimeout(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && pg.SQLState() == "55P03"
}

// batchStatements holds batchStatement's text for each batchKey.
var batchStatements sync.Map // batchKey -> string

// batchKey is what the changes sharing a statement share: their SQL, and
// whether they plan a license's expiry (Change.Expiry).
type batchKey struct {
	sql, columns string
	expiry       bool
}

func batchKeyOf(c Change) batchKey { return batchKey{c.Batch.SQL, c.Batch.Columns, c.Expiry != nil} }

// batchStatement is the shared statement of changes written as b is: the
// changes (their API tokens checked, each change's row left out when its
// token is not valid), then the events, logs and queue rows of the changes
// made, as firedStatement writes one change's. Its result is one row per
// change: its index, whether it was made, whether its token was valid.
// An event's logs were decided from its account's webhooks at a version
// the statement must still find, or it fails whole (decision 0109), and
// each change is made again by itself.
func batchStatement(k batchKey) string {
	if v, ok := batchStatements.Load(k); ok {
		return v.(string)
	}
	var q strings.Builder
	q.WriteString(`WITH given AS MATERIALIZED (
  SELECT r.*, (r.herald_token IS NULL OR EXISTS (SELECT 1 FROM api_tokens t
    WHERE t.id = r.herald_token AND t.account_id = r.herald_token_account
      AND (t.expires_at IS NULL OR t.expires_at > CAST(? AS BIGINT)))) AS herald_ok
  FROM jsonb_to_recordset(CAST(? AS jsonb)) AS r(` + k.columns + `,
    herald_item INT, herald_key TEXT, herald_token TEXT, herald_token_account TEXT,
    herald_expiry_license TEXT, herald_expiry_account TEXT, herald_expiry_at BIGINT)
), changes AS (SELECT * FROM given WHERE herald_ok
), change AS (
` + k.sql + `
)`)
	if k.expiry {
		q.WriteString(`, expiry AS (
` + planExpiries(`(SELECT herald_expiry_license AS license_id, herald_expiry_account AS account_id,
  herald_expiry_at AS expires_at, herald_key FROM changes) AS v`, `v.herald_key IN (SELECT id FROM change)`) + `
)`)
	}
	q.WriteString(`, ev AS (
  ` + insertFiredEventsPostgres + `
  WHERE value ->> 'c' IN (SELECT id FROM change)
    AND (value ->> 'va' IS NULL
      OR (SELECT webhooks_version FROM accounts WHERE id = value ->> 'va') = CAST(value ->> 'vv' AS BIGINT)
      OR herald_webhooks_stale())
  RETURNING id, license_id, sequence
), logs AS (
` + insertFiredLogs + `
  WHERE value ->> 'c' IN (SELECT id FROM change)
  RETURNING id, webhook_id, event_id, due_at, status
), queue AS (
INSERT INTO delivery_queue (log_id, webhook_id, due_at, lease, lease_until, claimed_at, ordering_key, sequence)
SELECT l.id, l.webhook_id, l.due_at, h.value ->> 'l', CAST(h.value ->> 'u' AS BIGINT),
  CASE WHEN h.value IS NOT NULL THEN l.due_at END, ` + orderedKey + `, ` + orderedSequence + `
FROM logs l LEFT JOIN json_rows(?) h ON h.value ->> 'i' = l.id LEFT JOIN ev e ON e.id = l.event_id
WHERE l.status = 'queued'
)
SELECT herald_item, herald_key IN (SELECT id FROM change), herald_ok FROM given`)
	batchStatements.Store(k, q.String())
	return q.String()
}
