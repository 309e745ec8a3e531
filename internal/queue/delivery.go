package queue

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// Delivery is the queue as the dispatcher uses it (delivery.Store): the
// same queue, whose statements on the hot path (Claim, Complete,
// ReleaseHeld, NextDue, ReserveSends, StillHeld) run on the dispatcher's
// own connections where the engine has them, and its beats and renewals
// (Beat, RenewLeases) on the lease keeper's (store/lane.go). Everything
// else runs on the store's main pool.
type Delivery struct{ *Queue }

// ForDelivery returns the queue as the dispatcher uses it (see Delivery).
func (s *Queue) ForDelivery() Delivery { return Delivery{s} }

func (d Delivery) Claim(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error) {
	return d.Queue.Claim(store.OnDelivery(ctx), p)
}

func (d Delivery) Complete(ctx context.Context, outs []attempt.Outcome, suspendAfter int) ([]attempt.Suspension, error) {
	return d.Queue.Complete(store.OnDelivery(ctx), outs, suspendAfter)
}

func (d Delivery) RenewLeases(ctx context.Context, held []attempt.Held, until time.Time) (int64, error) {
	return d.Queue.RenewLeases(store.OnLease(ctx), held, until)
}

func (d Delivery) Beat(ctx context.Context, process string, now time.Time) error {
	return d.Queue.Beat(store.OnLease(ctx), process, now)
}

func (d Delivery) EndBeats(ctx context.Context, process string, before time.Time) error {
	return d.Queue.EndBeats(store.OnLease(ctx), process, before)
}

func (d Delivery) ReleaseHeld(ctx context.Context, leases []string) (int64, error) {
	return d.Queue.ReleaseHeld(store.OnDelivery(ctx), leases)
}

func (d Delivery) NextDue(ctx context.Context) (time.Time, bool, error) {
	return d.Queue.NextDue(store.OnDelivery(ctx))
}

func (d Delivery) ReserveSends(ctx context.Context, webhookID string, interval time.Duration, n int, now, until time.Time) (attempt.Grant, error) {
	return d.Queue.ReserveSends(store.OnDelivery(ctx), webhookID, interval, n, now, until)
}

func (d Delivery) StillHeld(ctx context.Context, held []attempt.Held) (map[attempt.Held]bool, error) {
	return d.Queue.StillHeld(store.OnDelivery(ctx), held)
}

// WebhookReach on the dispatcher's own connections, so that its reads do
// not wait behind the API's.
func (d Delivery) WebhookReach(ctx context.Context, webhookID string) (attempt.Reach, error) {
	return d.st.WebhookReach(store.OnDelivery(ctx), webhookID)
}

// ReachGeneration is the store's: it moves when this process changes a
// webhook's reach.
func (d Delivery) ReachGeneration() uint64 { return d.st.ReachGeneration() }

// TestTarget is the store's (a webhook's Test is signed as a claim of it
// would be).
func (d Delivery) TestTarget(ctx context.Context, accountID, webhookID string) (attempt.Claim, error) {
	return d.st.TestTarget(ctx, accountID, webhookID)
}

// Wait is the store's: a channel closed when logs may have become due.
func (d Delivery) Wait() <-chan struct{} { return d.st.Wait() }

// Unavailable is the store's: whether err means the database cannot be
// reached for now.
func (d Delivery) Unavailable(err error) bool { return store.Unavailable(err) }
