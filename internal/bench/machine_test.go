package bench

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestCPUTimesSince(t *testing.T) {
	c0 := cpuTimes{busy: 100, idle: 50, iowait: 5, stolen: 1, bench: 10, ok: true}
	c := cpuTimes{busy: 106, idle: 51, iowait: 5.5, stolen: 1.2, bench: 11, ok: true}
	got := c.since(c0, 2000)
	want := MachineCPU{Bench: 0.5, Busy: 3, Idle: 0.5, IOWait: 0.25, Stolen: 0.1}
	const eps = 1e-9
	if got == nil || abs(got.Bench-want.Bench) > eps || abs(got.Busy-want.Busy) > eps || abs(got.Idle-want.Idle) > eps ||
		abs(got.IOWait-want.IOWait) > eps || abs(got.Stolen-want.Stolen) > eps {
		t.Errorf("since = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		name  string
		c0, c cpuTimes
		n     int
	}{
		{"no deliveries", c0, c, 0},
		{"first reading failed", cpuTimes{}, c, 10},
		{"last reading failed", c0, cpuTimes{}, 10},
	} {
		if got := tc.c.since(tc.c0, tc.n); got != nil {
			t.Errorf("%s: since = %+v, want nil", tc.name, got)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The machine's busy time holds the bench's own.
func TestReadCPUTimesCountsTheBenchsOwnWork(t *testing.T) {
	c0 := readCPUTimes()
	if !c0.ok {
		t.Fatal("/proc/stat or the bench's own /proc entry could not be read")
	}
	x := 0
	for c := readCPUTimes(); c.bench-c0.bench < 0.2; c = readCPUTimes() {
		for i := range 1_000_000 {
			x ^= i
		}
	}
	c := readCPUTimes()
	// Both are counted in ticks of 10 ms, sampled apart: a few ticks' slack.
	if c.busy-c0.busy < c.bench-c0.bench-0.05 {
		t.Errorf("the machine was busy %.2f s while this process spent %.2f s", c.busy-c0.busy, c.bench-c0.bench)
	}
	_ = x
}

// The machine's table puts each scenario's CPU where it went: what is
// left of the busy time beside herald, PostgreSQL and the bench is the
// rest, and a peer's own time falls there.
func TestWriteTableSaysWhereTheMachinesCPUWent(t *testing.T) {
	r := Report{CPUs: 2, Database: "postgres", Ceiling: 40000, Results: []Result{
		{Scenario: "a", Sender: "herald", Deliveries: 1000, CPUPer1000: 0.30, Postgres: &PGCost{CPUPer1000: 0.20},
			Machine: &MachineCPU{Bench: 0.10, Busy: 0.65, Idle: 0.15, IOWait: 0.05, Stolen: 0.20}},
		{Scenario: "a", Sender: "peer", Deliveries: 1000,
			Machine: &MachineCPU{Bench: 0.10, Busy: 0.50, Idle: 0.50}},
		{Scenario: "b", Sender: "herald", Deliveries: 1000, CPUPer1000: 0.10}, // no reading
	}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(b.String(), "the machine's CPU")
	if !ok {
		t.Fatalf("no machine table:\n%s", b.String())
	}
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) == 10 {
			rows[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
		}
	}
	want := map[string]string{
		"a herald": "0.30 0.20 0.10 0.05 0.15 0.05 0.20 65%",
		"a peer":   "— — 0.10 0.40 0.50 0.00 0.00 50%",
	}
	for k, w := range want {
		if rows[k] != w {
			t.Errorf("%s: %q, want %q\n%s", k, rows[k], w, table)
		}
	}
	if regexp.MustCompile(`(?m)^\s*b\s`).MatchString(table) {
		t.Errorf("a scenario without a reading has a row:\n%s", table)
	}
}

// A peer whose pids were given has its own CPU in both tables, taken out
// of the rest; its peak memory is not the scenario's, so it stays out.
func TestWriteTableGivesAPeersCPUFromItsPIDs(t *testing.T) {
	r := Report{CPUs: 2, Database: "sqlite", Ceiling: 40000, Peer: &Peer{Kind: "outpost", URL: "http://127.0.0.1:3333/api/v1", PIDs: []int{10, 11}},
		Results: []Result{{Scenario: "a", Sender: "peer", Deliveries: 1000, CPUPer1000: 0.25, Ceiling: 40000,
			Machine: &MachineCPU{Bench: 0.10, Busy: 0.50, Idle: 0.50}}}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	main, machine, ok := strings.Cut(b.String(), "the machine's CPU")
	if !ok {
		t.Fatalf("no machine table:\n%s", b.String())
	}
	if !regexp.MustCompile(`(?m)^\s*a\s+peer\s.*\s0\.25\s+—\s+0\s+0\s+0\s*$`).MatchString(main) {
		t.Errorf("the peer's row does not give its CPU (0.25) and no peak memory:\n%s", main)
	}
	if !regexp.MustCompile(`(?m)^\s*a\s+peer\s+0\.25\s+—\s+0\.10\s+0\.15\s+0\.50\s`).MatchString(machine) {
		t.Errorf("the peer's own CPU is not taken out of the rest:\n%s", machine)
	}
}
