package delivery

import (
	"sync"
	"time"
)

// A process takes over the leases other processes let end (a log whose
// process died mid-attempt is due again) only while it is sure that its
// own writes reach the database: its beats (a write committed every third
// of a lease, beside its renewal) have landed promptly, without a break,
// for longer than the time between two of them (decision 0117).
//
// Why: a lease ends by the clock, and a database that stalls (a table's
// lock held, a disk slow to flush, the server paused) stalls every
// process's renewals alike. When it answers again, a claim made then would
// take over the leases of live processes that could not renew them, whose
// attempts were made and whose outcomes wait to be recorded: their
// deliveries would go out twice. A process that has seen its own beats
// land for a whole beat interval since the stall knows that every live
// process had a turn to renew by then (each tries again a second after a
// failed renewal), and that a lease still ended belongs to a process that
// died or lost the database while the others did not.
//
// A claim sent while the database seemed fine and held up by a stall that
// began just after is safe as well: the leases it may take ended before it
// was sent, while beats were landing, so their holders had stopped
// renewing before the stall; a live holder's lease ends at least two thirds
// of a lease after its last renewal, longer than contactGap.

// contact records whether this process's beats land; safe for concurrent
// use.
type contact struct {
	mu sync.Mutex
	// since is when the first beat of the current unbroken run of prompt
	// beats was sent (zero: no run: the latest beat failed or was slow);
	// last is when the latest prompt beat was sent.
	since, last time.Time
}

// beat notes a beat sent at sent that took took and landed (ok) or not. A
// beat that took longer than prompt counts as not landed: the database
// answered, but was stalled while it waited. gap is the longest two
// prompt beats may be apart and still be one run.
func (c *contact) beat(sent time.Time, took time.Duration, ok bool, prompt, gap time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || took > prompt {
		c.since, c.last = time.Time{}, time.Time{}
		return
	}
	if c.since.IsZero() || sent.Sub(c.last) > gap {
		c.since = sent
	}
	c.last = sent
}

// sure reports whether at now the beats have landed without a break for
// at least gap, the latest within gap: a claim may take over ended leases.
func (c *contact) sure(now time.Time, gap time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.since.IsZero() && now.Sub(c.since) >= gap && now.Sub(c.last) <= gap
}
