package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/testdb"
)

// FireBatch runs as many statements for a batch of any size, on one
// account or several, as Fire does for one event: firing many events at
// once costs round trips per batch, not per event.
func TestFireBatchRunsAFixedNumberOfStatements(t *testing.T) {
	for _, db := range testdb.Stores() {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			testdb.PostgresHandles(t, 1)
			ctx := context.Background()
			s, err := Open(ctx, db.URL(t), Options{Key: make([]byte, 32)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			var accounts []string
			for i := range 2 {
				a, err := s.CreateAccount(ctx, Bootstrap{AccountName: fmt.Sprint("a", i), OwnerEmail: fmt.Sprintf("a%d@example.com", i), PasswordHash: "x", TokenHash: NewID()})
				if err != nil {
					t.Fatal(err)
				}
				accounts = append(accounts, a.ID)
				for j, f := range []string{"", `{"data.n":{"$gte":5}}`, ""} {
					n := NewWebhook{Name: fmt.Sprint("w", j), URL: "https://example.com/w", Events: []event.Kind{event.LicenseExpired},
						Enabled: j != 2, Token: "whsec_0123456789abcdef"}
					if f != "" {
						n.Filter = json.RawMessage(f)
					}
					if _, err := s.CreateWebhook(ctx, a.ID, n); err != nil {
						t.Fatal(err)
					}
				}
			}
			statements := func(accounts []string, n int) (stmts, logs int) {
				t.Helper()
				firings := make([]Firing, n)
				for i := range firings {
					firings[i] = Firing{AccountID: accounts[i%len(accounts)], Kind: event.LicenseExpired, Data: map[string]int{"n": i}}
				}
				err := s.InTx(ctx, func(tx *Tx) error {
					before := tx.ran
					if _, err := tx.FireBatch(ctx, firings); err != nil {
						return err
					}
					stmts = tx.ran - before
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_event_logs`).Scan(&logs); err != nil {
					t.Fatal(err)
				}
				return stmts, logs
			}
			one, _ := statements(accounts[:1], 1)
			for _, tt := range []struct {
				accounts []string
				n        int
			}{{accounts[:1], 1}, {accounts[:1], 200}, {accounts, 2}, {accounts, 200}} {
				got, logs := statements(tt.accounts, tt.n)
				if got != one || logs == 0 {
					t.Errorf("%d events of %d accounts: %d statements (%d logs in all); want %d, as for one", tt.n, len(tt.accounts), got, logs, one)
				}
			}
			t.Logf("statements per batch: %d", one)
		})
	}
}
