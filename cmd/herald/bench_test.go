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
				if r.Lost != 0 || r.Duplicated != 0 || r.BadSignatures != 0 || r.Refused != 0 {
					t.Errorf("%s: lost %d, duplicated %d, bad signatures %d, API calls refused %d %q",
						r.Scenario, r.Lost, r.Duplicated, r.BadSignatures, r.Refused, r.RefusedFor)
				}
				if m := r.Machine; m == nil || m.Busy <= 0 || m.Busy+m.Idle+m.Stolen <= 0 {
					t.Errorf("%s: the machine's CPU not read: %+v", r.Scenario, m)
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

// runBench runs `herald bench args… --json` to its end and returns its
// report.
func runBench(t *testing.T, args ...string) bench.Report {
	t.Helper()
	cmd := exec.Command(binary(t), append(append([]string{"bench"}, args...), "--json")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("herald bench: %v\n%s", err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bench said:\n%s", stderr.String())
		}
	})
	return rep
}

// --processes 2 runs two herald processes on one PostgreSQL database: the
// API calls alternate between them, the receiver tells which process sent
// each delivery, and the processes' figures add up to the fleet's. The
// PostgreSQL cost is read from the server's counters: the scenario's one
// webhook means one log row written per delivery.
func TestBenchProcessesSplitsTheFleetByProcess(t *testing.T) {
	t.Parallel()
	binary(t)
	heraldtest.PostgresHandles(t, 2)
	rep := runBench(t, "--database", heraldtest.PostgresURL(t), "--processes", "2", "--scenarios", "a", "--duration", "1s")
	if len(rep.Results) != 1 {
		t.Fatalf("%d results; want 1", len(rep.Results))
	}
	r := rep.Results[0]
	if r.Deliveries == 0 || r.Lost != 0 || r.Duplicated != 0 || r.BadSignatures != 0 || r.Refused != 0 {
		t.Errorf("fleet: %d deliveries, lost %d, duplicated %d, bad signatures %d, API calls refused %d %q",
			r.Deliveries, r.Lost, r.Duplicated, r.BadSignatures, r.Refused, r.RefusedFor)
	}
	if len(r.Processes) != 2 {
		t.Fatalf("processes: %+v; want 1 and 2 (and no deliveries of an unknown sender)", r.Processes)
	}
	var events, deliveries, lost, dup int
	var rate float64
	for i, p := range r.Processes {
		if p.Process != i+1 {
			t.Errorf("process %d is numbered %d", i+1, p.Process)
		}
		if p.Events == 0 {
			t.Errorf("process %d answered no API call", p.Process)
		}
		events, deliveries, lost, dup, rate = events+p.Events, deliveries+p.Deliveries, lost+p.Lost, dup+p.Duplicated, rate+p.DeliveriesPerSec
	}
	if events != r.Events || deliveries != r.Deliveries || lost != r.Lost || dup != r.Duplicated {
		t.Errorf("processes sum to %d events, %d deliveries, %d lost, %d duplicated; the fleet has %d, %d, %d, %d",
			events, deliveries, lost, dup, r.Events, r.Deliveries, r.Lost, r.Duplicated)
	}
	if d := rate - r.DeliveriesPerSec; d > 1 || d < -1 {
		t.Errorf("processes deliver %.1f/s between them; the fleet %.1f/s", rate, r.DeliveriesPerSec)
	}
	pg := r.Postgres
	if pg == nil {
		t.Fatalf("no PostgreSQL cost (note: %s)", r.Note)
	}
	if pg.WALBytesPerDelivery <= 0 || pg.CommitsPerDelivery <= 0 || pg.RowsPerDelivery <= 0 || pg.IndexEntriesPerDelivery <= 0 {
		t.Errorf("cost: %+v", pg)
	}
	if pg.CPUPer1000 == 0 {
		t.Errorf("PostgreSQL's CPU: %v; want a figure, or -1 when the server is not on this machine", pg.CPUPer1000)
	}
	rows := map[string]bench.TableWrites{}
	for _, tw := range pg.Tables {
		rows[tw.Table] = tw
	}
	if logs := rows["webhook_event_logs"]; logs.Inserts != int64(r.Deliveries) || logs.Indexes == 0 {
		t.Errorf("webhook_event_logs: %+v; want %d inserts, one per delivery, and its indexes", logs, r.Deliveries)
	}
	if ev := rows["events"]; ev.Inserts != int64(r.Events) {
		t.Errorf("events: %+v; want %d inserts, one per event (%d calls refused: %q)", ev, r.Events, r.Refused, r.RefusedFor)
	}
	// The setup's writes (the account, the product, its webhook) came
	// before.
	for _, table := range []string{"accounts", "products", "webhooks"} {
		if tw := rows[table]; tw.Inserts != 0 {
			t.Errorf("%s: %+v; the setup's writes are counted in the scenario's", table, tw)
		}
	}
}

// Scenario h seeds the history asked for into a fresh store and times
// every read of it, on each engine; each read answers 200 (a portal read
// is not its sign-in page: redirects are answers).
func TestBenchHistorySeedsAndTimesEachRead(t *testing.T) {
	t.Parallel()
	for _, s := range heraldtest.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			binary(t)
			args := []string{"--scenarios", "h", "--history-logs", "3000", "--history-reads", "2"}
			if s.Name == "postgres" {
				heraldtest.PostgresHandles(t, 1)
				args = append(args, "--database", s.URL(t))
			}
			rep := runBench(t, args...)
			h := rep.History
			if h == nil {
				t.Fatal("no history in the report")
			}
			if h.Logs != 3000 || h.Stored != 3000 || h.Days != 30 {
				t.Errorf("asked %d, stored %d over %d days; want 3000 and 3000 over 30", h.Logs, h.Stored, h.Days)
			}
			surfaces := map[string]int{}
			for _, r := range h.Reads {
				surfaces[r.Surface]++
				if r.Status != 200 || r.Error != "" || r.Tries != 2 || r.P50MS <= 0 || r.P99MS < r.P50MS || r.MaxMS < r.P99MS {
					t.Errorf("%s %s (%s): status %d %s, %d tries, p50 %.1f, p99 %.1f, max %.1f", r.Surface, r.Name, r.Path, r.Status, r.Error, r.Tries, r.P50MS, r.P99MS, r.MaxMS)
				}
			}
			if surfaces["api"] < 10 || surfaces["portal"] < 10 || surfaces["metrics"] != 1 {
				t.Errorf("reads by surface: %v", surfaces)
			}
		})
	}
}

// A peer is driven by the same driver: each scenario runs on herald and
// then on the peer (here another herald, already running), both beside the
// run's ceiling, and the peer is left without the scenario's webhooks.
func TestBenchPeerRunsTheSameScenarios(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	peer := startServe(t, append(env, "HERALD_RATE_LIMIT=0", "HERALD_LOG_LEVEL=warn"), freeAddr(t))
	rep := runBench(t, "--quick", "--scenarios", "a,e", "--peer-url", peer.url, "--peer-key", token)
	if rep.Peer == nil || rep.Peer.URL != peer.url || rep.Peer.Kind != "herald" || rep.Peer.Key != "" {
		t.Errorf("peer in the report: %+v; want its kind and URL, not its key", rep.Peer)
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Scenario+" "+r.Sender)
		if r.Ceiling != rep.Ceiling || r.Ceiling <= 0 {
			t.Errorf("%s %s: ceiling %.0f; the run's is %.0f", r.Scenario, r.Sender, r.Ceiling, rep.Ceiling)
		}
		if r.Deliveries == 0 || r.Lost != 0 || r.Duplicated != 0 || r.BadSignatures != 0 {
			t.Errorf("%s %s: %d deliveries, lost %d, duplicated %d, bad signatures %d", r.Scenario, r.Sender, r.Deliveries, r.Lost, r.Duplicated, r.BadSignatures)
		}
	}
	// e needs herald's own settings: the peer does not run it.
	if strings.Join(got, ", ") != "a herald, a peer, e herald" {
		t.Errorf("results: %s; want a herald, a peer, e herald", strings.Join(got, ", "))
	}
	var hooks struct {
		Data []any `json:"data"`
	}
	call(t, peer.url, token, "GET", "/v3/webhooks", nil, &hooks)
	if len(hooks.Data) != 0 {
		t.Errorf("the peer kept %d of the bench's webhooks", len(hooks.Data))
	}
}

// The bench's new flags refuse what cannot run, naming the flag.
func TestBenchRefusesFlagsThatCannotRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--processes", "2"}, "--processes above 1 needs --database"},
		{[]string{"--processes", "0"}, "--processes must be at least 1"},
		{[]string{"--peer-url", "http://127.0.0.1:1"}, "--peer-url needs --peer-key"},
		{[]string{"--peer-url", "ftp://x", "--peer-key", "k"}, "--peer-url must be an http or https URL"},
		{[]string{"--peer-url", "http://127.0.0.1:1", "--peer-key", "k", "--peer-kind", "other"}, "--peer-kind must be one of herald"},
		{[]string{"--history-logs", "10"}, "--history-logs must be at least 100"},
		{[]string{"--peer-pids", "1"}, "--peer-pids needs --peer-url"},
		{[]string{"--peer-url", "http://127.0.0.1:1", "--peer-key", "k", "--peer-pids", "1,x"}, `--peer-pids: "x" is not a process id`},
		{[]string{"--peer-url", "http://127.0.0.1:1", "--peer-key", "k", "--peer-pids", "999999999"}, "--peer-pids: no process 999999999"},
		{[]string{"--rabbitmq", "amqp://guest:guest@mq.example.com:5672/"}, `--rabbitmq "amqp://guest:xxxxx@mq.example.com:5672/" is not on loopback`},
		{[]string{"--kafka", "10.0.0.7:9092"}, `--kafka "10.0.0.7:9092" is not on loopback`},
		{[]string{"--fan-out-type", "sqs"}, "--fan-out-type must be one of rabbitmq, kafka, nats"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out := runToEnd(t, []string{"HERALD_BENCH_PEER_KEY="}, append([]string{"bench"}, tt.args...)...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, printed %q; want exit 2 and %q", code, out, tt.want)
			}
		})
	}
}
