package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/startstop"
)

// Recoveries (POST /v3/webhooks/{id}/recover) are recorded in the store and
// run here, by whichever process takes one first under a lease.
//
// A recovery resends its logs in batches of the webhook's limit here (the
// requests in flight it has earned, share.go), each resend in one of the
// webhook's slots like a Resend, so the receiver never sees more at once
// than automatic attempts would send it. A resend waits while this process
// holds automatic attempts of the webhook: first attempts of new events go
// first, and a recovery only fills the gaps between them. And it leaves one
// of the webhook's slots free (when it has more than one), so a new event
// that fires while resends are in flight is attempted at once, not after
// them.

// recoveryLookEvery is how often at most a woken RunRecoveries looks for a
// recovery to take up.
const recoveryLookEvery = 100 * time.Millisecond

// recoveries owns running bulk recoveries: taking one up under a lease,
// keeping the lease, and resending its logs in batches within the
// webhook's slots, behind its automatic attempts (see above).
type recoveries struct {
	cfg      *Config
	store    Store
	slots    *slots
	attempts *attempts
}

// run takes up and runs recoveries, one at a time, until ctx is done
// (Dispatcher.RunRecoveries).
func (rs *recoveries) run(ctx context.Context) {
	for ctx.Err() == nil {
		wait := rs.store.Wait() // before looking, so no wake-up is missed
		lease := attempt.NewID()
		looked := time.Now()
		r, ok, err := rs.store.AcquireRecovery(ctx, lease, rs.cfg.Now().Add(rs.cfg.Lease))
		if err != nil && ctx.Err() == nil {
			rs.cfg.Logger.Error("look for recoveries", "err", err)
		}
		if err != nil || !ok {
			t := time.NewTimer(rs.cfg.PollInterval)
			select {
			case <-ctx.Done():
			case <-wait:
				// The wake-up that starts a recovery is the one every
				// fired event gives: under a busy API it comes hundreds of
				// times a second, and a look at each was a statement per
				// event. A recovery waits at most recoveryLookEvery.
				if rest := recoveryLookEvery - time.Since(looked); rest > 0 {
					t.Reset(rest)
					select {
					case <-ctx.Done():
					case <-t.C:
					}
				}
			case <-t.C:
			}
			t.Stop()
			continue
		}
		rs.cfg.Logger.Info("recovery started here", "recovery", r.ID, "webhook", r.WebhookID, "logs", r.Count, "sent", r.Sent)
		rs.runRecovery(ctx, r, lease)
	}
}

// runRecovery resends a recovery's logs until none is left, it is
// cancelled, its lease is lost, or ctx is done.
func (rs *recoveries) runRecovery(ctx context.Context, r attempt.Recovery, lease string) {
	held, lost := context.WithCancel(ctx)
	defer lost()
	// The lease is kept while the run lasts, and no longer: the next
	// recovery is taken up at once.
	renewing := startstop.New(func(ctx context.Context) { rs.renew(ctx, lost, r.ID, lease) })
	_ = renewing.Start(held) // new: Start refuses none
	defer renewing.Stop()
	for held.Err() == nil {
		markUntil := rs.cfg.Now().Add(manualWait + rs.cfg.AttemptTimeout + 30*time.Second)
		claims, err := rs.store.NextRecoveryLogs(context.WithoutCancel(held), r.ID, lease, rs.slots.recoveryBatch(r.AccountID, r.WebhookID), markUntil)
		switch {
		case errors.Is(err, attempt.ErrLeaseLost):
			return
		case err != nil:
			rs.cfg.Logger.Error("next logs of recovery", "recovery", r.ID, "err", err)
			select {
			case <-held.Done():
			case <-time.After(rs.cfg.PollInterval):
			}
			continue
		case len(claims) == 0:
			rs.cfg.Logger.Info("recovery ended", "recovery", r.ID, "webhook", r.WebhookID)
			return
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var unsent []string
		for _, c := range claims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !rs.resend(held, r.ID, c) {
					mu.Lock()
					unsent = append(unsent, c.LogID)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(unsent) > 0 {
			if err := rs.store.ReturnRecoveryLogs(context.WithoutCancel(ctx), r.ID, unsent); err != nil {
				rs.cfg.Logger.Warn("give back unsent logs of recovery", "recovery", r.ID, "err", err)
			}
		}
	}
	if ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := rs.store.ReleaseRecovery(rctx, r.ID, lease); err != nil {
			rs.cfg.Logger.Warn("release recovery", "recovery", r.ID, "err", err)
		}
	}
}

// renew extends the recovery's lease every third of a lease until
// held ends, and calls lost when the lease is no longer this process's.
func (r *recoveries) renew(held context.Context, lost func(), id, lease string) {
	t := time.NewTicker(r.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-held.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(held, r.cfg.Lease/3)
		err := r.store.RenewRecovery(ctx, id, lease, r.cfg.Now().Add(r.cfg.Lease))
		cancel()
		if errors.Is(err, attempt.ErrLeaseLost) {
			lost()
			return
		}
		if err != nil && held.Err() == nil {
			r.cfg.Logger.Warn("renew recovery", "recovery", id, "err", err)
		}
	}
}

// resend resends one log of a recovery and records it, counted
// in the recovery in the same transaction; false when it was not sent
// (stopping, or the recovery's lease lost while it waited for a slot).
func (r *recoveries) resend(held context.Context, recovery string, c attempt.Claim) bool {
	if c.URL == "" {
		// A pull webhook's log is queued again for its consumer to read,
		// and counted sent.
		if err := r.store.RequeuePull(context.WithoutCancel(held), c.LogID, recovery); err != nil {
			r.cfg.Logger.Error("queue again a log of recovery", "recovery", recovery, "log", c.LogID, "err", err)
		}
		return true
	}
	r.slots.mu.Lock()
	r.slots.hold(r.slots.hook(c.WebhookID, c.AccountID), 0, 1)
	r.slots.mu.Unlock()
	defer func() {
		r.slots.mu.Lock()
		st := r.slots.hook(c.WebhookID, "")
		r.slots.hold(st, 0, -1)
		r.slots.forget(c.WebhookID, st, r.cfg.Now())
		r.slots.mu.Unlock()
		r.slots.signalFreed()
	}()
	if c.RateLimit > 0 && !r.awaitSlot(c, held.Done()) {
		return false
	}
	if !r.slots.takeBehindAutomatic(c.WebhookID, held.Done()) {
		return false
	}
	ctx := context.WithoutCancel(held) // a stop lets a resend in flight finish
	sctx, span := r.attempts.startSpan(ctx, spanOf{name: SpanResend, eventID: c.EventID, kind: event.Kind(c.Event), webhookID: c.WebhookID,
		logID: c.LogID, fired: c.TraceParent})
	// Signed like any attempt: during a token rotation, with both tokens.
	req := r.attempts.sender.request(sctx, c)
	req.resend = true
	res := r.attempts.sender.Send(sctx, req)
	r.slots.done(c.WebhookID, res)
	r.cfg.Metrics.attempted(res)
	o := attempt.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Trigger: attempt.TriggerResend, Attempt: r.attempts.attemptRecord(res),
		Result: attempt.Delivered, Recovery: recovery}
	if !res.OK() {
		o.Result, o.Reason = attempt.ResendFailed, res.Err
	}
	endSpan(span, res, o.Result.String())
	if _, err := r.store.Complete(ctx, []attempt.Outcome{o}, r.cfg.SuspendAfter); err != nil {
		// Left marked sending: counted interrupted when the recovery ends,
		// never sent again by it.
		r.cfg.Logger.Error("record resend of recovery", "recovery", recovery, "log", c.LogID, "err", err)
	}
	return true
}
