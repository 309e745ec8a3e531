package store_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
	"github.com/heraldhq/herald/webhook"
)

// TestMigrationShowsStandardSecretsInTheirForm: migration 0096 rewrites
// the tokens of standard-webhooks webhooks that are not in the Standard
// Webhooks form into "whsec_" and the base64 of their own bytes (the key
// they signed with), current and next alike, and leaves the rest: a
// herald-scheme webhook's token, and a standard token already so.
func TestMigrationShowsStandardSecretsInTheirForm(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		testdb.PostgresHandles(t, 1)
		ctx := context.Background()
		opts := store.Options{Key: make([]byte, 32)}
		old, err := store.OpenAtVersion(ctx, url, opts, 95)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := old.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		standard := webhook.StandardSecret("0123456789abcdef01234567")
		made := map[string]struct{ scheme, token, want string }{}
		for name, c := range map[string]struct{ scheme, token, want string }{
			"old standard": {store.SchemeStandardWebhooks, "whsec_herald-made-token_0123456789-_", webhook.StandardSecret("whsec_herald-made-token_0123456789-_")},
			"new standard": {store.SchemeStandardWebhooks, standard, standard},
			"herald's own": {store.SchemeHerald, "whsec_herald-made-token_0123456789-_", "whsec_herald-made-token_0123456789-_"},
		} {
			w, err := old.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: name, URL: "https://example.com/" + name, Events: []event.Kind{event.LicenseCreated},
				Enabled: true, Token: c.token, SignatureScheme: c.scheme})
			if err != nil {
				t.Fatal(err)
			}
			made[w.ID] = c
		}
		old.Close()
		st, err := store.Open(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for id, c := range made {
			got, err := st.WebhookToken(ctx, acct.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s scheme token %q after the migration: %q; want %q", c.scheme, c.token, got, c.want)
			}
		}
	})
}
