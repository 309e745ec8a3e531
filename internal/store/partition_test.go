package store_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// TestDayBoundsSplitIDsAtMidnight: an id made in a day's last millisecond
// sorts before the next day's bound, one made in its first at or after it,
// and each bound is the UUIDv7 text of its midnight with zero random bits.
func TestDayBoundsSplitIDsAtMidnight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		day  time.Time
		want string
	}{
		{"the epoch", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), "00000000-0000-7000-8000-000000000000"},
		{"a day in 2026", time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), "01a21526-e400-7000-8000-000000000000"},
		{"any instant of the day", time.Date(2026, 11, 26, 23, 59, 59, 999_000_000, time.UTC), "01a21526-e400-7000-8000-000000000000"},
		{"another zone, the UTC day", time.Date(2026, 11, 27, 0, 30, 0, 0, time.FixedZone("CET", 3600)), "01a21526-e400-7000-8000-000000000000"},
		{"a leap day", time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), store.DayBound(time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.DayBound(tt.day); got != tt.want {
				t.Errorf("DayBound(%v) = %s; want %s", tt.day, got, tt.want)
			}
		})
	}
	for _, midnight := range []time.Time{
		time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1),
		time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		bound := store.DayBound(midnight)
		for range 100 { // the random bits vary; the order must not
			last, first := store.NewIDAt(midnight.Add(-time.Millisecond)), store.NewIDAt(midnight)
			if !(last < bound && bound <= first) {
				t.Fatalf("at %v: %s < %s <= %s does not hold", midnight, last, bound, first)
			}
			if d, ok := store.DayOfID(last); !ok || !d.Equal(midnight.AddDate(0, 0, -1)) {
				t.Errorf("DayOfID(%s) = %v, %v; want %v", last, d, ok, midnight.AddDate(0, 0, -1))
			}
			if d, ok := store.DayOfID(first); !ok || !d.Equal(midnight) {
				t.Errorf("DayOfID(%s) = %v, %v; want %v", first, d, ok, midnight)
			}
		}
		if store.DayBound(midnight.Add(-time.Millisecond)) >= bound {
			t.Errorf("the bound of the day before %v does not sort before it", midnight)
		}
	}
	if d, ok := store.DayOfID(store.NewID()); !ok || !d.Equal(store.Day(time.Now())) && !d.Equal(store.Day(time.Now().Add(-time.Minute))) {
		t.Errorf("DayOfID of a new id: %v, %v; want today", d, ok)
	}
	for _, id := range []string{"ev", "", "0193a0b1-0000-4000-8000-000000000002", "0193A0B1-0000-7000-8000-000000000002", "0193a0b1x0000-7000-8000-000000000002"} {
		if _, ok := store.DayOfID(id); ok {
			t.Errorf("DayOfID(%q) took it for a UUIDv7", id)
		}
	}
}

// TestIDRangeBoundsNewIDsOnly: the bounds that prune a batch's logs are the
// least and greatest of NewID's texts, and there are none for a batch with
// any id of another shape, whose order a collation may not keep.
func TestIDRangeBoundsNewIDsOnly(t *testing.T) {
	a, b, c := store.NewID(), store.NewID(), store.NewID()
	least, greatest := slices.Min([]string{a, b, c}), slices.Max([]string{a, b, c})
	for _, tt := range []struct {
		name   string
		ids    []string
		lo, hi string
		ok     bool
	}{
		{"none", nil, "", "", false},
		{"one", []string{b}, b, b, true},
		{"several", []string{b, c, a}, least, greatest, true},
		{"a hand-written id", []string{a, "log-1"}, "", "", false},
		{"upper case", []string{a, strings.ToUpper(b)}, "", "", false},
		{"no hyphens", []string{strings.ReplaceAll(a, "-", "") + "xxxx"}, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := store.IDRange(tt.ids)
			if lo != tt.lo || hi != tt.hi || ok != tt.ok {
				t.Errorf("IDRange = %q, %q, %v; want %q, %q, %v", lo, hi, ok, tt.lo, tt.hi, tt.ok)
			}
		})
	}
}
