package delivery

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// What a 410 Gone does: the log's reason, and the webhook's.
const (
	ReasonGone   = "receiver answered 410 Gone; the webhook is disabled and this event was not retried (enable the webhook, then resend)"
	DisabledGone = "its receiver answered 410 Gone, which asks that nothing more be sent; enable it again once the endpoint is back"
)

// Gone reports a 410 answer.
func (r Result) Gone() bool { return r.StatusCode != nil && *r.StatusCode == http.StatusGone }

// DefaultRetryPolicy is the policy of a webhook without its own: the
// operator's attempts and interval (5 attempts 5 minutes apart unless
// --max-attempts or --retry-interval change them), fixed. Its interval is
// shown in whole seconds, at least one.
func (d *Dispatcher) DefaultRetryPolicy() attempt.RetryPolicy {
	s := max(int((d.cfg.RetryInterval+time.Second-1)/time.Second), 1)
	return attempt.RetryPolicy{MaxAttempts: d.cfg.MaxAttempts, Backoff: attempt.BackoffFixed, IntervalSeconds: s, MaxIntervalSeconds: s}
}

// maxAttempts is how many automatic attempts c's webhook gets, the first
// included.
func (a *attempts) maxAttempts(c attempt.Claim) int {
	if c.RetryPolicy == nil {
		return a.cfg.MaxAttempts
	}
	return c.RetryPolicy.MaxAttempts
}

// retryWait is the wait before retrying c after its failed attempt
// number: the operator's interval for a webhook without its own policy,
// else the policy's (RetryWait).
func (a *attempts) retryWait(c attempt.Claim, number int) time.Duration {
	if c.RetryPolicy == nil {
		return a.cfg.RetryInterval
	}
	return RetryWait(*c.RetryPolicy, number, rand.Float64())
}

// RetryWait is the wait a policy asks for after failed attempt number
// (from 1), given r in [0, 1) drawn at random. Fixed: the interval.
// Exponential: the interval doubled for each attempt before, capped at
// the maximum interval, then drawn between half of that and all of it
// ("equal jitter"), so that the retries of many events that failed
// together do not come back together; jitter only shortens a wait, so a
// policy's span (validator.RetrySpan) bounds its real one.
func RetryWait(p attempt.RetryPolicy, number int, r float64) time.Duration {
	interval := time.Duration(p.IntervalSeconds) * time.Second
	if p.Backoff != attempt.BackoffExponential {
		return interval
	}
	wait := time.Duration(p.MaxIntervalSeconds) * time.Second
	if number < 40 { // past 2^40 any interval is beyond every cap
		wait = min(interval<<(number-1), wait)
	}
	return wait/2 + time.Duration(r*float64(wait/2))
}
