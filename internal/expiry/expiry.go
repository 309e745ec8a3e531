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
// due instant: how late, at worst, an expiry planned by another process
// (which stopped before its own runner fired it) or a clock moved by hand is
// noticed. Each look is one indexed read.
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
	// Changed returns a channel closed when this process committed a change
	// that may move the next instant (store.Store.ExpiriesWait).
	Changed func() <-chan struct{}
	// Check is the longest sleep (DefaultCheck when 0).
	Check time.Duration
	// Batch is how many licenses one transaction fires for (200 when 0).
	Batch int
	// Workers is how many firing transactions run at once while more than
	// a batch is due (1 when 0). On PostgreSQL, where each event costs a
	// round trip, several claims (which pass over each other's rows) fire
	// faster; SQLite's one writer gains nothing.
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

// fireBatch fires one batch and says whether it was full (more may be due).
func (r *Runner) fireBatch(ctx context.Context) (bool, error) {
	n, err := r.src.FireDueExpiries(ctx, r.cfg.Batch)
	if err != nil {
		return false, err
	}
	return n == r.cfg.Batch, nil
}

// minSleep keeps a runner from spinning on instants it cannot fire: due
// licenses another process holds (SKIP LOCKED passes over them until its
// transaction ends), or a failing database.
const minSleep = 10 * time.Millisecond

// Run fires due expiry events until ctx is done: everything already due at
// once (what came due while herald was stopped, oldest first), then at each
// next due instant.
func (r *Runner) Run(ctx context.Context) {
	failures := 0
	for {
		// Taken before the work, so a change committed during it is not missed.
		changed := r.cfg.Changed()
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
		t := time.NewTimer(max(sleep, minSleep))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-changed:
			t.Stop()
		case <-r.wake:
			t.Stop()
		}
	}
}

// drain fires batches until none is full, then says how long to sleep until
// the next due instant (at most Check).
func (r *Runner) drain(ctx context.Context) (time.Duration, error) {
	// One batch first: most wake-ups find less than a batch due, and need
	// no more than one claim.
	full, err := r.fireBatch(ctx)
	if err != nil {
		return 0, err
	}
	if full {
		var wg sync.WaitGroup
		errs := make([]error, r.cfg.Workers)
		for i := range r.cfg.Workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					full, err := r.fireBatch(ctx)
					if err != nil || !full {
						errs[i] = err
						return
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	next, ok, err := r.src.NextExpiryDue(ctx)
	if err != nil {
		return 0, err
	}
	if !ok {
		return r.cfg.Check, nil
	}
	return min(r.cfg.Check, next.Sub(r.cfg.Now())), nil
}
