package store

import (
	"context"
	"database/sql"
	"time"
)

// The dispatcher's own connections. On PostgreSQL a process's connections
// are two pools: the dispatcher's (claims, recordings, leases, send slots)
// and everyone else's (the API, the portal, background jobs). With one pool
// a saturated API held every connection, and each claim and recording
// queued behind its transactions for one: in `herald bench` scenario b the
// dispatcher waited 73 s for connections in a 16 s run and fell seconds
// behind the API (decision 0095). A pool of its own means the dispatcher
// waits only for the database itself. SQLite has one writer either way,
// whose commits it takes in turn, and no second pool.

// deliveryLane marks a context whose statements run on the dispatcher's pool.
type deliveryLane struct{}

// reader is the pool a read under ctx runs on.
func (s *Store) reader(ctx context.Context) *sql.DB {
	if s.deliveryDB != nil && ctx.Value(deliveryLane{}) != nil {
		return s.deliveryDB
	}
	return s.db
}

// leaseLane marks a context whose statements run on the lease keeper's own
// connection (PostgreSQL): the beats and renewals that keep a live
// process's leases from ending. On the dispatcher's pool a renewal waited
// for a connection behind claims and send-slot reservations held up by a
// locked row, and the leases of a live process ended (decision 0117).
type leaseLane struct{}

// leaseLockTimeout bounds how long a statement on the lease keeper's
// connection waits for a lock. Its renewals pass over locked rows (SKIP
// LOCKED) and its beat writes a row no one else writes, so only a table's
// lock can hold them: the statement gives up rather than queue behind it,
// and the keeper tries again a second later.
const leaseLockTimeout = 2 * time.Second

// leasePoolSize is how many of a process's pool_max_conns the lease keeper
// keeps for itself: one, where there are four or more to share.
func leasePoolSize(total int) int {
	if total < 4 {
		return 0
	}
	return 1
}

// writerFor is the pool a write under ctx runs on.
func (s *Store) writerFor(ctx context.Context) *sql.DB {
	if s.leaseDB != nil && ctx.Value(leaseLane{}) != nil {
		return s.leaseDB
	}
	if s.deliveryDB != nil && ctx.Value(deliveryLane{}) != nil {
		return s.deliveryDB
	}
	if s.changeDB != nil && ctx.Value(changeLane{}) != nil {
		return s.changeDB
	}
	return s.writer
}

// changeLane marks a context whose change runs on the shared statements'
// pool (changebatch.go).
type changeLane struct{}

// changePoolSize is how many of the connections left to the API the
// shared statements of changes keep for themselves (changebatch.go): one
// for each that runs at once, where that leaves two at least to the rest.
func changePoolSize(main int) int {
	if main < changeBatchesAtOnce+2 {
		return 0
	}
	return changeBatchesAtOnce
}

// OnDelivery marks ctx so that its statements run on the dispatcher's own
// connections where the engine has them (queue.Delivery's).
func OnDelivery(ctx context.Context) context.Context {
	return context.WithValue(ctx, deliveryLane{}, true)
}

// OnLease marks ctx so that its statements run on the lease keeper's own
// connection where the engine has one (its beats and renewals).
func OnLease(ctx context.Context) context.Context {
	return context.WithValue(ctx, leaseLane{}, true)
}

// deliveryPoolSize is how many of a process's pool_max_conns the dispatcher
// keeps for itself: one claim at a time, up to four recordings, the lease
// renewal, and attempts checking their logs or reserving send slots. With
// fewer than three connections in all there is nothing to split.
func deliveryPoolSize(total int) int {
	if total < 3 {
		return 0
	}
	return min(8, total/3)
}
