package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	scenarios := fs.String("scenarios", strings.Join(bench.AllScenarios, ","), "scenarios to run: a one webhook, b fan-out to 10, c 200 and 1,000 events/s, d one of 10 never answers, e backlog drain, f POST /v3/licenses at 500/s, g two accounts: B alone and beside A's 50 hanging webhooks, x licenses expiring across 10 s")
	duration := fs.Duration("duration", 10*time.Second, "how long each timed scenario fires")
	backlog := fs.Int("backlog", 200_000, "deliveries queued in scenario e")
	expiries := fs.Int("expiries", 100_000, "licenses expiring across 10 seconds in scenario x")
	clients := fs.Int("clients", 16, "concurrent API clients when firing as fast as the API allows")
	quick := fs.Bool("quick", false, "a smoke run: 1s scenarios, a backlog of 2,000 and 1,000 expiries (overrides --duration, --backlog and --expiries)")
	asJSON := fs.Bool("json", false, "write the report as JSON instead of a table")
	chart := fs.String("chart", "", "also draw the report as an SVG chart in this file")
	profile := fs.String("profile", "", "write a CPU profile of each scenario's herald into this directory, herald-<scenario>.pprof")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{"herald bench", err}
	}
	if fs.NArg() > 0 {
		return usageError{"herald bench", fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *quick {
		*duration, *backlog, *expiries = time.Second, 2000, 1000
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
		Duration: *duration, Backlog: *backlog, Expiries: *expiries, Clients: *clients, Log: stderr, ProfileDir: *profile})
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
