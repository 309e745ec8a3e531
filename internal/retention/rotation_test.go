package retention_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

func TestRunErasesTheOldTokensOfEndedRotations(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, testRunErasesOldTokens)
}

// testRunErasesOldTokens: with logs kept forever, a pass still ends the
// rotations whose overlap has passed by the store's clock, erasing their old
// tokens, and leaves one still under way alone.
func testRunErasesOldTokens(t *testing.T, db string) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.UnixMilli(time.Now().UnixMilli())
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st, err := store.Open(ctx, db, store.Options{Key: make([]byte, 32), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: store.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	hook := func(name string, overlap time.Duration) string {
		w, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: name, URL: "https://example.com/" + name,
			Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_" + name + "_old_0123456789"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.RotateWebhookToken(ctx, acct.ID, w.ID, "whsec_"+name+"_next_0123456789", overlap); err != nil {
			t.Fatal(err)
		}
		return w.ID
	}
	ended, underWay := hook("ended", time.Minute), hook("under-way", time.Hour)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()

	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { retention.Run(run, st, retention.Config{Interval: 10 * time.Millisecond}); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	kept := func(id string) bool {
		var n int
		if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE id = ? AND next_token_sealed IS NOT NULL`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	testdb.Eventually(t, 30*time.Second, "the ended rotation's old token erased", func() bool { return !kept(ended) })
	if tokens, err := st.WebhookTokens(ctx, acct.ID, ended); err != nil || tokens.Current != "whsec_ended_next_0123456789" || tokens.Next != "" {
		t.Errorf("after the pass: %+v, %v; want the next token alone", tokens, err)
	}
	if !kept(underWay) {
		t.Errorf("the pass ended a rotation still under way")
	}
}
