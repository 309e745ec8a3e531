package licensing_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/licensing"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// expiryFired is one expiry event as fired: its kind, license and the
// expiresAt its data carries.
type expiryFired struct {
	Kind      event.Kind
	LicenseID string
	ExpiresAt string
}

func (f expiryFired) String() string {
	return fmt.Sprintf("%s %s@%s", f.Kind, f.LicenseID, f.ExpiresAt)
}

// expiryEvents lists the expiry events fired so far, in firing order.
func expiryEvents(t testing.TB, b *storetest.Bundle) []expiryFired {
	t.Helper()
	rows, err := b.St.Query(b.Ctx, `SELECT kind, body FROM events WHERE kind IN (?, ?) ORDER BY id`,
		string(event.LicenseExpiringSoon), string(event.LicenseExpired))
	if err != nil {
		t.Fatalf("read expiry events: %v", err)
	}
	defer rows.Close()
	var out []expiryFired
	for rows.Next() {
		var kind string
		var body []byte
		if err := rows.Scan(&kind, &body); err != nil {
			t.Fatalf("read expiry events: %v", err)
		}
		var p struct {
			Data struct {
				ID        string `json:"id"`
				ExpiresAt string `json:"expiresAt"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("expiry event body %s: %v", body, err)
		}
		out = append(out, expiryFired{event.Kind(kind), p.Data.ID, p.Data.ExpiresAt})
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read expiry events: %v", err)
	}
	return out
}

// fireDue fires every expiry event due at the clock's time through lic.
func fireDue(t testing.TB, b *storetest.Bundle, lic *licensing.Service) int {
	t.Helper()
	total := 0
	for {
		n, err := lic.FireDueExpiries(b.Ctx, licensing.ExpiryBatch)
		if err != nil {
			t.Fatalf("fire due expiries: %v", err)
		}
		total += n
		if n == 0 {
			return total
		}
	}
}

func at(t time.Time) string { return t.UTC().Format(event.TimeFormat) }

// testExpiryRules walks each rule of the expiry events with the test's clock.
func testExpiryRules(t *testing.T, b *storetest.Bundle) {
	lic := licensing.New(b.St)
	if _, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "expiry", URL: "https://example.com/expiry",
		Events: []event.Kind{event.LicenseExpiringSoon, event.LicenseExpired}, Enabled: true, Token: "whsec_expiry_0123456789"}); err != nil {
		t.Fatal(err)
	}
	p, err := lic.CreateProduct(b.Ctx, b.Account.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptr("P")}})
	if err != nil {
		t.Fatal(err)
	}
	create := func(expires *time.Time, validity *int64) licensing.License {
		t.Helper()
		in := licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
			Validity: licensing.Optional[int64]{Set: validity != nil, Value: validity}}
		if expires != nil {
			in.ExpiresAt = licensing.Optional[string]{Set: true, Value: ptr(at(*expires))}
		}
		l, err := lic.CreateLicense(b.Ctx, b.Account.ID, in)
		if err != nil {
			t.Fatalf("create license: %v", err)
		}
		return l
	}
	seen := 0
	// expect checks the events fired since the last call, in order.
	expect := func(step string, want ...expiryFired) {
		t.Helper()
		fireDue(t, b, lic)
		fireDue(t, b, lic) // a second wake-up at the same time fires nothing more
		all := expiryEvents(t, b)
		got := all[seen:]
		seen = len(all)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: fired %v; want %v", step, got, want)
		}
	}
	soon := func(l licensing.License, exp time.Time) expiryFired {
		return expiryFired{event.LicenseExpiringSoon, l.ID, at(exp)}
	}
	expired := func(l licensing.License, exp time.Time) expiryFired {
		return expiryFired{event.LicenseExpired, l.ID, at(exp)}
	}
	day := 24 * time.Hour
	start := b.Clock.Now()

	// A: expires in 30 days; lead 7 days (the default).
	aExp := start.Add(30 * day)
	a := create(&aExp, nil)
	// B: created inside the lead time: expiring-soon at once.
	bExp := start.Add(2 * day)
	bl := create(&bExp, ptr(int64(3*24*3600)))
	// C: created already expired: expiring-soon, then expired, at once.
	cExp := start.Add(-time.Hour)
	c := create(&cExp, nil)
	// P: perpetual, never fires; D: deleted before it fires; E: its product deleted.
	create(nil, nil)
	dExp := start.Add(day)
	d := create(&dExp, nil)
	// Oldest due first: C's lead time began 7 days and an hour ago, D's 6
	// days ago, B's 5; C's expired, due an hour ago, comes after them.
	expect("at creation", soon(c, cExp), soon(d, dExp), soon(bl, bExp), expired(c, cExp))

	if err := lic.DeleteLicense(b.Ctx, b.Account.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	p2, err := lic.CreateProduct(b.Ctx, b.Account.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptr("P2")}})
	if err != nil {
		t.Fatal(err)
	}
	eExp := start.Add(3 * day)
	e, err := lic.CreateLicense(b.Ctx, b.Account.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p2.ID},
		ExpiresAt: licensing.Optional[string]{Set: true, Value: ptr(at(eExp))}})
	if err != nil {
		t.Fatal(err)
	}
	expect("E inside the lead time", soon(e, eExp))
	if err := lic.DeleteProduct(b.Ctx, b.Account.ID, p2.ID); err != nil {
		t.Fatal(err)
	}

	// Time passes: B expires at 2 days, nothing else (D and E are gone).
	b.Clock.Add(2*day + time.Millisecond)
	expect("B's instant", expired(bl, bExp))

	// B renewed after it expired: re-armed for the new instant (3 days
	// from now, inside the lead time: expiring-soon at once).
	rb, err := lic.RenewLicense(b.Ctx, b.Account.ID, bl.ID)
	if err != nil {
		t.Fatal(err)
	}
	bExp2 := rb.ExpiresAt.Time
	expect("B renewed", soon(bl, bExp2))

	// The expires-at call with the same instant fires nothing again.
	if _, err := lic.SetLicenseExpiresAt(b.Ctx, b.Account.ID, bl.ID, licensing.ExpiresAtInput{ExpiresAt: licensing.Optional[string]{Set: true, Value: ptr(at(bExp2))}}); err != nil {
		t.Fatal(err)
	}
	expect("B set to the same instant")

	// A's expiring-soon comes 7 days before its instant, not earlier.
	b.Clock.Add(aExp.Sub(b.Clock.Now()) - 7*day - time.Second)
	// Meanwhile B passed its second instant.
	expect("a second before A's lead time", expired(bl, bExp2))
	b.Clock.Add(time.Second)
	expect("A's lead time", soon(a, aExp))

	// A moved later by the expires-at call: both re-armed for the new
	// instant, 20 days out (outside the lead time).
	aExp2 := b.Clock.Now().Add(20 * day)
	if _, err := lic.SetLicenseExpiresAt(b.Ctx, b.Account.ID, a.ID, licensing.ExpiresAtInput{ExpiresAt: licensing.Optional[string]{Set: true, Value: ptr(at(aExp2))}}); err != nil {
		t.Fatal(err)
	}
	expect("A moved out")

	// A longer lead time re-plans A (not yet told for aExp2): at once.
	// B, told for its instant and expired, hears nothing again.
	if _, err := b.St.UpdateAccount(b.Ctx, b.Account.ID, store.AccountPatch{ExpiringSoonLead: ptr(int64(30 * 24 * 3600))}); err != nil {
		t.Fatal(err)
	}
	expect("lead time raised to 30 days", soon(a, aExp2))
	// Lowered again: A has heard it for aExp2, so nothing fires twice.
	if _, err := b.St.UpdateAccount(b.Ctx, b.Account.ID, store.AccountPatch{ExpiringSoonLead: ptr(int64(3600))}); err != nil {
		t.Fatal(err)
	}
	expect("lead time lowered to 1 hour")

	// F, planned at a 1-hour lead time, is re-planned by a raise to 10 days.
	fExp := b.Clock.Now().Add(5 * day)
	f := create(&fExp, nil)
	expect("F outside a 1-hour lead time")
	if _, err := b.St.UpdateAccount(b.Ctx, b.Account.ID, store.AccountPatch{ExpiringSoonLead: ptr(int64(10 * 24 * 3600))}); err != nil {
		t.Fatal(err)
	}
	expect("lead time raised to 10 days", soon(f, fExp))

	// A made perpetual fires nothing more, even past its old instant.
	if _, err := lic.SetLicenseExpiresAt(b.Ctx, b.Account.ID, a.ID, licensing.ExpiresAtInput{ExpiresAt: licensing.Optional[string]{Set: true}}); err != nil {
		t.Fatal(err)
	}
	b.Clock.Add(aExp2.Sub(b.Clock.Now()) + time.Second)
	expect("past every instant", expired(f, fExp))

	// Every event went to the subscribed webhook, queued.
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_event_logs WHERE kind IN (?, ?) AND status = 'queued'`,
		string(event.LicenseExpiringSoon), string(event.LicenseExpired)); n != seen {
		t.Errorf("%d expiry logs queued; want one per event, %d", n, seen)
	}
	if next, ok, err := lic.NextExpiryDue(b.Ctx); err != nil || ok {
		t.Errorf("next expiry due %v, %v, %v; want none planned", next, ok, err)
	}
}

// testConcurrentExpiriesFireOnce fires 2,000 licenses expiring in the same
// second from three handles at once (three processes on PostgreSQL): each
// event once.
func testConcurrentExpiriesFireOnce(t *testing.T, b *storetest.Bundle) {
	const n = 2000
	lic := licensing.New(b.St)
	p, err := lic.CreateProduct(b.Ctx, b.Account.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptr("P")}})
	if err != nil {
		t.Fatal(err)
	}
	exp := b.Clock.Now().Add(time.Hour)
	insertExpiring(t, b, p.ID, n, func(i int) time.Time { return exp.Add(time.Duration(i%1000) * time.Millisecond) })
	fireDue(t, b, lic) // the expiring-soon of all, now
	b.Clock.Add(time.Hour + time.Second)
	services := []*licensing.Service{lic, licensing.New(b.Open(t)), licensing.New(b.Open(t))}
	fired := make([]int, len(services))
	storetest.Parallel(len(services), func(i int) { fired[i] = fireDue(t, b, services[i]) })
	got := expiryEvents(t, b)
	expiredOf := map[string]int{}
	for _, f := range got {
		if f.Kind == event.LicenseExpired {
			expiredOf[f.LicenseID]++
		}
	}
	twice := 0
	for _, c := range expiredOf {
		if c > 1 {
			twice++
		}
	}
	if len(expiredOf) != n || twice > 0 || len(got) != 2*n {
		t.Fatalf("%d licenses expired, %d of them more than once, %d events; want %d once each and %d events (fired per handle %v)",
			len(expiredOf), twice, len(got), n, 2*n, fired)
	}
	t.Logf("licenses fired per handle: %v", fired)
}

// insertExpiring inserts n licenses of product expiring at expires(i),
// planned as a change through the API would plan them, in one transaction
// (quicker than n API calls for a setup).
func insertExpiring(t testing.TB, b *storetest.Bundle, productID string, n int, expires func(i int) time.Time) {
	t.Helper()
	err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		now := store.MS(tx.Now())
		for i := range n {
			id := store.NewID()
			if _, err := tx.Exec(b.Ctx, `INSERT INTO licenses (id, account_id, product_id, key, expires_at, metadata, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, '{}', ?, ?)`, id, b.Account.ID, productID, fmt.Sprintf("KEY-%06d-%s", i, id[:8]), store.MS(expires(i)), now, now); err != nil {
				return err
			}
			if err := tx.PlanExpiry(b.Ctx, b.Account.ID, id, ptr(expires(i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("insert licenses: %v", err)
	}
}

// testDueExpiriesReadOnlyDueRows checks that a wake-up reads the due rows
// through the index on the due instant, not every license: 3,000 licenses
// held, 5 due.
func testDueExpiriesReadOnlyDueRows(t *testing.T, b *storetest.Bundle) {
	lic := licensing.New(b.St)
	p, err := lic.CreateProduct(b.Ctx, b.Account.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptr("P")}})
	if err != nil {
		t.Fatal(err)
	}
	now := b.Clock.Now()
	insertExpiring(t, b, p.ID, 3000, func(i int) time.Time {
		if i < 5 {
			return now.Add(time.Hour) // its expiring-soon due now
		}
		return now.Add(time.Duration(30+i) * 24 * time.Hour)
	})
	if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(b.Ctx, `ANALYZE license_expiries`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	plan, err := b.St.ExplainDueExpiries(b.Ctx, b.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan of the due query:\n%s", plan)
	if !strings.Contains(plan, "license_expiries_due") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "SCAN license_expiries") {
		t.Errorf("the due query does not read through license_expiries_due alone:\n%s", plan)
	}
	if n := fireDue(t, b, lic); n != 5 {
		t.Errorf("fired for %d licenses; want the 5 due", n)
	}
}

// testExpiryPlanningWakesEveryHandle checks that planning an expiry (a
// license created with an expiresAt, moved by the expires-at call, a lead
// time changed) wakes the expiry runner of this handle at once and, on
// PostgreSQL, of another handle on the same database (another process's,
// asleep until a later instant).
func testExpiryPlanningWakesEveryHandle(t *testing.T, b *storetest.Bundle) {
	lic := licensing.New(b.St)
	p, err := lic.CreateProduct(b.Ctx, b.Account.ID, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptr("P")}})
	if err != nil {
		t.Fatal(err)
	}
	var other *store.Store
	if b.St.Engine() == "postgres" {
		other = b.Open(t)
	}
	var l licensing.License
	changes := []struct {
		name   string
		change func() error
	}{
		{"a license created to expire in 2 s", func() (err error) {
			l, err = lic.CreateLicense(b.Ctx, b.Account.ID, licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
				ExpiresAt: licensing.Optional[string]{Set: true, Value: ptr(at(b.Clock.Now().Add(2 * time.Second)))}})
			return err
		}},
		{"its instant moved", func() error {
			_, err := lic.SetLicenseExpiresAt(b.Ctx, b.Account.ID, l.ID, licensing.ExpiresAtInput{ExpiresAt: licensing.Optional[string]{Set: true, Value: ptr(at(b.Clock.Now().Add(time.Second)))}})
			return err
		}},
		{"the lead time changed", func() error {
			_, err := b.St.UpdateAccount(b.Ctx, b.Account.ID, store.AccountPatch{ExpiringSoonLead: ptr(int64(3600))})
			return err
		}},
	}
	for _, c := range changes {
		var there <-chan struct{}
		if other != nil {
			quietExpiries(other)
			there = other.ExpiriesWait()
		}
		here := b.St.ExpiriesWait()
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		select {
		case <-here:
		default:
			t.Fatalf("%s: this handle's runner was not woken by the commit", c.name)
		}
		if there == nil {
			continue // one process per SQLite file: nothing else to wake
		}
		select {
		case <-there:
		case <-time.After(30 * time.Second): // at once, unless the machine is very busy
			t.Fatalf("%s: another handle's runner was not woken", c.name)
		}
	}
}

// quietExpiries waits until st's expiry runner has not been woken for
// 300ms (its listener wakes it once when it connects).
func quietExpiries(st *store.Store) {
	for {
		select {
		case <-st.ExpiriesWait():
		case <-time.After(300 * time.Millisecond):
			return
		}
	}
}

// testExpiryBatchFiresAsOneByOne fires the same expiries in batches of
// licensing.ExpiryBatch (one account's licenses) and one license per
// transaction (another's, with the same webhooks): the same events in the
// same order, each license's expiring-soon before its expired, with the
// same logs.
func testExpiryBatchFiresAsOneByOne(t *testing.T, b *storetest.Bundle) {
	lic := licensing.New(b.St)
	other := b.NewAccount(t, "one-by-one@example.com").ID
	now := b.Clock.Now()
	fired := map[string][]string{}
	for _, acct := range []string{b.Account.ID, other} {
		storetest.BatchHooks(t, b, acct)
		p, err := lic.CreateProduct(b.Ctx, acct, licensing.ProductInput{Name: licensing.Optional[string]{Set: true, Value: ptr("P")}})
		if err != nil {
			t.Fatal(err)
		}
		// Expired a minute apart, a week and an hour ago and less, so
		// both events of each are due: every expiring-soon (due a week
		// before its instant) before every expired. Created newest first.
		for i := 5; i >= 0; i-- {
			exp := now.Add(-time.Hour - time.Duration(i)*time.Minute)
			tier := []string{"gold", "basic"}[i%2]
			in := licensing.LicenseInput{ProductID: licensing.Optional[string]{Set: true, Value: &p.ID},
				ExpiresAt: licensing.Optional[string]{Set: true, Value: ptr(at(exp))},
				Metadata:  licensing.Optional[json.RawMessage]{Set: true, Value: ptr(json.RawMessage(`{"tier":"` + tier + `","n":` + fmt.Sprint(i) + `}`))}}
			if _, err := lic.CreateLicense(b.Ctx, acct, in); err != nil {
				t.Fatalf("create license: %v", err)
			}
		}
		limit := licensing.ExpiryBatch
		if acct == other {
			limit = 1
		}
		for {
			n, err := lic.FireDueExpiries(b.Ctx, limit)
			if err != nil {
				t.Fatalf("fire due expiries: %v", err)
			}
			if n == 0 {
				break
			}
		}
		for _, e := range storetest.FiredAs(t, b, acct) {
			if !strings.HasPrefix(e, string(event.LicenseExpiringSoon)+" ") && !strings.HasPrefix(e, string(event.LicenseExpired)+" ") {
				continue // the product's and licenses' own events
			}
			fired[acct] = append(fired[acct], storetest.Normalise(e))
		}
	}
	got, want := fired[b.Account.ID], fired[other]
	if len(want) != 12 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("fired in batches:\n%s\nwant as one by one (12 events):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, e := range want {
		kind := event.LicenseExpiringSoon
		if i >= 6 {
			kind = event.LicenseExpired
		}
		n := 5 - i%6 // the oldest instant first
		if !strings.HasPrefix(e, string(kind)+" ") || !strings.Contains(e, fmt.Sprintf(`"n":%d}`, n)) {
			t.Fatalf("event %d: %s; want %s of license %d", i, e, kind, n)
		}
	}
}

// normalise leaves out of a firedAs line what differs between two
// accounts' copies of a license: its ids, key and times.

// TestExpirySuite runs the expiry cases of the store's behaviour suite on
// every engine: they rest on the store's queue and locks, and live here
// because they drive the licensing service.
func TestExpirySuite(t *testing.T) {
	for _, s := range testdb.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, s.URL, []storetest.Case{
				{Name: "ExpiryEventsFollowEachRule", Handles: 1, Fn: testExpiryRules},
				{Name: "ConcurrentExpiriesFireEachOnce", Handles: 3, Fn: testConcurrentExpiriesFireOnce},
				{Name: "DueExpiriesReadOnlyDueRows", Handles: 1, Fn: testDueExpiriesReadOnlyDueRows},
				{Name: "ExpiryPlanningWakesEveryHandle", Handles: 2, Fn: testExpiryPlanningWakesEveryHandle},
				{Name: "ExpiryBatchFiresAsOneByOne", Handles: 1, Fn: testExpiryBatchFiresAsOneByOne},
			})
		})
	}
}
func ptr[T any](v T) *T { return &v }
