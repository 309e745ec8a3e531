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
// attempts need of each webhook, and the webhooks are returned by id.
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
		accountCond, accountArg = `account_id IN (SELECT value FROM json_texts(?))`, jsonTexts(accounts)
	}
	// Kinds hold no LIKE wildcard (% _) nor quote, so the pattern matches
	// every array that names the kind, and perhaps more, which the exact
	// check below leaves out.
	columns := `id, account_id, events, enabled, status, filter`
	if tx.handoff != nil {
		columns += `, url, token_sealed, next_token_sealed, rotation_ends_at, headers_sealed, signature_scheme, rate_limit`
	}
	// A change made in one statement (ChangeAndFire) reads its webhooks
	// before it and outside any transaction, where a lock would end with
	// the read: a webhook deleted meanwhile fails its statement on the
	// logs' foreign key instead, and the change is made again.
	lock := tx.ForKeyShare()
	if tx.change != nil {
		lock = ""
	}
	rows, err := tx.Query(ctx, `SELECT `+columns+` FROM webhooks
WHERE `+accountCond+`
  AND EXISTS (SELECT 1 FROM json_texts(?) k WHERE webhooks.events LIKE '%"' || k.value || '"%')
ORDER BY id`+lock, accountArg, jsonTexts(kinds))
	if err != nil {
		return nil, nil, fmt.Errorf("match webhooks: %w", err)
	}
	hooks := map[string][]*target{}
	var byID map[string]*target
	for rows.Next() {
		t := &target{}
		var account, events string
		var enabled bool
		var text sql.NullString
		var rate sql.NullInt64
		dest := []any{&t.id, &account, &events, &enabled, &t.health, &text}
		if tx.handoff != nil {
			dest = append(dest, &t.url, &t.sealed, &t.nextSealed, &t.rotationEnds, &t.headers, &t.scheme, &rate)
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("match webhooks: %w", err)
		}
		t.rate = rate.Int64
		if tx.handoff != nil {
			if byID == nil {
				byID = map[string]*target{}
			}
			byID[t.id] = t
		}
		if err := jsonlimit.Unmarshal([]byte(events), &t.kinds); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("webhook %s events: %w", t.id, err)
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
		hooks[account] = append(hooks[account], t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("match webhooks: %w", err)
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
