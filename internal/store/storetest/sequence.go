package storetest

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testLicenseEventsAreNumbered: every event that concerns a license
// carries its number among that license's events, counted across kinds
// from license.created's 1, in a batch as one by one; an event that
// concerns no license carries none; changes to one license made at once
// through several handles (several processes, on PostgreSQL) each get
// their own number, in the order they commit, and the number of an event
// is in its row too.
func testLicenseEventsAreNumbered(t *testing.T, b *Bundle) {
	lic, other := store.NewID(), store.NewID()
	seq := func(id string) (int64, bool) {
		t.Helper()
		var body []byte
		if err := b.St.QueryRow(b.Ctx, `SELECT body FROM events WHERE id = ?`, id).Scan(&body); err != nil {
			t.Fatalf("read event %s: %v", id, err)
		}
		var p struct {
			Sequence *int64 `json:"sequence"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("event %s body %s: %v", id, body, err)
		}
		var row *int64
		var rowLicense *string
		if err := b.St.QueryRow(b.Ctx, `SELECT sequence, license_id FROM events WHERE id = ?`, id).Scan(&row, &rowLicense); err != nil {
			t.Fatalf("read event %s: %v", id, err)
		}
		if (row == nil) != (p.Sequence == nil) || (row != nil && *row != *p.Sequence) || (row == nil) != (rowLicense == nil) {
			t.Errorf("event %s: body's sequence %v, row's %v (license %v)", id, p.Sequence, row, rowLicense)
		}
		if p.Sequence == nil {
			return 0, false
		}
		return *p.Sequence, true
	}
	var ids []string
	err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		got, err := tx.FireBatch(b.Ctx, []store.Firing{
			{AccountID: b.Account.ID, License: lic, First: true, Kind: event.LicenseCreated, Data: map[string]any{}},
			{AccountID: b.Account.ID, License: other, First: true, Kind: event.LicenseCreated, Data: map[string]any{}},
			{AccountID: b.Account.ID, License: lic, Kind: event.ActivationCreated, Data: map[string]any{}},
			{AccountID: b.Account.ID, Kind: event.ProductCreated, Data: map[string]any{}},
			{AccountID: b.Account.ID, License: lic, Kind: event.LicenseFirstActivated, Data: map[string]any{}},
		})
		ids = append(ids, got...)
		if err != nil {
			return err
		}
		id, err := tx.FireLicense(b.Ctx, b.Account.ID, other, event.LicenseRenewed, map[string]any{})
		ids = append(ids, id)
		return err
	})
	if err != nil {
		t.Fatalf("fire: %v", err)
	}
	want := []int64{1, 1, 2, 0, 3, 2}
	for i, id := range ids {
		n, ok := seq(id)
		if n != want[i] || ok != (want[i] != 0) {
			t.Errorf("event %d: sequence %d (present %v); want %d", i, n, ok, want[i])
		}
	}

	// Changes made at once through three handles: each number once, and
	// in the order of the events' commits, which the rows' ids follow
	// no better than the clock does, so the numbers are checked as a set.
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	const each = 8
	fired := make([][]string, len(handles))
	errs := make([]error, len(handles))
	Parallel(len(handles), func(h int) {
		for i := range each {
			err := handles[h].InTx(b.Ctx, func(tx *store.Tx) error {
				id, err := tx.FireLicense(b.Ctx, b.Account.ID, lic, event.LicenseUpdated, map[string]any{"h": h, "i": i})
				if err == nil {
					fired[h] = append(fired[h], id)
				}
				return err
			})
			if err != nil {
				errs[h] = fmt.Errorf("handle %d, change %d: %w", h, i, err)
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	for h := range handles {
		last := int64(0)
		for _, id := range fired[h] {
			n, _ := seq(id)
			if n <= last {
				t.Errorf("handle %d: event %s numbered %d after its own earlier %d", h, id, n, last)
			}
			last = n
			got = append(got, n)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, n := range got {
		if n != int64(4+i) {
			t.Fatalf("numbers of the concurrent changes %v; want each of 4..%d once", got, 3+len(handles)*each)
		}
	}
}
