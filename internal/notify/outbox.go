package notify

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// Outbox sends the emails the store queued (a suspension queues one in the
// same transaction that suspends the webhook). Without an SMTP server the
// emails are logged and kept in the database, marked as not sent by SMTP.
type Outbox struct {
	store  *store.Store
	sender *Sender // nil: keep, do not send
	log    *slog.Logger
	wake   chan struct{}
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

// Run sends queued emails until ctx is done, looking when woken and every few
// seconds, so an email queued by another process or before a crash goes too.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
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

func (o *Outbox) flush(ctx context.Context) {
	emails, err := o.store.UnsentEmails(ctx, 50)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Error("read email outbox", "err", err)
		}
		return
	}
	for _, e := range emails {
		if o.sender == nil {
			o.log.Info("email kept, not sent: no SMTP server configured", "to", e.To, "subject", e.Subject)
			if err := o.store.MarkEmail(ctx, e.ID, "not sent: no SMTP server configured"); err != nil {
				o.log.Error("mark email", "err", err)
			}
			continue
		}
		if err := o.sender.Send(ctx, Message{To: e.To, Subject: e.Subject, Text: e.Body}); err != nil {
			o.log.Warn("send email; will retry", "to", e.To, "err", err)
			o.store.FailEmail(ctx, e.ID, err.Error())
			return
		}
		if err := o.store.MarkEmail(ctx, e.ID, ""); err != nil {
			o.log.Error("mark email sent", "err", err)
		}
	}
}
