package store_test

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// eachEngine runs fn on a fresh SQLite file and on a fresh PostgreSQL schema
// (HERALD_TEST_POSTGRES_URL), with a clock the test moves.
func eachEngine(t *testing.T, fn func(t *testing.T, st *store.Store, clock *time.Time)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		clock := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
		fn(t, open(t, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), &clock), &clock)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		clock := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
		fn(t, open(t, testdb.PostgresURL(t), &clock), &clock)
	})
}

func open(t *testing.T, url string, clock *time.Time) *store.Store {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), url, store.Options{Key: key, Now: func() time.Time { return *clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestSessions(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, st *store.Store, clock *time.Time) {
		ctx := context.Background()
		acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "A", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "t"})
		if err != nil {
			t.Fatal(err)
		}
		owner, err := st.PersonByEmail(ctx, "a@example.com")
		if err != nil {
			t.Fatal(err)
		}
		now := *clock
		n := store.Session{IDHash: "h1", AccountID: acct.ID, OwnerID: owner.ID, CSRFToken: "c1",
			CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := st.CreateSession(ctx, n); err != nil {
			t.Fatal(err)
		}
		got, err := st.SessionByHash(ctx, "h1")
		if err != nil {
			t.Fatal(err)
		}
		if got.AccountID != acct.ID || got.OwnerEmail != "a@example.com" || got.CSRFToken != "c1" || !got.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Errorf("got %+v", got)
		}
		if _, err := st.SessionByHash(ctx, "h2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown session: %v; want ErrNotFound", err)
		}

		*clock = now.Add(50 * time.Minute)
		if err := st.TouchSession(ctx, "h1", *clock, clock.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		*clock = now.Add(100 * time.Minute) // past the first expiry, within the moved one
		if _, err := st.SessionByHash(ctx, "h1"); err != nil {
			t.Errorf("touched session: %v", err)
		}
		*clock = now.Add(111 * time.Minute)
		if _, err := st.SessionByHash(ctx, "h1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("expired session: %v; want ErrNotFound", err)
		}

		n2 := n
		n2.IDHash, n2.ExpiresAt = "h2", clock.Add(time.Hour)
		if err := st.CreateSession(ctx, n2); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteSession(ctx, "h2"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SessionByHash(ctx, "h2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted session: %v; want ErrNotFound", err)
		}
		if err := st.DeleteSession(ctx, "h2"); err != nil {
			t.Errorf("delete twice: %v", err)
		}
	})
}

func TestAttemptStats(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, st *store.Store, clock *time.Time) {
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
			if _, err := st.Complete(ctx, []store.Outcome{o}, 50); err != nil {
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
		want := []store.HourOfAttempts{{start, 2, 1}, {start.Add(time.Hour), 1, 1}}
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
