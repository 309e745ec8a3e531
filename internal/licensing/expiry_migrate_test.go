package licensing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestMigrationMovesTheExpirySchedule: a database written while the
// expiry plan lived on the license row (migrations 0040 to 0075) keeps
// each license's plan and record when migration 0080 moves them into
// license_expiries: a license still to hear its expiring-soon hears it at
// its instant, one that heard it hears its expired and nothing twice, one
// told of both hears nothing more even when its instant is set again, and a
// perpetual license gets no schedule row. The license row no longer carries
// the plan.
func TestMigrationMovesTheExpirySchedule(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		testdb.PostgresHandles(t, 1)
		ctx := context.Background()
		now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		clock := now
		opts := store.Options{Key: make([]byte, 32), Now: func() time.Time { return clock }}
		old, err := store.OpenAtVersion(ctx, url, opts, 75)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := old.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
		if err != nil {
			t.Fatal(err)
		}
		at := store.MS(now)
		const lead = 7 * 24 * 3_600_000 // the default lead time, in ms
		day := int64(24 * 3_600_000)
		// Each license as version 75 wrote it: expires_at, the fired
		// columns and the due instant by the rule of migration 0040.
		licenses := []struct {
			name                    string
			expires, soon, exp, due any
		}{
			{"soon", at + 30*day, nil, nil, at + 30*day - lead}, // its expiring-soon due in 23 days
			{"expiring", at + day, at + day, nil, at + day},     // expiring-soon heard; expired due tomorrow
			{"told", at - day, at - day, at - day, nil},         // both heard
			{"perpetual", nil, nil, nil, nil},                   // nothing to plan
		}
		ids := map[string]string{}
		err = old.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO products (id, account_id, name, created_at, updated_at) VALUES ('p', ?, 'P', ?, ?)`, acct.ID, at, at); err != nil {
				return err
			}
			for i, l := range licenses {
				ids[l.name] = store.NewID()
				if _, err := tx.Exec(ctx, `INSERT INTO licenses (id, account_id, product_id, key, expires_at, metadata, created_at, updated_at,
soon_fired_for, expired_fired_for, expiry_due_at) VALUES (?, ?, 'p', ?, ?, '{}', ?, ?, ?, ?, ?)`,
					ids[l.name], acct.ID, "KEY-"+string(rune('A'+i)), l.expires, at, at, l.soon, l.exp, l.due); err != nil {
					return err
				}
			}
			return nil
		})
		old.Close()
		if err != nil {
			t.Fatalf("write as version 75: %v", err)
		}

		st, err := store.Open(ctx, url, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var rows int
		if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM license_expiries WHERE license_id = ?`, ids["perpetual"]).Scan(&rows); err != nil || rows != 0 {
			t.Errorf("the perpetual license has %d schedule rows (%v); want none", rows, err)
		}
		if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM licenses WHERE expiry_due_at IS NOT NULL`).Scan(&rows); err == nil {
			t.Errorf("licenses still has expiry_due_at after the migration")
		}
		if next, ok, err := st.NextExpiryDue(ctx); err != nil || !ok || !next.Equal(now.Add(24*time.Hour)) {
			t.Fatalf("next expiry due after the migration: %v, %v, %v; want the expiring license's instant %v", next, ok, err, now.Add(24*time.Hour))
		}

		lic := licensing.New(st)
		fired := func() []string {
			t.Helper()
			var got []string
			for {
				n, err := lic.FireDueExpiries(ctx, licensing.ExpiryBatch)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			rows, err := st.Query(ctx, `SELECT kind, body FROM events WHERE kind IN (?, ?) ORDER BY id`,
				string(event.LicenseExpiringSoon), string(event.LicenseExpired))
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var kind, body string
				if err := rows.Scan(&kind, &body); err != nil {
					t.Fatal(err)
				}
				for name, id := range ids {
					if strings.Contains(body, id) {
						got = append(got, kind+" "+name)
					}
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return got
		}
		clock = now.Add(24*time.Hour + time.Second)
		if got := fired(); len(got) != 1 || got[0] != "license.expired expiring" {
			t.Fatalf("fired a day after the migration: %v; want the expiring license's license.expired alone", got)
		}
		// The told license moved and set back to its instant: already
		// told for it, nothing fires.
		for _, to := range []time.Time{now.Add(60 * 24 * time.Hour), now.Add(-24 * time.Hour)} {
			if _, err := lic.SetLicenseExpiresAt(ctx, acct.ID, ids["told"], licensing.ExpiresAtInput{
				ExpiresAt: licensing.Optional[string]{Set: true, Value: ptrTo(to.Format(event.TimeFormat))}}); err != nil {
				t.Fatal(err)
			}
		}
		clock = now.Add(30*24*time.Hour - lead*time.Millisecond + time.Second)
		if got := fired(); len(got) != 2 || got[1] != "license.expiring-soon soon" {
			t.Fatalf("fired 23 days after the migration: %v; want the soon license's license.expiring-soon next, and nothing for the told one", got)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
