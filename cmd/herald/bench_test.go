package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// The bench's smoke run, on each engine: every scenario delivers, and
// nothing is lost, delivered twice or badly signed. A speed is never
// asserted: the machine may be busy.
func TestBenchQuickLosesNothing(t *testing.T) {
	t.Parallel()
	for _, s := range heraldtest.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			bin := binary(t)
			args := []string{"bench", "--quick", "--json", "--chart", filepath.Join(t.TempDir(), "bench.svg")}
			if s.Name == "postgres" {
				heraldtest.PostgresHandles(t, 1) // one child herald at a time
				args = append(args, "--database", s.URL(t))
			}
			cmd := exec.Command(bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("herald bench: %v\n%s", err, stderr.String())
			}
			var rep bench.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("--json: %v\n%s", err, stdout.String())
			}
			if rep.Ceiling <= 0 {
				t.Errorf("no ceiling measured")
			}
			seen := map[string]bool{}
			for _, r := range rep.Results {
				seen[r.Scenario[:1]] = true
				if r.Deliveries == 0 || r.Events == 0 {
					t.Errorf("%s: %d events, %d deliveries", r.Scenario, r.Events, r.Deliveries)
				}
				if r.Lost != 0 || r.Duplicated != 0 || r.BadSignatures != 0 {
					t.Errorf("%s: lost %d, duplicated %d, bad signatures %d", r.Scenario, r.Lost, r.Duplicated, r.BadSignatures)
				}
			}
			for _, want := range bench.AllScenarios {
				if !seen[want] {
					t.Errorf("no result for scenario %s", want)
				}
			}
			svg, err := os.ReadFile(args[4])
			if err != nil || !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), "ceiling") {
				t.Errorf("chart: %v\n%.200s", err, svg)
			}
			if t.Failed() {
				t.Logf("bench said:\n%s", stderr.String())
			}
		})
	}
}
