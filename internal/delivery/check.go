package delivery

import (
	"context"
	"sync"

	"github.com/heraldhq/herald/internal/attempt"
)

// checker checks, before attempts that waited, that their logs are still
// held (their webhook or account not deleted since the claim), sharing one
// statement among the attempts that ask at once: while one check is at the
// database, those asking next gather into the next. Under load hundreds of
// attempts of one claim start more than StillHeldAfter after it, and with a
// round trip each they queued for the dispatcher's connections and delayed
// its claims and recordings (decision 0095, "The dispatcher's own
// connections").
type checker struct {
	queue Queue

	mu      sync.Mutex
	next    *checkBatch // gathering; nil when none is
	running bool        // a goroutine is checking batches
}

type checkBatch struct {
	held  []attempt.Held
	done  chan struct{}
	found map[attempt.Held]bool
	err   error
}

// stillHeld reports whether h is still held, with the error of the check
// that said so (then false).
func (c *checker) stillHeld(h attempt.Held) (bool, error) {
	c.mu.Lock()
	if c.next == nil {
		c.next = &checkBatch{done: make(chan struct{})}
	}
	b := c.next
	b.held = append(b.held, h)
	if !c.running {
		c.running = true
		go c.run()
	}
	c.mu.Unlock()
	<-b.done
	return b.found[h], b.err
}

// run checks the gathered batches one after another until none is left.
func (c *checker) run() {
	for {
		c.mu.Lock()
		b := c.next
		c.next = nil
		if b == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
		b.found, b.err = c.queue.StillHeld(ctx, b.held)
		cancel()
		close(b.done)
	}
}
