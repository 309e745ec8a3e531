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
func testDeletionTakesAttempts(t *testing.T, b *bundle) {
	gone, kept := b.webhook(t, "gone"), b.webhook(t, "kept")
	b.fire(t, b.st, 3)
	var outs []store.Outcome
	for _, c := range b.claim(t, b.st, 0, time.Minute, 100, 100) {
		outs = append(outs, outcome(c, store.Retry, 503, b.clock.Now()))
	}
	if len(outs) != 6 {
		t.Fatalf("claimed %d logs; want 6", len(outs))
	}
	b.complete(t, b.st, 1000, outs...)
	attemptsOf := func(webhookID string) int {
		t.Helper()
		return b.count(t, `SELECT COUNT(*) FROM webhook_attempts a WHERE a.log_id IN (
  SELECT id FROM webhook_event_logs WHERE webhook_id = ?)`, webhookID)
	}
	if attemptsOf(gone.ID) != 3 || attemptsOf(kept.ID) != 3 {
		t.Fatalf("attempts before: %d and %d; want 3 each", attemptsOf(gone.ID), attemptsOf(kept.ID))
	}
	if err := b.st.DeleteWebhook(b.ctx, b.account.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT COUNT(*) FROM webhook_attempts`); n != 3 {
		t.Errorf("%d attempts after deleting a webhook; want the other webhook's 3", n)
	}
	if attemptsOf(kept.ID) != 3 {
		t.Errorf("the kept webhook has %d attempts; want 3", attemptsOf(kept.ID))
	}
	if err := b.st.DeleteAccount(b.ctx, b.account.ID); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"webhook_attempts", "webhook_event_logs", "events"} {
		if n := b.count(t, `SELECT COUNT(*) FROM `+table); n != 0 {
			t.Errorf("%d rows of %s left after deleting the account", n, table)
		}
	}
}
