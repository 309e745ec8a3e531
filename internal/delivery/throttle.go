package delivery

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// A webhook's throttle (its rateLimit, deliveries per second) is kept in
// the store as the next free send slot, shared by every process
// (queue.ReserveSends). Here is the policy around it:
//
//   - Slots are 1/rate apart, with no burst: a receiver limited to 50/s gets
//     one request every 20ms, never 50 at once.
//   - A claim takes no more of a throttled webhook than it can send within
//     throttleWindow (rate × 2s, within the webhook's other bounds), so its
//     backlog waits in the queue, not in a process's slots, and the
//     process's other webhooks are not held up by it.
//   - The claimed logs of a throttled webhook reserve their slots together,
//     in one statement, only as far ahead as an attempt can still be made
//     under the claim's lease. Each attempt waits for its slot, then is
//     made as any other. A log left without a slot (many processes
//     reserving at once) goes back to the queue, due when the next slot
//     frees: a Release with a due time, not an attempt. Its attempt count,
//     status and retry reason stay as they were, and the webhook's health
//     is not touched.
//   - Resends and Tests, a person's single request, are sent at once and
//     take no slot; a bulk recovery's resends take a slot each.
//
// Waiting shows in the metrics (herald_delivery_throttle_*) and, as the
// webhook's waiting logs, on its portal page.
const (
	// throttleWindow is how far ahead, in sends, a process claims a
	// throttled webhook's logs: enough that a claim held up a second by a
	// busy machine or database leaves no gap in the webhook's sends, little
	// enough that its backlog stays in the queue.
	throttleWindow = 2 * time.Second
	// throttleRetry is when a log is due again after its slots could not
	// be reserved (the database did not answer).
	throttleRetry = time.Second
	// recoveryHorizon is how far ahead a recovery's resend reserves its
	// slot; it waits in the queue's order behind automatic attempts
	// otherwise.
	recoveryHorizon = 5 * time.Second
)

// sendInterval is the time between two sends to a webhook limited to rate
// deliveries per second.
func sendInterval(rate int) time.Duration { return time.Second / time.Duration(rate) }

// throttleRoom is the most a claim holds of a webhook limited to rate: what
// it sends in throttleWindow.
func throttleRoom(rate int) int {
	return max(1, int(int64(rate)*int64(throttleWindow)/int64(time.Second)))
}

// pacing is one claim's reservation of send slots for one throttled webhook:
// ready closes once grant (or err) is known, and index places each claimed
// log among the slots in claim order.
type pacing struct {
	ready chan struct{}
	grant attempt.Grant
	err   error
	index map[string]int
	stop  <-chan struct{} // Run's end: a log still waiting is released
}

// reserveSends reserves, for each throttled webhook among claims, send slots for its
// claimed logs, each reservation in a goroutine of its own, and returns the
// pacing of each claimed log of a throttled webhook by log id. Slots are
// reserved only up to until: past it, an attempt could not be made under
// the claim's lease.
func (pr *producer) reserveSends(claims []attempt.Claim, until time.Time, stop <-chan struct{}) map[string]*pacing {
	var byLog map[string]*pacing
	groups := map[string]*pacing{}
	rates := map[string]int{}
	for _, c := range claims {
		if c.RateLimit <= 0 {
			continue
		}
		p := groups[c.WebhookID]
		if p == nil {
			p = &pacing{ready: make(chan struct{}), index: map[string]int{}, stop: stop}
			groups[c.WebhookID] = p
			rates[c.WebhookID] = c.RateLimit
		}
		p.index[c.LogID] = len(p.index)
		if byLog == nil {
			byLog = map[string]*pacing{}
		}
		byLog[c.LogID] = p
	}
	for id, p := range groups {
		go func() {
			defer close(p.ready)
			ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
			defer cancel()
			now := pr.cfg.Now()
			p.grant, p.err = pr.queue.ReserveSends(ctx, id, sendInterval(rates[id]), len(p.index), now, until)
			if p.err != nil && !pr.leases.refusedForFullDisk(p.err) {
				pr.cfg.Logger.Warn("reserve send slots of a throttled webhook; its logs wait", "webhook", id, "err", p.err)
			}
		}()
	}
	return byLog
}

// awaitSlot waits for c's send slot and reports true, or, when it has none
// (or the dispatcher stops meanwhile), reports false with the Release
// outcome that gives the log back to the queue: due when a slot may be
// free, or at once when stopping.
func (a *attempts) awaitSlot(c attempt.Claim, p *pacing, claimed time.Time, o attempt.Outcome) (bool, attempt.Outcome) {
	a.cfg.Metrics.throttleWaiting(1)
	defer a.cfg.Metrics.throttleWaiting(-1)
	o.Result = attempt.Release
	select {
	case <-p.ready:
	case <-p.stop:
		return false, o
	}
	i := p.index[c.LogID]
	switch {
	case p.err != nil:
		o.NextAt = a.cfg.Now().Add(throttleRetry)
		a.cfg.Metrics.throttleDeferred()
		return false, o
	case i >= p.grant.Count:
		o.NextAt = p.grant.Next
		a.cfg.Metrics.throttleDeferred()
		return false, o
	}
	slot := p.grant.Slot(i)
	if wait := slot.Sub(a.cfg.Now()); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.stop:
			return false, o
		}
	}
	a.cfg.Metrics.throttleWaited(a.cfg.Now().Sub(claimed))
	return true, o
}

// awaitSlot waits for a send slot of a throttled webhook for one
// resend of a recovery, and reports false when stop closes first.
func (r *recoveries) awaitSlot(c attempt.Claim, stop <-chan struct{}) bool {
	r.cfg.Metrics.throttleWaiting(1)
	defer r.cfg.Metrics.throttleWaiting(-1)
	start := r.cfg.Now()
	for {
		now := r.cfg.Now()
		ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
		g, err := r.store.ReserveSends(ctx, c.WebhookID, sendInterval(c.RateLimit), 1, now, now.Add(recoveryHorizon))
		cancel()
		at := now.Add(throttleRetry)
		switch {
		case err != nil:
			r.cfg.Logger.Warn("reserve a send slot for a recovery", "webhook", c.WebhookID, "err", err)
		case g.Count == 1:
			at = g.First
		default:
			at = g.Next.Add(-recoveryHorizon)
		}
		if wait := at.Sub(now); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return false
			}
		}
		if err == nil && g.Count == 1 {
			r.cfg.Metrics.throttleWaited(r.cfg.Now().Sub(start))
			return true
		}
	}
}
