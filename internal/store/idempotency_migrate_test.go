package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestMigrationSealsKeptAnswers: an answer kept in plain text before
// migration 0094 is sealed by it, and a retry with its key still gets it.
func TestMigrationSealsKeptAnswers(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		testdb.PostgresHandles(t, 1)
		ctx := context.Background()
		opts := store.Options{Key: make([]byte, 32)}
		old, err := store.OpenAtVersion(ctx, url, opts, 93)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := old.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		req := store.IdempotentRequest{AccountID: acct.ID, Key: "k", Method: "POST", Path: "/v3/webhooks"}
		c, err := old.ClaimIdempotencyKey(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"id":"w","token":"whsec_plain_before_the_migration_0123"}`)
		err = old.InTx(ctx, func(tx *store.Tx) error {
			// As herald kept it before: the body as it was answered.
			_, err := tx.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', applied = 1, status = 201, content_type = 'application/json', body = ?, lock_id = NULL, locked_until = NULL
WHERE account_id = ? AND key = 'k'`, body, acct.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = c
		old.Close()

		st, err := store.Open(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var kept []byte
		if err := st.QueryRow(ctx, `SELECT body FROM idempotency_keys WHERE key = 'k'`).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(kept, []byte("whsec_plain_before")) {
			t.Errorf("the kept answer is still in plain text after the migration")
		}
		again, err := st.ClaimIdempotencyKey(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if again.Outcome != store.KeyDone || !bytes.Equal(again.Answer.Body, body) {
			t.Errorf("a retry after the migration: outcome %d, body %q; want the kept answer", again.Outcome, again.Answer.Body)
		}

		// Opened with another key, the migration is not applied to
		// anything: the database refuses the key first.
		if _, err := store.Open(ctx, url, store.Options{Key: bytes.Repeat([]byte{1}, 32)}); err == nil {
			t.Error("opened with another key; want it refused")
		}
	})
}
