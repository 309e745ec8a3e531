// Package ratelimit owns herald's limits on request rates: how many requests
// one API token (or portal session), or one client address without valid
// credentials, may make, counted across every process that shares a
// PostgreSQL database; and which address a request comes from when herald
// sits behind proxies the operator trusts.
//
// A limit is a rate with a burst: a key may make Burst requests at once, and
// Rate per second after that. It is counted in windows of Burst/Rate seconds
// with the previous window weighted by how much of it still overlaps the
// last Burst/Rate seconds (a sliding-window estimate), which needs only two
// counters per key, and two counters are what processes can add up in a
// database. Each process counts locally and, every SyncInterval, adds what it
// counted to the shared counts and reads back what the others counted; so
// the processes together may admit up to Rate×SyncInterval more per process
// than the limit, and a key's first burst may be admitted once by each
// process before they have heard of each other.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/startstop"
)

// SyncInterval is how often a Limiter shares its counts.
const SyncInterval = 200 * time.Millisecond

// Count is one key's requests in one window, as shared between processes.
type Count struct {
	Key    string
	Window int64 // the window's number: its start in Unix time divided by the window's length
	N      int64
}

// Shared is where processes share their counts (the store).
type Shared interface {
	// AddRateCounts adds each count to the shared total of its key and
	// window.
	AddRateCounts(ctx context.Context, counts []Count) error
	// RateCounts returns the shared totals of keys for windows from since on.
	RateCounts(ctx context.Context, keys []string, since int64) ([]Count, error)
	// PruneRateCounts forgets windows before before.
	PruneRateCounts(ctx context.Context, before int64) error
}

// Limiter limits the request rate of each key.
type Limiter struct {
	rate   float64
	burst  int64
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	keys map[string]*state
}

// state is one key's counts in the current window and the one before.
type state struct {
	window      int64    // the current window's number
	own, others [2]int64 // [0] previous window, [1] current: this process's, the others'
	flushed     [2]int64 // of own, what the shared counts already hold
	lastUsed    time.Time
	dirty       bool
}

// maxKeys bounds the keys a Limiter remembers; past it, keys idle for two
// windows are dropped.
const maxKeys = 100_000

// New returns a limiter of rate requests per second with bursts of burst
// (at least 1). A rate of 0 or less makes a nil Limiter, which allows
// everything.
func New(rate float64, burst int) *Limiter {
	if rate <= 0 {
		return nil
	}
	b := max(1, int64(burst))
	window := max(10*time.Millisecond, time.Duration(float64(b)/rate*float64(time.Second)))
	return &Limiter{rate: rate, burst: b, window: window, now: time.Now, keys: map[string]*state{}}
}

// Rate is the limiter's sustained rate, per second.
func (l *Limiter) Rate() float64 { return l.rate }

// Decision is what Allow decided, with what the RateLimit headers say.
type Decision struct {
	Allowed    bool
	Limit      int64         // the burst
	Rate       float64       // requests per second after the burst
	Remaining  int64         // requests left now
	Reset      time.Duration // until the current window ends
	RetryAfter time.Duration // when refused: until one more request would be allowed (at least 1 s)
}

// Allow counts a request for key if the limit allows it. A nil Limiter
// allows everything.
func (l *Limiter) Allow(key string) Decision {
	if l == nil {
		return Decision{Allowed: true}
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state(key, now)
	used := l.estimate(st, now)
	d := Decision{Limit: l.burst, Rate: l.rate, Reset: l.windowEnd(st.window).Sub(now)}
	if used >= float64(l.burst) {
		d.RetryAfter = max(time.Second, l.until(st, now))
		return d
	}
	st.own[1]++
	st.dirty = true
	d.Allowed = true
	d.Remaining = max(0, int64(math.Floor(float64(l.burst)-used-1)))
	return d
}

// state returns key's counts, moved on to now's window. l.mu is held.
func (l *Limiter) state(key string, now time.Time) *state {
	w := l.windowOf(now)
	st := l.keys[key]
	if st == nil {
		if len(l.keys) >= maxKeys {
			l.prune(now)
		}
		st = &state{window: w}
		l.keys[key] = st
	}
	st.lastUsed = now
	switch {
	case w == st.window+1:
		st.own = [2]int64{st.own[1], 0}
		st.others = [2]int64{st.others[1], 0}
		st.flushed = [2]int64{st.flushed[1], 0}
	case w > st.window+1:
		st.own, st.others, st.flushed = [2]int64{}, [2]int64{}, [2]int64{}
	}
	st.window = w
	return st
}

// estimate is the requests counted in the last window's length: the current
// window's, and the previous window's weighted by its overlap.
func (l *Limiter) estimate(st *state, now time.Time) float64 {
	into := float64(now.Sub(l.windowStart(st.window))) / float64(l.window)
	prev := float64(st.own[0] + st.others[0])
	cur := float64(st.own[1] + st.others[1])
	return prev*(1-into) + cur
}

// until is how long from now until one more request would be allowed, as
// the counts stand: the previous window's weight fades through the current
// window, then the current window's through the next.
func (l *Limiter) until(st *state, now time.Time) time.Duration {
	room := float64(l.burst) - 1e-6 // what the estimate must fall below
	into := float64(now.Sub(l.windowStart(st.window))) / float64(l.window)
	prev := float64(st.own[0] + st.others[0])
	cur := float64(st.own[1] + st.others[1])
	if cur <= room && prev > 0 { // within this window, once enough of prev has faded
		if f := 1 - (room-cur)/prev; f < 1 {
			return time.Duration((f - into) * float64(l.window))
		}
	}
	g := 0.0 // how far into the next window
	if cur > room && cur > 0 {
		g = 1 - room/cur
	}
	return time.Duration((1 - into + g) * float64(l.window))
}

func (l *Limiter) windowOf(t time.Time) int64 { return t.UnixNano() / int64(l.window) }
func (l *Limiter) windowStart(w int64) time.Time {
	return time.Unix(0, w*int64(l.window))
}
func (l *Limiter) windowEnd(w int64) time.Time { return l.windowStart(w + 1) }

// prune drops keys idle for two windows. l.mu is held.
func (l *Limiter) prune(now time.Time) {
	for k, st := range l.keys {
		if now.Sub(st.lastUsed) > 2*l.window {
			delete(l.keys, k)
		}
	}
}

// Run shares the limiter's counts through shared every SyncInterval until
// ctx is done. Without it (one process) the limiter counts alone.
func (l *Limiter) Run(ctx context.Context, shared Shared, prefix string, log *slog.Logger) {
	if l == nil || shared == nil {
		return
	}
	pruned := time.Time{}
	startstop.Every(ctx, SyncInterval, func() {
		if err := l.sync(ctx, shared, prefix); err != nil && ctx.Err() == nil {
			log.Warn("share rate-limit counts", "err", err)
		}
		if now := l.now(); now.Sub(pruned) > 10*l.window+time.Minute {
			pruned = now
			if err := shared.PruneRateCounts(ctx, l.windowOf(now)-2); err != nil && ctx.Err() == nil {
				log.Warn("prune rate-limit counts", "err", err)
			}
		}
	})
}

// sync adds this process's new counts to the shared ones and reads back the
// totals of every key used in the last two windows. Shared keys carry
// prefix and the window's length, so limiters of different kinds or
// settings never add to each other's counts.
func (l *Limiter) sync(ctx context.Context, shared Shared, prefix string) error {
	now := l.now()
	tag := prefix + strconv.FormatInt(int64(l.window/time.Millisecond), 10) + ":"
	l.mu.Lock()
	var adds []Count
	var keys []string
	current := l.windowOf(now)
	for k, st := range l.keys {
		if current-st.window > 1 {
			if now.Sub(st.lastUsed) > 2*l.window {
				delete(l.keys, k)
			}
			continue
		}
		keys = append(keys, tag+k)
		if !st.dirty {
			continue
		}
		for i, w := range [2]int64{st.window - 1, st.window} {
			if d := st.own[i] - st.flushed[i]; d > 0 {
				adds = append(adds, Count{Key: tag + k, Window: w, N: d})
				st.flushed[i] = st.own[i]
			}
		}
		st.dirty = false
	}
	l.mu.Unlock()
	if len(adds) > 0 {
		if err := shared.AddRateCounts(ctx, adds); err != nil {
			l.unflush(adds, tag)
			return err
		}
	}
	if len(keys) == 0 {
		return nil
	}
	totals, err := shared.RateCounts(ctx, keys, current-1)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range totals {
		st := l.keys[c.Key[len(tag):]]
		if st == nil {
			continue
		}
		for i, w := range [2]int64{st.window - 1, st.window} {
			if c.Window == w {
				st.others[i] = max(0, c.N-st.flushed[i])
			}
		}
	}
	return nil
}

// unflush marks counts that failed to be shared as still to share.
func (l *Limiter) unflush(adds []Count, tag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range adds {
		st := l.keys[c.Key[len(tag):]]
		if st == nil {
			continue
		}
		for i, w := range [2]int64{st.window - 1, st.window} {
			if c.Window == w {
				st.flushed[i] -= c.N
				st.dirty = true
			}
		}
	}
}
