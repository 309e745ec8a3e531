package heraldtest

import (
	"testing"

	"github.com/heraldhq/herald/internal/testdb"
)

// SkipUnless skips the test when ok is false, for a developer's machine that
// lacks something (PostgreSQL, node, a browser). Under CI (CI=true) it fails
// the test instead: a green CI run must never hide a missing install step.
// It is testdb.SkipUnless, which a missing PostgreSQL server meets first.
func SkipUnless(t testing.TB, ok bool, why string) {
	t.Helper()
	testdb.SkipUnless(t, ok, why)
}

// SkipShort skips the test under -short, the quick local run, saying what
// it does that keeps it out: it starts processes (the herald binary, a
// fleet of heralds, Chromium), stops a database, or takes longer than the
// quick run allows. The full suite (CI) runs it: CI never passes -short.
// Unlike SkipUnless it never fails: nothing is missing, the run is short.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("not in -short: " + why)
	}
}
