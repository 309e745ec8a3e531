package heraldtest

import (
	"os"
	"testing"

	"github.com/heraldhq/herald/internal/testdb"
)

// The databases tests open are package testdb's, a leaf that the store's
// own suite uses without importing heraldtest (which imports the server).
// They are named here too, so that a test starting heralds reads one
// package.

// PostgresEnv names the variable holding the PostgreSQL server tests use
// (testdb.PostgresEnv).
const PostgresEnv = testdb.PostgresEnv

// Store is a database engine the behavioural tests run on (testdb.Store).
type Store = testdb.Store

// Stores lists the engines every behavioural test runs on (testdb.Stores).
func Stores() []Store { return testdb.Stores() }

// BenchStores lists the engines a benchmark measures: SQLite always,
// PostgreSQL when PostgresEnv names a server. Unlike a test, a benchmark
// run without a server measures what it can rather than fail.
func BenchStores() []Store {
	out := []Store{{Name: "sqlite", URL: SQLiteURL}}
	if os.Getenv(PostgresEnv) != "" {
		out = append(out, Store{Name: "postgres", URL: PostgresURL})
	}
	return out
}

// ForEachStore runs test as parallel subtests, one per engine, each with
// the URL of a new, empty database (testdb.ForEachStore).
func ForEachStore(t *testing.T, test func(t *testing.T, dbURL string)) {
	t.Helper()
	testdb.ForEachStore(t, test)
}

// SQLiteURL returns a new SQLite file in t.TempDir() (testdb.SQLiteURL).
func SQLiteURL(t testing.TB) string { return testdb.SQLiteURL(t) }

// PostgresURL returns a URL of a new, empty schema on the tests' PostgreSQL
// server, or skips without one (testdb.PostgresURL).
func PostgresURL(t testing.TB) string {
	t.Helper()
	return testdb.PostgresURL(t)
}

// NewSchema creates a new schema on the server at base and returns its URL
// (testdb.NewSchema).
func NewSchema(t testing.TB, base string) string {
	t.Helper()
	return testdb.NewSchema(t, base)
}

// PostgresHandles declares how many store handles the test opens on
// PostgreSQL at once (testdb.PostgresHandles).
func PostgresHandles(t testing.TB, n int) { testdb.PostgresHandles(t, n) }
