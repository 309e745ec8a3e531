package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
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

// RunRecoveries takes up and runs recoveries, one at a time, until ctx is
// done. Resends in flight at a stop finish and are recorded; a recovery not
// finished is released, for the next process to take up at once.
func (d *Dispatcher) RunRecoveries(ctx context.Context) {
	for ctx.Err() == nil {
		wait := d.store.Wait() // before looking, so no wake-up is missed
		lease := store.NewID()
		looked := time.Now()
		r, ok, err := d.store.AcquireRecovery(ctx, lease, d.cfg.Now().Add(d.cfg.Lease))
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Error("look for recoveries", "err", err)
		}
		if err != nil || !ok {
			t := time.NewTimer(d.cfg.PollInterval)
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
		d.cfg.Logger.Info("recovery started here", "recovery", r.ID, "webhook", r.WebhookID, "logs", r.Count, "sent", r.Sent)
		d.runRecovery(ctx, r, lease)
	}
}

// runRecovery resends a recovery's logs until none is left, it is
// cancelled, its lease is lost, or ctx is done.
func (d *Dispatcher) runRecovery(ctx context.Context, r attempt.Recovery, lease string) {
	held, lost := context.WithCancel(ctx)
	defer lost()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		d.renewRecovery(held, lost, r.ID, lease)
	}()
	defer func() { <-renewed }()
	for held.Err() == nil {
		markUntil := d.cfg.Now().Add(manualWait + d.cfg.AttemptTimeout + 30*time.Second)
		claims, err := d.store.NextRecoveryLogs(context.WithoutCancel(held), r.ID, lease, d.recoveryBatch(r.AccountID, r.WebhookID), markUntil)
		switch {
		case errors.Is(err, attempt.ErrLeaseLost):
			return
		case err != nil:
			d.cfg.Logger.Error("next logs of recovery", "recovery", r.ID, "err", err)
			select {
			case <-held.Done():
			case <-time.After(d.cfg.PollInterval):
			}
			continue
		case len(claims) == 0:
			d.cfg.Logger.Info("recovery ended", "recovery", r.ID, "webhook", r.WebhookID)
			return
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var unsent []string
		for _, c := range claims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !d.resendForRecovery(held, r.ID, c) {
					mu.Lock()
					unsent = append(unsent, c.LogID)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(unsent) > 0 {
			if err := d.store.ReturnRecoveryLogs(context.WithoutCancel(ctx), r.ID, unsent); err != nil {
				d.cfg.Logger.Warn("give back unsent logs of recovery", "recovery", r.ID, "err", err)
			}
		}
	}
	if ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := d.store.ReleaseRecovery(rctx, r.ID, lease); err != nil {
			d.cfg.Logger.Warn("release recovery", "recovery", r.ID, "err", err)
		}
	}
}

// renewRecovery extends the recovery's lease every third of a lease until
// held ends, and calls lost when the lease is no longer this process's.
func (d *Dispatcher) renewRecovery(held context.Context, lost func(), id, lease string) {
	t := time.NewTicker(d.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-held.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(held, d.cfg.Lease/3)
		err := d.store.RenewRecovery(ctx, id, lease, d.cfg.Now().Add(d.cfg.Lease))
		cancel()
		if errors.Is(err, attempt.ErrLeaseLost) {
			lost()
			return
		}
		if err != nil && held.Err() == nil {
			d.cfg.Logger.Warn("renew recovery", "recovery", id, "err", err)
		}
	}
}

// recoveryBatch is how many logs of a webhook a recovery marks at once: the
// requests in flight the webhook has earned here, within its account's
// share.
func (d *Dispatcher) recoveryBatch(account, webhookID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(1, d.hook(webhookID, account).limit-1)
}

// resendForRecovery resends one log of a recovery and records it, counted
// in the recovery in the same transaction; false when it was not sent
// (stopping, or the recovery's lease lost while it waited for a slot).
func (d *Dispatcher) resendForRecovery(held context.Context, recovery string, c attempt.Claim) bool {
	d.mu.Lock()
	d.hold(d.hook(c.WebhookID, c.AccountID), 0, 1)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		st := d.hook(c.WebhookID, "")
		d.hold(st, 0, -1)
		d.forget(c.WebhookID, st, d.cfg.Now())
		d.mu.Unlock()
		d.signalFreed()
	}()
	if c.RateLimit > 0 && !d.awaitRecoverySlot(c, held.Done()) {
		return false
	}
	if !d.takeBehindAutomatic(c.WebhookID, held.Done()) {
		return false
	}
	ctx := context.WithoutCancel(held) // a stop lets a resend in flight finish
	sctx, span := d.startSpan(ctx, spanOf{name: SpanResend, eventID: c.EventID, kind: event.Kind(c.Event), webhookID: c.WebhookID,
		logID: c.LogID, fired: c.TraceParent})
	// Signed like any attempt: during a token rotation, with both tokens.
	res := d.sender.Send(sctx, signed(c))
	d.done(c.WebhookID, res)
	d.cfg.Metrics.attempted(res)
	o := attempt.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Trigger: attempt.TriggerResend, Attempt: d.attemptRecord(res),
		Result: attempt.Delivered, Recovery: recovery}
	if !res.OK() {
		o.Result, o.Reason = attempt.ResendFailed, res.Err
	}
	endSpan(span, res, o.Result.String())
	if _, err := d.store.Complete(ctx, []attempt.Outcome{o}, d.cfg.SuspendAfter); err != nil {
		// Left marked sending: counted interrupted when the recovery ends,
		// never sent again by it.
		d.cfg.Logger.Error("record resend of recovery", "recovery", recovery, "log", c.LogID, "err", err)
	}
	return true
}

// takeBehindAutomatic takes a slot of the webhook, like take, but only
// while this process holds none of its automatic attempts (those go first)
// and another slot stays free for the next one. It reports false when stop
// closes first.
func (d *Dispatcher) takeBehindAutomatic(id string, stop <-chan struct{}) bool {
	d.mu.Lock()
	for {
		st := d.hook(id, "")
		if st.held == 0 && (st.sending < st.limit-1 || (st.limit == 1 && st.sending == 0)) {
			st.sending++
			d.mu.Unlock()
			return true
		}
		wake := st.wake
		d.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			return false
		case <-time.After(d.cfg.PollInterval):
			// held drops without a signal when an outcome is recorded
		}
		d.mu.Lock()
	}
}
