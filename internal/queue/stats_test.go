package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
)

func TestAttemptStats(t *testing.T) {
	t.Parallel()
	storetest.EachEngine(t, func(t *testing.T, st *store.Store, clock *time.Time) {
		ctx := context.Background()
		acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "A", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "t"})
		if err != nil {
			t.Fatal(err)
		}
		hook, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "h", URL: "https://example.com", Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "o", URL: "https://example.org", Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		start := *clock
		// One event: a log for each webhook. Attempts at +10m (ok), +20m
		// (500), +70m (ok, 30ms) on hook, and one at +15m on the other.
		if err := st.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Fire(ctx, acct.ID, event.LicenseCreated, map[string]string{"key": "K"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		logs, _, err := st.Logs(ctx, acct.ID, store.LogFilter{Page: store.Page{Limit: 10}})
		if err != nil || len(logs) != 2 {
			t.Fatalf("logs %v, %v", logs, err)
		}
		logOf := map[string]string{}
		for _, l := range logs {
			logOf[l.WebhookID] = l.ID
		}
		attempt := func(webhookID string, at time.Duration, code int, dur time.Duration) {
			t.Helper()
			o := store.Outcome{LogID: logOf[webhookID], WebhookID: webhookID, Trigger: store.TriggerResend, Result: store.Delivered,
				Attempt: &store.AttemptRecord{SentAt: start.Add(at), StatusCode: &code, Duration: dur}}
			if code >= 300 {
				o.Result, o.Attempt.Error, o.Reason = store.ResendFailed, "receiver answered 500", "receiver answered 500"
			}
			if _, err := queue.New(st).Complete(ctx, []store.Outcome{o}, 50); err != nil {
				t.Fatal(err)
			}
		}
		attempt(hook.ID, 10*time.Minute, 200, 10*time.Millisecond)
		attempt(hook.ID, 20*time.Minute, 500, 20*time.Millisecond)
		attempt(other.ID, 15*time.Minute, 200, 5*time.Millisecond)
		attempt(hook.ID, 70*time.Minute, 204, 30*time.Millisecond)

		hours, err := st.AttemptsByHour(ctx, acct.ID, hook.ID, start)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.HourOfAttempts{{Start: start, Attempts: 2, Succeeded: 1}, {Start: start.Add(time.Hour), Attempts: 1, Succeeded: 1}}
		if len(hours) != len(want) {
			t.Fatalf("hours %+v; want %+v", hours, want)
		}
		for i := range want {
			if !hours[i].Start.Equal(want[i].Start) || hours[i].Attempts != want[i].Attempts || hours[i].Succeeded != want[i].Succeeded {
				t.Errorf("hour %d: %+v; want %+v", i, hours[i], want[i])
			}
		}
		hours, err = st.AttemptsByHour(ctx, acct.ID, hook.ID, start.Add(30*time.Minute))
		if err != nil || len(hours) != 1 || hours[0].Attempts != 1 {
			t.Errorf("since +30m: %+v, %v; want one hour with one attempt", hours, err)
		}
		if hours, _ := st.AttemptsByHour(ctx, "another account", hook.ID, start); len(hours) != 0 {
			t.Errorf("another account sees %+v", hours)
		}

		pts, err := st.LatestAttempts(ctx, acct.ID, hook.ID, start, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != 2 || pts[0].DurationMS != 20 || pts[0].Succeeded || *pts[0].StatusCode != 500 ||
			pts[1].DurationMS != 30 || !pts[1].Succeeded || !pts[1].SentAt.Equal(start.Add(70*time.Minute)) {
			t.Errorf("latest 2: %+v; want the 500 at +20m then the 204 at +70m", pts)
		}
	})
}
