package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/filter"
	"github.com/heraldhq/herald/internal/jsonlimit"
)

// target is a webhook that may get a log of an event being fired.
type target struct {
	id       string
	account  string
	kinds    []event.Kind
	live     bool   // enabled and not suspended: its log is queued
	reason   string // else why its log is cancelled
	filter   *filter.Filter
	filtered bool // it has a filter that parses (one that does not leaves it in)

	// What an attempt needs of the webhook, read only when the firing may
	// hand its logs over (handoff.go): as a claim reads it (claimColumns).
	health                      string
	url, scheme                 string
	sealed, nextSealed, headers []byte
	rotationEnds                sql.NullInt64
	rate                        int64
	retry                       sql.NullString
	ordering                    string // OrderingLicense: never handed over (ordering.go)
}

// fireTargets decides the logs of events being fired (ids and bodies, in
// firings' order): for each event, one per webhook of its account that
// subscribes to its kind, in webhook id order, except a webhook whose
// filter the event's body fails (as if it did not subscribe) and the one
// the firing leaves out. One read serves the whole batch: the accounts'
// webhooks whose events may name a kind of the batch (a LIKE on the stored
// JSON array, checked exactly here), locked FOR KEY SHARE in id order, so
// that a webhook deleted meanwhile is waited for and then left out rather
// than failing the change on its logs' foreign key. Filters are parsed once
// per batch and evaluated here, in Go (internal/filter). Where the firing
// may hand its logs over (handoff.go) the same read also takes what their
// attempts need of each webhook, and the webhooks are returned by id. A
// change and its event on PostgreSQL (ChangeAndFire) read nothing when the
// process kept the set from an earlier read; its statement checks that the
// webhooks have not changed since (changeTargets, decision 0109).
//
// A stored filter that no longer parses (none should: each is parsed
// before it is saved) leaves its webhook in, so that a bug can cost a
// receiver an unwanted delivery but never a lost one.
func (tx *Tx) fireTargets(ctx context.Context, firings []Firing, ids []string, bodies [][]byte, now time.Time) ([]firedLog, map[string]*target, error) {
	var accounts, kinds []string
	seenAccount, seenKind := map[string]bool{}, map[event.Kind]bool{}
	for _, f := range firings {
		if !seenAccount[f.AccountID] {
			seenAccount[f.AccountID] = true
			accounts = append(accounts, f.AccountID)
		}
		if !seenKind[f.Kind] {
			seenKind[f.Kind] = true
			kinds = append(kinds, string(f.Kind))
		}
	}
	// One account (Fire, and most batches) is read by equality, which
	// PostgreSQL always plans through webhooks_account; a list of accounts
	// may be planned as a scan of the webhooks, once per batch.
	accountCond, accountArg := `account_id = ?`, accounts[0]
	if len(accounts) > 1 {
		accountCond, accountArg = `account_id IN (SELECT value FROM json_texts(?))`, JSONTexts(accounts)
	}
	// Kinds hold no LIKE wildcard (% _) nor quote, so the pattern matches
	// every array that names the kind, and perhaps more, which the exact
	// check below leaves out.
	columns := targetColumns
	if tx.handoff != nil {
		columns += `, ` + handoffColumns
	}
	// A change made in one statement (ChangeAndFire) reads its webhooks
	// before it and outside any transaction, where a lock would end with
	// the read: a webhook deleted meanwhile fails its statement on the
	// logs' foreign key instead, and the change is made again.
	lock := tx.ForKeyShare()
	if tx.change != nil {
		lock = ""
	}
	var all []*target
	var err error
	if tx.change != nil && len(accounts) == 1 && !tx.uncached {
		all, err = tx.changeTargets(ctx, accounts[0], kinds, columns)
	} else {
		all, err = tx.readTargets(ctx, accountCond, accountArg, kinds, columns, lock, nil)
	}
	if err != nil {
		return nil, nil, err
	}
	hooks := map[string][]*target{}
	var byID map[string]*target
	for _, t := range all {
		hooks[t.account] = append(hooks[t.account], t)
		if tx.handoff != nil {
			if byID == nil {
				byID = map[string]*target{}
			}
			byID[t.id] = t
		}
	}
	var logs []firedLog
	for i, f := range firings {
		var payload any // the body decoded, once, for the first filter
		decoded, n := false, 0
		for _, t := range hooks[f.AccountID] {
			if t.id == f.except || !subscribes(t.kinds, f.Kind) {
				continue
			}
			if t.filtered {
				if !decoded {
					if payload, err = filter.Decode(bodies[i]); err != nil {
						return nil, nil, fmt.Errorf("read event body for filters: %w", err)
					}
					decoded = true
				}
				if !t.filter.MatchValue(payload) {
					continue
				}
			}
			l := firedLog{ID: LogIDOf(ids[i], n), AccountID: f.AccountID, WebhookID: t.id, EventID: ids[i], Kind: string(f.Kind), Status: string(Queued)}
			if !t.live {
				reason := t.reason
				l.Status, l.Reason = string(Cancelled), &reason
			}
			logs = append(logs, l)
			n++
		}
	}
	return logs, byID, nil
}

// The columns of a webhook a firing reads: targetColumns always, and
// handoffColumns too when it hands its first attempts over. On PostgreSQL
// a change to any of them moves the account's webhooks_version (migration
// 0146's trigger), so that no process fires from a set it kept
// (webhookset.go) that no longer holds; a test holds the trigger's list to
// these.
const (
	targetColumns  = `id, account_id, events, enabled, status, filter`
	handoffColumns = `url, token_sealed, next_token_sealed, rotation_ends_at, headers_sealed, signature_scheme, rate_limit, retry_policy, ordering`
)

// readTargets reads the webhooks of accounts (accountCond, accountArg) that
// may subscribe to kinds, in id order, with columns and lock. Given version,
// it also reads the account's webhooks_version into it, in the same
// statement (one account only).
func (tx *Tx) readTargets(ctx context.Context, accountCond string, accountArg any, kinds []string, columns, lock string, version *int64) ([]*target, error) {
	args := []any{accountArg, JSONTexts(kinds)}
	if version != nil {
		columns = `(SELECT webhooks_version FROM accounts WHERE id = ?), ` + columns
		args = append([]any{accountArg}, args...)
	}
	rows, err := tx.Query(ctx, `SELECT `+columns+` FROM webhooks
WHERE `+accountCond+`
  AND EXISTS (SELECT 1 FROM json_texts(?) k WHERE webhooks.events LIKE '%"' || k.value || '"%')
ORDER BY id`+lock, args...)
	if err != nil {
		return nil, fmt.Errorf("match webhooks: %w", err)
	}
	defer rows.Close()
	var all []*target
	for rows.Next() {
		t := &target{}
		var events string
		var enabled bool
		var text sql.NullString
		var rate sql.NullInt64
		dest := []any{&t.id, &t.account, &events, &enabled, &t.health, &text}
		if version != nil {
			dest = append([]any{version}, dest...)
		}
		if tx.handoff != nil {
			dest = append(dest, &t.url, &t.sealed, &t.nextSealed, &t.rotationEnds, &t.headers, &t.scheme, &rate, &t.retry, &t.ordering)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("match webhooks: %w", err)
		}
		t.rate = rate.Int64
		if err := jsonlimit.Unmarshal([]byte(events), &t.kinds); err != nil {
			return nil, fmt.Errorf("webhook %s events: %w", t.id, err)
		}
		switch {
		case !enabled:
			t.reason = ReasonDisabled
		case Health(t.health) == Suspended:
			t.reason = ReasonSuspended
		default:
			t.live = true
		}
		if text.Valid {
			if f, err := filter.Parse([]byte(text.String)); err == nil {
				t.filter, t.filtered = f, true
			}
		}
		all = append(all, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("match webhooks: %w", err)
	}
	return all, nil
}

// changeTargets is readTargets for a change and its event on PostgreSQL
// (ChangeAndFire): the set kept from an earlier read of the same account
// and kinds (webhookset.go), or a fresh read, kept, with the version the
// change's statement must still find (tx.seen). An account with no such
// webhook has no version read and nothing kept: its statement checks
// nothing, as before decision 0109.
func (tx *Tx) changeTargets(ctx context.Context, account string, kinds []string, columns string) ([]*target, error) {
	k := newWebhookSetKey(account, kinds, tx.handoff != nil)
	if set, ok := tx.s.webhookSets.get(k); ok {
		tx.seen = &webhooksSeen{account: account, version: set.version}
		return set.targets, nil
	}
	var version int64
	all, err := tx.readTargets(ctx, `account_id = ?`, account, kinds, columns, "", &version)
	if err != nil || len(all) == 0 {
		return all, err
	}
	tx.s.webhookSets.put(k, webhookSet{version: version, targets: all})
	tx.seen = &webhooksSeen{account: account, version: version}
	return all, nil
}
