package delivery

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// leases owns the leases of the logs held here, claimed or handed over
// and not yet recorded: its keeper (run, a background service) beats and
// renews them every third of a lease, whether the beats land decides if a
// claim may take over another process's ended leases (contact.go), and
// after a full disk or a clock that jumped they are renewed before the
// next claim. It also releases what failed claims may have taken.
type leases struct {
	cfg   *Config
	queue Queue
	// process names this dispatcher's beats (Queue.Beat); contact is
	// whether they land, which a claim asks before it takes over a lease
	// that ended (contact.go).
	process string
	contact contact
	// lapsed is set when a write was refused for a full disk: the leases
	// held here may have ended meanwhile (renewing is a write too), and a
	// claim must not take their logs while their outcomes wait to be
	// recorded, so they are renewed before the next claim (renewLapsed).
	lapsed atomic.Bool
	// renewedAt is when (on Config.Now, in Unix nanoseconds) the leases
	// held here were last renewed, or found to be none. Renewals come every
	// third of a lease; one older than half a lease means the clock moved
	// past them (the process was paused, its host suspended), and the
	// leases are renewed before the next claim, as after a full disk.
	renewedAt atomic.Int64
	// released is called when logs of failed claims were released (what
	// waits in the queue is no longer known); renewed after each round of
	// the keeper.
	released, renewed func()

	mu      sync.Mutex
	held    map[attempt.Held]struct{} // logs held here: their leases are renewed
	orphans map[string]time.Time      // leases of claims that failed but may have committed → when
}

func newLeases(cfg *Config, q Queue) *leases {
	return &leases{cfg: cfg, queue: q, process: attempt.NewID(), held: map[attempt.Held]struct{}{}, orphans: map[string]time.Time{}}
}

// hold renews the claims' leases from now on, until drop.
func (l *leases) hold(claims []attempt.Claim) {
	l.mu.Lock()
	for _, c := range claims {
		l.held[attempt.Held{LogID: c.LogID, Lease: c.Lease}] = struct{}{}
	}
	l.mu.Unlock()
}

// drop stops renewing the leases of recorded outcomes.
func (l *leases) drop(batch []attempt.Outcome) {
	l.mu.Lock()
	for _, o := range batch {
		delete(l.held, attempt.Held{LogID: o.LogID, Lease: o.Lease})
	}
	l.mu.Unlock()
}

// orphan notes the lease of a claim that failed but may have committed, to
// be released (releaseOrphans).
func (l *leases) orphan(lease string) {
	l.mu.Lock()
	l.orphans[lease] = l.cfg.Now()
	l.mu.Unlock()
}

// releaseOrphans releases the logs of failed claims, if any committed. A
// failed claim's lease is kept and released again at each renewal (its
// statement may still commit after the error) until the lease would have
// ended by itself.
func (l *leases) releaseOrphans() {
	l.mu.Lock()
	leases := make([]string, 0, len(l.orphans))
	for lease := range l.orphans {
		leases = append(leases, lease)
	}
	l.mu.Unlock()
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	n, err := l.queue.ReleaseHeld(ctx, leases)
	if err != nil {
		return // tried again at the next renewal
	}
	if n > 0 {
		l.cfg.Logger.Warn("released logs taken by a claim that reported an error; they are due now", "logs", n)
		l.released() // waiting again, of webhooks not known here
	}
	l.mu.Lock()
	for lease, at := range l.orphans {
		if l.cfg.Now().Sub(at) > l.cfg.Lease {
			delete(l.orphans, lease)
		}
	}
	l.mu.Unlock()
}

// run is the lease keeper: it beats and extends the leases of the logs
// held here (waiting for their gate, in flight, or waiting to be recorded)
// every third of a lease, until ctx ends; a second after one that failed
// or was slow, so that a live process renews soon after a stalled database
// answers again, well before any other process is sure enough of the
// database to take its leases over (contact.go). Only a process that
// stopped renewing (it died, or lost the database while others did not)
// lets a lease end, so a busy machine's slow attempt is never taken over
// by another process and sent twice. It also retries releasing the logs of
// failed claims.
func (l *leases) run(ctx context.Context) {
	every := l.cfg.Lease / 3
	t := time.NewTimer(0) // a beat at once: contact is counted from the start
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := every
		if !l.keep(l.cfg.Now()) {
			next = min(every, keepRetry)
		}
		l.releaseOrphans()
		l.renewed()
		t.Reset(next)
	}
}

// keepRetry is how soon the lease keeper tries again after a beat or a
// renewal that failed or was slow.
const keepRetry = time.Second

// contactGap is how long this process's beats must have landed without a
// break before a claim takes over a lease that ended, and how far apart two
// beats of one run may be: a beat interval and a quarter (contact.go).
func (l *leases) contactGap() time.Duration { return l.cfg.Lease / 3 * 5 / 4 }

// keep beats and renews the leases held here until a lease after at, on
// the store's lease keeper's connection, and notes in contact whether it
// landed promptly (within a sixth of a lease: half the time between two
// beats). It reports whether it did.
func (l *leases) keep(at time.Time) bool {
	every := l.cfg.Lease / 3
	ctx, cancel := context.WithTimeout(context.Background(), every)
	defer cancel()
	held := l.heldNow()
	err := l.queue.Beat(ctx, l.process, at)
	if err == nil && len(held) > 0 {
		_, err = l.queue.RenewLeases(ctx, held, at.Add(l.cfg.Lease))
	}
	took := l.cfg.Now().Sub(at)
	l.contact.beat(at, took, err == nil, every/2, l.contactGap())
	if err != nil {
		if !l.refusedForFullDisk(err) {
			l.cfg.Logger.Warn("renew leases", "logs", len(held), "err", err)
		}
		return false
	}
	l.renewedNow(at)
	return took <= every/2
}

// renewedNow notes that the leases held here were renewed (or found to be
// none) at at.
func (l *leases) renewedNow(at time.Time) { l.renewedAt.Store(at.UnixNano()) }

// heldNow lists the logs held here.
func (l *leases) heldNow() []attempt.Held {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := make([]attempt.Held, 0, len(l.held))
	for h := range l.held {
		held = append(held, h)
	}
	return held
}

// refusedForFullDisk reports whether err is a write refused for a full disk,
// and if so notes that the leases held here may have lapsed. The store logs
// such refusals once per attempt.FullLogEvery, so callers need not.
func (l *leases) refusedForFullDisk(err error) bool {
	if !errors.Is(err, attempt.ErrStorageFull) {
		return false
	}
	l.lapsed.Store(true)
	return true
}

// renewOverdue reports whether, at now, the leases held here were last
// renewed more than half a lease ago, which the keeper's ticks (a third of
// a lease apart) never let happen unless the clock moved on without them.
func (l *leases) renewOverdue(now time.Time) bool {
	return now.Sub(time.Unix(0, l.renewedAt.Load())) > l.cfg.Lease/2
}

// renewLapsed renews the leases of every log held here until a lease after
// now, once writes were refused for a full disk or renewals fell behind the
// clock (renewOverdue), and reports whether it could. A lease that ended would
// let this process's next claim take a log whose attempt was made and
// whose outcome waits to be recorded: the receiver would get it twice. No
// claim of this process can have taken such a log meanwhile (a full disk
// refuses claims too; a jumped clock is seen here before the next claim),
// so renewing them all before claiming again keeps each outcome recorded
// once.
func (l *leases) renewLapsed(now time.Time) bool {
	l.lapsed.Store(false) // before the renewal: a refusal from now on sets it again
	if !l.keep(now) {
		l.lapsed.Store(true)
		return false
	}
	return true
}

// endBeats forgets this process's beats as it stops; a crashed process's
// row is forgotten a day on.
func (l *leases) endBeats() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.queue.EndBeats(ctx, l.process, l.cfg.Now().Add(-24*time.Hour))
}
