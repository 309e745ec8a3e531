package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
)

// Creating a license takes no lock on its account's row (decision 0107):
// the row every call of the account shares, which every license created
// at once used to lock in turn (a MultiXact and a WAL record each). A
// license still needs its account's product, and deleting the account
// still deletes the license, both through the product's key.
func TestCreatingALicenseLeavesItsAccountRowAlone(t *testing.T) {
	t.Parallel()
	heraldtest.PostgresHandles(t, 1)
	url := heraldtest.PostgresURL(t)
	st := openPG(t, url, nil)
	ctx := context.Background()
	lic, accountID, _ := expiringLicense(t, st, time.Now().Add(time.Hour))
	products, _, err := lic.Products(ctx, accountID, store.Page{Limit: 10})
	if err != nil || len(products) != 1 {
		t.Fatalf("products: %d (%v); want 1", len(products), err)
	}
	hold, err := heraldtest.OpenDB(t, url).SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(ctx, `SELECT id FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
		t.Fatal(err)
	}
	// FOR UPDATE conflicts with the FOR KEY SHARE a key to the row takes:
	// a creation that took one would wait for the hold to end.
	created := make(chan error, 1)
	go func() {
		_, err := lic.CreateLicense(ctx, accountID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &products[0].ID}})
		created <- err
	}()
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("create a license: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("creating a license waited for a lock on its account's row")
	}
	hold.Rollback()

	if _, err := lic.CreateLicense(ctx, store.NewID(), licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &products[0].ID}}); err == nil {
		t.Error("a license was made for another account's product")
	}
	if err := st.DeleteAccount(ctx, accountID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := st.QueryRow(ctx, `SELECT COUNT(*) FROM licenses WHERE account_id = ?`, accountID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d licenses left after their account's deletion (%v); want none", left, err)
	}
}
