package testdb

import (
	"os"
	"testing"
	"time"
)

// BusyFloor is the least patience Eventually grants, whatever its caller
// asks. A caller's patience says how long the wait may take on a machine
// doing nothing else; on a loaded one (CI with a build or another test
// binary on every core) a delivery that takes milliseconds alone can take
// seconds, and a bound is a failing test's patience, never an assertion
// about speed. In a full -race run beside a CPU hog on both cores, no wait
// of a caller asking for 10 s or less took over 3.4 s (one that waits out a
// 3 s attempt time-out); 10 s leaves room for a busier machine. A caller
// that expects longer says so.
const BusyFloor = 10 * time.Second

// Eventually polls cond every 10ms until it holds, and fails the test once
// patience (or BusyFloor, if longer) has passed without it. A wait that took
// more than half the patience it was given is logged, so a test drifting
// towards its bound shows in the log before it fails.
func Eventually(t testing.TB, patience time.Duration, what string, cond func() bool) {
	t.Helper()
	used := max(patience, BusyFloor)
	start := time.Now()
	deadline := start.Add(used)
	for !cond() {
		if time.Now().After(deadline) {
			if used > patience {
				t.Fatalf("timed out after %s waiting for %s (asked for %s; BusyFloor is %s)", used, what, patience, BusyFloor)
			}
			t.Fatalf("timed out after %s waiting for %s", used, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); took > used/2 {
		t.Logf("waited %s of a patience of %s for %s", took.Round(time.Millisecond), used, what)
	}
}

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

// SkipShort skips the test under -short, the quick local run, saying what
// it does that keeps it out: it starts processes (the herald binary, a
// fleet of heralds, Chromium), stops a database, or takes longer than the
// quick run allows. The full suite (CI) runs it: CI never passes -short.
// Unlike SkipUnless it never fails: nothing is missing, the run is short.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("not in -short: " + why)
	}
}
