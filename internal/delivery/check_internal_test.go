package delivery

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/attempt"
)

// heldQueue answers StillHeld from a set, counting the calls and holding
// the first until released; nothing else of Queue is used.
type heldQueue struct {
	Queue
	held    map[attempt.Held]bool
	release chan struct{}

	mu    sync.Mutex
	calls [][]attempt.Held
}

func (q *heldQueue) StillHeld(_ context.Context, held []attempt.Held) (map[attempt.Held]bool, error) {
	q.mu.Lock()
	q.calls = append(q.calls, held)
	first := len(q.calls) == 1
	q.mu.Unlock()
	if first {
		<-q.release
	}
	found := map[attempt.Held]bool{}
	for _, h := range held {
		if q.held[h] {
			found[h] = true
		}
	}
	return found, nil
}

// Attempts that check their logs while a check is at the database gather
// into the next one: eleven checks, two statements, each answered for its
// own log.
func TestCheckerSharesOneStatementBetweenTheChecksWaitingForIt(t *testing.T) {
	hs := make([]attempt.Held, 11)
	for i := range hs {
		hs[i] = attempt.Held{LogID: string(rune('a' + i)), Lease: "lease"}
	}
	q := &heldQueue{held: map[attempt.Held]bool{}, release: make(chan struct{})}
	for i, h := range hs {
		if i%2 == 0 {
			q.held[h] = true // the odd ones' webhooks were deleted
		}
	}
	c := &checker{queue: q}
	got := make([]bool, len(hs))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); got[0], _ = c.stillHeld(hs[0]) }()
	// The first check is at the database once it has been called.
	for {
		q.mu.Lock()
		n := len(q.calls)
		q.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	for i := 1; i < len(hs); i++ {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = c.stillHeld(hs[i]) }()
	}
	// All ten wait in the next batch before the first check returns.
	for {
		c.mu.Lock()
		n := 0
		if c.next != nil {
			n = len(c.next.held)
		}
		c.mu.Unlock()
		if n == len(hs)-1 {
			break
		}
		runtime.Gosched()
	}
	close(q.release)
	wg.Wait()
	if len(q.calls) != 2 || len(q.calls[0]) != 1 || len(q.calls[1]) != len(hs)-1 {
		t.Errorf("checks made as %d statements of %v logs; want 2, of 1 and %d", len(q.calls), lens(q.calls), len(hs)-1)
	}
	for i, h := range hs {
		if got[i] != q.held[h] {
			t.Errorf("log %s: still held %v; want %v", h.LogID, got[i], q.held[h])
		}
	}
}

func lens(calls [][]attempt.Held) []int {
	n := make([]int, len(calls))
	for i, c := range calls {
		n[i] = len(c)
	}
	return n
}
