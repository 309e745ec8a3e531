package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// openSQLiteStore opens a store on a SQLite file of the test's own.
func openSQLiteStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "herald.db"), Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSQLiteReadersAreKeptBetweenRequests: a burst of concurrent reads
// leaves its connections open for the next one. A reader closed and opened
// again pays SQLite's pragmas and every statement's preparation anew, which
// under a busy API was a fifth of herald's CPU.
func TestSQLiteReadersAreKeptBetweenRequests(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteStore(t)
	for burst := range 3 {
		conns := make([]*sql.Conn, 0, sqliteReaders)
		for range sqliteReaders {
			c, err := s.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := c.QueryRowContext(ctx, `SELECT COUNT(*) FROM accounts`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		st := s.db.Stats()
		if st.MaxIdleClosed != 0 || st.OpenConnections != sqliteReaders {
			t.Fatalf("after burst %d of %d reads: %d readers open, %d closed for want of an idle place; want %d open, none closed",
				burst+1, sqliteReaders, st.OpenConnections, st.MaxIdleClosed, sqliteReaders)
		}
	}
}

// TestSQLiteWriterJournalsInMemory: the writer's statement journals stay
// in memory once the store is open (the group committer's savepoints
// otherwise spill them to a temporary file at each group); the readers,
// which may sort a large history, keep SQLite's default.
func TestSQLiteWriterJournalsInMemory(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteStore(t)
	const memory, byDefault = 2, 0
	for _, c := range []struct {
		name string
		db   *sql.DB
		want int
	}{{"writer", s.writer, memory}, {"reader", s.db, byDefault}} {
		var got int
		if err := c.db.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: temp_store = %d, want %d", c.name, got, c.want)
		}
	}
}
