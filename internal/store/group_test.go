package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
)

// openGrouped opens a SQLite store (the engine that commits in groups) with
// a table of the test's own.
func openGrouped(t *testing.T) *Store {
	t.Helper()
	s := openSQLiteStore(t)
	if s.group == nil {
		t.Fatal("SQLite store without a group committer")
	}
	err := s.InTx(context.Background(), func(tx *Tx) error {
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

// groupHandoff is a Handoff that grants every reservation and notes, at
// each Take, whether the logs taken are committed and leased as handed.
type groupHandoff struct {
	s         *Store
	mu        sync.Mutex
	reserved  int
	taken     []Claim
	committed int // of the logs taken, those a reader saw leased at Take
	abandoned []Claim
}

func (h *groupHandoff) Reserve(accountID, webhookID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reserved++
	return true
}

func (h *groupHandoff) Take(claims []Claim) {
	seen := 0
	for _, c := range claims {
		var n int
		err := h.s.db.QueryRow(`SELECT COUNT(*) FROM delivery_queue WHERE log_id = ? AND lease = ?`, c.LogID, c.Lease).Scan(&n)
		if err == nil {
			seen += n
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.taken = append(h.taken, claims...)
	h.committed += seen
}

func (h *groupHandoff) Abandon(claims []Claim, maybeCommitted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.abandoned = append(h.abandoned, claims...)
}

func (h *groupHandoff) LeaseUntil(now time.Time) time.Time { return now.Add(time.Minute) }

// In a group commit each transaction hands its own logs over: those of a
// transaction rolled back to its savepoint are given back, the others' are
// taken once the group has committed (a reader sees them leased), each
// under its transaction's own lease.
func TestGroupCommitHandsEachTransactionsLogsOverApart(t *testing.T) {
	t.Parallel()
	s := openGrouped(t)
	ctx := context.Background()
	a, err := s.CreateAccount(ctx, Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateWebhook(ctx, a.ID, NewWebhook{Name: "w", URL: "https://example.com/w", Events: []event.Kind{event.LicenseCreated},
		Enabled: true, Token: "whsec_0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	h := &groupHandoff{s: s}
	s.SetHandoff(h)
	errRefused := errors.New("refused after firing")
	const n = 6
	events := make([]string, n)
	var fns []func(*Tx) error
	for i := range n {
		fns = append(fns, func(tx *Tx) error {
			id, err := tx.Fire(ctx, a.ID, event.LicenseCreated, map[string]any{"n": i})
			if err != nil {
				return err
			}
			events[i] = id
			if i%2 == 1 {
				return errRefused
			}
			return nil
		})
	}
	errs := queueGroup(t, s, fns)
	logOf := map[string]Claim{}
	for _, c := range h.taken {
		logOf[c.EventID] = c
	}
	gaveBack := map[string]bool{}
	for _, c := range h.abandoned {
		gaveBack[c.EventID] = true
	}
	leases := map[string]bool{}
	for i := range n {
		c, taken := logOf[events[i]]
		if want := i%2 == 0; taken != want || gaveBack[events[i]] == want || (errs[i] == nil) != want {
			t.Errorf("transaction %d (%v): taken %v, given back %v; want taken %v", i, errs[i], taken, gaveBack[events[i]], want)
		}
		if taken {
			leases[c.Lease] = true
		}
	}
	if h.reserved != n || len(h.taken)+len(h.abandoned) != n {
		t.Errorf("reserved %d, taken %d, given back %d; want each of %d reservations ended once", h.reserved, len(h.taken), len(h.abandoned), n)
	}
	if h.committed != len(h.taken) || len(leases) != len(h.taken) {
		t.Errorf("of %d logs taken, %d were committed and leased when taken, under %d leases; want all, each its transaction's own",
			len(h.taken), h.committed, len(leases))
	}
}
