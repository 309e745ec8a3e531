package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// syncBuffer is a log sink safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A statement that times out behind another transaction's lock is logged
// with what it waited for and what its blocker runs (decision 0117), and
// does not go on waiting on the server after herald gave up on it. A
// second time-out soon after is not reported again.
func TestATimedOutStatementIsReportedAndCancelled(t *testing.T) {
	t.Parallel()
	testdb.PostgresHandles(t, 2) // the store, and the test's own connections
	url := testdb.PostgresURL(t)
	logs := &syncBuffer{}
	st, err := store.Open(context.Background(), url, store.Options{Key: make([]byte, 32),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, locker := testdb.OpenPostgres(t, url), testdb.OpenPostgres(t, url)
	ctx := context.Background()
	tx, err := locker.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `LOCK TABLE delivery_queue IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	waitFor := func() error {
		c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		var n int
		return st.QueryRow(c, `SELECT COUNT(*) FROM delivery_queue`).Scan(&n)
	}
	err = waitFor()
	if err == nil {
		t.Fatal("a read of the locked queue answered; want it to time out")
	}
	if !store.Unavailable(err) {
		t.Errorf("the time-out %v is not reported as the database being unavailable", err)
	}
	got := logs.String()
	for _, want := range []string{"a database statement timed out waiting", "wait_event=relation",
		"delivery_queue AccessShareLock", "LOCK TABLE delivery_queue IN ACCESS EXCLUSIVE MODE", "idle in transaction"} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	// Ended on the server too: no statement of the store's still waits for
	// the lock, which is still held.
	waiting := func() int {
		var n int
		// Only this schema's queue: other tests share the database.
		if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks
WHERE NOT granted AND relation = 'delivery_queue'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for waiting() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := waiting(); n > 0 {
		t.Errorf("%d statements of herald's still wait for the lock after timing out; want them cancelled", n)
	}

	before := strings.Count(logs.String(), "timed out waiting")
	if err := waitFor(); err == nil {
		t.Fatal("a second read of the locked queue answered; want it to time out")
	}
	if after := strings.Count(logs.String(), "timed out waiting"); after != before {
		t.Errorf("a second time-out within %s was reported again (%d reports)", store.StallReportEvery, after)
	}
	tx.Rollback()
	if err := waitFor(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("the store's read after the lock was released: %v; want it to work on the same pool", err)
	}
}
