package server

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/startstop"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

// PullExpiryEvery is how often a process ends, undelivered, the pull
// webhooks' events left unacknowledged past their retention
// (queue.ExpirePulls). Several processes doing it at once end each once.
const PullExpiryEvery = time.Minute

// MinPullRetention is the shortest a pull webhook keeps an event: a retry
// policy of one attempt spans nothing, and a consumer needs time to read.
const MinPullRetention = time.Hour

// PullRetention is how long a pull webhook keeps an event unacknowledged
// (decision 0140): the span of its own retry policy, the time an HTTP
// webhook with that policy would go on trying, at least MinPullRetention;
// without one, store.DefaultPullRetention (72 hours, the longest a policy
// may span), since the operator's default policy is sized for receivers
// that answer, not for a consumer that may be down overnight.
func PullRetention(p *store.RetryPolicy) time.Duration {
	if p == nil {
		return store.DefaultPullRetention
	}
	return max(time.Duration(validator.RetrySpan(*p))*time.Second, MinPullRetention)
}

// expirePulls runs queue.ExpirePulls every PullExpiryEvery until ctx is
// done.
func (s *Server) expirePulls(ctx context.Context) {
	startstop.Every(ctx, PullExpiryEvery, func() {
		n, err := s.Queue.ExpirePulls(ctx, PullRetention)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("end pull webhooks' unacknowledged events past their retention", "err", err)
		case n > 0:
			s.log.Info("pull webhooks' events not acknowledged within their retention ended undelivered", "events", n)
		}
	})
}
