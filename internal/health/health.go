// Package health is the specification's table of a webhook's health
// (Healthy, Unhealthy, Suspended) as a pure function: given where a webhook
// stands and the completed events of a batch, in order, it says where the
// webhook ends and what to warn of. It reads no clock and no database; the
// store asks it inside the transaction that records the outcomes and
// persists its answer, and the warnings (emails, operational events) are
// told from that answer.
//
// The transitions, from the specification:
//
//   - a new webhook is Healthy;
//   - a failed attempt with attempts left is no completion: the event
//     retries and the webhook's status is unchanged;
//   - an event that exhausts its attempts (marked failed) makes a Healthy
//     webhook Unhealthy;
//   - when the SuspendAfter (50) most recent completed events have all
//     failed, the webhook is Suspended (and its owner emailed);
//   - while Suspended nothing is attempted automatically, so only a resend
//     completes an event: a failed resend leaves it Suspended;
//   - a successful delivery (a 2xx, a resend's included) makes an Unhealthy
//     or Suspended webhook Healthy at once.
package health

// Status is a webhook's health, as stored and shown.
type Status string

// The states of the specification's health table.
const (
	Healthy   Status = "Healthy"
	Unhealthy Status = "Unhealthy"
	Suspended Status = "Suspended"
)

// Valid reports whether s is a known state.
func (s Status) Valid() bool { return s == Healthy || s == Unhealthy || s == Suspended }

// SuspendAfter is the specification's number of most recent completed
// events that must all have failed to suspend a webhook.
const SuspendAfter = 50

// State is where a webhook stands: its status and its failure streak, the
// completed events that failed since its last delivery (the most recent
// completed events, all failed).
type State struct {
	Status Status
	Streak int
}

// New is a new webhook's state.
var New = State{Status: Healthy}

// Completion is an event's completion as health counts it.
type Completion int

const (
	// Delivered is a 2xx: an automatic delivery or a resend.
	Delivered Completion = iota + 1
	// Failed is an event marked failed after its last attempt, or a failed
	// resend.
	Failed
)

// Warning is what a batch's change of health is told as: an email and an
// operational event (warnings.go in the store queues them), or nothing.
type Warning int

const (
	None Warning = iota
	// BecameUnhealthy: it was not Unhealthy and now is, from Healthy, or
	// from Suspended by a delivery then a failure in one batch.
	BecameUnhealthy
	// BecameSuspended: it reached the streak in this batch and ends
	// Suspended (suspended_at is this moment).
	BecameSuspended
	// Recovered: it was not Healthy and now is.
	Recovered
)

// Answer is where a batch leaves a webhook.
type Answer struct {
	State   State
	Changed bool    // the status or the streak moved, so there is something to persist
	Warning Warning // what to tell of it
}

// Apply folds a batch's completions of one webhook, in completion order,
// into its state, with suspendAfter failed completions in a row suspending
// it. A batch that takes a webhook through several states answers where it
// ends: Healthy to Suspended is one suspension, and Unhealthy to Healthy
// and back to Unhealthy is no warning (but a new streak, Changed).
func Apply(s State, completions []Completion, suspendAfter int) Answer {
	next, becameSuspended := s, false
	for _, c := range completions {
		switch c {
		case Delivered:
			next = State{Status: Healthy}
		case Failed:
			next.Streak++
			if next.Status != Suspended && next.Streak >= suspendAfter {
				next.Status, becameSuspended = Suspended, true
			} else if next.Status == Healthy {
				next.Status = Unhealthy
			}
		}
	}
	a := Answer{State: next, Changed: next != s}
	switch {
	case !a.Changed:
	case becameSuspended && next.Status == Suspended:
		a.Warning = BecameSuspended
	case next.Status == Unhealthy && s.Status != Unhealthy:
		a.Warning = BecameUnhealthy
	case next.Status == Healthy && s.Status != Healthy:
		a.Warning = Recovered
	}
	return a
}
