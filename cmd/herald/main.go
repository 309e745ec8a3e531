// Command herald is the webhook notification service: `herald serve` runs the
// API and delivers events; `herald listen` is a local receiver for people
// building an integration; `herald migrate` applies schema migrations;
// `herald version` prints the version; `herald webhooks`, `herald logs`,
// `herald api-tokens` and `herald trigger` call a running herald's API
// through package client;
// `herald accounts` manages accounts on the database directly; `herald
// backup` and `herald restore` copy a SQLite database with its key, and
// bring a copy back.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/heraldhq/herald/internal/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var usage usageError
	switch {
	case errors.Is(err, flag.ErrHelp): // -h: the flags have been printed
	case errors.Is(err, errQuiet):
		os.Exit(1)
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "herald:", err)
		os.Exit(1)
	}
}

const usage = `herald: webhook notifications for a licensing account

Usage:
  herald serve   [flags]   run the API and deliver events
  herald listen  --token T [--next-token T] [--port P] [--forward URL]
                           a local receiver that verifies and prints deliveries
  herald listen  --pull ID --forward URL [--pull-token T] [--server URL]
                           read a pull webhook's events and forward them to your app
  herald migrate [flags]   apply database migrations and exit
  herald backup  --to FILE [flags]
                           copy a SQLite herald, running or not, with its key
                           (FILE.key); on PostgreSQL use pg_dump
  herald restore --from FILE [--force] [flags]
                           put such a copy in place of the database, herald stopped
  herald bench   [flags]   measure herald on this machine (loopback only)
  herald version           print the version

` + apiUsage + `
` + accountsUsage + `
Run "herald COMMAND --help" for a command's flags. Every serve flag can also be
set by the environment variable shown with it.
`

// errQuiet ends a command with exit status 1 and nothing more printed: what
// it printed already says why (a filter that does not match).
var errQuiet = errors.New("the check failed")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{cmd: "herald", err: errors.New("name a command")}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, stdout, stderr)
	case "bench":
		return benchCmd(ctx, rest, stdout, stderr)
	case "listen":
		return listenCmd(ctx, rest, stdout, stderr)
	case "trigger":
		return triggerCmd(ctx, rest, stdout, stderr)
	case "accounts":
		return accountsCmd(ctx, rest, stdout, stderr)
	case "backup":
		return backupCmd(ctx, rest, stdout, stderr)
	case "restore":
		return restoreCmd(ctx, rest, stdout, stderr)
	case "version", "--version", "-v":
		e := &envFlags{fs: flag.NewFlagSet("herald version", flag.ContinueOnError), summary: "print the version"}
		e.fs.SetOutput(stdout)
		if err := parse(e, rest); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "herald", server.VersionString())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		for _, n := range apiNouns {
			if n.name == cmd {
				return nounCmd(ctx, n, rest, stdout, stderr)
			}
		}
		return usageError{cmd: "herald", err: fmt.Errorf("unknown command %q", cmd)}
	}
}
