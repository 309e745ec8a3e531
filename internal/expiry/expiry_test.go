package expiry

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// plan is an in-memory Source: planned instants, fired once each when
// due, in instant order, batch by batch, as licensing fires them. Its time
// is the bubble's (synctest), so the runner's timers and the instants agree.
type plan struct {
	mu     sync.Mutex
	due    []time.Time // planned, not yet fired, sorted
	fired  []firing
	calls  int // FireDueExpiries calls: transactions, in herald
	held   int // the next held calls find everything due held by another process
	waiter chan struct{}
	// lookups counts NextExpiryDue calls: index reads, in herald.
	lookups int
	// cost is how long each firing transaction takes (the bubble's time):
	// it fires what was due when it began.
	cost time.Duration
	// Calls numbered 2 to shortTo fire at most 10, as a claim that passes
	// over rows other firings hold finds a short batch in a long backlog;
	// inFlight counts calls under way, and mostAfterShort is the most there
	// were at once from four calls after the last short one.
	shortTo, inFlight, mostAfterShort int
}

type firing struct{ instant, at time.Time }

func (p *plan) FireDueExpiries(_ context.Context, limit int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.held > 0 {
		p.held--
		return 0, nil
	}
	now := time.Now()
	if p.calls >= 2 && p.calls <= p.shortTo {
		limit = min(limit, 10)
	} else if p.calls > p.shortTo+4 {
		p.mostAfterShort = max(p.mostAfterShort, p.inFlight+1)
	}
	if p.cost > 0 {
		p.inFlight++
		p.mu.Unlock()
		time.Sleep(p.cost)
		p.mu.Lock()
		p.inFlight--
	}
	n := 0
	for n < limit && n < len(p.due) && !p.due[n].After(now) {
		p.fired = append(p.fired, firing{p.due[n], now})
		n++
	}
	p.due = p.due[n:]
	return n, nil
}

func (p *plan) NextExpiryDue(context.Context) (time.Time, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lookups++
	if len(p.due) == 0 {
		return time.Time{}, false, nil
	}
	return p.due[0], true, nil
}

// add plans instants and wakes the runner, as a committed change does
// (store.Store.ExpiriesChanged).
func (p *plan) add(at ...time.Time) {
	p.mu.Lock()
	p.due = append(p.due, at...)
	slices.SortFunc(p.due, time.Time.Compare)
	ch := p.waiter
	p.waiter = nil
	p.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

func (p *plan) changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiter == nil {
		p.waiter = make(chan struct{})
	}
	return p.waiter
}

func (p *plan) snapshot() (fired []firing, calls, left int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.fired), p.calls, len(p.due)
}

// run starts a runner over p in the bubble; it stops at the end of the test.
func run(t *testing.T, p *plan, cfg Config) {
	cfg.Changed = p.changed
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r := New(p, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// late checks that each instant fired once, in order, at most within
// minSleep after it (the bubble's time is exact).
func late(t *testing.T, fired []firing, want []time.Time) {
	t.Helper()
	if len(fired) != len(want) {
		t.Fatalf("fired %d instants; want %d", len(fired), len(want))
	}
	for i, f := range fired {
		if !f.instant.Equal(want[i]) {
			t.Fatalf("fired #%d for %v; want %v", i, f.instant, want[i])
		}
		if lag := f.at.Sub(f.instant); lag < 0 || lag > minSleep {
			t.Errorf("instant %v fired %v after it; want at most %v", f.instant, lag, minSleep)
		}
	}
}

// The runner fires each instant at that instant by its own timer, however
// far away (past its periodic look, Check), and a wake-up with nothing due
// claims nothing: one firing transaction per instant.
func TestRunnerFiresEachInstantOnTimeByItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		want := []time.Time{start.Add(time.Second), start.Add(1500 * time.Millisecond), start.Add(30 * time.Second)}
		p := &plan{}
		p.add(want...)
		run(t, p, Config{Check: 10 * time.Second})
		time.Sleep(40 * time.Second)
		synctest.Wait()
		fired, calls, _ := p.snapshot()
		late(t, fired, want)
		if calls != len(want) {
			t.Errorf("%d firing transactions; want %d, one per instant (none for a wake-up with nothing due)", calls, len(want))
		}
	})
}

// An instant planned while the runner sleeps until a later one wakes it
// (Changed): it fires at its instant, not at the runner's next look.
func TestRunnerWakesForAnEarlierInstantPlannedWhileAsleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &plan{}
		p.add(start.Add(time.Hour))
		run(t, p, Config{Check: time.Hour})
		time.Sleep(time.Second)
		synctest.Wait() // asleep until the hour
		soon := time.Now().Add(2 * time.Second)
		p.add(soon)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		fired, _, _ := p.snapshot()
		late(t, fired, []time.Time{soon})
	})
}

// More than a batch due at one instant fires at that instant: a full batch
// is followed by the next at once (by Workers at once), each instant once.
func TestRunnerGoesAgainAtOnceAfterAFullBatch(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		synctest.Test(t, func(t *testing.T) {
			at := time.Now().Add(time.Second)
			want := make([]time.Time, 1050)
			for i := range want {
				want[i] = at
			}
			p := &plan{}
			p.add(want...)
			run(t, p, Config{Batch: 100, Workers: workers})
			time.Sleep(2 * time.Second)
			synctest.Wait()
			fired, calls, left := p.snapshot()
			if left != 0 {
				t.Fatalf("%d workers: %d instants left unfired", workers, left)
			}
			late(t, fired, want)
			for _, f := range fired {
				if !f.at.Equal(at) {
					t.Fatalf("%d workers: fired at %v; want every batch at the instant %v", workers, f.at, at)
				}
			}
			// 10 full batches and each worker's last claim (the short batch
			// among them); and up to workers-1 full batches, counted only
			// after the others found the backlog's end, may each start those
			// workers again, each for one empty claim (decision 0101). One
			// more than that allows.
			if most := 11 + workers + (workers-1)*(workers-1); calls > most {
				t.Errorf("%d workers: %d firing transactions; want at most %d", workers, calls, most)
			}
		})
	}
}

// A worker that finds a short batch early in a long backlog (its claim
// passed over rows the others held) stops, and the next full batch starts it
// again: the backlog is fired by Workers at once to its end, not by the one
// worker whose batches happened to stay full.
func TestRunnerKeepsItsWorkersThroughABacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Now().Add(time.Second)
		want := make([]time.Time, 5000)
		for i := range want {
			want[i] = at
		}
		// The first batch, alone, is full; three of the four workers' first
		// batches are short.
		p := &plan{cost: 10 * time.Millisecond, shortTo: 4}
		p.add(want...)
		run(t, p, Config{Batch: 100, Workers: 4})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		_, _, left := p.snapshot()
		if left != 0 {
			t.Fatalf("%d instants left unfired", left)
		}
		p.mu.Lock()
		most := p.mostAfterShort
		p.mu.Unlock()
		if most != 4 {
			t.Errorf("at most %d firings at once after the short batches; want 4, every worker started again", most)
		}
	})
}

// Instants a millisecond apart are gathered into one firing per minSleep
// rather than one per instant, each still at most minSleep late.
func TestRunnerGathersCloseInstants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now().Add(time.Second)
		want := make([]time.Time, 100)
		for i := range want {
			want[i] = start.Add(time.Duration(i) * time.Millisecond)
		}
		p := &plan{}
		p.add(want...)
		run(t, p, Config{})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		fired, calls, _ := p.snapshot()
		late(t, fired, want)
		if limit := int(100*time.Millisecond/minSleep) + 1; calls > limit {
			t.Errorf("%d firing transactions for 100 instants across 100 ms; want at most %d", calls, limit)
		}
	})
}

// Instants due but held by another process's firing are looked at again
// every minSleep, not in a spin, and fire once released.
func TestRunnerDoesNotSpinOnInstantsHeldElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Now().Add(time.Second)
		p := &plan{held: 50}
		p.add(at)
		run(t, p, Config{})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		fired, calls, _ := p.snapshot()
		if len(fired) != 1 || calls != 51 {
			t.Fatalf("fired %v in %d calls; want the instant once, on the 51st call", fired, calls)
		}
		// 50 calls held, minSleep apart.
		if lag := fired[0].at.Sub(at); lag != 50*minSleep {
			t.Errorf("fired %v after the instant; want %v (50 looks, %v apart)", lag, 50*minSleep, minSleep)
		}
	})
}

// A stream of changes (licenses created with an expiresAt at API rates)
// makes the runner look again at most once per minSleep, not once per
// change.
func TestRunnerLooksAtMostOncePerMinSleepUnderChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &plan{}
		p.add(time.Now().Add(time.Hour))
		run(t, p, Config{Check: time.Hour})
		synctest.Wait()
		for range 1000 { // a change every 100 µs for 100 ms
			p.add(time.Now().Add(time.Hour))
			time.Sleep(100 * time.Microsecond)
		}
		synctest.Wait()
		p.mu.Lock()
		looks := p.lookups
		p.mu.Unlock()
		if limit := int(100*time.Millisecond/minSleep) + 2; looks > limit {
			t.Errorf("%d looks at the next instant for 1,000 changes across 100 ms; want at most %d", looks, limit)
		}
	})
}
