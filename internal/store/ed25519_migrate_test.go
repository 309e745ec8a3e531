package store_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
	"github.com/heraldhq/herald/webhook"
)

// TestMigrationTakesTheEd25519Scheme: migration 0125 widens the scheme's
// check on both engines, keeping the webhooks there and still refusing an
// unknown scheme.
func TestMigrationTakesTheEd25519Scheme(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		testdb.PostgresHandles(t, 1)
		ctx := context.Background()
		opts := store.Options{Key: make([]byte, 32)}
		old, err := store.OpenAtVersion(ctx, url, opts, 124)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := old.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		hook := func(st *store.Store, name, scheme string) (store.Webhook, error) {
			return st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: name, URL: "https://example.com/" + name, Events: []event.Kind{event.LicenseCreated},
				Enabled: true, Token: webhook.PrivateKeyString(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))), SignatureScheme: scheme})
		}
		if _, err := hook(old, "before", store.SchemeStandardEd25519); err == nil || !strings.Contains(err.Error(), "signature_scheme") {
			t.Fatalf("before migration 0125, an ed25519 webhook: %v; want the scheme's check to refuse it", err)
		}
		before, err := hook(old, "kept", store.SchemeStandardWebhooks)
		if err != nil {
			t.Fatal(err)
		}
		old.Close()
		st, err := store.Open(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		w, err := hook(st, "after", store.SchemeStandardEd25519)
		if err != nil {
			t.Fatalf("after migration 0125: %v", err)
		}
		if got, err := st.Webhook(ctx, acct.ID, w.ID); err != nil || got.SignatureScheme != store.SchemeStandardEd25519 {
			t.Errorf("read back: %+v, %v", got.SignatureScheme, err)
		}
		if got, err := st.Webhook(ctx, acct.ID, before.ID); err != nil || got.SignatureScheme != store.SchemeStandardWebhooks {
			t.Errorf("webhook from before: %+v, %v", got.SignatureScheme, err)
		}
		if _, err := hook(st, "odd", "rsa"); err == nil {
			t.Error("an unknown scheme was stored")
		}
	})
}
