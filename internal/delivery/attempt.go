package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/health"
)

// attempts owns sending: every POST herald makes for a log or a Test goes
// out here, on the Sender (sender.go), within the webhook's request slots.
// For an automatic attempt it decides whether it may still be made (the
// webhook disabled or suspended, the lease too near its end, the log
// deleted meanwhile, the send slot of a throttled webhook), makes it and
// says what its answer means: the outcome the completer records. Resends
// and Tests (manual.go) go out the same way.
type attempts struct {
	cfg      *Config
	store    Store
	sender   *Sender
	checker  *checker // shares the still-held checks of attempts made at once
	slots    *slots
	stopping *atomic.Bool // the producer's: claims not yet attempted are released
}

// attempt makes one automatic attempt of a claimed log and says what it
// means. An attempt that could no longer be made and recorded before its
// lease ends (it waited too long for a slot of its webhook) is not made: another
// process may take the log once the lease ends, and the same delivery would
// go out twice. The log is released to be claimed again instead. The log of
// a throttled webhook (p not nil) first waits for its send slot, or is
// released to wait for one in the queue (throttle.go).
func (a *attempts) attempt(ctx context.Context, c attempt.Claim, leaseUntil, claimed time.Time, p *pacing) attempt.Outcome {
	o := attempt.Outcome{LogID: c.LogID, WebhookID: c.WebhookID, Lease: c.Lease, Trigger: attempt.TriggerAutomatic}
	switch {
	case !c.Enabled:
		o.Result, o.Reason = attempt.Cancel, "webhook disabled before this attempt; no delivery attempted"
		return o
	case c.Health == string(health.Suspended):
		o.Result, o.Reason = attempt.Cancel, attempt.ReasonSuspendedBefore
		return o
	}
	if a.stopping.Load() { // stopping: not attempted, due again at once
		o.Result = attempt.Release
		return o
	}
	if p != nil {
		if ok, released := a.awaitSlot(c, p, claimed, o); !ok {
			return released
		}
	}
	// A claim takes no more than a webhook's room, so a slot is normally
	// free at once; a Test or Resend may have taken it meanwhile.
	deadline := leaseUntil.Add(-a.cfg.AttemptTimeout - a.cfg.recordMargin())
	waited := !a.slots.takeNow(c.WebhookID, deadline)
	if waited && !a.slots.take(c.WebhookID, deadline, nil) {
		o.Result = attempt.Release
		return o
	}
	if a.stopping.Load() {
		a.slots.untake(c.WebhookID)
		o.Result = attempt.Release
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
	if (waited || a.cfg.Now().Sub(claimed) >= StillHeldAfter) && !a.stillHeld(c) {
		a.slots.untake(c.WebhookID)
		o.Result = attempt.Release
		return o
	}
	number := c.AttemptCount + 1
	ctx, span := a.startSpan(ctx, spanOf{name: SpanAttempt, eventID: c.EventID, kind: event.Kind(c.Event), webhookID: c.WebhookID,
		logID: c.LogID, attempt: number, fired: c.TraceParent})
	res := a.sender.Send(ctx, a.sender.request(ctx, c))
	a.slots.done(c.WebhookID, res)
	a.cfg.Metrics.attempted(res)
	o.Attempt = a.attemptRecord(res)
	switch {
	case res.OK():
		o.Result = attempt.Delivered
	case res.Gone():
		// The receiver says the endpoint is gone for good (Standard
		// Webhooks): no retry, and the webhook is disabled until its
		// owner enables it again (decision 0124).
		o.Result, o.Reason, o.Disable = attempt.Cancel, ReasonGone, DisabledGone
		o.Attempt.Error = res.Err
	case number >= a.maxAttempts(c):
		o.Result, o.Reason = attempt.Exhausted, res.Err+"; no attempts left"
	default:
		var note string
		o.Result = attempt.Retry
		o.NextAt, note = a.nextAttempt(res, a.retryWait(c, number))
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
func (a *attempts) nextAttempt(res Result, interval time.Duration) (time.Time, string) {
	now := a.cfg.Now()
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
func (a *attempts) logOutcome(ctx context.Context, c attempt.Claim, o attempt.Outcome) {
	if !a.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
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
	a.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "attempt", attrs...)
}

// stillHeld reports whether c's log still exists under its lease; a failed
// look-up says no, and the log is released to be claimed again.
func (a *attempts) stillHeld(c attempt.Claim) bool {
	held, err := a.checker.stillHeld(attempt.Held{LogID: c.LogID, Lease: c.Lease})
	if err != nil {
		a.cfg.Logger.Warn("attempt not made: its log could not be checked", "log", c.LogID, "err", err)
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
func (a *attempts) attemptRecord(r Result) *attempt.AttemptRecord {
	rec := &attempt.AttemptRecord{SentAt: r.SentAt, ReceivedAt: r.ReceivedAt, StatusCode: r.StatusCode,
		Duration: r.Duration, Error: r.Err, ResponseBody: cut(r.RespBody, a.cfg.ResponseBodyLimit)}
	if len(r.Headers) > 0 || len(r.RespHeader) > 0 {
		rec.Headers = &attempt.AttemptHeaders{Request: attempt.HeaderLines(r.Headers), Response: attempt.HeaderLines(r.RespHeader)}
	}
	return rec
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
