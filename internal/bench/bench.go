// Package bench owns `herald bench`: it runs herald as a child process on a
// fresh store, fires events through the real licensing API, receives and
// verifies every delivery on loopback, and reports per scenario the events
// accepted and deliveries made per second, the latency from the API call to
// the verified receipt, herald's CPU time per 1,000 deliveries and its peak
// memory, lost and duplicated deliveries, and each figure against the
// no-store ceiling measured in the same run: the same receiver fed by a bare
// loop that signs and POSTs. It also runs several processes on one
// PostgreSQL database and splits the figures by process, reads PostgreSQL's
// cost per delivery from its counters, drives a second sender (a peer) with
// the same scenarios, times the reads of a seeded long history, and
// measures publishing to RabbitMQ, Kafka and NATS destinations beside each
// broker's own ceiling, a bare producer loop (scenario m, dest.go).
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// Options bound a run.
type Options struct {
	Binary    string        // the herald binary to run as the child
	Database  string        // "": SQLite; a postgres:// URL: a fresh schema of that database per scenario
	Scenarios []string      // of a, b, c, d, e, f, g, x, i, t, p, h, m; AllScenarios when empty
	Duration  time.Duration // how long each timed scenario fires
	Backlog   int           // deliveries queued in scenario e
	Expiries  int           // licenses expiring in scenario x
	// OrderedLicenses is how many licenses fire 10 events each in
	// scenario i (default 1,000).
	OrderedLicenses int
	Clients         int // concurrent API clients when firing as fast as the API allows
	// Processes, when more than 1, runs that many herald processes on one
	// PostgreSQL database in scenarios a to f; the API calls go to them in
	// turn.
	Processes int
	// HistoryLogs is how many completed logs scenario h seeds; HistoryReads
	// how many times it times each read; SeedAnalyze makes PostgreSQL's
	// statistics of the seeded tables (as autovacuum would have of a
	// history that grew over 30 days).
	// Peer, when set, is a second sender each of scenarios a, b, c, d and f
	// is also run against, right after herald (see peer.go).
	Peer         *Peer
	HistoryLogs  int
	HistoryReads int
	SeedAnalyze  bool
	Log          io.Writer // progress, one line per step
	// ProfileDir, when set, receives a CPU profile of each scenario's herald,
	// herald-<scenario>.pprof (its whole life: setup, firing and drain).
	ProfileDir string
	// MetricsDir, when set, receives each scenario's herald's /metrics as it
	// stood at the scenario's end, herald-<scenario>.prom: among them how
	// long claims and recordings took, which is where a dispatcher that
	// falls behind its API spends its time.
	MetricsDir string
	// Brokers are where scenario m's destinations publish.
	Brokers Brokers
}

// Result is one scenario's figures.
type Result struct {
	Scenario string  `json:"scenario"`
	Sender   string  `json:"sender"`                  // herald, or peer
	Ceiling  float64 `json:"ceilingDeliveriesPerSec"` // the run's, beside each figure
	// CeilingOf says what Ceiling is when it is not the run's no-store
	// ceiling: scenario m's broker's own, a bare producer loop.
	CeilingOf        string  `json:"ceilingOf,omitempty"`
	Title            string  `json:"title"`
	Webhooks         int     `json:"webhooks"`
	Events           int     `json:"events"`
	EventsPerSec     float64 `json:"eventsPerSec"`
	Deliveries       int     `json:"deliveries"`
	DeliveriesPerSec float64 `json:"deliveriesPerSec"`
	CeilingFraction  float64 `json:"ceilingFraction"`
	P50MS            float64 `json:"p50Ms"`
	P95MS            float64 `json:"p95Ms"`
	P99MS            float64 `json:"p99Ms"`
	APIP99MS         float64 `json:"apiP99Ms"`
	CPUPer1000       float64 `json:"cpuSecondsPer1000Deliveries"`
	PeakRSSMB        float64 `json:"peakRssMb"`
	Lost             int     `json:"lost"`
	Duplicated       int     `json:"duplicated"`
	BadSignatures    int     `json:"badSignatures"`
	Note             string  `json:"note,omitempty"`
	// Refused counts the API calls that fired nothing the bench counts
	// (Events are those answered 2xx): answered with an error, or not
	// answered at all, other than those the bench stopped itself (scenario
	// e's load at its end). RefusedFor holds the first few distinct
	// reasons.
	Refused    int      `json:"refused"`
	RefusedFor []string `json:"refusedFor,omitempty"`
	// Processes splits a fleet's figures (--processes) by process.
	Processes []ProcessResult `json:"processes,omitempty"`
	// Postgres is what PostgreSQL spent per delivery, on PostgreSQL.
	Postgres *PGCost `json:"postgres,omitempty"`
	// Machine is where the machine's CPU went over the scenario.
	Machine *MachineCPU `json:"machine,omitempty"`
}

// ProcessResult is one process's share of a fleet's figures. Deliveries,
// their rate, latencies and duplicates are of the deliveries it sent (the
// receiver finds the sending process of each connection); Events and Lost
// are of the events whose API call it answered. The processes' Deliveries
// sum to the fleet's.
type ProcessResult struct {
	Process          int     `json:"process"` // 1…N; 0: deliveries whose sender was not found
	Events           int     `json:"events"`
	Deliveries       int     `json:"deliveries"`
	DeliveriesPerSec float64 `json:"deliveriesPerSec"`
	P50MS            float64 `json:"p50Ms"`
	P99MS            float64 `json:"p99Ms"`
	CPUPer1000       float64 `json:"cpuSecondsPer1000Deliveries"` // its CPU from the firing on, over its deliveries
	Lost             int     `json:"lost"`
	Duplicated       int     `json:"duplicated"`
}

// Report is a whole run.
type Report struct {
	Started  time.Time `json:"started"`
	CPUs     int       `json:"cpus"`
	Database string    `json:"database"`
	// Ceiling is the no-store deliveries per second: the bench's own loop
	// signing and POSTing bodies of the same size to the same receiver.
	Ceiling float64 `json:"ceilingDeliveriesPerSec"`
	// Peer is the second sender the scenarios were also run against.
	Peer    *Peer    `json:"peer,omitempty"`
	Results []Result `json:"results"`
	// History is scenario h's reads of a long history.
	History *HistoryReport `json:"history,omitempty"`
}

// AllScenarios in the order they run: the ones a run makes when none is
// named. Scenario h (a long history's reads) runs only when named: its
// seeding takes long; so does m (destinations): it needs RabbitMQ and NATS
// running.
var AllScenarios = []string{"a", "b", "c", "d", "e", "f", "g", "x", "i", "t", "p"}

// Run runs the scenarios and returns their report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if len(o.Scenarios) == 0 {
		o.Scenarios = AllScenarios
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.Clients = max(1, o.Clients)
	rcv, err := newReceiver()
	if err != nil {
		return nil, err
	}
	defer rcv.close()
	rep := &Report{Started: time.Now().UTC(), CPUs: runtime.NumCPU(), Database: "sqlite"}
	if o.Database != "" {
		rep.Database = "postgres"
	}
	if o.Peer != nil {
		p := *o.Peer
		p.Key = "" // a report is shared; the key is not
		rep.Peer = &p
	}
	if slices.ContainsFunc(o.Scenarios, func(s string) bool { return s != "h" && s != "m" }) { // h sends nothing; m has its brokers' ceilings
		fmt.Fprintf(o.Log, "bench: measuring the no-store ceiling\n")
		rep.Ceiling = ceiling(ctx, rcv, min(o.Duration, 5*time.Second))
	}
	o.HistoryLogs, o.HistoryReads = cmp.Or(o.HistoryLogs, 10_000_000), max(1, cmp.Or(o.HistoryReads, 20))
	for _, s := range o.Scenarios {
		if s == "h" {
			h, err := longHistory(ctx, o, rcv)
			rcv.reset()
			if err != nil {
				return rep, fmt.Errorf("scenario h: %w", err)
			}
			rep.History = h
			continue
		}
		run := scenarios[s]
		if run == nil {
			return nil, fmt.Errorf("no scenario %q (there are %s, h and m)", s, strings.Join(AllScenarios, ", "))
		}
		results, err := run(ctx, o, rcv)
		rcv.reset()
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", s, err)
		}
		for _, r := range results {
			r.Sender = cmp.Or(r.Sender, "herald")
			if r.CeilingOf == "" {
				r.Ceiling = rep.Ceiling
			}
			if r.Ceiling > 0 {
				r.CeilingFraction = r.DeliveriesPerSec / r.Ceiling
			}
			fmt.Fprintf(o.Log, "bench: %s (%s): %.0f deliveries/s, p99 %.1f ms, lost %d, duplicated %d\n", r.Scenario, r.Sender, r.DeliveriesPerSec, r.P99MS, r.Lost, r.Duplicated)
			if r.Refused > 0 {
				fmt.Fprintf(o.Log, "bench: %s (%s): %d API calls refused: %s\n", r.Scenario, r.Sender, r.Refused, strings.Join(r.RefusedFor, "; "))
			}
			rep.Results = append(rep.Results, r)
		}
	}
	return rep, nil
}

// benchBody is a payload of about a license.created's size, for the ceiling.
var benchBody = []byte(`{"id":"0193a0b1-0000-7000-8000-000000000000","event":"license.created","data":{"id":"0193a0b1-0000-7000-8000-000000000001","productId":"0193a0b1-0000-7000-8000-000000000002","userId":null,"key":"ABCD-EFGH-IJKL-MNOP","expiresAt":null,"maxActivations":null,"suspended":false,"metadata":{"bench":0},"createdAt":"2026-11-23T08:00:00.000Z","updatedAt":"2026-11-23T08:00:00.000Z"},"triggeredAt":"2026-11-23T08:00:00.000Z"}`)

// ceiling measures deliveries per second with no store: 64 workers (herald's
// per-webhook cap) sign and POST to the receiver for d.
func ceiling(ctx context.Context, rcv *receiver, d time.Duration) float64 {
	const token = "whsec_bench_ceiling_token_0123456789"
	url := rcv.add(-1, token, false)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(benchBody)))
				req.Header.Set("Content-Type", "application/json; charset=utf-8")
				req.Header.Set(webhook.SignatureHeader, webhook.Sign(token, benchBody))
				req.Header.Set(webhook.IDHeader, "ceiling")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 300 {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	rcv.reset()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// percentile of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, int(float64(len(sorted))*p))
	return float64(sorted[i].Microseconds()) / 1000
}

func sortedCopy(d []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s
}
