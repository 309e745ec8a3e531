// Package expiry owns when herald fires license.expiring-soon and
// license.expired: a runner that sleeps until the next due instant, fires
// what is due (oldest first, in batches, through licensing), and plans its
// next wake-up again whenever a change may have moved it. It reads no
// license but the due ones: the next instant comes from an index, one row.
//
// Several processes on one PostgreSQL each run one. They may wake at the
// same instant; each fires only the licenses it claimed, and the claim and
// the record of the firing share the transaction of the events, so every
// event fires once, whichever process fires it and whatever crashes.
package expiry

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// DefaultCheck is the longest a runner sleeps without looking at the next
// due instant: how late, at worst, an expiry is noticed whose planning woke
// no runner (another process's announcement lost, a clock moved by hand).
// Each look is one indexed read.
const DefaultCheck = 10 * time.Second

// Source is what a runner needs: licensing's firing and the planned next
// instant, and a signal of changes made by this process.
type Source interface {
	// FireDueExpiries fires the events due now for at most limit licenses
	// and says how many licenses it fired for.
	FireDueExpiries(ctx context.Context, limit int) (int, error)
	// NextExpiryDue is the next planned instant, if any.
	NextExpiryDue(ctx context.Context) (time.Time, bool, error)
}

// Config configures a Runner.
type Config struct {
	// Now is herald's clock (time.Now when nil): the instants are compared
	// with it, so a test that moves it and calls Wake sees what fell due.
	Now func() time.Time
	// Changed returns a channel closed when a change was committed that
	// may move the next instant (store.Store.ExpiriesWait: by this process,
	// or on PostgreSQL by another).
	Changed func() <-chan struct{}
	// Check is the longest sleep (DefaultCheck when 0).
	Check time.Duration
	// Batch is how many licenses one transaction fires for (200 when 0).
	Batch int
	// Workers is how many firing transactions run at once while more than
	// a batch is due (1 when 0). On PostgreSQL several claims (which pass
	// over each other's rows) keep the server busy while each waits for
	// its round trips and its commit; on SQLite's one writer a second one
	// is the next batch, waiting while the first runs.
	Workers int
	Logger  *slog.Logger
}

// Runner fires expiry events on time. Run it once per process.
type Runner struct {
	src  Source
	cfg  Config
	wake chan struct{}
}

// New returns a runner over src.
func New(src Source, cfg Config) *Runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Changed == nil {
		cfg.Changed = func() <-chan struct{} { return nil }
	}
	cfg.Check = cmp.Or(cfg.Check, DefaultCheck)
	cfg.Batch = cmp.Or(cfg.Batch, 200)
	cfg.Workers = max(1, cfg.Workers)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{src: src, cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the runner fire what is due and plan again now, as after a
// change: for a test that moved the clock.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// fireBatch fires one batch and says how many licenses it fired for.
func (r *Runner) fireBatch(ctx context.Context) (int, error) {
	return r.src.FireDueExpiries(ctx, r.cfg.Batch)
}

// minSleep is the shortest sleep. It gathers instants that fall less than
// 10 ms apart into one firing (at 10,000 expiries a second, one batch per
// wake-up rather than a transaction per instant), and keeps a runner from
// spinning on instants it cannot fire: due licenses another process holds
// (SKIP LOCKED passes over them until its transaction ends).
const minSleep = 10 * time.Millisecond

// Run fires due expiry events until ctx is done: everything already due at
// once (what came due while herald was stopped, oldest first), then at each
// next due instant, read from the store whenever the runner wakes: at that
// instant (its timer), at a change that may have moved it (Changed: this
// process's, and on PostgreSQL the other processes'), at Wake, and at least
// every Check.
func (r *Runner) Run(ctx context.Context) {
	failures := 0
	for {
		// Taken before the work, so a change committed during it is not missed.
		changed := r.cfg.Changed()
		began := time.Now()
		sleep, err := r.drain(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			// Back off from a failing database: 0.1 s, doubling, at most Check.
			sleep = min(r.cfg.Check, 100*time.Millisecond<<min(failures-1, 10))
			r.cfg.Logger.Error("fire expiry events", "err", err, "retry_in", sleep)
		} else {
			failures = 0
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			continue
		case <-changed:
			t.Stop()
		case <-r.wake:
			t.Stop()
		}
		// Woken by a change: at most one look per minSleep however many
		// changes come (licenses created with an expiresAt at API rates).
		if wait := minSleep - time.Since(began); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// drain fires what is due, then says how long to sleep until the next due
// instant (at least minSleep, at most Check). A wake-up with nothing due
// costs one indexed read (NextExpiryDue) and no transaction.
func (r *Runner) drain(ctx context.Context) (time.Duration, error) {
	for {
		next, ok, err := r.src.NextExpiryDue(ctx)
		if err != nil {
			return 0, err
		}
		if !ok {
			return r.cfg.Check, nil
		}
		if wait := next.Sub(r.cfg.Now()); wait > 0 {
			return min(r.cfg.Check, max(wait, minSleep)), nil
		}
		n, err := r.fireDue(ctx)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			// Due, but held by another process's firing: look again soon.
			return minSleep, nil
		}
		// Fired: whatever fell due meanwhile (or was due behind a full
		// batch) goes at once.
	}
}

// fireDue fires batches until one is not full and says how many licenses
// it fired for. The first batch goes alone: most wake-ups find less than a
// batch due, and the oldest go first; while batches come back full, Workers
// fire at once. A worker whose batch was not full stops (what was due and
// not held by another is fired), and each full batch starts again those
// that stopped: with several claims passing over each other's rows, one
// would otherwise find a short batch early in a long backlog and the rest
// of it be fired by fewer workers, at last by one alone.
func (r *Runner) fireDue(ctx context.Context) (int, error) {
	n, err := r.fireBatch(ctx)
	if err != nil || n < r.cfg.Batch {
		return n, err
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running int
		errs    []error
	)
	var worker func()
	// fill starts workers up to Workers; mu is held.
	fill := func() {
		for ; running < r.cfg.Workers; running++ {
			wg.Go(worker)
		}
	}
	worker = func() {
		for ctx.Err() == nil {
			k, err := r.fireBatch(ctx)
			mu.Lock()
			n += k
			if err != nil || k < r.cfg.Batch {
				if err != nil {
					errs = append(errs, err)
				}
				running--
				mu.Unlock()
				return
			}
			fill()
			mu.Unlock()
		}
	}
	mu.Lock()
	fill()
	mu.Unlock()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return n, err
	}
	return n, ctx.Err()
}
