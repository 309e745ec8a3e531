package licensing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// Creating a license takes no lock on its account's row (decision 0107):
// the row every call of the account shares, which every license created
// at once used to lock in turn (a MultiXact and a WAL record each). A
// license still needs its account's product, and deleting the account
// still deletes the license, both through the product's key.
func TestCreatingALicenseLeavesItsAccountRowAlone(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 1)
	url := testdb.PostgresURL(t)
	st := storetest.OpenPostgres(t, url, nil)
	ctx := context.Background()
	lic, accountID, _ := expiringLicense(t, st, time.Now().Add(time.Hour))
	products, _, err := lic.Products(ctx, accountID, store.Page{Limit: 10})
	if err != nil || len(products) != 1 {
		t.Fatalf("products: %d (%v); want 1", len(products), err)
	}
	hold, err := testdb.OpenDB(t, url).SQL().BeginTx(ctx, nil)
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

// A license's statement reads its product and user without locking them:
// the licenses' foreign keys lock them at the statement's end. A product
// or user deleted by a transaction that commits while the statement waits
// on that lock fails it on the key, having written nothing; the change is
// made again (ChangeAndFire), finds the row gone, and the license is
// refused as naming none, not failed.
func TestALicenseWhoseProductOrUserIsDeletedMeanwhileIsRefused(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 3)
	url := testdb.PostgresURL(t)
	st := storetest.OpenPostgres(t, url, nil)
	ctx := context.Background()
	db, holder := testdb.OpenDB(t, url), testdb.OpenDB(t, url)
	for _, tc := range []struct{ field, table string }{{"productId", "products"}, {"userId", "users"}} {
		t.Run(tc.table, func(t *testing.T) {
			lic, acct, p := accountWithProduct(t, st, tc.table)
			u, err := lic.CreateUser(ctx, acct.ID, licensing.UserInput{Email: licensing.Optional[string]{Set: true, Value: ptrTo("u@example.com")}})
			if err != nil {
				t.Fatal(err)
			}
			gone := map[string]string{"products": p.ID, "users": u.ID}[tc.table]
			hold, err := holder.SQL().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback()
			if _, err := hold.ExecContext(ctx, `DELETE FROM `+tc.table+` WHERE id = $1`, gone); err != nil {
				t.Fatal(err)
			}
			created := make(chan error, 1)
			go func() {
				_, err := lic.CreateLicense(ctx, acct.ID, licensing.LicenseInput{
					ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
					UserID:    licensing.Optional[string]{Set: true, Value: &u.ID}})
				created <- err
			}()
			// The statement has read the row (the delete is not committed)
			// and waits to lock it for its key.
			waitForLicenseLockWaits(t, db, 1, "the license's statement never waited for the deleted row's lock")
			if err := hold.Commit(); err != nil {
				t.Fatal(err)
			}
			err = <-created
			var invalid licensing.InvalidError
			if !errors.As(err, &invalid) || len(invalid) != 1 || invalid[0].Field != tc.field {
				t.Fatalf("create a license: %v; want it refused as naming no %s (%s)", err, tc.table, tc.field)
			}
			if n := db.Int(`SELECT COUNT(*) FROM licenses WHERE account_id = $1`, acct.ID); n != 0 {
				t.Errorf("%d licenses written; want none", n)
			}
			if n := db.Int(`SELECT COUNT(*) FROM events WHERE account_id = $1 AND kind = 'license.created'`, acct.ID); n != 0 {
				t.Errorf("%d license.created events written; want none", n)
			}
		})
	}
}

// Licenses created at once share statements on a few connections of their
// own (decision 0112), whose statements give up a wait for a lock after a
// short time: licenses held up by one account's long transaction (here its
// product's deletion, left uncommitted) are made alone and wait by
// themselves, and another account's licenses are created meanwhile.
func TestALicenseHeldUpByALockHoldsUpNoOtherAccount(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 3)
	url := testdb.PostgresURL(t)
	st := storetest.OpenPostgres(t, url, nil)
	ctx := context.Background()
	db, holder := testdb.OpenDB(t, url), testdb.OpenDB(t, url)
	lic, heldAcct, heldP := accountWithProduct(t, st, "held")
	_, otherAcct, otherP := accountWithProduct(t, st, "other")
	heldAccount, heldProduct := heldAcct.ID, heldP.ID
	otherAccount, otherProduct := otherAcct.ID, otherP.ID
	hold, err := holder.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(ctx, `DELETE FROM products WHERE id = $1`, heldProduct); err != nil {
		t.Fatal(err)
	}
	create := func(accountID, productID string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := lic.CreateLicense(ctx, accountID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &productID}})
			done <- err
		}()
		return done
	}
	var held []<-chan error
	for range 3 { // more than the shared statements at once
		held = append(held, create(heldAccount, heldProduct))
	}
	waitForLicenseLockWaits(t, db, 2, "the held account's licenses never waited for its product's lock")
	for i := range 5 {
		select {
		case err := <-create(otherAccount, otherProduct):
			if err != nil {
				t.Fatalf("the other account's license %d: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the other account's license %d waited for the held account's lock", i)
		}
	}
	for i, done := range held {
		select {
		case err := <-done:
			t.Fatalf("held license %d answered (%v) while its product's deletion is uncommitted", i, err)
		default:
		}
	}
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	for i, done := range held {
		var invalid licensing.InvalidError
		if err := <-done; !errors.As(err, &invalid) || len(invalid) != 1 || invalid[0].Field != "productId" {
			t.Errorf("held license %d: %v; want it refused as naming no product", i, err)
		}
	}
	if n := db.Int(`SELECT COUNT(*) FROM licenses WHERE account_id = $1`, otherAccount); n != 5 {
		t.Errorf("%d licenses of the other account; want 5", n)
	}
}

// Licenses with an expiresAt created at once share a statement too
// (decision 0112), and each gets its expiry's schedule row, planned for
// its own instant, as a license made alone does.
func TestLicensesWithExpiriesShareAStatementAndPlanEach(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 2)
	url := testdb.PostgresURL(t)
	st := storetest.OpenPostgres(t, url, nil)
	ctx := context.Background()
	db := testdb.OpenDB(t, url)
	lic, acct, p := accountWithProduct(t, st, "expiries")
	type created struct {
		l       licensing.License
		expires time.Time
		err     error
	}
	results := make(chan created, 8)
	create := func(expires time.Time) {
		l, err := lic.CreateLicense(ctx, acct.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
			ExpiresAt: licensing.Optional[string]{Set: true, Value: ptrTo(expires.Format(event.TimeFormat))}})
		results <- created{l, expires, err}
	}
	base := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	held, release := storetest.HoldBatches(t, st, nil)
	go create(base)
	<-held
	for i := 1; i <= 5; i++ {
		go create(base.Add(time.Duration(i) * time.Hour))
	}
	storetest.WaitForBatched(t, st, 5)
	close(release)
	for range 6 {
		r := <-results
		if r.err != nil {
			t.Fatalf("create a license expiring at %s: %v", r.expires, r.err)
		}
		var expiresAt, dueAt int64
		if err := st.QueryRow(ctx, `SELECT expires_at, due_at FROM license_expiries WHERE license_id = ?`, r.l.ID).Scan(&expiresAt, &dueAt); err != nil {
			t.Fatalf("license %s: its expiry's schedule row: %v", r.l.ID, err)
		}
		if expiresAt != r.expires.UnixMilli() || dueAt >= expiresAt {
			t.Errorf("license %s: expires_at %d, due_at %d; want %d, due before it (expiring soon)", r.l.ID, expiresAt, dueAt, r.expires.UnixMilli())
		}
	}
	if ran, _ := store.ChangeBatches(st); ran != 2 {
		t.Errorf("%d rounds; want 2, the held license and the five that waited", ran)
	}
	if n := db.Int(`SELECT COUNT(*) FROM license_expiries e JOIN licenses l ON l.id = e.license_id WHERE l.account_id = ?`, acct.ID); n != 6 {
		t.Errorf("%d schedule rows; want 6", n)
	}
}

// accountWithProduct creates an account named name (its owner's email and
// token made from it, so that a test's accounts differ) and a product of
// it, through the licensing service it returns.
func accountWithProduct(t *testing.T, st *store.Store, name string) (*licensing.Service, store.Account, licensing.Product) {
	t.Helper()
	ctx := context.Background()
	acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: name, OwnerEmail: name + "@example.com", PasswordHash: "x", TokenHash: name})
	if err != nil {
		t.Fatal(err)
	}
	lic := licensing.New(st)
	p, err := lic.CreateProduct(ctx, acct.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptrTo("P")}})
	if err != nil {
		t.Fatal(err)
	}
	return lic, acct, p
}

// waitForLicenseLockWaits waits until n statements inserting licenses wait
// for a lock, and fails with never if they do not within 30 s.
func waitForLicenseLockWaits(t *testing.T, db *testdb.DB, n int, never string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); db.Int(`SELECT COUNT(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO licenses%'`) < n; {
		if time.Now().After(deadline) {
			t.Fatal(never)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
