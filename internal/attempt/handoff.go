package attempt

import "time"

// Handoff is a dispatcher that takes the first attempts of what its process
// fires (decisions 0105 and 0114): the event pipeline leases them to it in
// the statement that queues them. Every reservation ends in Take (its
// transaction committed) or Abandon (it did not).
type Handoff interface {
	// Reserve holds room for one first attempt to the webhook, and reports
	// whether it did: false when the dispatcher is not running, stops, has
	// no room for the webhook or its account, or may have an older log of
	// the webhook waiting in the queue.
	Reserve(accountID, webhookID string) bool
	// Take starts the attempts of the logs handed over by a committed
	// transaction, one reservation each.
	Take(claims []Claim)
	// Abandon gives back the reservations of claims not handed over (their
	// transaction did not commit). When maybeCommitted is set the
	// transaction's commit failed without saying whether it took effect,
	// and the logs may be leased under their Lease: the dispatcher makes
	// them due again.
	Abandon(claims []Claim, maybeCommitted bool)
	// LeaseUntil is when the lease of a log handed over at now ends.
	LeaseUntil(now time.Time) time.Time
}
