package testdb

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tests share one PostgreSQL server, whose max_connections (100 by default,
// a few kept for superusers) every test binary of a `go test ./...` run draws
// on at once. Each test that works on it reserves units first, one unit per
// store handle (a herald or another process) it opens: a handle holds at most
// poolPerHandle connections plus its LISTEN connection. The units are lock
// files shared by every test process on the machine, so however many
// binaries and parallel tests run, the connections they hold stay within
// postgresUnits × (poolPerHandle+1) = 70, plus a connection or two per test
// holding units (at most 7) for its schema and inspection: under 85 of the
// 100 a default server allows. Nine a handle is herald's split of a pool at
// its smallest that keeps every part: one for the lease keeper, two for the
// dispatcher, two for the licenses' shared statements, four for the rest.
const (
	postgresUnits = 7
	poolPerHandle = 9
)

var reservations = struct {
	sync.Mutex
	handles map[testing.TB]int  // declared by PostgresHandles
	held    map[testing.TB]bool // reserved
}{handles: map[testing.TB]int{}, held: map[testing.TB]bool{}}

// PostgresHandles declares, before the test's first PostgresURL, that it
// opens up to n store handles on PostgreSQL at once (heralds, processes,
// store.Open); the default is one. It reserves nothing when the test runs on
// SQLite.
func PostgresHandles(t testing.TB, n int) {
	reservations.Lock()
	reservations.handles[t] = n
	reservations.Unlock()
	t.Cleanup(func() {
		reservations.Lock()
		delete(reservations.handles, t)
		reservations.Unlock()
	})
}

// reservePostgres takes the test's units, waiting while other tests hold
// them; they are given back when the test ends. A test reserves once: further
// calls (a second schema) are covered by its first reservation.
func reservePostgres(t testing.TB) {
	t.Helper()
	reservations.Lock()
	if reservations.held[t] {
		reservations.Unlock()
		return
	}
	n := min(max(reservations.handles[t], 1), postgresUnits)
	reservations.held[t] = true
	reservations.Unlock()

	dir := filepath.Join(os.TempDir(), "herald-test-postgres-units")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("postgres units: %v", err)
	}
	// A test that needs several units takes the queue lock while it waits,
	// and single-unit tests wait behind it, so that it is not starved.
	queue, err := os.OpenFile(filepath.Join(dir, "queue"), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatalf("postgres units: %v", err)
	}
	defer queue.Close()
	start := time.Now()
	var units []*os.File
	if n > 1 {
		if err := syscall.Flock(int(queue.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatalf("postgres units: %v", err)
		}
	}
	for {
		if n > 1 {
			units = takeUnits(t, dir, n)
		} else if syscall.Flock(int(queue.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
			units = takeUnits(t, dir, n)
			syscall.Flock(int(queue.Fd()), syscall.LOCK_UN)
		}
		if units != nil {
			break
		}
		if time.Since(start) > 10*time.Minute {
			t.Fatalf("waited 10 minutes for %d of the %d PostgreSQL units tests share", n, postgresUnits)
		}
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
	}
	syscall.Flock(int(queue.Fd()), syscall.LOCK_UN)
	if waited := time.Since(start); waited > time.Second {
		t.Logf("waited %s for %d PostgreSQL unit(s) (connections are shared with the other tests)", waited.Round(time.Millisecond), n)
	}
	t.Cleanup(func() {
		for _, f := range units {
			f.Close() // releases its lock
		}
		reservations.Lock()
		delete(reservations.held, t)
		reservations.Unlock()
	})
}

// takeUnits locks n unit files, trying them in random order, or none.
func takeUnits(t testing.TB, dir string, n int) []*os.File {
	var got []*os.File
	for _, i := range rand.Perm(postgresUnits) {
		f, err := os.OpenFile(filepath.Join(dir, "unit-"+strconv.Itoa(i)), os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			t.Fatalf("postgres units: %v", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close()
			continue
		}
		if got = append(got, f); len(got) == n {
			return got
		}
	}
	for _, f := range got {
		f.Close()
	}
	return nil
}
