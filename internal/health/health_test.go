package health_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/health"
)

func TestApply(t *testing.T) {
	const after = 3 // a short SuspendAfter, so a table row can reach it
	d, f := health.Delivered, health.Failed
	st := func(s health.Status, streak int) health.State { return health.State{Status: s, Streak: streak} }
	tests := []struct {
		name        string
		from        health.State
		completions []health.Completion
		want        health.State
		changed     bool
		warn        health.Warning
	}{
		// The specification's table, row by row.
		{"a new webhook is Healthy", health.New, nil, st(health.Healthy, 0), false, health.None},
		{"Healthy: a failed attempt with attempts left completes nothing", st(health.Healthy, 0), nil, st(health.Healthy, 0), false, health.None},
		{"Healthy: an event exhausts its attempts", st(health.Healthy, 0), []health.Completion{f}, st(health.Unhealthy, 1), true, health.BecameUnhealthy},
		{"Unhealthy: a failure short of the streak", st(health.Unhealthy, 1), []health.Completion{f}, st(health.Unhealthy, 2), true, health.None},
		{"Unhealthy: the most recent completed events all failed", st(health.Unhealthy, after-1), []health.Completion{f}, st(health.Suspended, after), true, health.BecameSuspended},
		{"Suspended: a failed resend", st(health.Suspended, after), []health.Completion{f}, st(health.Suspended, after+1), true, health.None},
		{"Suspended: nothing completes while suspended", st(health.Suspended, after), nil, st(health.Suspended, after), false, health.None},
		{"Unhealthy: a delivery", st(health.Unhealthy, 2), []health.Completion{d}, st(health.Healthy, 0), true, health.Recovered},
		{"Suspended: a successful resend", st(health.Suspended, after+4), []health.Completion{d}, st(health.Healthy, 0), true, health.Recovered},
		{"Healthy: a delivery", st(health.Healthy, 0), []health.Completion{d}, st(health.Healthy, 0), false, health.None},

		// A delivery ends the streak: failures after it count from one.
		{"a delivery between failures restarts the streak", st(health.Unhealthy, after-1), []health.Completion{d, f}, st(health.Unhealthy, 1), true, health.None},
		{"two failures from Healthy: Unhealthy, short of the streak", st(health.Healthy, 0), []health.Completion{f, f}, st(health.Unhealthy, 2), true, health.BecameUnhealthy},

		// A batch that passes through several states warns of where it ends.
		{"Healthy to Suspended in one batch is one suspension", st(health.Healthy, 0), []health.Completion{f, f, f}, st(health.Suspended, after), true, health.BecameSuspended},
		{"Unhealthy, recovered, Unhealthy again: where it was", st(health.Unhealthy, 1), []health.Completion{d, f}, st(health.Unhealthy, 1), false, health.None},
		{"Unhealthy, recovered, failing again with a longer streak", st(health.Unhealthy, 2), []health.Completion{d, f, f}, st(health.Unhealthy, 2), false, health.None},
		{"Suspended, resent, then failing: Unhealthy", st(health.Suspended, after), []health.Completion{d, f}, st(health.Unhealthy, 1), true, health.BecameUnhealthy},
		{"suspended then delivered in one batch: Healthy, no warning", st(health.Healthy, 0), []health.Completion{f, f, f, d}, st(health.Healthy, 0), false, health.None},
		{"Unhealthy, suspended then delivered: Recovered", st(health.Unhealthy, 1), []health.Completion{f, f, d}, st(health.Healthy, 0), true, health.Recovered},
		{"Suspended, resent, suspended again in one batch", st(health.Suspended, after), []health.Completion{d, f, f, f}, st(health.Suspended, after), false, health.None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := health.Apply(tt.from, tt.completions, after)
			if got.State != tt.want || got.Changed != tt.changed || got.Warning != tt.warn {
				t.Errorf("Apply(%+v, %v) = %+v; want %+v, changed %v, warning %v", tt.from, tt.completions, got, tt.want, tt.changed, tt.warn)
			}
		})
	}
}

func TestSuspendAfterIsTheSpecifications(t *testing.T) {
	if health.SuspendAfter != 50 {
		t.Errorf("SuspendAfter = %d; the specification says the 50 most recent completed events", health.SuspendAfter)
	}
	// Forty-nine failures from Healthy leave it Unhealthy; the fiftieth suspends.
	fails := make([]health.Completion, health.SuspendAfter)
	for i := range fails {
		fails[i] = health.Failed
	}
	if a := health.Apply(health.New, fails[:health.SuspendAfter-1], health.SuspendAfter); a.State.Status != health.Unhealthy {
		t.Errorf("after %d failures: %+v; want Unhealthy", health.SuspendAfter-1, a)
	}
	if a := health.Apply(health.New, fails, health.SuspendAfter); a.State.Status != health.Suspended || a.Warning != health.BecameSuspended {
		t.Errorf("after %d failures: %+v; want Suspended", health.SuspendAfter, a)
	}
}
