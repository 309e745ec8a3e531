package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	storetest.EachEngine(t, func(t *testing.T, st *store.Store, clock *time.Time) {
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
