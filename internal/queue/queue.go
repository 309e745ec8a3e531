// Package queue owns the event pipeline's state after firing: the delivery
// queue's claims under leases and the beats that keep them, the outcomes
// recorded in batches (logs moved, attempts added, health applied), the
// throttled webhooks' send slots, the logs an ordered webhook holds, the
// recoveries and their runs, and the pull channel's reads and
// acknowledgements. Its statements run through the store's connections and
// transactions (store.Tx), one SQL text for both engines; what differs
// between them is here too (claim_sqlite.go, claim_postgres.go). The
// dispatcher reaches it only through its own interfaces (delivery.Queue),
// in the types of package attempt.
package queue

import (
	"context"
	"sync/atomic"

	"github.com/heraldhq/herald/internal/store"
)

// Queue is the event pipeline of one store. A process makes one and shares
// it: it counts the queue rows its claims and recordings churned.
type Queue struct {
	st       *store.Store
	postgres bool
	// churn counts the delivery_queue rows this process's claims and
	// recordings rewrote or deleted, each leaving a dead row version
	// behind (see Churn).
	churn atomic.Int64
}

// New returns the queue of st.
func New(st *store.Store) *Queue { return &Queue{st: st, postgres: st.Engine() == "postgres"} }

// txn is a store transaction with the queue's own statements on it.
type txn struct {
	*store.Tx
	q *Queue
}

// inTx runs fn in a store transaction (store.InTx).
func (s *Queue) inTx(ctx context.Context, fn func(tx txn) error) error {
	return s.st.InTx(ctx, func(tx *store.Tx) error { return fn(txn{tx, s}) })
}
