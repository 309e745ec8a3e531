package notify

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Outbox sends the emails the store queued (a suspension queues one in the
// same transaction that suspends the webhook), in the words Words writes
// from the facts the store kept. Without an SMTP server the
// emails are logged and kept in the database, marked as not sent by SMTP.
// Its leases and back-offs are by the store's clock (store.Options.Now),
// so a test that moves that clock moves them too.
type Outbox struct {
	store  *store.Store
	sender *Sender // nil: keep, do not send
	log    *slog.Logger
	wake   chan struct{}
	// Done, when set, is told how each email left the outbox or failed a
	// send: EmailSent, EmailKept, EmailFailed or EmailGivenUp (for metrics).
	Done func(result string)
	// PublicURL is the portal's address as its users reach it
	// ("https://herald.example.com"), for the links in emails; "" when
	// unknown, and emails then name the page without a host (see Words).
	PublicURL string
	// Interval is how often Run looks for emails when nothing wakes it
	// (DefaultInterval when 0): for those queued by another process, left
	// by a crash, or whose back-off has passed.
	Interval time.Duration
}

// DefaultInterval is how often an Outbox looks for emails unwoken.
const DefaultInterval = 5 * time.Second

// What became of an email, as Outbox.Done is told.
const (
	EmailSent    = "sent"     // the SMTP server took it
	EmailKept    = "kept"     // no SMTP server is configured: kept in the database
	EmailFailed  = "failed"   // a send failed; it is tried again later
	EmailGivenUp = "given_up" // every send failed; kept, marked not sent
)

func (o *Outbox) done(result string) {
	if o.Done != nil {
		o.Done(result)
	}
}

// NewOutbox returns an Outbox; sender may be nil.
func NewOutbox(st *store.Store, sender *Sender, log *slog.Logger) *Outbox {
	return &Outbox{store: st, sender: sender, log: log, wake: make(chan struct{}, 1)}
}

// Wake asks the outbox to look for emails now.
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Run sends queued emails until ctx is done, looking when woken and every
// Interval, so an email queued by another process or before a crash goes
// too. Each email is claimed before it is sent, so of several processes
// sharing the database only one sends it.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(cmp.Or(o.Interval, DefaultInterval))
	defer t.Stop()
	for {
		o.flush(ctx)
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		case <-t.C:
		}
	}
}

// emailLease is how long a claimed email is this process's to send; another
// process takes it after that (if this one died before marking it).
const emailLease = 5 * time.Minute

func (o *Outbox) flush(ctx context.Context) {
	// One at a time: a slow SMTP server cannot keep other processes waiting
	// on a batch of leased emails.
	for ctx.Err() == nil {
		emails, err := o.store.ClaimEmails(ctx, 1, emailLease)
		if err != nil {
			if ctx.Err() == nil {
				o.log.Error("read email outbox", "err", err)
			}
			return
		}
		if len(emails) == 0 {
			return
		}
		e := emails[0]
		e.Subject, e.Body = Words(e, o.PublicURL)
		if o.sender == nil {
			o.log.Info("email kept, not sent: no SMTP server configured", "to", e.To, "subject", e.Subject)
			if err := o.store.MarkEmail(ctx, e.ID, e.Subject, e.Body, "not sent: no SMTP server configured"); err != nil {
				o.log.Error("mark email", "err", err)
				return
			}
			o.done(EmailKept)
			continue
		}
		if err := o.sender.Send(ctx, Message{To: e.To, Subject: e.Subject, Text: e.Body}); err != nil {
			o.failed(ctx, e, err)
			continue // the others are not held up by this one
		}
		if err := o.store.MarkEmail(context.WithoutCancel(ctx), e.ID, e.Subject, e.Body, ""); err != nil {
			o.log.Error("mark email sent", "err", err)
			return
		}
		o.done(EmailSent)
	}
}

// Failed sends of one email back off, doubling from a minute to an hour, and
// stop after maxEmailAttempts (about six hours of trying): the email is then kept,
// marked with why it was not sent.
const maxEmailAttempts = 12

func (o *Outbox) failed(ctx context.Context, e store.Email, err error) {
	ctx = context.WithoutCancel(ctx)
	attempts, ferr := o.store.FailEmail(ctx, e.ID, err.Error(), o.store.Now().Add(emailBackoff(e.Attempts+1)))
	if ferr != nil {
		o.log.Error("record failed email", "err", ferr)
		return
	}
	if attempts >= maxEmailAttempts {
		o.done(EmailGivenUp)
		o.log.Error("email not sent; giving up", "to", e.To, "attempts", attempts, "err", err)
		if merr := o.store.MarkEmail(ctx, e.ID, e.Subject, e.Body, fmt.Sprintf("not sent after %d attempts: %v", attempts, err)); merr != nil {
			o.log.Error("mark email", "err", merr)
		}
		return
	}
	o.done(EmailFailed)
	o.log.Warn("send email; will retry", "to", e.To, "attempts", attempts, "err", err)
}

// emailBackoff is the wait after the nth failed send: 1m, 2m, 4m … 1h.
func emailBackoff(n int) time.Duration {
	d := time.Minute << min(n-1, 6)
	return min(d, time.Hour)
}
