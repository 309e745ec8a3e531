package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestFiringAnExpiryLeavesTheLicenseRowAlone: on PostgreSQL, firing a
// license's expiry events writes its schedule row, never the license row
// (whose rewrite wrote every index of licenses, decision 0098): the
// license's row version (xmin) is the one its creation wrote, while its
// schedule row's changed at each firing.
func TestFiringAnExpiryLeavesTheLicenseRowAlone(t *testing.T) {
	testdb.PostgresHandles(t, 1)
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := now
	st, err := store.Open(ctx, testdb.PostgresURL(t), store.Options{Key: make([]byte, 32), Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	lic := licensing.New(st)
	p, err := lic.CreateProduct(ctx, acct.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptrTo("P")}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lic.CreateLicense(ctx, acct.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
		ExpiresAt: licensing.Optional[string]{Set: true, Value: ptrTo(now.Add(30 * 24 * time.Hour).Format(event.TimeFormat))}})
	if err != nil {
		t.Fatal(err)
	}
	versions := func() (license, schedule string) {
		t.Helper()
		if err := st.QueryRow(ctx, `SELECT l.xmin::text, e.xmin::text FROM licenses l JOIN license_expiries e ON e.license_id = l.id WHERE l.id = ?`,
			l.ID).Scan(&license, &schedule); err != nil {
			t.Fatal(err)
		}
		return license, schedule
	}
	created, planned := versions()
	for _, step := range []struct {
		name string
		at   time.Time
	}{
		{"license.expiring-soon", now.Add(23*24*time.Hour + time.Second)},
		{"license.expired", now.Add(30*24*time.Hour + time.Second)},
	} {
		clock = step.at
		if n, err := lic.FireDueExpiries(ctx, licensing.ExpiryBatch); err != nil || n != 1 {
			t.Fatalf("%s: fired %d, %v; want 1", step.name, n, err)
		}
		license, schedule := versions()
		if license != created {
			t.Errorf("%s rewrote the license row (xmin %s, created as %s)", step.name, license, created)
		}
		if schedule == planned {
			t.Errorf("%s left the schedule row as it was (xmin %s): the firing was not recorded there", step.name, schedule)
		}
		planned = schedule
	}
}
