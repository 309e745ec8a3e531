package delivery

import (
	"context"
	"errors"
	"math"
	"runtime/metrics"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// What an account owes, step by step: only logs left in the queue for a
// webhook that answers promptly, and only while the process is short of
// CPU; a claim's batch free; each log claimed repays half of one left; no
// more owed than twice what waits; all forgiven once the process is calm.
func TestPaceDebts(t *testing.T) {
	short := true
	d := New(nil, Config{BatchSize: 2, Busy: func() bool { return short }})
	prompt := &hookState{seen: time.Unix(1, 0)}
	owes := func(what string, want int) {
		t.Helper()
		d.slots.mu.Lock()
		got, ok := d.pacer.owed["a"]
		d.slots.mu.Unlock()
		if !ok {
			got = math.MinInt
		}
		if got != want {
			t.Fatalf("%s: owes %d half-logs; want %d", what, got, want)
		}
	}
	leave := func(st *hookState, n int) {
		d.slots.mu.Lock()
		defer d.slots.mu.Unlock()
		for range n {
			d.producer.wait("w", "a")
			d.pacer.owe("a", st)
		}
	}
	claim := func(n int) {
		d.slots.mu.Lock()
		defer d.slots.mu.Unlock()
		var cs []attempt.Claim
		for range n {
			cs = append(cs, attempt.Claim{WebhookID: "w", AccountID: "a"})
		}
		d.producer.noteClaim(attempt.ClaimParams{Limit: n, PerWebhook: 100}, cs) // all it asked for: more may wait
	}

	leave(&hookState{}, 3)
	owes("logs of a webhook that has not answered", math.MinInt)
	leave(&hookState{seen: time.Unix(1, 0), slow: true}, 3)
	owes("logs of a webhook whose latest answer was slow", math.MinInt)
	short = false
	leave(prompt, 3)
	owes("logs left while the process had CPU to spare", math.MinInt)
	short = true

	leave(prompt, 2)
	owes("two logs, within a batch of credit (4 half-logs)", 0)
	leave(prompt, 3)
	owes("three more", 6)
	claim(2)
	owes("two of them claimed", 4)
	claim(4)
	owes("the claims took twice what it left beyond its credit", 0)
	claim(10)
	owes("more claimed than was ever left", -4) // no more than a batch of credit
	leave(prompt, 6)
	owes("six more", 8)
	claim(5)
	owes("five of them claimed: no more than twice the one left waiting", 2)
	claim(1)
	owes("all it left claimed", 0)

	leave(prompt, 5)
	short = false
	claim(0)
	owes("once the process is calm", math.MinInt)
}

// A change waits in Pace while its account owes and the process is short,
// until a claim repays it, its context ends, or PaceWait has passed; and
// not at all once the process is calm.
func TestPaceWaitsAtMostPaceWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		short := true
		d := New(nil, Config{BatchSize: 1, PaceWait: 3 * time.Second, Busy: func() bool { return short }})
		owe := func() {
			d.slots.mu.Lock()
			d.pacer.owed["a"] = 2
			d.producer.wait("w", "a")
			d.slots.mu.Unlock()
		}
		owe()
		start := time.Now()
		if err := d.Pace(t.Context(), "a"); err != nil || time.Since(start) != 3*time.Second {
			t.Fatalf("Pace = %v after %v; want nil after PaceWait, 3s", err, time.Since(start))
		}
		start = time.Now()
		if err := d.Pace(t.Context(), "b"); err != nil || time.Since(start) != 0 {
			t.Fatalf("another account's Pace = %v after %v; want nil at once", err, time.Since(start))
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := d.Pace(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pace with a context ending first = %v; want its error", err)
		}

		done := make(chan struct{})
		start = time.Now()
		go func() {
			defer close(done)
			d.Pace(t.Context(), "a")
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Pace returned while its account owed")
		default:
		}
		d.slots.mu.Lock()
		d.producer.noteClaim(attempt.ClaimParams{Limit: 10}, []attempt.Claim{{WebhookID: "w", AccountID: "a"}, {WebhookID: "w", AccountID: "a"}})
		d.slots.mu.Unlock()
		<-done
		if time.Since(start) != 0 {
			t.Fatalf("Pace returned %v after the claim that repaid its debt; want at once", time.Since(start))
		}

		owe()
		short = false
		start = time.Now()
		if err := d.Pace(t.Context(), "a"); err != nil || time.Since(start) != 0 {
			t.Fatalf("Pace of a calm process = %v after %v; want nil at once", err, time.Since(start))
		}
	})
}

// The mean of what a histogram counted since a snapshot, each bucket taken
// at its middle.
func TestMeanSince(t *testing.T) {
	inf := math.Inf(1)
	h := &metrics.Float64Histogram{Buckets: []float64{math.Inf(-1), 0, 0.001, 0.003, inf}, Counts: []uint64{0, 4, 7, 9}}
	for _, c := range []struct {
		name string
		last []uint64
		want float64
	}{
		{"nothing counted since", []uint64{0, 4, 7, 9}, 0},
		{"two in [0, 1ms)", []uint64{0, 2, 7, 9}, 0.0005},
		{"one in [0, 1ms), one in [1ms, 3ms)", []uint64{0, 3, 6, 9}, (0.0005 + 0.002) / 2},
		{"one past the last bound, at it", []uint64{0, 4, 7, 8}, 0.003},
	} {
		if got := meanSince(h, c.last); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %g; want %g", c.name, got, c.want)
		}
	}
}
