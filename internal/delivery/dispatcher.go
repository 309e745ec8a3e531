// Package delivery owns getting events to receivers: it claims due event logs,
// POSTs their signed bodies, turns each attempt into an outcome (delivered,
// retry, exhausted, cancelled), and records outcomes in batches, which is
// where webhook health moves. It also makes manual resends and Test sends,
// and runs bulk recoveries.
//
// A Dispatcher is an assembly of rooms, each a type of its own in its own
// file, that share the process's slots (decision 0119):
//
//   - slots (share.go): how much of the process each account and webhook
//     holds and may still take, and each webhook's requests in flight;
//   - producer (producer.go, handoff.go): claiming, and the logs handed over
//     at firing without a claim; it starts the attempts;
//   - pacer (pace.go): the clients' changes paced while the process is short
//     of CPU;
//   - attempts (attempt.go, manual.go, throttle.go): every POST, automatic,
//     resend or Test, on the Sender (sender.go), and what its answer means;
//   - completer (completer.go): outcomes recorded in batches;
//   - leases (leases.go, contact.go): the leases of the logs held here
//     renewed, and the claims that failed released;
//   - recoveries (recovery.go): bulk recoveries.
//
// The background loops (the recorder, the lease keeper, the CPU watch)
// start and stop on internal/startstop's one pattern.
//
// It holds no SQL: what it needs of the store is declared here (queue.go),
// Queue for the due work an automatic attempt claims, renews, records and
// releases, Manual and Recoveries for the rest, and *store.Store implements
// them. It reads the time from Config.Now and waits on the time package's
// timers, so its tests can fake both.
package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/health"
	"github.com/heraldhq/herald/internal/startstop"
)

// Config tunes a Dispatcher. Zero fields take the defaults shown.
type Config struct {
	AttemptTimeout time.Duration // 15s: the specification's time-out per attempt
	MaxAttempts    int           // 5: attempts per event, the first included
	RetryInterval  time.Duration // 5m: between attempts
	SuspendAfter   int           // 50: completed events that must all have failed to suspend
	Concurrency    int           // 512: attempts in flight or not yet recorded, in this process
	PerWebhook     int           // 64: of those, to one webhook
	BatchSize      int           // 256: logs per claim
	// Recorders is how many batches of outcomes may be recorded at once (4;
	// see completer.record). A store with one writer (SQLite) gains nothing from more
	// than one, whose commits it takes one at a time anyway: the server
	// gives it 1.
	Recorders    int
	Lease        time.Duration // 2×AttemptTimeout+10s: how long a claim holds a log
	PollInterval time.Duration // 1s: longest sleep when nothing wakes the dispatcher
	Dial         DialFunc      // nil: no address policy
	// Destinations publishes the attempts of webhooks of another type
	// than http (destination.go); nil: their attempts fail, saying so.
	Destinations Destinations
	UserAgent    string // "herald"
	Logger       *slog.Logger
	Metrics      *Metrics // nil: none
	// OnSuspend is called after a webhook is suspended (its email is
	// queued), by whichever recorder recorded it: possibly several at once.
	OnSuspend func([]attempt.Suspension)
	// Tracer starts a client span per POST (see trace.go); nil, as when
	// tracing is off, starts none.
	Tracer trace.Tracer
	// ResponseBodyLimit is how many bytes of a receiver's answer each
	// recorded attempt keeps: 4 KiB by default, at most attempt.MaxResponseBody
	// (64 KiB, what a Test shows); negative keeps none. Nobody reads a whole
	// error page, and a failing receiver's answers add up to most of the
	// database otherwise.
	ResponseBodyLimit int
	// Now is the clock by which leases end, retries fall due and attempts
	// are stamped: time.Now when nil. The server passes the store's, so
	// that the times the dispatcher writes and the times the store compares
	// them with come from one clock. Waiting (timers, tickers) is left to
	// the time package, which testing/synctest fakes.
	Now func() time.Time
	// Busy reports whether the process is short of CPU, which paces the
	// changes that fire events (pace.go). nil: the Go scheduler's
	// latencies tell.
	Busy func() bool
	// PaceWait bounds how long one change waits in Pace (1s).
	PaceWait time.Duration
}

// MaxAttemptTimeout bounds AttemptTimeout: it keeps the lease derived from
// it (2×AttemptTimeout+10s) from overflowing, and an attempt is one HTTP
// request.
const MaxAttemptTimeout = 24 * time.Hour

// Validate refuses values a Dispatcher cannot run with, naming each by the
// flag of `herald serve` that sets it. Zero fields are the defaults, and
// valid. A Lease that does not outlast an attempt (AttemptTimeout, or its
// default) is refused, not replaced: another claim would take over
// attempts still in flight.
func (c Config) Validate() error {
	var msgs []string
	bad := func(format string, a ...any) { msgs = append(msgs, fmt.Sprintf(format, a...)) }
	if c.AttemptTimeout < 0 || c.AttemptTimeout > MaxAttemptTimeout {
		bad("--attempt-timeout must be positive and at most %v", MaxAttemptTimeout)
	}
	if c.MaxAttempts < 0 {
		bad("--max-attempts must be at least 1")
	}
	if c.RetryInterval < 0 {
		bad("--retry-interval must not be negative")
	}
	if c.SuspendAfter < 0 {
		bad("--suspend-after must be at least 1")
	}
	if c.Concurrency < 0 || c.PerWebhook < 0 {
		bad("--concurrency and --per-webhook-concurrency must be at least 1")
	}
	if c.Lease < 0 || (c.Lease != 0 && c.Lease <= cmp.Or(c.AttemptTimeout, DefaultAttemptTimeout)) {
		bad("--lease must be longer than --attempt-timeout, or another claim takes over attempts still in flight")
	}
	if c.BatchSize < 0 || c.PollInterval < 0 {
		bad("the claim's batch size and poll interval must not be negative")
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// DefaultAttemptTimeout is the specification's time-out of one attempt.
const DefaultAttemptTimeout = 15 * time.Second

func (c Config) withDefaults() Config {
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, DefaultAttemptTimeout)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 5)
	c.RetryInterval = cmp.Or(c.RetryInterval, 5*time.Minute)
	c.SuspendAfter = cmp.Or(c.SuspendAfter, health.SuspendAfter)
	c.Concurrency = cmp.Or(c.Concurrency, 512)
	c.PerWebhook = cmp.Or(c.PerWebhook, 64)
	c.BatchSize = cmp.Or(c.BatchSize, 256)
	c.Recorders = cmp.Or(c.Recorders, defaultRecorders)
	if c.Lease == 0 {
		c.Lease = 2*c.AttemptTimeout + 10*time.Second
	}
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.PaceWait = cmp.Or(c.PaceWait, time.Second)
	c.UserAgent = cmp.Or(c.UserAgent, "herald")
	c.ResponseBodyLimit = max(-1, min(cmp.Or(c.ResponseBodyLimit, DefaultResponseBodyLimit), attempt.MaxResponseBody))
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// recordMargin is the time an attempt leaves itself, after its time-out and
// before its lease ends, to have its outcome recorded.
func (c *Config) recordMargin() time.Duration {
	return min(5*time.Second, (c.Lease-c.AttemptTimeout)/2)
}

// lastSlot is the latest send slot a claim made at now under a lease until
// leaseUntil may wait for: an attempt at it still ends, and is recorded,
// before the lease does (see attempts.attempt).
func (c *Config) lastSlot(now, leaseUntil time.Time) time.Time {
	if last := leaseUntil.Add(-c.AttemptTimeout - c.recordMargin() - time.Second); last.After(now) {
		return last
	}
	return now
}

// Dispatcher delivers due event logs. It is the assembly of its rooms (see
// the package comment); what it does is theirs.
type Dispatcher struct {
	cfg        Config
	slots      *slots
	producer   *producer
	pacer      *pacer
	attempts   *attempts
	completer  *completer
	leases     *leases
	recoveries *recoveries
}

// New returns a Dispatcher over st (a *store.Store, or any other Store; see
// queue.go). It panics on a Config that Validate refuses.
func New(st Store, cfg Config) *Dispatcher {
	if err := cfg.Validate(); err != nil {
		// The server validates its configuration before it makes one.
		panic("delivery: invalid Config: " + err.Error())
	}
	d := &Dispatcher{cfg: cfg.withDefaults()}
	c := &d.cfg
	d.slots = newSlots(c)
	d.pacer = newPacer(c, &d.slots.mu)
	d.leases = newLeases(c, st)
	d.producer = &producer{cfg: c, queue: st, slots: d.slots, pacer: d.pacer, leases: d.leases, waiting: map[string]*waitCount{}}
	d.attempts = &attempts{cfg: c, store: st, sender: newSender(c.AttemptTimeout, c.Dial, c.UserAgent, c.Now).publishing(c.Destinations),
		checker: &checker{queue: st}, slots: d.slots, stopping: &d.producer.stopping}
	d.producer.attempts = d.attempts
	d.attempts.sender.routes.reaches = st
	d.completer = &completer{cfg: c, queue: st, leases: d.leases, stopping: &d.producer.stopping, recorded: d.producer.recorded}
	d.leases.released = d.producer.lostTrack
	d.leases.renewed = d.slots.sweep
	d.recoveries = &recoveries{cfg: c, store: st, slots: d.slots, attempts: d.attempts}
	return d
}

// Config returns the effective configuration.
func (d *Dispatcher) Config() Config { return d.cfg }

// Run delivers until ctx is done, then lets attempts in flight finish (each
// within its time-out) and records their outcomes before returning. Logs it
// claimed but did not attempt (still waiting for their webhook's gate, or
// taken by a claim the stop cut short) are released, due at once, rather
// than left to wait out their lease.
func (d *Dispatcher) Run(ctx context.Context) {
	outcomes := make(chan attempt.Outcome, d.cfg.Concurrency)
	// The recorder and the lease keeper outlive ctx: they are stopped once
	// every attempt has ended, the recorder first (it records what the
	// stop left), then the keeper, which renews the leases until every
	// outcome is recorded. The CPU watch ends with ctx.
	recording := startstop.New(func(ctx context.Context) { d.completer.run(ctx, outcomes) })
	keeping := startstop.New(d.leases.run)
	watching := startstop.New(d.pacer.watch)
	// New services, never started: Start cannot refuse them.
	_ = startstop.Group{recording, keeping}.Start(context.WithoutCancel(ctx))
	_ = watching.Start(ctx)
	d.producer.run(ctx, outcomes) // returns once every attempt it started has ended
	watching.Stop()
	recording.Stop()
	keeping.Stop()
	d.leases.releaseOrphans()
	d.leases.endBeats()
}

// RunRecoveries takes up and runs recoveries, one at a time, until ctx is
// done (recovery.go). Resends in flight at a stop finish and are recorded;
// a recovery not finished is released, for the next process to take up at
// once.
func (d *Dispatcher) RunRecoveries(ctx context.Context) { d.recoveries.run(ctx) }

// Pace waits, before a change of the account that fires events, while the
// process is short of CPU and the account owes, and at most
// Config.PaceWait (pace.go, decision 0115). It returns ctx's error if ctx
// ends first, else nil: the change goes ahead.
func (d *Dispatcher) Pace(ctx context.Context, accountID string) error {
	return d.pacer.pace(ctx, accountID)
}

// Resend attempts a log's delivery now, with the same bytes, and records the
// attempt on the same log with trigger "resend" (manual.go). The caller
// reads the log it shows.
func (d *Dispatcher) Resend(ctx context.Context, accountID, logID string) error {
	return d.attempts.resend(ctx, accountID, logID)
}

// Test sends a sample payload of kind to a webhook, signed like a real
// delivery (manual.go). It records nothing and never touches health.
func (d *Dispatcher) Test(ctx context.Context, accountID, webhookID string, kind event.Kind, opt TestOptions) (TestResult, error) {
	return d.attempts.test(ctx, accountID, webhookID, kind, opt)
}
