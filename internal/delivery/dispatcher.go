// Package delivery owns getting events to receivers: it claims due event logs,
// POSTs their signed bodies, turns each attempt into an outcome (delivered,
// retry, exhausted, cancelled), and records outcomes in batches, which is
// where webhook health moves. It also makes manual resends and Test sends,
// and runs bulk recoveries (recovery.go).
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
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/health"
	"github.com/heraldhq/herald/internal/store"
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
	// see record). A store with one writer (SQLite) gains nothing from more
	// than one, whose commits it takes one at a time anyway: the server
	// gives it 1.
	Recorders    int
	Lease        time.Duration // 2×AttemptTimeout+10s: how long a claim holds a log
	PollInterval time.Duration // 1s: longest sleep when nothing wakes the dispatcher
	Dial         DialFunc      // nil: no address policy
	UserAgent    string        // "herald"
	Logger       *slog.Logger
	Metrics      *Metrics // nil: none
	// OnSuspend is called after a webhook is suspended (its email is
	// queued), by whichever recorder recorded it: possibly several at once.
	OnSuspend func([]store.Suspension)
	// Tracer starts a client span per POST (see trace.go); nil, as when
	// tracing is off, starts none.
	Tracer trace.Tracer
	// ResponseBodyLimit is how many bytes of a receiver's answer each
	// recorded attempt keeps: 4 KiB by default, at most store.MaxResponseBody
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
	c.ResponseBodyLimit = max(-1, min(cmp.Or(c.ResponseBodyLimit, DefaultResponseBodyLimit), store.MaxResponseBody))
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Dispatcher delivers due event logs.
type Dispatcher struct {
	store  Store
	sender *Sender
	cfg    Config
	// checker shares the still-held checks of attempts made at once.
	checker *checker

	mu     sync.Mutex
	hooks  map[string]*hookState // webhook id → its standing here (see share.go)
	active int                   // of them, those holding slots
	inUse  int                   // the slots they hold, automatic and manual (see total)
	// accounts holds what each account's webhooks hold, for accounts
	// holding any; accountsActive is how many those are.
	accounts       map[string]*accountState
	accountsActive int
	freed          chan struct{} // signalled when a slot frees

	held      map[store.Held]struct{} // logs claimed here and not yet recorded: their leases are renewed
	orphans   map[string]time.Time    // leases of claims that failed but may have committed → when
	stopping  atomic.Bool             // set when Run's context ends: claims not yet attempted are released
	claimable atomic.Bool             // a webhook's room became worth a claim since the last sleep
	requeued  atomic.Bool             // an outcome put its log back in the queue since the last sleep
	// handing is the running Run's, for the logs handed over at firing
	// (handoff.go); nil while none runs. caughtUp and waiting say what
	// may be waiting in the queue (noteClaim).
	handing  *handing
	caughtUp bool
	waiting  map[string]*waitCount // webhook id → its logs known to wait in the queue
	// owed and paced pace the changes that fire events (pace.go): what
	// each account's changes left in the queue while the process was
	// short of CPU (cpuShort), in half-logs, and a channel closed when a
	// debt falls.
	owed     map[string]int
	paced    chan struct{}
	cpuShort atomic.Bool
	// lapsed is set when a write was refused for a full disk: the leases
	// held here may have ended meanwhile (renewing is a write too), and a
	// claim must not take their logs while their outcomes wait to be
	// recorded, so they are renewed before the next claim (renewLapsed).
	lapsed atomic.Bool
	// process names this dispatcher's beats (Queue.Beat); contact is
	// whether they land, which a claim asks before it takes over a lease
	// that ended (contact.go).
	process string
	contact contact
	// renewedAt is when (on Config.Now, in Unix nanoseconds) the leases
	// held here were last renewed, or found to be none. Renewals come every
	// third of a lease; one older than half a lease means the clock moved
	// past them (the process was paused, its host suspended), and the
	// leases are renewed before the next claim, as after a full disk.
	renewedAt atomic.Int64
}

// New returns a Dispatcher over st (a *store.Store, or any other Store; see
// queue.go). It panics on a Config that Validate refuses.
func New(st Store, cfg Config) *Dispatcher {
	if err := cfg.Validate(); err != nil {
		// The server validates its configuration before it makes one.
		panic("delivery: invalid Config: " + err.Error())
	}
	cfg = cfg.withDefaults()
	return &Dispatcher{
		store:    st,
		sender:   newSender(cfg.AttemptTimeout, cfg.Dial, cfg.UserAgent, cfg.Now),
		checker:  &checker{queue: st},
		cfg:      cfg,
		hooks:    map[string]*hookState{},
		accounts: map[string]*accountState{},
		freed:    make(chan struct{}, 1),
		held:     map[store.Held]struct{}{},
		waiting:  map[string]*waitCount{},
		owed:     map[string]int{},
		paced:    make(chan struct{}),
		orphans:  map[string]time.Time{},
		process:  store.NewID(),
	}
}

// Config returns the effective configuration.
func (d *Dispatcher) Config() Config { return d.cfg }

// Run delivers until ctx is done, then lets attempts in flight finish (each
// within its time-out) and records their outcomes before returning. Logs it
// claimed but did not attempt (still waiting for their webhook's gate, or
// taken by a claim the stop cut short) are released, due at once, rather
// than left to wait out their lease.
func (d *Dispatcher) Run(ctx context.Context) {
	d.stopping.Store(false)
	stopWatch := context.AfterFunc(ctx, func() { d.stopping.Store(true) })
	defer stopWatch()
	outcomes := make(chan store.Outcome, d.cfg.Concurrency)
	recorded := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		d.record(outcomes)
		close(recorded)
	}()
	go func() {
		d.renew(recorded) // until every outcome is recorded, the stop's included
		close(renewed)
	}()
	var wg sync.WaitGroup
	// Attempts outlive shutdown's cancel so that a stop does not turn every
	// attempt in flight into a duplicate after its lease expires.
	attemptCtx := context.WithoutCancel(ctx)
	d.startHanding(&handing{ctx: attemptCtx, wg: &wg, outcomes: outcomes})
	go d.watchCPU(ctx)
	d.renewedAt.Store(d.cfg.Now().UnixNano())
	for ctx.Err() == nil {
		wait := d.store.Wait() // before claiming, so no wake-up is missed
		// One reading of the clock for the renewal and the claim: a lease
		// renewed here ends a lease after the claim's now, however far
		// the clock moves meanwhile.
		now := d.cfg.Now()
		if (d.lapsed.Load() || d.renewOverdue(now)) && !d.renewLapsed(now) {
			// The disk is still full, or the database unreachable: a claim
			// would fail too. Asleep as after a short claim, so what is
			// due does not wake it at once.
			d.sleep(ctx, wait, false, true)
			continue
		}
		free := d.cfg.Concurrency - d.total()
		want := min(free, d.cfg.BatchSize)
		got := 0
		if want > 0 {
			perWebhook, room, exclude, perAccount, accountRoom := d.room()
			claims := d.claim(store.ClaimParams{
				Now: now, LeaseUntil: now.Add(d.cfg.Lease), Lease: store.NewID(),
				Limit: want, PerWebhook: perWebhook, Room: room, Exclude: exclude,
				PerAccount: perAccount, AccountRoom: accountRoom,
				NoTakeover: !d.contact.sure(now, d.contactGap()),
			})
			claimed := d.cfg.Now()
			got = len(claims)
			takenOver := 0
			for _, c := range claims {
				if c.TakenOver {
					takenOver++
				}
			}
			d.cfg.Metrics.claimed(got, takenOver, claimed.Sub(now))
			if got > 0 {
				d.cfg.Logger.Debug("claimed due logs", "logs", got, "wanted", want, "lease", claims[0].Lease)
			}
			leaseUntil := now.Add(d.cfg.Lease)
			paced := d.pace(claims, d.lastSlot(now, leaseUntil), ctx.Done())
			for _, c := range claims {
				// The slot is released once the outcome is recorded, not
				// when the attempt ends: an attempt sent but not recorded
				// is sent again if this process dies, so Concurrency also
				// bounds how many deliveries a crash can repeat.
				d.acquire(c.AccountID, c.WebhookID, c.RateLimit)
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := d.attempt(attemptCtx, c, leaseUntil, claimed, paced[c.LogID])
					d.logOutcome(attemptCtx, c, o)
					d.attempted(c.WebhookID)
					outcomes <- o
				}()
			}
		}
		if got > 0 && got == want {
			continue // a full batch: more may be due now
		}
		// A short claim took all this process may take now: whatever is
		// still due belongs to webhooks at their cap here, or is held by
		// another process, and must not be polled for every millisecond.
		d.sleep(ctx, wait, free <= 0, want > 0 && got < want)
	}
	d.stopHanding()
	wg.Wait()
	close(outcomes)
	<-recorded
	<-renewed
	d.releaseOrphans()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d.store.EndBeats(ctx, d.process, d.cfg.Now().Add(-24*time.Hour)) // a crashed process's row is forgotten a day on
}

// claimTimeout bounds one claim. A claim does not end with Run's context: one
// cut short by a stop may still commit on the server while this process sees
// an error, and the logs it took would then wait out their lease.
const claimTimeout = 30 * time.Second

// claim claims due logs and holds them (renews their leases) until their
// outcomes are recorded. A claim that fails may have committed all the same
// (the error may be the answer's, not the statement's), so whatever it may
// have taken is released at once, or, the database not answering, later.
func (d *Dispatcher) claim(p store.ClaimParams) []store.Claim {
	ctx, cancel := context.WithTimeout(context.Background(), min(claimTimeout, d.cfg.Lease/2))
	defer cancel()
	claims, err := d.store.Claim(ctx, p)
	if err != nil {
		if d.refusedForFullDisk(err) {
			d.lapsed.Store(true)
		} else {
			d.cfg.Logger.Error("claim due logs", "err", err)
		}
		d.mu.Lock()
		d.orphans[p.Lease] = d.cfg.Now()
		d.caughtUp = false // what is waiting is not known
		d.mu.Unlock()
		d.releaseOrphans()
		return nil
	}
	d.mu.Lock()
	for _, c := range claims {
		d.held[store.Held{LogID: c.LogID, Lease: c.Lease}] = struct{}{}
	}
	d.noteClaim(p, claims)
	d.mu.Unlock()
	return claims
}

// releaseOrphans releases the logs of failed claims, if any committed. A
// failed claim's lease is kept and released again at each renewal (its
// statement may still commit after the error) until the lease would have
// ended by itself.
func (d *Dispatcher) releaseOrphans() {
	d.mu.Lock()
	leases := make([]string, 0, len(d.orphans))
	for l := range d.orphans {
		leases = append(leases, l)
	}
	d.mu.Unlock()
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	n, err := d.store.ReleaseHeld(ctx, leases)
	if err != nil {
		return // tried again at the next renewal
	}
	if n > 0 {
		d.cfg.Logger.Warn("released logs taken by a claim that reported an error; they are due now", "logs", n)
		d.mu.Lock()
		d.caughtUp = false // waiting again, of webhooks not known here
		d.mu.Unlock()
	}
	d.mu.Lock()
	for l, at := range d.orphans {
		if d.cfg.Now().Sub(at) > d.cfg.Lease {
			delete(d.orphans, l)
		}
	}
	d.mu.Unlock()
}

// renew beats and extends the leases of the logs held here (waiting for
// their gate, in flight, or waiting to be recorded) every third of a lease,
// until done; a second after one that failed or was slow, so that a live
// process renews soon after a stalled database answers again, well before
// any other process is sure enough of the database to take its leases over
// (contact.go). Only a process that stopped renewing (it died, or lost the
// database while others did not) lets a lease end, so a busy machine's slow
// attempt is never taken over by another process and sent twice. It also
// retries releasing the logs of failed claims.
func (d *Dispatcher) renew(done <-chan struct{}) {
	every := d.cfg.Lease / 3
	t := time.NewTimer(0) // a beat at once: contact is counted from the start
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		next := every
		if !d.keep(d.cfg.Now()) {
			next = min(every, keepRetry)
		}
		d.releaseOrphans()
		d.sweep()
		t.Reset(next)
	}
}

// keepRetry is how soon the lease keeper tries again after a beat or a
// renewal that failed or was slow.
const keepRetry = time.Second

// contactGap is how long this process's beats must have landed without a
// break before a claim takes over a lease that ended, and how far apart two
// beats of one run may be: a beat interval and a quarter (contact.go).
func (d *Dispatcher) contactGap() time.Duration { return d.cfg.Lease / 3 * 5 / 4 }

// keep beats and renews the leases held here until a lease after at, on
// the store's lease keeper's connection, and notes in contact whether it
// landed promptly (within a sixth of a lease: half the time between two
// beats). It reports whether it did.
func (d *Dispatcher) keep(at time.Time) bool {
	every := d.cfg.Lease / 3
	ctx, cancel := context.WithTimeout(context.Background(), every)
	defer cancel()
	held := d.heldNow()
	err := d.store.Beat(ctx, d.process, at)
	if err == nil && len(held) > 0 {
		_, err = d.store.RenewLeases(ctx, held, at.Add(d.cfg.Lease))
	}
	took := d.cfg.Now().Sub(at)
	d.contact.beat(at, took, err == nil, every/2, d.contactGap())
	if err != nil {
		if !d.refusedForFullDisk(err) {
			d.cfg.Logger.Warn("renew leases", "logs", len(held), "err", err)
		}
		return false
	}
	d.renewedAt.Store(at.UnixNano())
	return took <= every/2
}

// heldNow lists the logs held here.
func (d *Dispatcher) heldNow() []store.Held {
	d.mu.Lock()
	defer d.mu.Unlock()
	held := make([]store.Held, 0, len(d.held))
	for h := range d.held {
		held = append(held, h)
	}
	return held
}

// refusedForFullDisk reports whether err is a write refused for a full disk,
// and if so notes that the leases held here may have lapsed. The store logs
// such refusals once per store.FullLogEvery, so callers need not.
func (d *Dispatcher) refusedForFullDisk(err error) bool {
	if !errors.Is(err, store.ErrStorageFull) {
		return false
	}
	d.lapsed.Store(true)
	return true
}

// renewOverdue reports whether, at now, the leases held here were last
// renewed more than half a lease ago, which the renewer's ticks (a third of
// a lease apart) never let happen unless the clock moved on without them.
func (d *Dispatcher) renewOverdue(now time.Time) bool {
	return now.Sub(time.Unix(0, d.renewedAt.Load())) > d.cfg.Lease/2
}

// renewLapsed renews the leases of every log held here until a lease after
// now, once writes were refused for a full disk or renewals fell behind the
// clock (renewOverdue), and reports whether it could. A lease that ended would
// let this process's next claim take a log whose attempt was made and
// whose outcome waits to be recorded: the receiver would get it twice. No
// claim of this process can have taken such a log meanwhile (a full disk
// refuses claims too; a jumped clock is seen here before the next claim),
// so renewing them all before claiming again keeps each outcome recorded
// once.
func (d *Dispatcher) renewLapsed(now time.Time) bool {
	d.lapsed.Store(false) // before the renewal: a refusal from now on sets it again
	if !d.keep(now) {
		d.lapsed.Store(true)
		return false
	}
	return true
}

// sleep waits for a wake-up, the next due time, enough freed slots, or the
// poll interval, whichever comes first. A claim costs about as much for one
// log as for a batch, so a freed slot alone does not end the sleep: a
// webhook must have a quarter of its room free, or a full process a quarter
// of a batch, or nothing be in flight.
func (d *Dispatcher) sleep(ctx context.Context, wait <-chan struct{}, full, short bool) {
	// Woken already (events fired since the claim, as under a busy API):
	// no probe of the next due time, which the wake-up makes moot.
	select {
	case <-ctx.Done():
		return
	case <-wait:
		return
	default:
	}
	delay := d.cfg.PollInterval
	// dueNow is whether a log may be due and waiting for room: only then
	// can a freed slot let a claim take more. A full process did not look.
	dueNow := full
	if !full {
		due, ok, err := d.store.NextDue(ctx)
		switch {
		case err != nil:
			dueNow = true
		case ok:
			if until := due.Sub(d.cfg.Now()); until > 0 {
				delay = min(delay, until)
			} else {
				dueNow = true
				if !short {
					delay = min(delay, time.Millisecond)
				}
			}
		}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	worth := max(1, min(d.cfg.BatchSize, d.cfg.Concurrency)/4)
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait:
			return
		case <-t.C:
			return
		case <-d.freed:
			// Nothing was due when it looked: a freed slot lets no claim
			// take more (what falls due later ends the timer, what is fired
			// wakes it), unless an outcome put a log back in the queue,
			// whose due time the next sleep's look finds. Without this, at a
			// steady low rate each delivery cost a second, empty claim.
			if !dueNow && !d.requeued.Swap(false) {
				continue
			}
			// Worth a claim: nothing in flight, a webhook with room for a
			// batch, or a full process with a batch's worth free again.
			if n := d.total(); n == 0 || d.claimable.Swap(false) || (full && d.cfg.Concurrency-n >= worth) {
				return
			}
		}
	}
}

// recordMargin is the time an attempt leaves itself, after its time-out and
// before its lease ends, to have its outcome recorded.
func (d *Dispatcher) recordMargin() time.Duration {
	return min(5*time.Second, (d.cfg.Lease-d.cfg.AttemptTimeout)/2)
}

// total counts the process's slots in use: logs claimed or handed over and
// not yet recorded, and manual sends.
func (d *Dispatcher) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inUse
}

// acquire holds a process slot for a claimed log of the webhook, and notes
// the webhook's rate limit (0 for none), which bounds its claims.
func (d *Dispatcher) acquire(accountID, webhookID string, rate int) {
	d.mu.Lock()
	st := d.hook(webhookID, accountID)
	st.rate = rate
	d.hold(st, 1, 0)
	d.mu.Unlock()
}

// attempted notes that an automatic attempt of the webhook has its outcome,
// which now waits only to be recorded: the webhook's room grows (see
// hookState.recording), and a claim is worth making if it grew enough.
func (d *Dispatcher) attempted(webhookID string) {
	d.mu.Lock()
	st := d.hook(webhookID, "")
	st.recording++
	worth := d.worthClaim(st)
	d.mu.Unlock()
	if worth {
		d.signalFreed()
	}
}

// worthClaim reports whether a claim may now take enough of the webhook to
// be worth making, and if so marks the process claimable. d.mu is held.
func (d *Dispatcher) worthClaim(st *hookState) bool {
	// An account over its share gets nothing from a claim, so its freed
	// slots wake no claim (with 50 hanging webhooks, one per time-out).
	if n, worth := d.roomOf(st, d.shareOf(st)); (n >= worth || st.held-st.recording+st.manual == 0) && d.accountRoom(st.account) > 0 {
		d.claimable.Store(true) // this webhook is worth a claim again
		return true
	}
	return false
}

func (d *Dispatcher) release(webhookID string) {
	d.mu.Lock()
	st := d.hook(webhookID, "")
	st.recording--
	d.hold(st, -1, 0)
	d.worthClaim(st)
	d.forget(webhookID, st, d.cfg.Now())
	d.mu.Unlock()
	d.signalFreed()
}

func (d *Dispatcher) signalFreed() {
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

// lastSlot is the latest send slot a claim made at now under a lease until
// leaseUntil may wait for: an attempt at it still ends, and is recorded,
// before the lease does (see attempt).
func (d *Dispatcher) lastSlot(now, leaseUntil time.Time) time.Time {
	if last := leaseUntil.Add(-d.cfg.AttemptTimeout - d.recordMargin() - time.Second); last.After(now) {
		return last
	}
	return now
}

// attempt makes one automatic attempt of a claimed log and says what it
// means. An attempt that could no longer be made and recorded before its
// lease ends (it waited too long for a slot of its webhook) is not made: another
// process may take the log once the lease ends, and the same delivery would
// go out twice. The log is released to be claimed again instead. The log of
// a throttled webhook (p not nil) first waits for its send slot, or is
// released to wait for one in the queue (throttle.go).
func (d *Dispatcher) attempt(ctx context.Context, c store.Claim, leaseUntil, claimed time.Time, p *pacing) store.Outcome {
	o := store.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: store.TriggerAutomatic}
	switch {
	case !c.Enabled:
		o.Result, o.Reason = store.Cancel, "webhook disabled before this attempt; no delivery attempted"
		return o
	case c.Health == store.Suspended:
		o.Result, o.Reason = store.Cancel, store.ReasonSuspendedBefore
		return o
	}
	if d.stopping.Load() { // stopping: not attempted, due again at once
		o.Result = store.Release
		return o
	}
	if p != nil {
		if ok, released := d.awaitSlot(c, p, claimed, o); !ok {
			return released
		}
	}
	// A claim takes no more than a webhook's room, so a slot is normally
	// free at once; a Test or Resend may have taken it meanwhile.
	deadline := leaseUntil.Add(-d.cfg.AttemptTimeout - d.recordMargin())
	waited := !d.takeNow(c.WebhookID, deadline)
	if waited && !d.take(c.WebhookID, deadline, nil) {
		o.Result = store.Release
		return o
	}
	if d.stopping.Load() {
		d.untake(c.WebhookID)
		o.Result = store.Release
		return o
	}
	// The claim was read before the attempt; its webhook or whole account
	// may have been deleted since, by any process or `herald accounts
	// delete`, and nothing of a deleted account may go out after the
	// delete. An attempt that waited (for a slot of its webhook, however
	// briefly, or behind a busy machine) looks its log up by primary key
	// first; one made at once after its claim is in flight like a request
	// already sent, and skips the look-up, which cost about a fifth of the
	// CPU per delivery of one busy webhook (herald bench, scenario a). Not
	// found: nothing is sent, and the outcome finds no log to record.
	if (waited || d.cfg.Now().Sub(claimed) >= StillHeldAfter) && !d.stillHeld(c) {
		d.untake(c.WebhookID)
		o.Result = store.Release
		return o
	}
	number := c.AttemptCount + 1
	ctx, span := d.startSpan(ctx, spanOf{name: SpanAttempt, eventID: c.EventID, kind: c.Event, webhookID: c.WebhookID,
		logID: c.LogID, attempt: number, fired: c.TraceParent})
	res := d.sender.Send(ctx, signed(c))
	d.done(c.WebhookID, res)
	d.cfg.Metrics.attempted(res)
	o.Attempt = d.attemptRecord(res)
	switch {
	case res.OK():
		o.Result = store.Delivered
	case res.Gone():
		// The receiver says the endpoint is gone for good (Standard
		// Webhooks): no retry, and the webhook is disabled until its
		// owner enables it again (decision 0124).
		o.Result, o.Reason, o.Disable = store.Cancel, ReasonGone, DisabledGone
		o.Attempt.Error = res.Err
	case number >= d.maxAttempts(c):
		o.Result, o.Reason = store.Exhausted, res.Err+"; no attempts left"
	default:
		var note string
		o.Result = store.Retry
		o.NextAt, note = d.nextAttempt(res, d.retryWait(c, number))
		o.Reason = res.Err + note
		o.Attempt.Error = o.Reason
	}
	endSpan(span, res, o.Result.String())
	return o
}

// MaxRetryAfter bounds the wait a receiver's Retry-After may ask for.
const MaxRetryAfter = time.Hour

// nextAttempt is when a failed attempt with attempts left is retried: after
// interval (the webhook's retry policy's wait), or, when a 429 or 503
// answer's Retry-After asked for longer, after that (at most
// MaxRetryAfter), whichever is later. note says what the receiver asked
// and what herald does, for the retry reason.
func (d *Dispatcher) nextAttempt(res Result, interval time.Duration) (time.Time, string) {
	now := d.cfg.Now()
	next := now.Add(interval)
	if res.RetryAfter == nil {
		return next, ""
	}
	asked := *res.RetryAfter
	note := fmt.Sprintf("; receiver asked to retry after %s", seconds(asked))
	switch wait := min(asked, MaxRetryAfter); {
	case wait < interval:
		note += fmt.Sprintf("; retrying after the retry interval, %s", seconds(interval))
	case asked > MaxRetryAfter:
		next = now.Add(wait)
		note += fmt.Sprintf("; retrying after at most %s", seconds(MaxRetryAfter))
	default:
		next = now.Add(wait)
	}
	return next, note
}

// seconds writes a wait as whole seconds ("120 s"), or as a duration when
// shorter than a second.
func seconds(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	if d >= math.MaxInt64/2 {
		return "more than " + strconv.FormatInt(int64(MaxRetryAfter/time.Second), 10) + " s"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + " s"
}

// logOutcome logs an automatic attempt at debug: which log, webhook and event,
// and what came of it. Never the URL (receivers put credentials in query
// strings) nor a body.
func (d *Dispatcher) logOutcome(ctx context.Context, c store.Claim, o store.Outcome) {
	if !d.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{slog.String("log", c.LogID), slog.String("webhook", c.WebhookID),
		slog.String("event", c.EventID), slog.Int("attempt", c.AttemptCount+1), slog.String("result", o.Result.String())}
	if a := o.Attempt; a != nil {
		if a.StatusCode != nil {
			attrs = append(attrs, slog.Int("status", *a.StatusCode))
		}
		attrs = append(attrs, slog.Float64("duration_ms", float64(a.Duration.Microseconds())/1000))
	}
	if o.Reason != "" {
		attrs = append(attrs, slog.String("reason", o.Reason))
	}
	d.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "attempt", attrs...)
}

// stillHeld reports whether c's log still exists under its lease; a failed
// look-up says no, and the log is released to be claimed again.
func (d *Dispatcher) stillHeld(c store.Claim) bool {
	held, err := d.checker.stillHeld(store.Held{LogID: c.LogID, Lease: c.Lease})
	if err != nil {
		d.cfg.Logger.Warn("attempt not made: its log could not be checked", "log", c.LogID, "err", err)
	}
	return held
}

// StillHeldAfter is how long after its claim an attempt first checks that
// its log still exists (that its webhook or account was not deleted
// meanwhile). An attempt made sooner counts as in flight when the delete
// commits, like a request already on the wire.
const StillHeldAfter = 20 * time.Millisecond

// DefaultResponseBodyLimit is Config.ResponseBodyLimit's default.
const DefaultResponseBodyLimit = 4 << 10

// attemptRecord is what is stored of an attempt: its answer's body cut at
// ResponseBodyLimit, and the headers both ways (the store bounds them),
// before the outcome waits to be recorded.
func (d *Dispatcher) attemptRecord(r Result) *store.AttemptRecord {
	a := &store.AttemptRecord{SentAt: r.SentAt, ReceivedAt: r.ReceivedAt, StatusCode: r.StatusCode,
		Duration: r.Duration, Error: r.Err, ResponseBody: cut(r.RespBody, d.cfg.ResponseBodyLimit)}
	if len(r.Headers) > 0 || len(r.RespHeader) > 0 {
		a.Headers = &store.AttemptHeaders{Request: store.HeaderLines(r.Headers), Response: store.HeaderLines(r.RespHeader)}
	}
	return a
}

// cut keeps at most n bytes of b (none when n <= 0), without leaving half a
// UTF-8 character at the end.
func cut(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	if n <= 0 {
		return nil
	}
	b = b[:n]
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return b
}

// Recording at low rates: a commit costs about as much for one outcome as
// for dozens (it writes the same pages), so a batch smaller than lingerBatch
// waits up to recordLinger for company. Receivers are not kept waiting: the
// attempt has been made; only its log's status and its slot wait. Under load
// batches fill while the previous one is written and never linger.
const (
	lingerBatch  = 16
	recordLinger = 10 * time.Millisecond
)

// defaultRecorders is how many batches of outcomes may be recorded at once. A
// batch's transaction spends most of its time waiting for the database
// (its round trips and its commit's flush), and the process's slots
// (Concurrency) are freed only once their outcomes are recorded: with one
// recorder at a time, on PostgreSQL under an API that kept the database
// busy, recording was busy 85% of the time and the dispatcher fell seconds
// behind (BENCHMARKS.md). Batches recorded at once touch different logs,
// and take webhook locks only in id order and only to change health
// (store.Complete), so they neither wait for nor deadlock with each other;
// the renewal of leases passes over the rows they hold (store.RenewLeases).
const defaultRecorders = 4

// record writes outcomes in batches: whatever has arrived by the time a
// recorder is free goes into the next transaction, so under load one commit
// covers hundreds of attempts; at low rates a small batch lingers
// (recordLinger) for more. Up to Config.Recorders batches are written at once.
func (d *Dispatcher) record(outcomes <-chan store.Outcome) {
	const maxBatch = 512
	free := make(chan struct{}, d.cfg.Recorders)
	for range d.cfg.Recorders {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	linger := time.NewTimer(recordLinger)
	linger.Stop()
	for o := range outcomes {
		batch := make([]store.Outcome, 0, 64)
		batch = append(batch, o)
		closed, took := false, false
		// A batch closes when a recorder is free to take it: while all are
		// busy, arrivals join it, so batches grow with the load.
	gather:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-outcomes:
				if !ok {
					closed = true
					break gather
				}
				batch = append(batch, o)
				continue
			default:
			}
			select {
			case <-free:
				took = true
				break gather
			case o, ok := <-outcomes:
				if !ok {
					closed = true
					break gather
				}
				batch = append(batch, o)
			}
		}
		if !took {
			<-free
		}
		if len(batch) < lingerBatch && !closed {
			linger.Reset(recordLinger)
		wait:
			for len(batch) < lingerBatch {
				select {
				case o, ok := <-outcomes:
					if !ok {
						break wait
					}
					batch = append(batch, o)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		wg.Add(1)
		go func() {
			defer func() { free <- struct{}{}; wg.Done() }()
			d.complete(batch)
			for _, o := range batch {
				if o.Result == store.Retry || o.Result == store.Release {
					d.requeued.Store(true)
					break
				}
			}
			d.mu.Lock()
			for _, o := range batch {
				delete(d.held, store.Held{LogID: o.LogID, Lease: o.Lease})
				if o.Result == store.Release {
					d.wait(o.WebhookID, d.hook(o.WebhookID, "").account) // due again, and waiting
				}
			}
			d.mu.Unlock()
			for _, o := range batch {
				d.release(o.WebhookID)
			}
		}()
	}
}

// complete records a batch, retrying while the database is unreachable. If it
// stays unreachable past the lease, the logs are claimed again and delivered
// again: at least once, never lost. While the disk is full it retries past
// the lease (no claim takes the logs meanwhile; see renewLapsed), so each
// outcome is recorded once space is freed, unless herald is stopped first:
// then the logs are attempted again after the next start.
func (d *Dispatcher) complete(batch []store.Outcome) {
	start := d.cfg.Now()
	deadline := start.Add(d.cfg.Lease)
	backoff := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		suspended, err := d.store.Complete(ctx, batch, d.cfg.SuspendAfter)
		cancel()
		if err == nil {
			d.cfg.Metrics.recorded(len(batch), d.cfg.Now().Sub(start))
			d.cfg.Logger.Debug("recorded outcomes", "logs", len(batch), "suspended", len(suspended))
			if len(suspended) > 0 && d.cfg.OnSuspend != nil {
				d.cfg.OnSuspend(suspended)
			}
			return
		}
		// Past the lease, an outcome is given up (its log is attempted
		// again) only when stopping, or for an error a retry will not
		// mend: while the database is unavailable or its disk full, the
		// logs stay held here, their leases renewed, and no other process
		// takes them over (contact.go), so the outcome is recorded once
		// the database answers.
		full := d.refusedForFullDisk(err)
		if d.cfg.Now().After(deadline) && ((!full && !store.Unavailable(err)) || d.stopping.Load()) {
			d.cfg.Logger.Error("record outcomes: giving up; the logs will be attempted again", "logs", len(batch), "err", err)
			return
		}
		if !full {
			d.cfg.Logger.Warn("record outcomes: retrying", "logs", len(batch), "err", err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}
