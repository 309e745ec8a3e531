// Package testdb opens new, empty databases for tests, one per test: a
// SQLite file in the test's temporary directory, or a schema of its own on
// the PostgreSQL server named by HERALD_TEST_POSTGRES_URL, dropped when the
// test ends. It also shares that server's connections out between every
// test process on the machine (PostgresHandles). A leaf: it imports no
// herald package, so the store's own suite (store/storetest) can use it
// without importing the packages above the store.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the variable holding the PostgreSQL server tests use,
// e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable. Each test
// works in a schema of its own there, so runs and parallel tests never meet.
const PostgresEnv = "HERALD_TEST_POSTGRES_URL"

// Store is a database engine the behavioural tests run on.
type Store struct {
	Name string // "sqlite" or "postgres"
	// URL returns the URL of a new, empty database of this engine, removed
	// at the end of the test.
	URL func(t testing.TB) string
}

// Stores lists the engines every behavioural test runs on.
func Stores() []Store {
	return []Store{{"sqlite", SQLiteURL}, {"postgres", PostgresURL}}
}

// ForEachStore runs test as parallel subtests named after each engine, each
// with the URL of a new, empty database of that engine.
func ForEachStore(t *testing.T, test func(t *testing.T, dbURL string)) {
	t.Helper()
	for _, s := range Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			test(t, s.URL(t))
		})
	}
}

// SQLiteURL returns a new SQLite file in t.TempDir().
func SQLiteURL(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "herald.db")
}

// PostgresURL returns a URL of the PostgreSQL server named by
// HERALD_TEST_POSTGRES_URL that works in a new, empty schema, dropped at the
// end of the test. Without the variable the test skips (fails under CI). The
// first call of a test reserves its share of the server's connections (see
// PostgresHandles), waiting while other tests hold them.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	SkipUnless(t, base != "", PostgresEnv+" is not set, so the PostgreSQL store is untested")
	reservePostgres(t)
	return NewSchema(t, base)
}

// NewSchema creates a schema herald_test_<random> on the server at base and
// returns base with search_path set to it (pgx passes unknown URL parameters
// to the server as settings). The schema is dropped at the end of the test.
// The URL also caps the herald's pool at 9 connections (poolPerHandle), so
// that many tests at once stay within the server's max_connections.
func NewSchema(t testing.TB, base string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "herald_test_" + hex.EncodeToString(b)
	execSQL(t, base, `CREATE SCHEMA `+schema)
	t.Cleanup(func() {
		// Another test's leftovers must not fail this one.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	if q.Get("pool_max_conns") == "" {
		q.Set("pool_max_conns", strconv.Itoa(poolPerHandle))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// execSQL runs one statement on the server at dbURL.
func execSQL(t testing.TB, dbURL, statement string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to PostgreSQL (%s): %v", PostgresEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, statement); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}

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
