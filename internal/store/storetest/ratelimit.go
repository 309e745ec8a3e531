package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testRateCountsAddUp: counts added by two processes add up per key and
// window, and pruning forgets old windows only.
func testRateCountsAddUp(t *testing.T, b *Bundle) {
	other := b.Open(t)
	add := func(st *store.Store, counts ...store.RateCount) {
		t.Helper()
		if err := st.AddRateCounts(b.Ctx, counts); err != nil {
			t.Fatal(err)
		}
	}
	add(b.St, store.RateCount{Key: "t:a", Window: 10, N: 3}, store.RateCount{Key: "t:a", Window: 11, N: 1}, store.RateCount{Key: "t:b", Window: 11, N: 5})
	add(other, store.RateCount{Key: "t:a", Window: 11, N: 2}, store.RateCount{Key: "t:c", Window: 11, N: 7})
	got, err := other.RateCounts(b.Ctx, []string{"t:a", "t:b"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]any]int64{{"t:a", int64(10)}: 3, {"t:a", int64(11)}: 3, {"t:b", int64(11)}: 5}
	if len(got) != len(want) {
		t.Fatalf("counts %+v; want %v", got, want)
	}
	for _, c := range got {
		if want[[2]any{c.Key, c.Window}] != c.N {
			t.Errorf("%s in window %d: %d; want %d", c.Key, c.Window, c.N, want[[2]any{c.Key, c.Window}])
		}
	}
	if err := b.St.PruneRateCounts(b.Ctx, 11); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.St.RateCounts(b.Ctx, []string{"t:a"}, 0); len(got) != 1 || got[0].Window != 11 {
		t.Errorf("after pruning windows before 11: %+v", got)
	}
}

// testSignInLimits: an attempt counts against every limit at once; a full
// limit refuses until its window ends, without counting; a success forgets
// its keys and gives one back.
func testSignInLimits(t *testing.T, b *Bundle) {
	const window = 15 * time.Minute
	pair := []store.SignInLimit{{Key: "pair:a@example.com|192.0.2.1", Max: 3}, {Key: "ip:192.0.2.1", Max: 5}}
	take := func(limits []store.SignInLimit) time.Duration {
		t.Helper()
		wait, err := b.St.TakeSignIn(b.Ctx, limits, window)
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	for i := range 3 {
		if w := take(pair); w != 0 {
			t.Fatalf("attempt %d refused for %s", i+1, w)
		}
	}
	if w := take(pair); w <= 0 || w > window {
		t.Fatalf("a fourth attempt of the pair waits %s; want up to %s", w, window)
	}
	// Another email from the same address still has its own attempts, and
	// the address's count (3 so far; refusals count nothing) allows two.
	other := []store.SignInLimit{{Key: "pair:b@example.com|192.0.2.1", Max: 3}, {Key: "ip:192.0.2.1", Max: 5}}
	if first, second := take(other), take(other); first != 0 || second != 0 {
		t.Fatal("another email from the address was refused before the address's limit")
	}
	if take(other) == 0 {
		t.Fatal("a sixth attempt from the address was allowed; its limit is 5")
	}
	if err := b.St.SignInSucceeded(b.Ctx, []string{"pair:b@example.com|192.0.2.1"}, "ip:192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if take(other) != 0 {
		t.Fatal("after a success gave back one of the address's attempts, the next was refused")
	}
	b.Clock.Add(window)
	if take(pair) != 0 {
		t.Fatal("the pair was still refused after its window ended")
	}
	if err := b.St.PruneSignInFailures(b.Ctx, b.Clock.Now()); err != nil {
		t.Fatal(err)
	}
}
