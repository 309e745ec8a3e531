package delivery

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// Handing over at firing (decision 0105). On PostgreSQL the transaction that
// fires an event asks this process's dispatcher for room for each of its
// first attempts (Reserve), leases those it got in the statement that queues
// them, and after its commit hands them over (Take): they are attempted at
// once, as claimed logs are, with no claim, no wake-up and no NOTIFY. What
// the dispatcher has no room for, or a webhook with an older log waiting,
// stays in the queue for the claims. The room is the claim's (share.go):
// what a claim may still take of the webhook and its account, never a
// slow or throttled webhook's, never past Concurrency. A *Dispatcher is the
// store's Handoff (the server sets it).
var _ store.Handoff = (*Dispatcher)(nil)

// handing is what a running Run lends the attempts of logs handed over.
type handing struct {
	ctx       context.Context
	wg        *sync.WaitGroup
	outcomes  chan<- attempt.Outcome
	accepting bool // Reserve may hold room; false once Run stops
	pending   int  // reservations not yet taken or abandoned
	settled   chan struct{}
}

// handingWait bounds how long a stopping Run waits for firing transactions
// that reserved room to end. One that ends later hands its logs to nobody:
// they are released, due again at once (lateTake).
const handingWait = 5 * time.Second

func (d *Dispatcher) startHanding(h *handing) {
	h.accepting = true
	d.mu.Lock()
	d.handing = h
	d.caughtUp = false // until a claim has looked
	d.mu.Unlock()
}

// stopHanding refuses further reservations and waits (at most handingWait)
// for those made to be taken or abandoned, so that every attempt handed over
// runs under Run's wait group and is recorded before Run returns.
func (d *Dispatcher) stopHanding() {
	d.mu.Lock()
	h := d.handing
	h.accepting = false
	var settled chan struct{}
	if h.pending > 0 {
		settled = make(chan struct{})
		h.settled = settled
	}
	d.mu.Unlock()
	if settled != nil {
		t := time.NewTimer(handingWait)
		select {
		case <-settled:
		case <-t.C:
			d.cfg.Logger.Warn("stopping with firing transactions still open; what they hand over is released")
		}
		t.Stop()
	}
	d.mu.Lock()
	d.handing = nil
	d.forgive() // no claim will repay a debt now
	d.mu.Unlock()
}

// settle counts n reservations ended. d.mu is held.
func (h *handing) settle(n int) {
	h.pending = max(0, h.pending-n)
	if h.pending == 0 && h.settled != nil {
		close(h.settled)
		h.settled = nil
	}
}

// Reserve holds a slot for a first attempt to the webhook now, and reports
// whether it did (see store.Handoff). It gives what a claim made now could
// take: a running dispatcher not stopping, a free slot in the process, room
// in the webhook and in its account; never a slow webhook's (its logs wait
// in the queue, where the claims' slow half applies) nor a throttled one's
// (the store does not ask for those, whose send slots claims reserve); and
// only to a webhook with nothing older waiting as far as this process
// knows (noteClaim).
func (d *Dispatcher) Reserve(accountID, webhookID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.handing
	if h == nil || !h.accepting {
		return false
	}
	st := d.hook(webhookID, accountID)
	room, _ := d.roomOf(st, d.shareOf(st))
	if d.stopping.Load() || d.lapsed.Load() || d.inUse >= d.cfg.Concurrency || !d.caughtUp || d.waiting[webhookID] != nil ||
		st.slow || st.rate > 0 || room <= 0 || d.accountRoom(accountID) <= 0 {
		// Its log waits in the queue: the next of the webhook's must not
		// pass it.
		d.wait(webhookID, accountID)
		d.owe(accountID, st)
		d.forget(webhookID, st, d.cfg.Now())
		return false
	}
	d.hold(st, 1, 0)
	h.pending++
	return true
}

// LeaseUntil is when the lease of a log handed over at now ends: a claim's.
func (d *Dispatcher) LeaseUntil(now time.Time) time.Time { return now.Add(d.cfg.Lease) }

// Take starts the attempts of logs handed over by a committed transaction,
// each holding the slot its Reserve took.
func (d *Dispatcher) Take(claims []attempt.Claim) {
	if len(claims) == 0 {
		return
	}
	d.mu.Lock()
	h := d.handing
	if h == nil {
		d.mu.Unlock()
		d.lateTake(claims)
		return
	}
	for _, c := range claims {
		d.held[attempt.Held{LogID: c.LogID, Lease: c.Lease}] = struct{}{}
	}
	h.wg.Add(len(claims))
	h.settle(len(claims))
	d.mu.Unlock()
	d.cfg.Metrics.handedOver(len(claims))
	claimed := d.cfg.Now()
	leaseUntil := claimed.Add(d.cfg.Lease)
	for _, c := range claims {
		go func() {
			defer h.wg.Done()
			o := d.attempt(h.ctx, c, leaseUntil, claimed, nil)
			d.logOutcome(h.ctx, c, o)
			d.attempted(c.WebhookID)
			h.outcomes <- o
		}()
	}
}

// Abandon gives back the slots of reservations not handed over; logs that
// a commit with a lost answer may have leased are released (as a failed
// claim's are: orphans).
func (d *Dispatcher) Abandon(claims []attempt.Claim, maybeCommitted bool) {
	if len(claims) == 0 {
		return
	}
	d.mu.Lock()
	d.unreserve(claims)
	if maybeCommitted {
		for _, c := range claims {
			d.orphans[c.Lease] = d.cfg.Now()
		}
	}
	if h := d.handing; h != nil {
		h.settle(len(claims))
	}
	d.mu.Unlock()
	d.signalFreed()
	if maybeCommitted {
		go d.releaseOrphans()
	}
}

// unreserve gives back the slots the claims' reservations held. d.mu is
// held.
func (d *Dispatcher) unreserve(claims []attempt.Claim) {
	now := d.cfg.Now()
	for _, c := range claims {
		st := d.hook(c.WebhookID, "")
		d.hold(st, -1, 0)
		d.forget(c.WebhookID, st, now)
	}
}

// lateTake is Take after Run stopped waiting: the logs are released, due
// again at once, for the next claim of any process.
func (d *Dispatcher) lateTake(claims []attempt.Claim) {
	d.mu.Lock()
	d.unreserve(claims)
	d.mu.Unlock()
	var list []string
	for _, c := range claims {
		if !slices.Contains(list, c.Lease) {
			list = append(list, c.Lease)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	if _, err := d.store.ReleaseHeld(ctx, list); err != nil {
		d.cfg.Logger.Warn("release logs handed over after the dispatcher stopped; they are due when their lease ends", "logs", len(claims), "err", err)
	}
}

// noteClaim learns from a claim what may still be waiting in the queue,
// for Reserve: a log handed over must not pass an older one of its
// webhook. The process counts, per webhook, the logs it knows to be
// waiting: each refused reservation (its log went to the queue) and each
// released attempt (due again) adds one, each log a claim takes removes
// one. A claim that came back short (it took less than it asked for), did
// not pass the webhook over and took less than the webhook's room and its
// account's, took all of the webhook that was due: nothing of it waits.
// Until a first claim has come back short nothing is granted (a backlog may
// be waiting from before). What another process left waiting is not known
// here: its commit wakes the claims (NOTIFY), which take it as soon as
// there is room. d.mu is held.
func (d *Dispatcher) noteClaim(p attempt.ClaimParams, claims []attempt.Claim) {
	hooks, accounts := map[string]int{}, map[string]int{}
	for _, c := range claims {
		hooks[c.WebhookID]++
		accounts[c.AccountID]++
	}
	for id, n := range hooks {
		if w := d.waiting[id]; w != nil {
			w.logs -= n
		}
	}
	short := len(claims) < p.Limit
	if short {
		d.caughtUp = true
	}
	passed := make(map[string]bool, len(p.Exclude))
	for _, id := range p.Exclude {
		passed[id] = true
	}
	accountBound := p.PerAccount
	if accountBound <= 0 {
		accountBound = p.Limit
	}
	for id, w := range d.waiting {
		drained := short && !passed[id] && hooks[id] < roomIn(p.Room, id, p.PerWebhook) &&
			accounts[w.account] < roomIn(p.AccountRoom, w.account, accountBound)
		if w.logs <= 0 || drained {
			delete(d.waiting, id)
		}
	}
	d.repay(accounts)
}

// waitCount is what a process knows of one webhook's logs waiting in the
// queue: how many, and the webhook's account.
type waitCount struct {
	logs    int
	account string
}

// wait counts one more log of the webhook waiting in the queue. d.mu is
// held.
func (d *Dispatcher) wait(webhookID, accountID string) {
	w := d.waiting[webhookID]
	if w == nil {
		w = &waitCount{account: accountID}
		d.waiting[webhookID] = w
	}
	w.logs++
}

// roomIn is room[id] when room names id, else def.
func roomIn(room map[string]int, id string, def int) int {
	if n, ok := room[id]; ok {
		return n
	}
	return def
}
