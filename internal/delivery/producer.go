package delivery

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// producer owns claiming: how much a claim may take (the room the slots
// give), when to claim again and when to sleep, the send slots of the
// throttled webhooks it claimed (throttle.go), and what it learns from each
// claim of the logs still waiting in the queue. It also takes the logs the
// process's own firing hands over without a claim (handoff.go). It starts
// each log's attempt (attempts) and sends the outcome to the completer;
// once recorded, the completer gives the log's slot back through recorded.
type producer struct {
	cfg      *Config
	queue    Queue
	slots    *slots
	pacer    *pacer
	leases   *leases
	attempts *attempts

	inFlight sync.WaitGroup // attempts started, claimed or handed over, and not ended
	stopping atomic.Bool    // set when run's context ends: claims not yet attempted are released
	requeued atomic.Bool    // an outcome put its log back in the queue since the last sleep

	// Guarded by slots.mu. handing is the running run's, for the logs
	// handed over at firing (handoff.go); nil while none runs. caughtUp and
	// waiting say what may be waiting in the queue (noteClaim).
	handing  *handing
	caughtUp bool
	waiting  map[string]*waitCount // webhook id → its logs known to wait in the queue
}

// run claims due logs and starts their attempts until ctx is done, then
// waits for the attempts it started (handed over ones included) to end;
// their outcomes go to outcomes.
func (p *producer) run(ctx context.Context, outcomes chan<- attempt.Outcome) {
	p.stopping.Store(false)
	stopWatch := context.AfterFunc(ctx, func() { p.stopping.Store(true) })
	defer stopWatch()
	// Attempts outlive shutdown's cancel so that a stop does not turn every
	// attempt in flight into a duplicate after its lease expires.
	attemptCtx := context.WithoutCancel(ctx)
	p.startHanding(&handing{ctx: attemptCtx, outcomes: outcomes})
	p.leases.renewedNow(p.cfg.Now())
	for ctx.Err() == nil {
		wait := p.queue.Wait() // before claiming, so no wake-up is missed
		// One reading of the clock for the renewal and the claim: a lease
		// renewed here ends a lease after the claim's now, however far
		// the clock moves meanwhile.
		now := p.cfg.Now()
		if (p.leases.lapsed.Load() || p.leases.renewOverdue(now)) && !p.leases.renewLapsed(now) {
			// The disk is still full, or the database unreachable: a claim
			// would fail too. Asleep as after a short claim, so what is
			// due does not wake it at once.
			p.sleep(ctx, wait, false, true)
			continue
		}
		free := p.cfg.Concurrency - p.slots.total()
		want := min(free, p.cfg.BatchSize)
		got := 0
		if want > 0 {
			perWebhook, room, exclude, perAccount, accountRoom := p.slots.room()
			claims := p.claim(attempt.ClaimParams{
				Now: now, LeaseUntil: now.Add(p.cfg.Lease), Lease: attempt.NewID(),
				Limit: want, PerWebhook: perWebhook, Room: room, Exclude: exclude,
				PerAccount: perAccount, AccountRoom: accountRoom,
				NoTakeover: !p.leases.contact.sure(now, p.leases.contactGap()),
			})
			claimed := p.cfg.Now()
			got = len(claims)
			takenOver := 0
			for _, c := range claims {
				if c.TakenOver {
					takenOver++
				}
			}
			p.cfg.Metrics.claimed(got, takenOver, claimed.Sub(now))
			if got > 0 {
				p.cfg.Logger.Debug("claimed due logs", "logs", got, "wanted", want, "lease", claims[0].Lease)
			}
			leaseUntil := now.Add(p.cfg.Lease)
			paced := p.reserveSends(claims, p.cfg.lastSlot(now, leaseUntil), ctx.Done())
			for _, c := range claims {
				// The slot is released once the outcome is recorded, not
				// when the attempt ends: an attempt sent but not recorded
				// is sent again if this process dies, so Concurrency also
				// bounds how many deliveries a crash can repeat.
				p.slots.acquire(c.AccountID, c.WebhookID, c.RateLimit)
				p.inFlight.Add(1)
				p.launch(attemptCtx, outcomes, c, leaseUntil, claimed, paced[c.LogID])
			}
		}
		if got > 0 && got == want {
			continue // a full batch: more may be due now
		}
		// A short claim took all this process may take now: whatever is
		// still due belongs to webhooks at their cap here, or is held by
		// another process, and must not be polled for every millisecond.
		p.sleep(ctx, wait, free <= 0, want > 0 && got < want)
	}
	p.stopHanding()
	p.inFlight.Wait()
}

// launch makes the attempt of a claimed or handed over log in a goroutine
// of its own, and sends its outcome to be recorded. The caller has added it
// to inFlight.
func (p *producer) launch(ctx context.Context, outcomes chan<- attempt.Outcome, c attempt.Claim, leaseUntil, claimed time.Time, paced *pacing) {
	go func() {
		defer p.inFlight.Done()
		o := p.attempts.attempt(ctx, c, leaseUntil, claimed, paced)
		p.attempts.logOutcome(ctx, c, o)
		p.slots.attempted(c.WebhookID)
		outcomes <- o
	}()
}

// claimTimeout bounds one claim. A claim does not end with run's context: one
// cut short by a stop may still commit on the server while this process sees
// an error, and the logs it took would then wait out their lease.
const claimTimeout = 30 * time.Second

// claim claims due logs and holds them (renews their leases) until their
// outcomes are recorded. A claim that fails may have committed all the same
// (the error may be the answer's, not the statement's), so whatever it may
// have taken is released at once, or, the database not answering, later.
func (p *producer) claim(params attempt.ClaimParams) []attempt.Claim {
	ctx, cancel := context.WithTimeout(context.Background(), min(claimTimeout, p.cfg.Lease/2))
	defer cancel()
	claims, err := p.queue.Claim(ctx, params)
	if err != nil {
		if !p.leases.refusedForFullDisk(err) {
			p.cfg.Logger.Error("claim due logs", "err", err)
		}
		p.leases.orphan(params.Lease)
		p.lostTrack()
		p.leases.releaseOrphans()
		return nil
	}
	p.leases.hold(claims)
	p.slots.mu.Lock()
	p.noteClaim(params, claims)
	p.slots.mu.Unlock()
	return claims
}

// lostTrack notes that what waits in the queue is not known (a claim
// failed, or the logs of one were released): nothing is handed over until
// a claim has looked again.
func (p *producer) lostTrack() {
	p.slots.mu.Lock()
	p.caughtUp = false
	p.slots.mu.Unlock()
}

// recorded gives back the slots of a batch of outcomes the completer
// recorded (or gave up): a log released is due again, and waiting.
func (p *producer) recorded(batch []attempt.Outcome) {
	for _, o := range batch {
		if o.Result == attempt.Retry || o.Result == attempt.Release {
			p.requeued.Store(true)
			break
		}
	}
	p.slots.mu.Lock()
	for _, o := range batch {
		if o.Result == attempt.Release {
			p.wait(o.WebhookID, p.slots.hook(o.WebhookID, "").account)
		}
	}
	p.slots.mu.Unlock()
	for _, o := range batch {
		p.slots.release(o.WebhookID)
	}
}

// sleep waits for a wake-up, the next due time, enough freed slots, or the
// poll interval, whichever comes first. A claim costs about as much for one
// log as for a batch, so a freed slot alone does not end the sleep: a
// webhook must have a quarter of its room free, or a full process a quarter
// of a batch, or nothing be in flight.
func (p *producer) sleep(ctx context.Context, wait <-chan struct{}, full, short bool) {
	// Woken already (events fired since the claim, as under a busy API):
	// no probe of the next due time, which the wake-up makes moot.
	select {
	case <-ctx.Done():
		return
	case <-wait:
		return
	default:
	}
	delay := p.cfg.PollInterval
	// dueNow is whether a log may be due and waiting for room: only then
	// can a freed slot let a claim take more. A full process did not look.
	dueNow := full
	if !full {
		due, ok, err := p.queue.NextDue(ctx)
		switch {
		case err != nil:
			dueNow = true
		case ok:
			if until := due.Sub(p.cfg.Now()); until > 0 {
				delay = min(delay, until)
			} else {
				dueNow = true
				if !short {
					delay = min(delay, time.Millisecond)
				}
			}
		}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	worth := max(1, min(p.cfg.BatchSize, p.cfg.Concurrency)/4)
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait:
			return
		case <-t.C:
			return
		case <-p.slots.freed:
			// Nothing was due when it looked: a freed slot lets no claim
			// take more (what falls due later ends the timer, what is fired
			// wakes it), unless an outcome put a log back in the queue,
			// whose due time the next sleep's look finds. Without this, at a
			// steady low rate each delivery cost a second, empty claim.
			if !dueNow && !p.requeued.Swap(false) {
				continue
			}
			// Worth a claim: nothing in flight, a webhook with room for a
			// batch, or a full process with a batch's worth free again.
			if n := p.slots.total(); n == 0 || p.slots.claimable.Swap(false) || (full && p.cfg.Concurrency-n >= worth) {
				return
			}
		}
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
// there is room. slots.mu is held.
func (p *producer) noteClaim(params attempt.ClaimParams, claims []attempt.Claim) {
	hooks, accounts := map[string]int{}, map[string]int{}
	for _, c := range claims {
		hooks[c.WebhookID]++
		accounts[c.AccountID]++
	}
	for id, n := range hooks {
		if w := p.waiting[id]; w != nil {
			w.logs -= n
		}
	}
	short := len(claims) < params.Limit
	if short {
		p.caughtUp = true
	}
	passed := make(map[string]bool, len(params.Exclude))
	for _, id := range params.Exclude {
		passed[id] = true
	}
	accountBound := params.PerAccount
	if accountBound <= 0 {
		accountBound = params.Limit
	}
	for id, w := range p.waiting {
		drained := short && !passed[id] && hooks[id] < roomIn(params.Room, id, params.PerWebhook) &&
			accounts[w.account] < roomIn(params.AccountRoom, w.account, accountBound)
		if w.logs <= 0 || drained {
			delete(p.waiting, id)
		}
	}
	p.pacer.repay(accounts, p.waiting)
}

// waitCount is what a process knows of one webhook's logs waiting in the
// queue: how many, and the webhook's account.
type waitCount struct {
	logs    int
	account string
}

// wait counts one more log of the webhook waiting in the queue. slots.mu
// is held.
func (p *producer) wait(webhookID, accountID string) {
	w := p.waiting[webhookID]
	if w == nil {
		w = &waitCount{account: accountID}
		p.waiting[webhookID] = w
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
