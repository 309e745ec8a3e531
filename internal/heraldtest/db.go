package heraldtest

import (
	"testing"
	"time"

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

// BenchStores lists the engines a benchmark measures (testdb.BenchStores).
func BenchStores() []Store { return testdb.BenchStores() }

// BusyFloor is the least patience Eventually grants (testdb.BusyFloor).
const BusyFloor = testdb.BusyFloor

// Eventually polls cond until it holds or patience has passed
// (testdb.Eventually).
func Eventually(t testing.TB, patience time.Duration, what string, cond func() bool) {
	t.Helper()
	testdb.Eventually(t, patience, what, cond)
}

// SkipShort skips the test under -short (testdb.SkipShort).
func SkipShort(t testing.TB, why string) {
	t.Helper()
	testdb.SkipShort(t, why)
}

// DB is a plain connection to a test's database (testdb.DB).
type DB = testdb.DB

// OpenDB opens a plain connection to dbURL (testdb.OpenDB).
func OpenDB(t testing.TB, dbURL string) *DB {
	t.Helper()
	return testdb.OpenDB(t, dbURL)
}

// DumpLogsOnFailure writes the database's logs to the test's output if it
// fails (testdb.DumpLogsOnFailure).
func DumpLogsOnFailure(t testing.TB, dbURL string) {
	t.Helper()
	testdb.DumpLogsOnFailure(t, dbURL)
}

// PostgresServer is a PostgreSQL server of a test's own
// (testdb.PostgresServer).
type PostgresServer = testdb.PostgresServer

// StartPostgres starts a PostgreSQL server of the test's own
// (testdb.StartPostgres).
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	return testdb.StartPostgres(t)
}
