package store_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestMigrationKeepsTheAccountsToken: a database made before accounts had
// several API tokens keeps its token through migration 0010, as a write
// token named "First token" under the same hash, so its clients keep
// working.
func TestMigrationKeepsTheAccountsToken(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		testdb.PostgresHandles(t, 1)
		ctx := context.Background()
		key := make([]byte, 32)
		old, err := store.OpenAtVersion(ctx, url, store.Options{Key: key}, 9)
		if err != nil {
			t.Fatal(err)
		}
		hash := auth.HashToken(auth.NewAPIToken())
		err = old.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, name, notification_email, created_at, updated_at) VALUES ('acct', 'A', 'a@example.com', 1, 1)`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, account_id, token_hash, created_at) VALUES (?, 'acct', ?, 1)`, store.NewID(), hash)
			return err
		})
		old.Close()
		if err != nil {
			t.Fatalf("write as version 9: %v", err)
		}

		st, err := store.Open(ctx, url, store.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		acct, tok, err := st.APITokenByHash(ctx, hash)
		if err != nil || acct.ID != "acct" {
			t.Fatalf("the old token after migration: account %q, %v; want acct", acct.ID, err)
		}
		if tok.Name != store.FirstTokenName || tok.Scope != store.ScopeWrite || tok.ExpiresAt != nil || tok.LastUsedAt != nil {
			t.Errorf("migrated token %+v; want a write token named %q, no expiry, never used", tok, store.FirstTokenName)
		}
	})
}
