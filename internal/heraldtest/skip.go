package heraldtest

import (
	"os"
	"testing"
)

// SkipUnless skips the test when ok is false, for a developer's machine that
// lacks something (PostgreSQL, node, a browser). Under CI (CI=true) it fails
// the test instead: a green CI run must never hide a missing install step.
func SkipUnless(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s: .ci/run must install or start it", why)
	}
	t.Skip(why)
}
