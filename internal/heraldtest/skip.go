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
