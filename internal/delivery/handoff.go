package delivery

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// Handing over at firing (decision 0105), the producer's other way in. On PostgreSQL the transaction that
// fires an event asks this process's dispatcher for room for each of its
// first attempts (Reserve), leases those it got in the statement that queues
// them, and after its commit hands them over (Take): they are attempted at
// once, as claimed logs are, with no claim, no wake-up and no NOTIFY. What
// the dispatcher has no room for, or a webhook with an older log waiting,
// stays in the queue for the claims. The room is the claim's (share.go):
// what a claim may still take of the webhook and its account, never a
// slow or throttled webhook's, never past Concurrency. A *Dispatcher is the
// store's Handoff (the server sets it).
var _ attempt.Handoff = (*Dispatcher)(nil)

// handing is what a running run lends the attempts of logs handed over.
type handing struct {
	ctx       context.Context
	outcomes  chan<- attempt.Outcome
	accepting bool // Reserve may hold room; false once Run stops
	pending   int  // reservations not yet taken or abandoned
	settled   chan struct{}
}

// handingWait bounds how long a stopping Run waits for firing transactions
// that reserved room to end. One that ends later hands its logs to nobody:
// they are released, due again at once (lateTake).
const handingWait = 5 * time.Second

func (p *producer) startHanding(h *handing) {
	h.accepting = true
	p.slots.mu.Lock()
	p.handing = h
	p.caughtUp = false // until a claim has looked
	p.slots.mu.Unlock()
}

// stopHanding refuses further reservations and waits (at most handingWait)
// for those made to be taken or abandoned, so that every attempt handed over
// is counted in inFlight and is recorded before Run returns.
func (p *producer) stopHanding() {
	p.slots.mu.Lock()
	h := p.handing
	h.accepting = false
	var settled chan struct{}
	if h.pending > 0 {
		settled = make(chan struct{})
		h.settled = settled
	}
	p.slots.mu.Unlock()
	if settled != nil {
		t := time.NewTimer(handingWait)
		select {
		case <-settled:
		case <-t.C:
			p.cfg.Logger.Warn("stopping with firing transactions still open; what they hand over is released")
		}
		t.Stop()
	}
	p.slots.mu.Lock()
	p.handing = nil
	p.pacer.forgive() // no claim will repay a debt now
	p.slots.mu.Unlock()
}

// settle counts n reservations ended. slots.mu is held.
func (h *handing) settle(n int) {
	h.pending = max(0, h.pending-n)
	if h.pending == 0 && h.settled != nil {
		close(h.settled)
		h.settled = nil
	}
}

// Reserve holds a slot for a first attempt to the webhook now, and reports
// whether it did (see attempt.Handoff). It gives what a claim made now could
// take: a running dispatcher not stopping, a free slot in the process, room
// in the webhook and in its account; never a slow webhook's (its logs wait
// in the queue, where the claims' slow half applies) nor a throttled one's
// (the store does not ask for those, whose send slots claims reserve); and
// only to a webhook with nothing older waiting as far as this process
// knows (noteClaim).
func (d *Dispatcher) Reserve(accountID, webhookID string) bool {
	return d.producer.reserve(accountID, webhookID)
}

func (p *producer) reserve(accountID, webhookID string) bool {
	s := p.slots
	s.mu.Lock()
	defer s.mu.Unlock()
	h := p.handing
	if h == nil || !h.accepting {
		return false
	}
	st := s.hook(webhookID, accountID)
	room, _ := s.roomOf(st, s.shareOf(st))
	if p.stopping.Load() || p.leases.lapsed.Load() || s.inUse >= p.cfg.Concurrency || !p.caughtUp || p.waiting[webhookID] != nil ||
		st.slow || st.rate > 0 || room <= 0 || s.accountRoom(accountID) <= 0 {
		// Its log waits in the queue: the next of the webhook's must not
		// pass it.
		p.wait(webhookID, accountID)
		p.pacer.owe(accountID, st)
		s.forget(webhookID, st, p.cfg.Now())
		return false
	}
	s.hold(st, 1, 0)
	h.pending++
	return true
}

// LeaseUntil is when the lease of a log handed over at now ends: a claim's.
func (d *Dispatcher) LeaseUntil(now time.Time) time.Time { return now.Add(d.cfg.Lease) }

// Take starts the attempts of logs handed over by a committed transaction,
// each holding the slot its Reserve took.
func (d *Dispatcher) Take(claims []attempt.Claim) { d.producer.take(claims) }

func (p *producer) take(claims []attempt.Claim) {
	if len(claims) == 0 {
		return
	}
	p.slots.mu.Lock()
	h := p.handing
	if h == nil {
		p.slots.mu.Unlock()
		p.lateTake(claims)
		return
	}
	// Counted before the reservations settle: a stopping run that sees
	// them settled waits for these attempts too.
	p.inFlight.Add(len(claims))
	h.settle(len(claims))
	p.slots.mu.Unlock()
	p.leases.hold(claims)
	p.cfg.Metrics.handedOver(len(claims))
	claimed := p.cfg.Now()
	leaseUntil := claimed.Add(p.cfg.Lease)
	for _, c := range claims {
		p.launch(h.ctx, h.outcomes, c, leaseUntil, claimed, nil)
	}
}

// Abandon gives back the slots of reservations not handed over; logs that
// a commit with a lost answer may have leased are released (as a failed
// claim's are: orphans).
func (d *Dispatcher) Abandon(claims []attempt.Claim, maybeCommitted bool) {
	d.producer.abandon(claims, maybeCommitted)
}

func (p *producer) abandon(claims []attempt.Claim, maybeCommitted bool) {
	if len(claims) == 0 {
		return
	}
	p.slots.mu.Lock()
	p.unreserve(claims)
	if h := p.handing; h != nil {
		h.settle(len(claims))
	}
	p.slots.mu.Unlock()
	if maybeCommitted {
		for _, c := range claims {
			p.leases.orphan(c.Lease)
		}
	}
	p.slots.signalFreed()
	if maybeCommitted {
		go p.leases.releaseOrphans()
	}
}

// unreserve gives back the slots the claims' reservations held. slots.mu
// is held.
func (p *producer) unreserve(claims []attempt.Claim) {
	now := p.cfg.Now()
	for _, c := range claims {
		st := p.slots.hook(c.WebhookID, "")
		p.slots.hold(st, -1, 0)
		p.slots.forget(c.WebhookID, st, now)
	}
}

// lateTake is Take after run stopped waiting: the logs are released, due
// again at once, for the next claim of any process.
func (p *producer) lateTake(claims []attempt.Claim) {
	p.slots.mu.Lock()
	p.unreserve(claims)
	p.slots.mu.Unlock()
	var list []string
	for _, c := range claims {
		if !slices.Contains(list, c.Lease) {
			list = append(list, c.Lease)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	if _, err := p.queue.ReleaseHeld(ctx, list); err != nil {
		p.cfg.Logger.Warn("release logs handed over after the dispatcher stopped; they are due when their lease ends", "logs", len(claims), "err", err)
	}
}
