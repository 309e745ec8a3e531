package delivery

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// What delivery asks of herald's state is declared here, where it is used,
// rather than taken as *store.Store: the dispatcher can be tested over an
// in-memory fake without a database, and the due work can move to a queue of
// its own (a narrow table of what is not yet completed beside the history,
// say) by implementing Queue, with nothing else here changing.
//
// Three interfaces rather than one, because they change for different
// reasons. Queue is the hot path, every automatic attempt's claim, lease and
// recording: what a second queue replaces. Manual and Recoveries are the
// paths a person starts (Resend and Test, bulk recoveries): they mark and
// look up logs and webhooks by id and stay with the store. They record
// through Queue.Complete, since a resend's outcome moves health like any
// other. Store is all three; *store.Store implements it.

// Queue is what Run needs of the logs due for delivery. Times are the
// caller's clock (Config.Now); an implementation compares them with its own,
// which the server makes the same clock.
type Queue interface {
	// Claim takes due logs within p's bounds under the lease p.Lease until
	// p.LeaseUntil, and returns them; a log whose lease ended (its process
	// died mid-attempt) is due again, unless p.NoTakeover.
	Claim(ctx context.Context, p attempt.ClaimParams) ([]attempt.Claim, error)
	// RenewLeases extends to until the leases of the held logs still held
	// under them, and reports how many; a log whose lease another claim took
	// over is left alone.
	RenewLeases(ctx context.Context, held []attempt.Held, until time.Time) (int64, error)
	// Beat records that the process named process is running at now, a
	// committed write: whether it lands tells the dispatcher whether its
	// writes reach the database (contact.go).
	Beat(ctx context.Context, process string, now time.Time) error
	// EndBeats forgets a stopping process, and the processes silent since
	// before.
	EndBeats(ctx context.Context, process string, before time.Time) error
	// Complete records outcomes (attempts, the logs' new states, webhooks'
	// health) all or nothing, and returns the webhooks it suspended. An
	// automatic outcome whose lease was taken over is dropped.
	Complete(ctx context.Context, outs []attempt.Outcome, suspendAfter int) ([]attempt.Suspension, error)
	// ReleaseHeld makes the logs still held under any of leases due at
	// once, as a Release outcome does, and reports how many.
	ReleaseHeld(ctx context.Context, leases []string) (int64, error)
	// NextDue reports when the earliest waiting log falls due, and false
	// when none waits.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// Wait returns a channel closed the next time logs may have become due
	// (something fired, was released, or another process said so). It is
	// asked before each claim, so no wake-up between the two is missed.
	Wait() <-chan struct{}
	// ReserveSends reserves up to n send slots of a throttled webhook,
	// interval apart, none before now nor after until, shared with every
	// process on the store (see queue.ReserveSends).
	ReserveSends(ctx context.Context, webhookID string, interval time.Duration, n int, now, until time.Time) (attempt.Grant, error)
	// StillHeld reports which of the claimed logs still exist under their
	// leases; one missing was deleted with its webhook or account, or its
	// lease was taken over. One call checks many.
	StillHeld(ctx context.Context, held []attempt.Held) (map[attempt.Held]bool, error)
	// Unavailable reports whether err, one of this Queue's, says the
	// database could not do the work now but may a moment later, nothing
	// of it written: an outcome is then tried again, however long, rather
	// than given up.
	Unavailable(err error) bool
}

// Manual is what Resend and Test need besides Queue.Complete.
type Manual interface {
	// BeginResend marks a log in flight for a resend until until (so no claim
	// or other resend takes it) and loads what sending it needs;
	// store.ErrConflict while an attempt of it is in flight.
	BeginResend(ctx context.Context, accountID, logID string, until time.Time) (attempt.Claim, error)
	// EndResend ends the mark of a resend that was not sent.
	EndResend(ctx context.Context, logID string) error
	// TestTarget reads what a Test sends to and signs with: a webhook's
	// URL, headers, scheme and tokens, as a claim of no log.
	TestTarget(ctx context.Context, accountID, webhookID string) (attempt.Claim, error)
}

// Recoveries is what RunRecoveries needs besides Queue.Complete and
// Queue.Wait: a recovery taken up under a lease, and its logs marked,
// handed out and given back in batches (see queue.NextRecoveryLogs).
type Recoveries interface {
	AcquireRecovery(ctx context.Context, lease string, until time.Time) (attempt.Recovery, bool, error)
	RenewRecovery(ctx context.Context, id, lease string, until time.Time) error
	ReleaseRecovery(ctx context.Context, id, lease string) error
	NextRecoveryLogs(ctx context.Context, id, lease string, n int, markUntil time.Time) ([]attempt.Claim, error)
	ReturnRecoveryLogs(ctx context.Context, id string, logIDs []string) error
}

// Pulls is what a resend or a recovery asks of a pull webhook's log
// (decision 0140): nothing is POSTed; the log goes back in its queue, to
// be read again by the webhook's consumer.
type Pulls interface {
	// RequeuePull queues a pull webhook's log again; a recovery's counts
	// it as sent.
	RequeuePull(ctx context.Context, logID, recovery string) error
}

// Store is everything a Dispatcher asks of herald's state.
type Store interface {
	Queue
	Manual
	Recoveries
	Pulls
	Reaches
}
