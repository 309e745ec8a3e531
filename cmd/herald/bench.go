package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/internal/store"
)

// benchCmd runs `herald bench`: herald as a child of this binary on a fresh
// store, measured from outside (see internal/bench).
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("herald bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	database := fs.String("database", "", "PostgreSQL URL to measure on, in a fresh schema per scenario (default: a fresh SQLite file)")
	scenarios := fs.String("scenarios", strings.Join(bench.AllScenarios, ","), "scenarios to run: a one webhook, b fan-out to 10, c 200 and 1,000 events/s, d one of 10 never answers, e backlog drain, f POST /v3/licenses at 500/s, g two accounts: B alone and beside A's 50 hanging webhooks, x licenses expiring across 10 s, i each license's events in order, t one webhook at its rate limit, p events read through the pull channel by 1 and by 10 consumers; and, only when named, h: the API's and portal's reads of a long history (--history-logs), and m: a backlog of events (what the API takes in --duration while the webhooks are held) drained to a RabbitMQ, a Kafka and a NATS destination, and fanned out to 10 of one type (--fan-out-type), each message consumed and verified, the drain beside each broker's own ceiling, a bare producer loop with herald's confirm mode (--rabbitmq, --nats, --kafka)")
	duration := fs.Duration("duration", 10*time.Second, "how long each timed scenario fires (scenario m: queues its backlog)")
	backlog := fs.Int("backlog", 200_000, "deliveries queued in scenario e")
	expiries := fs.Int("expiries", 100_000, "licenses expiring across 10 seconds in scenario x")
	clients := fs.Int("clients", 16, "concurrent API clients when firing as fast as the API allows")
	processes := fs.Int("processes", 1, "herald processes on one PostgreSQL database (needs --database) in scenarios a to f, the API calls spread over them in turn; the report splits each figure by process")
	historyLogs := fs.Int("history-logs", 10_000_000, "completed logs scenario h seeds over 30 days before timing the reads")
	historyReads := fs.Int("history-reads", 20, "how many times scenario h times each read (after one untimed try)")
	seedAnalyze := fs.Bool("seed-analyze", true, "on PostgreSQL, ANALYZE the tables scenario h seeded (as autovacuum would have); false leaves herald to the planner's defaults")
	peerURL := fs.String("peer-url", "", "also run scenarios a, b, c, d and f against this second sender's API (it must reach the bench's receivers on 127.0.0.1): herald's root URL, Outpost's …/api/v1, or Convoy's …/api/v1/projects/<project id>")
	peerKey := fs.String("peer-key", "", "the peer's API key (default: $HERALD_BENCH_PEER_KEY)")
	peerKind := fs.String("peer-kind", "herald", "the peer's kind: "+strings.Join(bench.PeerKinds, ", "))
	peerPIDs := fs.String("peer-pids", "", "comma-separated ids of the peer's processes on this machine, whose CPU time the report gives per 1,000 deliveries (default: not read)")
	rabbitmq := fs.String("rabbitmq", "amqp://guest:guest@127.0.0.1:5672/", "scenario m's RabbitMQ (on loopback)")
	nats := fs.String("nats", "nats://127.0.0.1:4222", "scenario m's NATS server, with JetStream (on loopback)")
	kafka := fs.String("kafka", "", "scenario m's Kafka seed broker, host:port on loopback (default: franz-go's kfake, the Kafka protocol in the bench's process)")
	fanOut := fs.String("fan-out-type", "rabbitmq", "the destination type scenario m fans out to 10 of: "+strings.Join(bench.DestinationTypes, ", "))
	quick := fs.Bool("quick", false, "a smoke run: 1s scenarios, a backlog of 2,000, 1,000 expiries and 100 ordered licenses (overrides --duration, --backlog and --expiries)")
	asJSON := fs.Bool("json", false, "write the report as JSON instead of a table")
	chart := fs.String("chart", "", "also draw the report as an SVG chart in this file")
	profile := fs.String("profile", "", "write a CPU profile of each scenario's herald into this directory, herald-<scenario>.pprof")
	metricsDir := fs.String("metrics", "", "write each scenario's herald's /metrics at its end into this directory, herald-<scenario>.prom")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{"herald bench", err}
	}
	if fs.NArg() > 0 {
		return usageError{"herald bench", fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	orderedLicenses := 1000
	if *quick {
		*duration, *backlog, *expiries, orderedLicenses = time.Second, 2000, 1000, 100
	}
	switch {
	case *duration <= 0:
		return usageError{"herald bench", errors.New("--duration must be positive")}
	case *backlog < 10:
		return usageError{"herald bench", errors.New("--backlog must be at least 10")}
	case *expiries < 1:
		return usageError{"herald bench", errors.New("--expiries must be at least 1")}
	case *clients < 1:
		return usageError{"herald bench", errors.New("--clients must be at least 1")}
	case *historyLogs < 100:
		return usageError{"herald bench", errors.New("--history-logs must be at least 100")}
	case *historyReads < 1:
		return usageError{"herald bench", errors.New("--history-reads must be at least 1")}
	case *processes < 1:
		return usageError{"herald bench", errors.New("--processes must be at least 1")}
	case *processes > 1 && *database == "":
		return usageError{"herald bench", errors.New("--processes above 1 needs --database: processes share a PostgreSQL database, not a SQLite file")}
	}
	brokers := bench.Brokers{RabbitMQ: *rabbitmq, NATS: *nats, Kafka: *kafka, FanOut: *fanOut}
	if err := brokers.CheckLoopback(); err != nil {
		return usageError{"herald bench", err}
	}
	var peer *bench.Peer
	if *peerURL != "" {
		u, err := url.Parse(*peerURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError{"herald bench", errors.New("--peer-url must be an http or https URL")}
		}
		key := *peerKey
		if key == "" {
			key = os.Getenv("HERALD_BENCH_PEER_KEY")
		}
		if key == "" {
			return usageError{"herald bench", errors.New("--peer-url needs --peer-key (or HERALD_BENCH_PEER_KEY)")}
		}
		if !slices.Contains(bench.PeerKinds, *peerKind) {
			return usageError{"herald bench", fmt.Errorf("--peer-kind must be one of %s", strings.Join(bench.PeerKinds, ", "))}
		}
		peer = &bench.Peer{Kind: *peerKind, URL: strings.TrimSuffix(*peerURL, "/"), Key: key}
		if *peerPIDs != "" {
			for _, f := range strings.Split(*peerPIDs, ",") {
				pid, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || pid <= 0 {
					return usageError{"herald bench", fmt.Errorf("--peer-pids: %q is not a process id", f)}
				}
				peer.PIDs = append(peer.PIDs, pid)
			}
			if err := bench.CheckPIDs(peer.PIDs); err != nil {
				return usageError{"herald bench", fmt.Errorf("--peer-pids: %w", err)}
			}
		}
	} else if *peerPIDs != "" {
		return usageError{"herald bench", errors.New("--peer-pids needs --peer-url")}
	}
	if *database != "" {
		if err := store.CheckURL(*database); err != nil || strings.HasPrefix(*database, "sqlite:") {
			return usageError{"herald bench", errors.New("--database must be a postgres:// URL (SQLite is the default)")}
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rep, err := bench.Run(ctx, bench.Options{Binary: self, Database: *database, Scenarios: strings.Split(*scenarios, ","),
		Duration: *duration, Backlog: *backlog, Expiries: *expiries, OrderedLicenses: orderedLicenses, Clients: *clients, Processes: *processes, Peer: peer, Log: stderr,
		HistoryLogs: *historyLogs, HistoryReads: *historyReads, SeedAnalyze: *seedAnalyze, ProfileDir: *profile, MetricsDir: *metricsDir,
		Brokers: brokers})
	if err != nil {
		return err
	}
	if *chart != "" {
		f, err := os.Create(*chart)
		if err != nil {
			return err
		}
		if err := rep.WriteSVG(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}
