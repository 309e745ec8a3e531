package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testFlashes: a flash is shown once, on its page, to its holder; two takes
// at once get it once; an hour later it is gone.
func testFlashes(t *testing.T, b *Bundle) {
	add := func(holder, path, body string) {
		t.Helper()
		if err := b.St.AddFlash(b.Ctx, store.Flash{Holder: holder, Path: path, Body: []byte(body)}); err != nil {
			t.Fatalf("add flash: %v", err)
		}
	}
	take := func(holder, path string) []string {
		t.Helper()
		fs, err := b.St.TakeFlashes(b.Ctx, holder, path)
		if err != nil {
			t.Fatalf("take flashes: %v", err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, f.Path+":"+string(f.Body))
		}
		return out
	}
	add("h1", "/a", "one")
	b.Clock.Add(time.Millisecond)
	add("h1", "/a", "two")
	add("h1", "/b", "three")
	add("h2", "/a", "other browser")

	if got := take("h1", "/c"); len(got) != 0 {
		t.Errorf("another page took %v", got)
	}
	if got := take("h1", "/a"); len(got) != 2 || got[0] != "/a:one" || got[1] != "/a:two" {
		t.Errorf("took %v; want /a:one, /a:two in order", got)
	}
	if got := take("h1", "/a"); len(got) != 0 {
		t.Errorf("taken twice: %v", got)
	}
	if got := take("h1", ""); len(got) != 1 || got[0] != "/b:three" {
		t.Errorf("took all %v; want /b:three", got)
	}
	if got := take("h2", "/a"); len(got) != 1 || got[0] != "/a:other browser" {
		t.Errorf("the other holder's: %v", got)
	}

	// Concurrent takes: each flash goes to one of them.
	for i := range 5 {
		add("h3", "/p", string(rune('a'+i)))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs, err := b.St.TakeFlashes(b.Ctx, "h3", "/p")
			if err != nil {
				t.Errorf("take: %v", err)
				return
			}
			mu.Lock()
			for _, f := range fs {
				seen[string(f.Body)]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != 5 {
		t.Errorf("concurrent takes saw %v; want 5 flashes", seen)
	}
	for body, n := range seen {
		if n != 1 {
			t.Errorf("flash %q taken %d times", body, n)
		}
	}

	// Past its hour a flash is neither shown nor kept.
	add("h4", "/a", "stale")
	b.Clock.Add(store.FlashTTL + time.Second)
	if got := take("h4", "/a"); len(got) != 0 {
		t.Errorf("an expired flash was shown: %v", got)
	}
}

// testFormKeysSettle: a portal form's key keeps its answer only when its
// request made a change; a refused form's key is freed for the corrected
// form, and flashes written under a claim are not its change.
func testFormKeysSettle(t *testing.T, b *Bundle) {
	answer := store.IdempotentAnswer{Status: 303, Location: "/webhooks/x"}
	req := func(key string) store.IdempotentRequest {
		return store.IdempotentRequest{AccountID: b.Account.ID, Key: key, Method: "POST", Path: "/webhooks/new"}
	}
	cases := []struct {
		name     string
		change   func(t *testing.T, c store.IdempotencyClaim)
		kept     bool
		nextTime store.ClaimOutcome
	}{
		{"refused: only a flash", func(t *testing.T, c store.IdempotencyClaim) {
			ctx := store.WithIdempotencyClaim(b.Ctx, c)
			if err := b.St.AddFlash(ctx, store.Flash{Holder: "h", Path: "/webhooks/new", Body: []byte("errors")}); err != nil {
				t.Fatal(err)
			}
		}, false, store.KeyClaimed},
		{"a change", func(t *testing.T, c store.IdempotencyClaim) {
			if err := b.fireUnder(b.St, c); err != nil {
				t.Fatal(err)
			}
		}, true, store.KeyDone},
		{"acted, nothing written", func(t *testing.T, c store.IdempotencyClaim) {
			if err := b.St.MarkIdempotencyApplied(store.WithIdempotencyClaim(b.Ctx, c)); err != nil {
				t.Fatal(err)
			}
		}, true, store.KeyDone},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := "portal:" + string(rune('a'+i))
			claim := b.claimKey(t, b.St, req(key))
			if claim.Outcome != store.KeyClaimed {
				t.Fatalf("claim: %d", claim.Outcome)
			}
			c.change(t, claim)
			kept, err := b.St.SettleIdempotencyKey(b.Ctx, claim, answer)
			if err != nil {
				t.Fatalf("settle: %v", err)
			}
			if kept != c.kept {
				t.Errorf("kept %v; want %v", kept, c.kept)
			}
			again := b.claimKey(t, b.St, req(key))
			if again.Outcome != c.nextTime {
				t.Fatalf("next claim: outcome %d; want %d", again.Outcome, c.nextTime)
			}
			if c.kept && again.Answer.Location != answer.Location {
				t.Errorf("replayed location %q; want %q", again.Answer.Location, answer.Location)
			}
		})
	}
}
