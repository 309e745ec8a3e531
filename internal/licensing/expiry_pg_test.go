package licensing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	lic, _, licenseID := expiringLicense(t, st, now.Add(30*24*time.Hour))
	versions := func() (license, schedule string) {
		t.Helper()
		if err := st.QueryRow(ctx, `SELECT l.xmin::text, e.xmin::text FROM licenses l JOIN license_expiries e ON e.license_id = l.id WHERE l.id = ?`,
			licenseID).Scan(&license, &schedule); err != nil {
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

// TestAnExpiryChangeWaitsForAFiringBeforeItWritesTheLicense: on PostgreSQL,
// a renewal of a license whose expiry event another process is firing
// waits for that firing before it writes the license or fires its own
// event (store.HoldExpiry), so the expiry event, fired with the license as
// it was, never comes after the renewal's event with the instant the
// renewal replaced. Without the hold, the renewal waited only at its
// re-plan, after writing the license and firing license.renewed.
func TestAnExpiryChangeWaitsForAFiringBeforeItWritesTheLicense(t *testing.T) {
	testdb.PostgresHandles(t, 2)
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	opts := store.Options{Key: make([]byte, 32), Now: func() time.Time { return now }}
	// Named, so that the wait is read of this handle's connections alone
	// (other tests share the server).
	app := fmt.Sprintf("renewal_%d", time.Now().UnixNano())
	st, err := store.Open(ctx, url+"&application_name="+app, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := store.Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lic, accountID, licenseID := expiringLicense(t, st, now.Add(time.Hour))

	// The other process's firing: its claim holds the schedule row.
	claimed, release := make(chan error, 1), make(chan struct{})
	firing := make(chan error, 1)
	go func() {
		firing <- other.InTx(ctx, func(tx *store.Tx) error {
			due, err := tx.ClaimDueExpiries(ctx, now, 200)
			if err == nil && len(due) != 1 {
				err = fmt.Errorf("claimed %d licenses; want the one whose expiring-soon is due", len(due))
			}
			claimed <- err
			<-release
			return errors.New("rolled back by the test")
		})
	}()
	if err := <-claimed; err != nil {
		close(release)
		t.Fatal(err)
	}
	renewed := make(chan error, 1)
	go func() {
		_, err := lic.RenewLicense(ctx, accountID, licenseID)
		renewed <- err
	}()
	// Wait until the renewal waits for a lock, and see at which statement.
	var waiting string
	for deadline := time.Now().Add(time.Minute); waiting == "" && time.Now().Before(deadline); {
		if err := st.QueryRow(ctx, `SELECT COALESCE(MAX(query), '') FROM pg_stat_activity
WHERE application_name = ? AND wait_event_type = 'Lock'`, app).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == "" {
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(release)
	if err := <-renewed; err != nil {
		t.Fatalf("renew: %v", err)
	}
	<-firing
	if !strings.HasPrefix(strings.TrimSpace(waiting), "SELECT license_id FROM license_expiries") {
		t.Errorf("the renewal waited for the firing at %q; want it held at its start, before it wrote the license", waiting)
	}
}

// expiringLicense makes an account with one product and one license of it
// expiring at expires, renewable by 30 days, through st.
func expiringLicense(t *testing.T, st *store.Store, expires time.Time) (lic *licensing.Service, accountID, licenseID string) {
	t.Helper()
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	lic = licensing.New(st)
	p, err := lic.CreateProduct(ctx, acct.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptrTo("P")}})
	if err != nil {
		t.Fatal(err)
	}
	validity := int64(30 * 24 * 3600)
	l, err := lic.CreateLicense(ctx, acct.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
		Validity:  licensing.Optional[int64]{Set: true, Value: &validity},
		ExpiresAt: licensing.Optional[string]{Set: true, Value: ptrTo(expires.Format(event.TimeFormat))}})
	if err != nil {
		t.Fatal(err)
	}
	return lic, acct.ID, l.ID
}
