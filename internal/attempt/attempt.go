// Package attempt holds the types the event pipeline and the dispatcher
// share: a claim of a log for one attempt and what bounds it, the leases a
// dispatcher holds, the outcome it records and what recording it did, and
// the send slots of a throttled webhook. It is a leaf, importing nothing of
// herald's, so that the dispatcher's interfaces speak only its types and
// neither side reaches into the other (as River's rivertype).
package attempt

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ClaimParams bounds one claim.
type ClaimParams struct {
	Now        time.Time
	LeaseUntil time.Time // after this, another claim may take the log again
	Lease      string    // identifies this claim; completion must present it
	Limit      int       // logs to take at most
	PerWebhook int       // logs of one webhook to take at most, unless Room says otherwise
	// Room overrides PerWebhook for the webhooks it names: what each may
	// still take in this process without passing its share.
	Room    map[string]int
	Exclude []string // webhooks to pass over (no room left here)
	// PerAccount is how many logs of one account's webhooks together to
	// take at most, unless AccountRoom says otherwise (0: no account bound).
	PerAccount  int
	AccountRoom map[string]int
	// NoTakeover leaves every leased log alone, even one whose lease ended:
	// the claiming process is not sure its own writes reach the database
	// (its beats did not land, decision 0117), so a lease that ended may
	// have ended only because the database stalled for everyone, its
	// holder alive and about to renew it.
	NoTakeover bool
}

// Claim is a log leased for one attempt, with all the attempt needs.
type Claim struct {
	LogID     string
	AccountID string
	WebhookID string
	EventID   string
	Event     string // the event kind, as event.Kind spells it
	Body      []byte
	URL       string
	Token     string // signs webhook-signature
	// NextToken, during a token rotation, signs webhook-signature-next; ""
	// when none is under way.
	NextToken string
	// Headers are the webhook's custom headers, opened; nil for none.
	Headers map[string]string
	// SignatureScheme is the webhook's: SchemeHerald or
	// SchemeStandardWebhooks.
	SignatureScheme string
	// RateLimit is the webhook's deliveries per second, 0 for none: a
	// dispatcher reserves the attempt's send slot (ReserveSends) first.
	RateLimit int
	// RetryPolicy is the webhook's own; nil follows the operator's.
	RetryPolicy  *RetryPolicy
	Enabled      bool
	Health       string // the webhook's health.Status
	AttemptCount int    // automatic attempts made before this one
	Lease        string
	// TraceParent is the W3C traceparent of the span that fired the event,
	// or "" when none was recorded (see Tx.Fire).
	TraceParent string
	// TakenOver says the log was claimed from a lease that had ended: the
	// process holding it died mid-attempt (reported on PostgreSQL; on
	// SQLite see ReleaseLeases).
	TakenOver bool
}

// Result is what an attempt's outcome does to its log.
type Result int

// Results, mapped to log transitions in one place (Complete).
const (
	Delivered    Result = iota + 1 // a 2xx: log succeeded, webhook Healthy
	Retry                          // failed with attempts left: log retrying until NextAttemptAt
	Exhausted                      // failed on the last attempt: log failed, webhook Unhealthy or Suspended
	Cancel                         // webhook disabled or suspended when its turn came: log cancelled, no attempt
	ResendFailed                   // a manual resend failed: recorded; a failed or cancelled log becomes failed, others keep their status
	// Release: not attempted (its lease was running out, the process is
	// stopping, or its webhook's throttle had no send slot for it yet): the
	// log waits again, due at NextAt (now when zero), with no attempt
	// counted and its retry reason kept.
	Release
)

// String names a result in logs.
func (r Result) String() string {
	switch r {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Exhausted:
		return "exhausted"
	case Cancel:
		return "cancel"
	case ResendFailed:
		return "resend-failed"
	case Release:
		return "release"
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Outcome is one attempt's result, ready to record.
type Outcome struct {
	LogID     string
	WebhookID string
	Lease     string // the claim's lease; "" for a resend
	Trigger   string
	Result    Result
	Attempt   *AttemptRecord // nil for Cancel
	NextAt    time.Time      // for Retry; for Release, when it is due again (zero: now)
	Reason    string         // retry or cancel reason
	// Recovery names the recovery that made this resend, which counts it
	// in the same transaction; "" for any other attempt.
	Recovery string
	// Disable, when not "", disables the webhook with this reason once
	// the outcome is recorded (its receiver answered 410 Gone), and
	// emails the owner.
	Disable string
}

// AttemptRecord is what one POST saw.
type AttemptRecord struct {
	SentAt       time.Time
	ReceivedAt   *time.Time
	StatusCode   *int
	Duration     time.Duration
	Error        string
	ResponseBody []byte
	Headers      *AttemptHeaders // kept within MaxAttemptHeaders and MaxAttemptHeaderBytes
}

// MaxResponseBody is how much of a receiver's answer is kept.
const MaxResponseBody = 64 << 10

// Suspension reports a webhook that Complete moved to Suspended.
type Suspension struct {
	AccountID string
	WebhookID string
	Name      string
}

// Held is a log a dispatcher holds under a lease of its own.
type Held struct {
	LogID string
	Lease string
}

// Grant is the send slots one reservation took: Count slots, the first at
// First and each Interval after the one before. Next is when the slot after
// the last one granted begins, the earliest a log left without a slot can
// hope for one.
type Grant struct {
	First    time.Time
	Interval time.Duration
	Count    int
	Next     time.Time
}

// Slot is the i-th slot of the grant (0 ≤ i < Count).
func (g Grant) Slot(i int) time.Time { return g.First.Add(time.Duration(i) * g.Interval) }

// LogStatus is where an event log stands.
type LogStatus string

// Event log statuses. queued: waiting for its first attempt; pending: an
// attempt is in flight under a lease; retrying: waiting for its next attempt;
// succeeded and failed: complete; cancelled: its webhook was disabled or
// suspended, so no automatic attempt is made.
const (
	Queued    LogStatus = "queued"
	Pending   LogStatus = "pending"
	Retrying  LogStatus = "retrying"
	Succeeded LogStatus = "succeeded"
	Failed    LogStatus = "failed"
	Cancelled LogStatus = "cancelled"
)

// Valid reports whether st is a known status.
func (st LogStatus) Valid() bool {
	switch st {
	case Queued, Pending, Retrying, Succeeded, Failed, Cancelled:
		return true
	}
	return false
}

// Attempt triggers.
const (
	TriggerAutomatic = "automatic"
	TriggerResend    = "resend"
)

// Header is one header line of an attempt, as sent or as answered.
type Header struct {
	Name  string
	Value string
}

// AttemptHeaders are the headers of one attempt: the request's, as herald
// sent them, and the receiver's answer's. Omitted counts the lines left out
// to keep within MaxAttemptHeaders and MaxAttemptHeaderBytes.
type AttemptHeaders struct {
	Request  []Header
	Response []Header
	Omitted  int
}

// Bounds on the headers kept with each attempt, request and answer
// together. A receiver chooses its answer's headers (up to 32 KiB of them,
// delivery.MaxResponseHeaderBytes); kept whole, thousands of attempts a day
// of one webhook would store far more headers than bodies. Herald's own
// request headers come first, so they are always kept.
const (
	MaxAttemptHeaders     = 50
	MaxAttemptHeaderBytes = 8 << 10
)

// HeaderLines turns an HTTP header map into lines sorted by name, one per
// value, names in lower case (HTTP/2 spells them so, and the specification
// writes webhook-signature so).
func HeaderLines(h map[string][]string) []Header {
	out := make([]Header, 0, len(h))
	for name, values := range h {
		for _, v := range values {
			out = append(out, Header{strings.ToLower(name), v})
		}
	}
	slices.SortStableFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// RecoveryStatus is where a recovery stands.
type RecoveryStatus string

// Recovery statuses: running until every log it covers was resent (or
// skipped), then done; cancelled when its owner stopped it or its webhook
// was disabled meanwhile.
const (
	RecoveryRunning   RecoveryStatus = "running"
	RecoveryDone      RecoveryStatus = "done"
	RecoveryCancelled RecoveryStatus = "cancelled"
)

// Recovery is one bulk resend of a webhook's undelivered logs.
type Recovery struct {
	ID        string
	AccountID string
	WebhookID string
	Status    RecoveryStatus
	// Count is how many logs it covers, fixed when it starts.
	Count int
	// Sent counts the resends recorded; Succeeded and Failed split them.
	// Failed also counts logs whose resend was interrupted by a crash of
	// the process making it: whether their POST left is unknown, so they
	// are not sent again by this recovery (never twice), and stay
	// undelivered for a later recovery or a resend.
	Sent, Succeeded, Failed int
	CreatedAt               time.Time
	FinishedAt              *time.Time
}

// ErrLeaseLost tells a recovery runner that the recovery is no longer its
// own: it ended (done or cancelled), or another process took it over after
// its lease ran out.
var ErrLeaseLost = errors.New("the recovery is no longer held under this lease")

// RetryPolicy is a webhook's own schedule of automatic attempts: how many
// in all, and the wait before each retry, fixed or growing exponentially
// up to a cap.
type RetryPolicy struct {
	MaxAttempts        int    `json:"maxAttempts"`
	Backoff            string `json:"backoff"`
	IntervalSeconds    int    `json:"intervalSeconds"`
	MaxIntervalSeconds int    `json:"maxIntervalSeconds"`
}

// Backoffs of a retry policy.
const (
	BackoffFixed       = "fixed"
	BackoffExponential = "exponential"
)

// Signature schemes, as a claim's SignatureScheme names them.
const (
	SchemeHerald           = "herald"
	SchemeStandardWebhooks = "standard-webhooks"
	// SchemeStandardEd25519 signs with ed25519 ("v1a,"); the webhook's
	// token is its private key, "whsk_" (decision 0125).
	SchemeStandardEd25519 = "standard-webhooks-ed25519"
)

// MaskedHeaderValue stands for a custom header's value wherever one is
// shown without being asked for: the API, the portal, an attempt's kept
// headers, a Test result.
const MaskedHeaderValue = "********"

// ReasonSuspendedBefore cancels a claimed log whose webhook was suspended
// before its attempt. It begins as the reason of a log cancelled because
// its webhook was suspended when the event fired, which is how a recovery
// tells both from a disabled webhook's.
const ReasonSuspendedBefore = "webhook suspended before this attempt; no automatic delivery (resend to deliver)"

// ErrStorageFull is wrapped by the error of a write that the database
// refused because its disk is full. Nothing of the refused transaction was
// written; reads still work, and writes work again, in the same process,
// once space is freed. The API and the portal answer it with 503 and
// Retry-After.
var ErrStorageFull = errors.New("the database's disk is full")

// FullLogEvery is how often, at most, a refusal for a full disk is logged:
// every refused write would be a line otherwise (the dispatcher alone
// tries one a second), and the first line already says what to do.
const FullLogEvery = 30 * time.Second

// NewID returns a new time-ordered id (UUIDv7), so ids sort by creation and
// serve as list cursors: an event's, a log's, a lease's.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Undelivered says whether a cancelled log counts as undelivered: one
// cancelled for its webhook's suspension (both suspended reasons begin
// alike), not one cancelled for its webhook being disabled.
func Undelivered(reason string) bool {
	return strings.HasPrefix(reason, "webhook suspended")
}
