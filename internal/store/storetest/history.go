package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testDeletionTakesAttempts: deleting a webhook takes its logs with their
// attempts and leaves another webhook's; deleting the account takes the
// rest. On PostgreSQL's partitioned history no foreign key cascades from a
// log to its attempts (decision 0090), so the store deletes them itself.
func testDeletionTakesAttempts(t *testing.T, b *Bundle) {
	gone, kept := b.Webhook(t, "gone"), b.Webhook(t, "kept")
	b.Fire(t, b.St, 3)
	var outs []store.Outcome
	for _, c := range b.Claim(t, b.St, 0, time.Minute, 100, 100) {
		outs = append(outs, Outcome(c, store.Retry, 503, b.Clock.Now()))
	}
	if len(outs) != 6 {
		t.Fatalf("claimed %d logs; want 6", len(outs))
	}
	b.Complete(t, b.St, 1000, outs...)
	attemptsOf := func(webhookID string) int {
		t.Helper()
		return b.Count(t, `SELECT COUNT(*) FROM webhook_attempts a WHERE a.log_id IN (
  SELECT id FROM webhook_event_logs WHERE webhook_id = ?)`, webhookID)
	}
	if attemptsOf(gone.ID) != 3 || attemptsOf(kept.ID) != 3 {
		t.Fatalf("attempts before: %d and %d; want 3 each", attemptsOf(gone.ID), attemptsOf(kept.ID))
	}
	if err := b.St.DeleteWebhook(b.Ctx, b.Account.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts`); n != 3 {
		t.Errorf("%d attempts after deleting a webhook; want the other webhook's 3", n)
	}
	if attemptsOf(kept.ID) != 3 {
		t.Errorf("the kept webhook has %d attempts; want 3", attemptsOf(kept.ID))
	}
	if err := b.St.DeleteAccount(b.Ctx, b.Account.ID); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"webhook_attempts", "webhook_event_logs", "events"} {
		if n := b.Count(t, `SELECT COUNT(*) FROM `+table); n != 0 {
			t.Errorf("%d rows of %s left after deleting the account", n, table)
		}
	}
}
