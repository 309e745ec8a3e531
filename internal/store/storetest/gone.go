package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testGoneDisablesTheWebhookOnce: outcomes that ask to disable their
// webhook (its receiver answered 410 Gone) cancel their logs with their
// attempt, disable the webhook keeping why, and queue one email however
// many there are; enabling the webhook clears the reason.
func testGoneDisablesTheWebhookOnce(t *testing.T, b *Bundle) {
	w := b.Webhook(t, "gone")
	b.Fire(t, b.St, 2)
	claims := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(claims) != 2 {
		t.Fatalf("claimed %d; want 2", len(claims))
	}
	var outs []store.Outcome
	for _, c := range claims {
		o := Outcome(c, store.Cancel, 410, b.Clock.Now())
		recv := b.Clock.Now()
		code := 410
		o.Attempt = &store.AttemptRecord{SentAt: recv, ReceivedAt: &recv, StatusCode: &code}
		o.Reason, o.Disable = "receiver answered 410 Gone", "its receiver answered 410 Gone"
		outs = append(outs, o)
	}
	emails := b.Count(t, `SELECT COUNT(*) FROM emails`)
	b.Complete(t, b.St, 50, outs...)
	got, err := b.St.Webhook(b.Ctx, b.Account.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled || got.DisabledReason != "its receiver answered 410 Gone" || got.Status != store.Healthy {
		t.Errorf("webhook enabled %v, reason %q, %s; want disabled with the reason, health unchanged", got.Enabled, got.DisabledReason, got.Status)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM emails WHERE kind = ?`, store.EmailDisabled); n != 1 || b.Count(t, `SELECT COUNT(*) FROM emails`) != emails+1 {
		t.Errorf("%d disabled emails; want 1", n)
	}
	for _, c := range claims {
		if l := b.log(t, c.LogID); l.Status != store.Cancelled || l.AttemptsMade != 1 {
			t.Errorf("log %s: %s after %d attempts; want cancelled after 1", c.LogID, l.Status, l.AttemptsMade)
		}
	}
	on := true
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Enabled: &on}); err != nil || !u.Enabled || u.DisabledReason != "" {
		t.Errorf("enabled again: %v, reason %q, %v", u.Enabled, u.DisabledReason, err)
	}
}
