package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// openGrouped opens a SQLite store (the engine that commits in groups) with
// a table of the test's own.
func openGrouped(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "herald.db"), Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.group == nil {
		t.Fatal("SQLite store without a group committer")
	}
	err = s.InTx(context.Background(), func(tx *Tx) error {
		_, err := tx.Exec(context.Background(), `CREATE TABLE grouped (k TEXT PRIMARY KEY)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// holdWriter runs a transaction that holds SQLite's writer until release
// is called (at the latest when the test ends, so that a failing test
// lets the store close); release returns once it has committed.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	let := make(chan struct{})
	holding := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.InTx(context.Background(), func(*Tx) error {
			close(holding)
			<-let
			return nil
		})
	}()
	<-holding
	release = sync.OnceFunc(func() {
		close(let)
		if err := <-done; err != nil {
			t.Errorf("holding transaction: %v", err)
		}
	})
	t.Cleanup(release)
	return release
}

// waitQueued waits until n transactions wait in ch, a committer's queue.
func waitQueued(t *testing.T, ch chan *groupTx, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(ch) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d transactions queued", len(ch), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// queueGroup runs fns as one group: a first transaction holds the writer
// until all of them wait in the committer's queue, so that they are taken
// together when it commits. It returns each fn's error, in order.
func queueGroup(t *testing.T, s *Store, fns []func(*Tx) error) []error {
	t.Helper()
	if len(fns) > maxGroup {
		t.Fatalf("%d transactions do not fit one group of %d", len(fns), maxGroup)
	}
	release := holdWriter(t, s)
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("panic: %v", p)
				}
			}()
			errs[i] = s.InTx(context.Background(), fn)
		})
	}
	waitQueued(t, s.group.queue, len(fns))
	release()
	wg.Wait()
	return errs
}

func groupedKeys(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	err := s.InTx(context.Background(), func(tx *Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT k FROM grouped`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			keys[k] = true
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Within one commit each transaction is still all or nothing: one that
// returns an error, fails in SQL or panics leaves none of its writes, and
// the others' writes all stay.
func TestGroupCommitKeepsEachTransactionAllOrNothing(t *testing.T) {
	t.Parallel()
	s := openGrouped(t)
	errRefused := errors.New("refused by its caller")
	const n = 30
	var fns []func(*Tx) error
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		fns = append(fns, func(tx *Tx) error {
			ctx := context.Background()
			if _, err := tx.Exec(ctx, `INSERT INTO grouped (k) VALUES (?)`, k+"a"); err != nil {
				return err
			}
			switch i % 4 {
			case 1:
				return errRefused
			case 2: // the second write breaks the key: the first must go too
				_, err := tx.Exec(ctx, `INSERT INTO grouped (k) VALUES (?)`, k+"a")
				return err
			case 3:
				if i == 3 {
					panic("one caller panics")
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO grouped (k) VALUES (?)`, k+"b")
			return err
		})
	}
	errs := queueGroup(t, s, fns)
	keys := groupedKeys(t, s)
	for i, err := range errs {
		k := fmt.Sprintf("k%02d", i)
		kept := i%4 == 0 || (i%4 == 3 && i != 3)
		switch {
		case kept && err != nil:
			t.Errorf("transaction %d: %v; want it committed", i, err)
		case !kept && err == nil:
			t.Errorf("transaction %d: committed; want its error", i)
		}
		if keys[k+"a"] != kept || keys[k+"b"] != kept {
			t.Errorf("transaction %d: rows kept %v, %v; want %v, %v", i, keys[k+"a"], keys[k+"b"], kept, kept)
		}
	}
	if !errors.Is(errs[1], errRefused) {
		t.Errorf("transaction 1: %v; want its own error back", errs[1])
	}
}

// A caller whose context ends while its transaction runs in a group does not
// interrupt the shared transaction: SQLite would roll all of it back, the
// other callers' work with it. The transaction runs to its end.
func TestGroupCommitOutlivesACancelledCaller(t *testing.T) {
	t.Parallel()
	s := openGrouped(t)
	const n = 10
	var fns []func(*Tx) error
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		fns = append(fns, func(tx *Tx) error {
			ctx, cancel := context.WithCancel(context.Background())
			if i == 0 {
				cancel() // its caller went away after the transaction began
			}
			defer cancel()
			_, err := tx.Exec(ctx, `INSERT INTO grouped (k) VALUES (?)`, k)
			return err
		})
	}
	errs := queueGroup(t, s, fns)
	keys := groupedKeys(t, s)
	for i, err := range errs {
		if err != nil {
			t.Errorf("transaction %d: %v", i, err)
		}
		if k := fmt.Sprintf("k%02d", i); !keys[k] {
			t.Errorf("transaction %d: row %s missing", i, k)
		}
	}
}

// A transaction WithPrecedence goes ahead of all those waiting for the
// writer, however many (more than a group holds), and they all still run.
func TestGroupCommitRunsPrecedenceFirst(t *testing.T) {
	t.Parallel()
	s := openGrouped(t)
	release := holdWriter(t, s)

	var (
		mu    sync.Mutex
		order []string
	)
	insert := func(k string) func(*Tx) error {
		return func(tx *Tx) error {
			mu.Lock()
			order = append(order, k)
			mu.Unlock()
			_, err := tx.Exec(context.Background(), `INSERT INTO grouped (k) VALUES (?)`, k)
			return err
		}
	}
	const waiting = maxGroup + 36
	errs := make(chan error, waiting+1)
	var wg sync.WaitGroup
	for i := range waiting {
		wg.Go(func() { errs <- s.InTx(context.Background(), insert(fmt.Sprintf("k%03d", i))) })
	}
	waitQueued(t, s.group.queue, waiting)
	wg.Go(func() { errs <- s.InTx(WithPrecedence(context.Background()), insert("urgent")) })
	waitQueued(t, s.group.urgent, 1)
	release()
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("the transactions waiting for the writer were not all answered")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(order) != waiting+1 || order[0] != "urgent" {
		t.Fatalf("ran %d transactions in the order %q; want %d, the one with precedence first", len(order), order, waiting+1)
	}
	if keys := groupedKeys(t, s); len(keys) != waiting+1 || !keys["urgent"] {
		t.Fatalf("%d rows committed, urgent's %v; want %d", len(keys), keys["urgent"], waiting+1)
	}
}

// A transaction WithPrecedence still queued when the store closes runs
// before the committer stops, as the others queued do. (It is queued before
// the close here, so the committer takes it first; the other order, a send
// and the close both between next's two looks, is a race no test arranges.)
func TestGroupCommitRunsPrecedenceQueuedAtClose(t *testing.T) {
	t.Parallel()
	s := openGrouped(t)
	release := holdWriter(t, s)
	ran := make(chan error, 1)
	go func() {
		ran <- s.InTx(WithPrecedence(context.Background()), func(tx *Tx) error {
			_, err := tx.Exec(context.Background(), `INSERT INTO grouped (k) VALUES ('late')`)
			return err
		})
	}()
	waitQueued(t, s.group.urgent, 1)
	closed := make(chan struct{})
	go func() {
		s.group.close()
		close(closed)
	}()
	release()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the committer did not stop")
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("queued at close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the transaction with precedence queued at close never ran")
	}
}
