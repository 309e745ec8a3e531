package ratelimit

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/startstop"
)

// Accounts limits each account's API requests, whatever token makes them,
// at the rate an operator set for the account: one Limiter for each rate in
// use, with bursts of twice the rate, as the token limit has. An account
// with no rate set is not counted here. A nil *Accounts allows everything.
type Accounts struct {
	now    func() time.Time
	mu     sync.Mutex
	byRate map[int64]*Limiter
}

// NewAccounts returns an empty set of account limiters.
func NewAccounts() *Accounts { return &Accounts{now: time.Now, byRate: map[int64]*Limiter{}} }

// Allow counts a request of account against rate requests per second.
func (a *Accounts) Allow(account string, rate int64) Decision {
	if a == nil || rate <= 0 {
		return Decision{Allowed: true}
	}
	return a.limiter(rate).Allow("c:" + account)
}

func (a *Accounts) limiter(rate int64) *Limiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.byRate[rate]
	if l == nil {
		l = New(float64(rate), int(max(2, 2*rate)))
		l.now = a.now
		a.byRate[rate] = l
	}
	return l
}

// Run shares every rate's counts through shared every SyncInterval until
// ctx is done, so processes on one database count an account together.
// Each rate's keys carry the rate, so an account whose rate changed starts
// counting afresh rather than mixing the two.
func (a *Accounts) Run(ctx context.Context, shared Shared, log *slog.Logger) {
	if a == nil || shared == nil {
		return
	}
	startstop.Every(ctx, SyncInterval, func() {
		if err := a.sync(ctx, shared); err != nil && ctx.Err() == nil {
			log.Warn("share account rate-limit counts", "err", err)
		}
	})
}

// sync shares each rate's counts once; it returns the first error.
func (a *Accounts) sync(ctx context.Context, shared Shared) error {
	a.mu.Lock()
	rates := make(map[int64]*Limiter, len(a.byRate))
	for r, l := range a.byRate {
		rates[r] = l
	}
	a.mu.Unlock()
	var first error
	for r, l := range rates {
		if err := l.sync(ctx, shared, "c"+strconv.FormatInt(r, 10)+"/"); err != nil && first == nil {
			first = err
		}
	}
	return first
}
