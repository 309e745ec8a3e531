package heraldtest

import (
	"sync"
	"time"
)

// Clock is a clock a test moves forward: the real time plus an offset that
// Advance adds to. Time still passes under it (attempts are stamped, retries
// due in milliseconds come), so a whole herald can run on it
// (Options.Now); Advance is how a test makes a lease end, a retry or a
// reminder fall due, or a log expire, without waiting for it. Heralds
// sharing a database share one Clock, as processes share the wall clock.
//
// Moving the clock ends every lease it passes, as a process that died
// would: before Advance, a test waits for the work it started to be
// recorded (Herald.Settled), or another claim takes it over and sends it
// again.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// NewClock returns a Clock at the real time.
func NewClock() *Clock { return &Clock{} }

// Now is the real time plus the offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d (back, when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
