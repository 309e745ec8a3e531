package server

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/portal"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/startstop"
	"github.com/heraldhq/herald/internal/store"
)

// limitServices are what runs for the rate limits while herald serves: on
// PostgreSQL, where several processes may serve one database, the rate
// limiters share their counts through it; on either engine, old sign-in
// failures are forgotten.
func (s *Server) limitServices() startstop.Group {
	g := startstop.Group{startstop.New(func(ctx context.Context) {
		startstop.Every(ctx, 10*time.Minute, func() {
			if err := s.Store.PruneSignInFailures(ctx, s.Store.Now().Add(-portal.SignInWindow)); err != nil && ctx.Err() == nil {
				s.log.Warn("prune sign-in failures", "err", err)
			}
		})
	})}
	if s.Store.Engine() == "postgres" {
		shared := sharedCounts{s.Store}
		g = append(g,
			startstop.New(func(ctx context.Context) { s.limits.Token.Run(ctx, shared, "t", s.log) }),
			startstop.New(func(ctx context.Context) { s.limits.Anonymous.Run(ctx, shared, "a", s.log) }),
			startstop.New(func(ctx context.Context) { s.limits.Accounts.Run(ctx, shared, s.log) }))
	}
	return g
}

// sharedCounts lets the rate limiters share their counts through the store.
type sharedCounts struct{ st *store.Store }

func (c sharedCounts) AddRateCounts(ctx context.Context, counts []ratelimit.Count) error {
	rc := make([]store.RateCount, len(counts))
	for i, x := range counts {
		rc[i] = store.RateCount(x)
	}
	return c.st.AddRateCounts(ctx, rc)
}

func (c sharedCounts) RateCounts(ctx context.Context, keys []string, since int64) ([]ratelimit.Count, error) {
	rc, err := c.st.RateCounts(ctx, keys, since)
	out := make([]ratelimit.Count, len(rc))
	for i, x := range rc {
		out[i] = ratelimit.Count(x)
	}
	return out, err
}

func (c sharedCounts) PruneRateCounts(ctx context.Context, before int64) error {
	return c.st.PruneRateCounts(ctx, before)
}
