package heraldtest

import (
	"os"
	"testing"
)

// FuzzEngineEnv names the variable that picks the database of the fuzz
// targets that drive a whole herald: unset or "sqlite" for SQLite (the
// default, and what CI fuzzes), or "postgres" for a new schema on the
// server named by HERALD_TEST_POSTGRES_URL.
const FuzzEngineEnv = "HERALD_FUZZ_ENGINE"

// FuzzDatabaseURL returns the database a fuzz target's herald opens, as
// FuzzEngineEnv picks it.
func FuzzDatabaseURL(t testing.TB) string {
	t.Helper()
	switch e := os.Getenv(FuzzEngineEnv); e {
	case "", "sqlite":
		return SQLiteURL(t)
	case "postgres":
		return PostgresURL(t)
	default:
		t.Fatalf("%s=%q: want sqlite or postgres", FuzzEngineEnv, e)
		return ""
	}
}
