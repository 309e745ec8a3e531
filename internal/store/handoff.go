package store

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// Handing over at firing (decisions 0105 and 0114). A transaction that
// fires events leases the first attempts of its queued logs to the
// dispatcher of its own process, in the statement that queues them, when
// that dispatcher grants them (it has room, and the webhook has nothing
// older waiting that it knows of): after the commit they go to the
// dispatcher as claims, and no claim statement, no wake-up and no NOTIFY is
// spent on them. A log handed over is leased as a claim leases one (lease,
// lease_until, claimed_at on its queue row), so a process that dies with it
// in flight leaves it to be taken over when its lease ends, as it leaves a
// claimed one. On SQLite each transaction of a group commit (group.go)
// holds its own: given back if its savepoint is rolled back, taken once the
// group has committed.

// handoffBox lets a Handoff sit in an atomic.Pointer.
type handoffBox struct{ h attempt.Handoff }

// SetHandoff has the transactions that fire events hand their first
// attempts to h. A nil h stops handing over.
func (s *Store) SetHandoff(h attempt.Handoff) {
	if h == nil {
		s.handoff.Store(nil)
		return
	}
	s.handoff.Store(&handoffBox{h})
}

// handoffNow is the Handoff a transaction begun now uses, or nil.
func (s *Store) handoffNow() attempt.Handoff {
	if b := s.handoff.Load(); b != nil {
		return b.h
	}
	return nil
}

// handoffState is what a transaction holds of its Handoff: the claims
// leased by its statements, taken or abandoned when it ends.
type handoffState struct {
	h      attempt.Handoff
	lease  string
	handed []Claim
}

// reserve asks for room for each queued log of a target that may be handed
// over (not throttled) and returns the claims reserved, one per log, which
// the statement that queues them leases.
func (tx *Tx) reserve(logs []firedLog, targets map[string]*target, bodies map[string][]byte, traceParent *string, now time.Time) ([]Claim, error) {
	st := tx.handoff
	if st == nil {
		return nil, nil
	}
	var reserved []Claim
	// A batch's logs to one webhook share its tokens and headers, opened
	// once.
	type opened struct {
		tokens  WebhookTokens
		headers map[string]string
	}
	open := map[string]opened{}
	for _, l := range logs {
		t := targets[l.WebhookID]
		// A webhook with no URL (a pull webhook's consumer reads its
		// events, queue/pull.go) is never handed over.
		if l.Status != string(Queued) || t == nil || t.rate > 0 || t.url == "" || t.ordering == OrderingLicense || !st.h.Reserve(l.AccountID, l.WebhookID) {
			continue
		}
		if st.lease == "" {
			st.lease = NewID()
		}
		c := Claim{LogID: l.ID, AccountID: l.AccountID, WebhookID: l.WebhookID, EventID: l.EventID, Event: l.Kind,
			Body: bodies[l.EventID], URL: t.url, SignatureScheme: t.scheme, Enabled: true, Health: t.health, Lease: st.lease}
		policy, err := ScanRetryPolicy(t.id, t.retry)
		if err != nil {
			return nil, err
		}
		c.RetryPolicy = policy
		if traceParent != nil {
			c.TraceParent = *traceParent
		}
		reserved = append(reserved, c)
		o, ok := open[t.id]
		if !ok {
			var err error
			o.tokens, err = tx.s.signingTokens(t.id, t.sealed, t.nextSealed, t.rotationEnds, now)
			if err == nil {
				o.headers, err = tx.s.openHeaders(t.id, t.headers)
			}
			if err != nil {
				st.h.Abandon(reserved, false)
				return nil, fmt.Errorf("hand over log %s: %w", l.ID, err)
			}
			open[t.id] = o
		}
		last := &reserved[len(reserved)-1]
		last.Token, last.NextToken, last.Headers = o.tokens.Current, o.tokens.Next, o.headers
	}
	return reserved, nil
}

// endHandoff hands the transaction's leased claims over once it committed,
// or gives their reservations back.
func (tx *Tx) endHandoff(committed, maybeCommitted bool) {
	st := tx.handoff
	if st == nil || len(st.handed) == 0 {
		return
	}
	handed := st.handed
	st.handed = nil
	if committed {
		st.h.Take(handed)
		return
	}
	st.h.Abandon(handed, maybeCommitted)
}
