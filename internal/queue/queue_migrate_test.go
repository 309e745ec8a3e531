package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/secret"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestMigrationQueuesTheLogsWaitingOrInFlight: a database written before
// the queue left the log (migration 0060) keeps every log and its place:
// a queued log and one whose lease ended are claimed at once, one under a
// lease still running stays pending until it ends, a retry waits for its
// time, and the failed and suspended-cancelled logs still count as
// undelivered.
func TestMigrationQueuesTheLogsWaitingOrInFlight(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		testdb.PostgresHandles(t, 1)
		ctx := context.Background()
		key := make([]byte, 32)
		now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		opts := store.Options{Key: key, Now: func() time.Time { return now }}
		old, err := store.OpenAtVersion(ctx, url, opts, 55)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := old.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		// The webhook as the tables stood at version 55: the store's own
		// CreateWebhook writes the columns of every later migration.
		hook := struct{ ID string }{store.NewID()}
		box, err := secret.New(key)
		if err != nil {
			t.Fatal(err)
		}
		err = old.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO webhooks (id, account_id, name, url, events, enabled, status, token_sealed, created_at, updated_at)
VALUES (?, ?, 'h', 'https://example.com/h', '["license.created"]', ?, 'Healthy', ?, 0, 0)`, hook.ID, acct.ID, true, box.Seal([]byte("whsec_review_token_0123456789abcd"), []byte(hook.ID)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		at := store.MS(now)
		logs := []struct {
			name, status, lease, reason string
			attempts                    int
			due, completed              any
		}{
			{"queued", "queued", "", "", 0, at - 1000, nil},
			{"ended", "pending", "gone", "", 0, at - 1000, nil},
			{"live", "pending", "live", "", 1, at + 60_000, nil},
			{"later", "retrying", "", "503", 1, at + 3_600_000, nil},
			{"failed", "failed", "", "503", 5, nil, at - 60_000},
			{"suspended", "cancelled", "", store.ReasonSuspended, 0, nil, at - 60_000},
			{"disabled", "cancelled", "", store.ReasonDisabled, 0, nil, at - 60_000},
			{"delivered", "succeeded", "", "", 1, nil, at - 60_000},
		}
		ids := map[string]string{}
		err = old.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO events (id, account_id, kind, body, triggered_at) VALUES ('ev', ?, 'license.created', ?, ?)`,
				acct.ID, []byte(`{}`), at); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE webhooks SET left_healthy_at = 0, status = 'Unhealthy' WHERE id = ?`, hook.ID); err != nil {
				return err
			}
			for _, l := range logs {
				ids[l.name] = store.NewID()
				var lease, reason any
				if l.lease != "" {
					lease = l.lease
				}
				if l.reason != "" {
					reason = l.reason
				}
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_logs (id, account_id, webhook_id, event_id, kind, status, attempt_count, due_at, lease,
retry_reason, created_at, updated_at, completed_at) VALUES (?, ?, ?, 'ev', 'license.created', ?, ?, ?, ?, ?, ?, ?, ?)`,
					ids[l.name], acct.ID, hook.ID, l.status, l.attempts, l.due, lease, reason, at-120_000, at-120_000, l.completed); err != nil {
					return err
				}
			}
			return nil
		})
		old.Close()
		if err != nil {
			t.Fatalf("write as version 55: %v", err)
		}

		st, err := store.Open(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for name, want := range map[string]store.LogStatus{"live": store.Pending, "later": store.Retrying, "queued": store.Queued,
			"ended": store.Pending, "failed": store.Failed, "delivered": store.Succeeded} {
			if l, err := st.Log(ctx, acct.ID, ids[name]); err != nil || l.Status != want {
				t.Errorf("the %s log after migration: %s, %v; want %s", name, l.Status, err, want)
			}
		}
		if l, _ := st.Log(ctx, acct.ID, ids["later"]); l.NextAttemptAt == nil || !l.NextAttemptAt.Equal(now.Add(time.Hour)) {
			t.Errorf("the retry after migration is due at %v; want %v", l.NextAttemptAt, now.Add(time.Hour))
		}
		if w, err := st.Webhook(ctx, acct.ID, hook.ID); err != nil || w.UndeliveredCount != 2 {
			t.Errorf("undelivered count after migration: %d, %v; want 2 (the failed and the suspended-cancelled)", w.UndeliveredCount, err)
		}
		g, err := st.Gauges(ctx)
		if err != nil || g.Backlog[store.Queued] != 1 || g.Backlog[store.Pending] != 2 || g.Backlog[store.Retrying] != 1 || g.Due != 2 {
			t.Errorf("gauges after migration: %+v, %v; want 1 queued, 2 pending, 1 retrying, 2 due", g.Backlog, err)
		}

		claim := func(at time.Time) map[string]store.Claim {
			t.Helper()
			got, err := queue.New(st).Claim(ctx, store.ClaimParams{Now: at, LeaseUntil: at.Add(30 * time.Minute), Lease: store.NewID(), Limit: 10, PerWebhook: 10})
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]store.Claim{}
			for _, c := range got {
				for name, id := range ids {
					if id == c.LogID {
						byName[name] = c
					}
				}
			}
			return byName
		}
		first := claim(now)
		if len(first) != 2 || first["queued"].LogID == "" || first["ended"].LogID == "" {
			t.Fatalf("claimed %v after migration; want the queued log and the one whose lease ended", first)
		}
		if strings.HasPrefix(url, "postgres") && !first["ended"].TakenOver {
			t.Errorf("the log whose lease ended was not reported taken over")
		}
		if got := claim(now.Add(2 * time.Minute)); len(got) != 1 || got["live"].AttemptCount != 1 {
			t.Errorf("claimed %v once the running lease ended; want the log it held, one attempt made", got)
		}
		code := 200
		c := first["queued"]
		if _, err := queue.New(st).Complete(ctx, []store.Outcome{{LogID: c.LogID, WebhookID: hook.ID, Lease: c.Lease, Trigger: store.TriggerAutomatic,
			Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: now, StatusCode: &code}}}, 50); err != nil {
			t.Fatal(err)
		}
		if l, err := st.Log(ctx, acct.ID, c.LogID); err != nil || l.Status != store.Succeeded || l.AttemptCount != 1 {
			t.Errorf("the migrated log after its delivery: %s with %d attempts, %v; want succeeded with 1", l.Status, l.AttemptCount, err)
		}
	})
}
