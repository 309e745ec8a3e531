package delivery

import (
	"context"
	"math"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Pacing the changes that fire events (decision 0115). The API and the
// deliveries share one process. When the clients' changes come faster than
// the process can deliver what they fire, the difference waits in the
// queue; and once a webhook's logs wait, its next ones are not handed over
// (they must not pass the older), so firing costs less and delivering more
// (each log is claimed): the API draws further ahead and does not give the
// process back. Deliveries then start seconds after their events for as
// long as the clients keep calling. So, while the process is short of CPU,
// an account whose changes leave logs in the queue waits, before its next
// change, until the claims have taken twice what it left there (less a
// batch it may leave freely): its backlog shrinks however fast its
// clients call, and handing over resumes.
//
//   - Short of CPU is what the Go scheduler says: its goroutines waited, on
//     average over a busyWindow, longer than busyLatency to run once ready;
//     and it stays short until they have waited less than half that for
//     calmWindows in a row. A busy receiver, a slow one or a dead one does
//     not make the process short of CPU, and no client waits for them.
//   - Only a log left in the queue for a webhook that answers promptly
//     counts: its logs wait because the process could not send them, not
//     because the receiver could not take them. One that has not answered
//     yet here, or whose latest answer was slow, waits for its receiver.
//   - Each account owes for its own logs, so an account whose changes are
//     handed over, or fire nothing, never waits for another's.
//   - A change waits at most Config.PaceWait: pacing slows a busy API to
//     what the process delivers; it never refuses a change, nor holds one
//     long when the dispatcher cannot claim (its database lost, its slots
//     held by attempts that run to their time-out).
const (
	busyLatency = 500 * time.Microsecond
	busyWindow  = 100 * time.Millisecond
	calmWindows = 10
)

// pacer owns pacing the clients' changes: whether the process is short of
// CPU (its watch, a background service), what each account owes, and the
// changes waiting in Pace. The producer's claims repay the debts.
type pacer struct {
	cfg *Config
	// mu is the slots' mutex: a debt is weighed with the room a firing
	// reserves and with what a claim learns waits in the queue.
	mu *sync.Mutex
	// owed and paced are guarded by mu: what each account's changes left
	// in the queue while the process was short of CPU (cpuShort), in
	// half-logs, and a channel closed when a debt falls.
	owed     map[string]int
	paced    chan struct{}
	cpuShort atomic.Bool
}

func newPacer(cfg *Config, mu *sync.Mutex) *pacer {
	return &pacer{cfg: cfg, mu: mu, owed: map[string]int{}, paced: make(chan struct{})}
}

// busy reports whether the process is short of CPU now.
func (p *pacer) busy() bool {
	if p.cfg.Busy != nil {
		return p.cfg.Busy()
	}
	return p.cpuShort.Load()
}

// watch reads the scheduler's latencies every busyWindow until ctx
// ends, keeping cpuShort (see above); debts are forgiven once the
// process is calm.
func (p *pacer) watch(ctx context.Context) {
	if p.cfg.Busy != nil {
		return
	}
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	var last []uint64
	calm := 0
	t := time.NewTicker(busyWindow)
	defer t.Stop()
	for {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindFloat64Histogram {
			return // not measured by this Go: never short
		}
		h := s[0].Value.Float64Histogram()
		if last != nil {
			switch mean := meanSince(h, last); {
			case mean > busyLatency.Seconds():
				p.cpuShort.Store(true)
				calm = 0
			case p.cpuShort.Load() && mean < busyLatency.Seconds()/2:
				if calm++; calm >= calmWindows {
					p.cpuShort.Store(false)
					p.mu.Lock()
					p.forgive()
					p.mu.Unlock()
				}
			}
		}
		last = append(last[:0], h.Counts...)
		select {
		case <-ctx.Done():
			p.cpuShort.Store(false)
			return
		case <-t.C:
		}
	}
}

// meanSince is the mean of the values h counted since it counted last,
// taking each bucket at its middle (at its finite bound when the other is
// infinite); 0 when none.
func meanSince(h *metrics.Float64Histogram, last []uint64) float64 {
	var n uint64
	var sum float64
	for i, c := range h.Counts {
		k := c - last[i]
		if k == 0 {
			continue
		}
		lo, hi := max(0, h.Buckets[i]), h.Buckets[i+1]
		mid := lo
		if !math.IsInf(hi, 1) {
			mid = (lo + hi) / 2
		}
		n += k
		sum += float64(k) * mid
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// owe notes that the account left a log for the webhook in the queue. It
// counts while the process is short of CPU and the webhook answers
// promptly. Debts count half-logs, each log a claim takes repaying one,
// and begin in credit: an account may leave a claim's batch in the queue
// before its changes wait, so that a light load beside a draining backlog
// (a few logs between two claims) is not held for the next claim. mu is
// held.
func (p *pacer) owe(accountID string, st *hookState) {
	if st.slow || st.seen.IsZero() || !p.busy() {
		return
	}
	owed, ok := p.owed[accountID]
	if !ok {
		owed = -p.credit()
	}
	p.owed[accountID] = owed + 2
}

// credit is the most an account's debt may fall below zero, in
// half-logs: a claim's batch.
func (p *pacer) credit() int { return 2 * p.cfg.BatchSize }

// repay lowers each account's debt by what a claim took of its logs (the
// accounts' counts), and to no more than twice what it has waiting in the
// queue as far as this process knows (queued, the producer's count, the
// claim counted in it): a debt for logs no longer there would hold the
// account's changes with nothing left to deliver. Once the process has CPU
// to spare every debt is forgiven. mu is held.
func (p *pacer) repay(accounts map[string]int, queued map[string]*waitCount) {
	if len(p.owed) == 0 {
		return
	}
	if !p.busy() {
		p.forgive()
		return
	}
	waiting := make(map[string]int, len(p.owed))
	for _, w := range queued {
		if _, ok := p.owed[w.account]; ok && w.logs > 0 {
			waiting[w.account] += w.logs
		}
	}
	repaid := false
	for id, owed := range p.owed {
		now := min(max(owed-accounts[id], -p.credit()), 2*waiting[id])
		p.owed[id] = now
		repaid = repaid || (owed > 0 && now < owed)
	}
	if repaid {
		p.wake()
	}
}

// forgive forgets every debt: no change waits. mu is held.
func (p *pacer) forgive() {
	if len(p.owed) > 0 {
		clear(p.owed)
		p.wake()
	}
}

// wake wakes the changes waiting in Pace to look again. mu is held.
func (p *pacer) wake() {
	close(p.paced)
	p.paced = make(chan struct{})
}

// pace is Dispatcher.Pace: it waits while the process is short of CPU and
// the account owes (see above), and at most Config.PaceWait.
func (p *pacer) pace(ctx context.Context, accountID string) error {
	var timer *time.Timer
	for {
		if !p.busy() { // the common case: no lock on the API's path
			break
		}
		p.mu.Lock()
		if p.owed[accountID] <= 0 {
			p.mu.Unlock()
			break
		}
		more := p.paced
		p.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(p.cfg.PaceWait)
			start := time.Now()
			p.cfg.Metrics.pacing(1)
			defer func() {
				timer.Stop()
				p.cfg.Metrics.pacing(-1)
				p.cfg.Metrics.paced(time.Since(start))
			}()
		}
		select {
		case <-more:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
