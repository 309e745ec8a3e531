package bench

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// The seeded history is what scenario h says: as many logs as asked, two
// per event, spread over the days before now in id order, one in 50 failed
// after three attempts, and the store reads it back through its own API.
// The chunk size is odd, so an event's two logs fall in two transactions.
func TestSeedWritesTheHistoryAsked(t *testing.T) {
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		st, err := store.Open(ctx, dbURL, store.Options{Key: make([]byte, 32)})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		a, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: auth.HashToken(auth.NewAPIToken())})
		if err != nil {
			t.Fatal(err)
		}
		other, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "b", OwnerEmail: "b@example.com", PasswordHash: "x", TokenHash: auth.HashToken(auth.NewAPIToken())})
		if err != nil {
			t.Fatal(err)
		}
		var hooks []string
		for range 3 {
			w, err := st.CreateWebhook(ctx, a.ID, store.NewWebhook{Name: "w", URL: "http://127.0.0.1:1/", Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_x"})
			if err != nil {
				t.Fatal(err)
			}
			hooks = append(hooks, w.ID)
		}
		now := time.Now().UTC()
		h := history{accountID: a.ID, webhooks: hooks, logs: 2_500, days: 30, now: now, chunk: 333}
		if err := h.seed(ctx, st, dbURL, true, io.Discard); err != nil {
			t.Fatal(err)
		}
		n, _, err := st.CountLogs(ctx, a.ID, store.LogFilter{}, 1_000_000)
		if err != nil || n != 2_500 {
			t.Errorf("count: %d, %v; want 2500", n, err)
		}
		if st.Engine() == "postgres" {
			// Each seeded day's logs are in that day's partition, as
			// herald would have written them; none waits in the default.
			var days, stray int
			if err := st.QueryRow(ctx, `SELECT COUNT(DISTINCT tableoid), COUNT(*) FILTER (WHERE tableoid = to_regclass('webhook_event_logs_default'))
FROM webhook_event_logs`).Scan(&days, &stray); err != nil || days < 30 || stray != 0 {
				t.Errorf("the seeded logs lie in %d partitions, %d in the default, %v; want 30 or 31 days and none there", days, stray, err)
			}
		}
		failed, _, err := st.CountLogs(ctx, a.ID, store.LogFilter{Status: store.Failed}, 1_000_000)
		if err != nil || failed != 2_500/failedEvery {
			t.Errorf("failed: %d, %v; want %d", failed, err, 2_500/failedEvery)
		}
		if n, _, _ := st.CountLogs(ctx, other.ID, store.LogFilter{}, 10); n != 0 {
			t.Errorf("the other account has %d logs", n)
		}
		// The oldest log is 30 days back, the newest created with its
		// event, fanOut slots (30 days / 2,500 each) before now.
		oldest, err := st.LogWindow(ctx, a.ID, store.LogFilter{Page: store.Page{Limit: 1, Oldest: true}})
		if err != nil || len(oldest.Items) != 1 {
			t.Fatalf("oldest: %v, %v", oldest.Items, err)
		}
		if age := now.Sub(oldest.Items[0].CreatedAt); age < 29*24*time.Hour || age > 30*24*time.Hour+time.Second {
			t.Errorf("the oldest log is %v old; want 30 days", age)
		}
		newest, _, err := st.Logs(ctx, a.ID, store.LogFilter{Page: store.Page{Limit: 1}})
		if err != nil || len(newest) != 1 || now.Sub(newest[0].CreatedAt) > fanOut*30*24*time.Hour/2500+time.Second {
			t.Fatalf("newest: %v, %v", newest, err)
		}
		// An event's logs: two, found by its id (from either side of a
		// chunk's end).
		for _, i := range []int{0, 332, 333, 1998} {
			page, _, err := st.Logs(ctx, a.ID, store.LogFilter{Page: store.Page{Limit: 1, Oldest: true}, From: oldest.Items[0].CreatedAt.Add(time.Duration(i) * 30 * 24 * time.Hour / 2500)})
			if err != nil || len(page) == 0 {
				t.Fatalf("log near %d: %v", i, err)
			}
			l, err := st.Log(ctx, a.ID, page[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			pair, _, err := st.Logs(ctx, a.ID, store.LogFilter{EventID: l.EventID, Page: store.Page{Limit: 10}})
			if err != nil || len(pair) != fanOut {
				t.Errorf("event of log near %d: %d logs, %v; want %d", i, len(pair), err, fanOut)
			}
			want := 1
			if l.Status == store.Failed {
				want = failedAttempts
			}
			if len(l.Attempts) != want {
				t.Errorf("log near %d (%s): %d attempts; want %d", i, l.Status, len(l.Attempts), want)
			}
		}
	})
}

// The seeded ids are UUIDv7 of their log's time, so the id order is the
// time order that herald's pages walk.
func TestSeedIDsCarryTheirTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 10, 27, 8, 0, 0, 123_000_000, time.UTC)
	prev := ""
	for i := range 100 {
		when := at.Add(time.Duration(i) * time.Millisecond)
		id := idAt(rng, when)
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("%s: %v, version %d, variant %v", id, err, u.Version(), u.Variant())
		}
		if ms := int64(binary.BigEndian.Uint64(u[:8]) >> 16); ms != when.UnixMilli() {
			t.Errorf("%s carries %d ms; want %d", id, ms, when.UnixMilli())
		}
		if id <= prev {
			t.Errorf("%s sorts before %s, made a millisecond earlier", id, prev)
		}
		prev = id
	}
}
