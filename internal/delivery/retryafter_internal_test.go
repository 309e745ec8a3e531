package delivery

import (
	"math"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	d := func(v time.Duration) *time.Duration { return &v }
	for _, tt := range []struct {
		header string
		want   *time.Duration
	}{
		{"120", d(120 * time.Second)},
		{" 0 ", d(0)},
		{"Thu, 26 Nov 2026 01:02:00 GMT", d(2 * time.Minute)},     // IMF-fixdate
		{"Thursday, 26-Nov-26 01:00:30 GMT", d(30 * time.Second)}, // RFC 850
		{"Thu Nov 26 01:00:05 2026", d(5 * time.Second)},          // asctime
		{"Thu, 26 Nov 2026 00:59:00 GMT", d(0)},                   // passed: at once
		{"99999999999999999999", d(math.MaxInt64)},                // too long to read: the most there is
		{"", nil},
		{"soon", nil},
		{"-5", nil},
		{"1.5", nil},
		{"120 s", nil},
		{"Thu, 26 Nov 2026 01:02:00", nil},
	} {
		got := retryAfter(tt.header, now)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("Retry-After %q: %v; want %v", tt.header, show(got), show(tt.want))
		}
	}
}

func show(d *time.Duration) string {
	if d == nil {
		return "ignored"
	}
	return d.String()
}

func TestNextAttemptTakesTheLaterOfRetryAfterAndTheInterval(t *testing.T) {
	now := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	a := &attempts{cfg: &Config{RetryInterval: 5 * time.Minute, Now: func() time.Time { return now }}}
	wait := func(v time.Duration) *time.Duration { return &v }
	for _, tt := range []struct {
		asked *time.Duration
		want  time.Duration
		note  string
	}{
		{nil, 5 * time.Minute, ""},
		{wait(20 * time.Minute), 20 * time.Minute, "; receiver asked to retry after 1200 s"},
		{wait(2 * time.Second), 5 * time.Minute, "; receiver asked to retry after 2 s; retrying after the retry interval, 300 s"},
		{wait(3 * time.Hour), time.Hour, "; receiver asked to retry after 10800 s; retrying after at most 3600 s"},
		{wait(math.MaxInt64), time.Hour, "; receiver asked to retry after more than 3600 s; retrying after at most 3600 s"},
	} {
		next, note := a.nextAttempt(Result{RetryAfter: tt.asked}, a.cfg.RetryInterval)
		if next.Sub(now) != tt.want || note != tt.note {
			t.Errorf("asked %v: next in %v, %q; want %v, %q", show(tt.asked), next.Sub(now), note, tt.want, tt.note)
		}
	}
}

// TestRetryWaitFollowsThePolicy: a fixed policy waits its interval; an
// exponential one doubles from its interval up to its cap, each wait
// drawn between half of that and all of it.
func TestRetryWaitFollowsThePolicy(t *testing.T) {
	fixed := attempt.RetryPolicy{MaxAttempts: 5, Backoff: attempt.BackoffFixed, IntervalSeconds: 300, MaxIntervalSeconds: 300}
	for n := 1; n < 5; n++ {
		if got := RetryWait(fixed, n, 0.7); got != 5*time.Minute {
			t.Errorf("fixed, attempt %d: %v; want 5m", n, got)
		}
	}
	exp := attempt.RetryPolicy{MaxAttempts: 30, Backoff: attempt.BackoffExponential, IntervalSeconds: 10, MaxIntervalSeconds: 3600}
	for _, tt := range []struct {
		number int
		full   time.Duration
	}{{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {9, 2560 * time.Second}, {10, time.Hour}, {29, time.Hour}, {500, time.Hour}} {
		if lo := RetryWait(exp, tt.number, 0); lo != tt.full/2 {
			t.Errorf("exponential, attempt %d, least jitter: %v; want %v", tt.number, lo, tt.full/2)
		}
		if hi := RetryWait(exp, tt.number, 0.999999999); hi > tt.full || hi < tt.full*99/100 {
			t.Errorf("exponential, attempt %d, most jitter: %v; want just under %v", tt.number, hi, tt.full)
		}
	}
}
