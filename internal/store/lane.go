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
// behind the API (BENCHMARKS.md). A pool of its own means the dispatcher
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

// writerFor is the pool a write under ctx runs on.
func (s *Store) writerFor(ctx context.Context) *sql.DB {
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

// Delivery is the store as the dispatcher uses it: the same store, whose
// queue statements (Claim, Complete, RenewLeases, ReleaseHeld, NextDue,
// ReserveSends, StillHeld) run on the dispatcher's own connections where the
// engine has them. Everything else is the Store's, on its pool.
type Delivery struct{ *Store }

// ForDelivery returns the store as the dispatcher uses it (see Delivery).
func (s *Store) ForDelivery() Delivery { return Delivery{s} }

func onDelivery(ctx context.Context) context.Context {
	return context.WithValue(ctx, deliveryLane{}, true)
}

func (d Delivery) Claim(ctx context.Context, p ClaimParams) ([]Claim, error) {
	return d.Store.Claim(onDelivery(ctx), p)
}

func (d Delivery) Complete(ctx context.Context, outs []Outcome, suspendAfter int) ([]Suspension, error) {
	return d.Store.Complete(onDelivery(ctx), outs, suspendAfter)
}

func (d Delivery) RenewLeases(ctx context.Context, held []Held, until time.Time) (int64, error) {
	return d.Store.RenewLeases(onDelivery(ctx), held, until)
}

func (d Delivery) ReleaseHeld(ctx context.Context, leases []string) (int64, error) {
	return d.Store.ReleaseHeld(onDelivery(ctx), leases)
}

func (d Delivery) NextDue(ctx context.Context) (time.Time, bool, error) {
	return d.Store.NextDue(onDelivery(ctx))
}

func (d Delivery) ReserveSends(ctx context.Context, webhookID string, interval time.Duration, n int, now, until time.Time) (Grant, error) {
	return d.Store.ReserveSends(onDelivery(ctx), webhookID, interval, n, now, until)
}

func (d Delivery) StillHeld(ctx context.Context, held []Held) (map[Held]bool, error) {
	return d.Store.StillHeld(onDelivery(ctx), held)
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
