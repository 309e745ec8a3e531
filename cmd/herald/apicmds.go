package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/client"
)

// apiFlags are the flags of the commands that call a running herald.
type apiFlags struct {
	server, token *string
	json          *bool
}

func addAPIFlags(e *envFlags) apiFlags {
	return apiFlags{
		server: e.String("server", "HERALD_SERVER", "http://127.0.0.1:8080", "the herald to call"),
		token:  e.String("api-token", "HERALD_API_TOKEN", "", "the account's API token (required)"),
		json:   e.fs.Bool("json", false, "print the API's answer as JSON"),
	}
}

func (f apiFlags) client() (*client.Client, error) {
	if *f.token == "" {
		return nil, errors.New("no API token: pass --api-token or set HERALD_API_TOKEN (printed at herald's first start)")
	}
	return client.New(*f.server, *f.token, nil), nil
}

// parseArgs parses flags that may come before or after the positional
// arguments (herald logs show ID --json), and returns the positionals.
func parseArgs(e *envFlags, args []string, want int, names string) ([]string, error) {
	out := e.fs.Output()
	e.fs.SetOutput(io.Discard)
	e.fs.Usage = func() {}
	defer e.fs.SetOutput(out)
	var pos []string
	for {
		if err := e.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(out, "Usage of %s %s:\n", e.fs.Name(), names)
				e.fs.SetOutput(out)
				e.fs.PrintDefaults()
				return nil, err
			}
			return nil, usageError{e.fs.Name(), err}
		}
		if e.fs.NArg() == 0 {
			break
		}
		pos = append(pos, e.fs.Arg(0))
		args = e.fs.Args()[1:]
	}
	if len(e.errs) > 0 {
		return nil, errors.Join(e.errs...)
	}
	if len(pos) != want {
		return nil, usageError{e.fs.Name(), fmt.Errorf("want %s", cmpOr(names, "no argument"))}
	}
	return pos, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

const apiUsage = `Run against a running herald (--server, $HERALD_SERVER; --api-token, $HERALD_API_TOKEN):
  herald webhooks list [--status S]
  herald webhooks create --name N --url U --events K1,K2 [--token T] [--filter JSON] [--header 'Name: value']... [--signature-scheme herald|standard-webhooks]
  herald webhooks test ID [--event K] [--check-verification]
  herald webhooks filter-test --filter JSON --payload JSON|@FILE
  herald logs list [--webhook ID] [--status S] [--event K] [--event-id ID] [--limit N]
  herald logs show ID
  herald logs resend ID
  herald trigger KIND      make the API calls that fire an event of KIND
`

// apiCommand starts the flags of one of cmd's subcommands, named by
// args[0], with the flags every API command takes.
func apiCommand(cmd, subcommands string, args []string, stderr io.Writer) (*envFlags, apiFlags, error) {
	if len(args) == 0 {
		return nil, apiFlags{}, usageError{cmd, errors.New("name a command: " + subcommands)}
	}
	e := &envFlags{fs: flag.NewFlagSet(cmd+" "+args[0], flag.ContinueOnError)}
	e.fs.SetOutput(stderr)
	return e, addAPIFlags(e), nil
}

func webhooksCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e, af, err := apiCommand("herald webhooks", "list, create, test or filter-test", args, stderr)
	if err != nil {
		return err
	}
	switch args[0] {
	case "list":
		status := e.fs.String("status", "", "only webhooks with this status: Healthy, Unhealthy or Suspended")
		if _, err := parseArgs(e, args[1:], 0, ""); err != nil {
			return err
		}
		c, err := af.client()
		if err != nil {
			return err
		}
		var all []client.Webhook
		f := client.WebhookFilter{Status: *status, ListOptions: client.ListOptions{Limit: 500}}
		for {
			p, err := c.ListWebhooks(ctx, f)
			if err != nil {
				return err
			}
			all = append(all, p.Data...)
			if p.NextCursor == "" {
				break
			}
			f.Cursor = p.NextCursor
		}
		if *af.json {
			return printJSON(stdout, all)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tENABLED\tEVENTS\tURL")
		for _, w := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\n", w.ID, w.Name, w.Status, w.Enabled, strings.Join(w.Events, ","), w.URL)
		}
		return tw.Flush()
	case "create":
		name := e.fs.String("name", "", "the webhook's name (required)")
		url := e.fs.String("url", "", "the receiver's URL (required)")
		events := e.fs.String("events", "", "comma-separated event kinds (required)")
		token := e.fs.String("token", "", "the signing token (default: herald generates one)")
		filter := e.fs.String("filter", "", `a JSON filter on the payload, e.g. '{"data.metadata.plan": "pro"}' (default: none)`)
		scheme := e.fs.String("signature-scheme", "", "how deliveries are signed: herald (default) or standard-webhooks")
		var headers headerFlags
		e.fs.Var(&headers, "header", "a custom header to send with every request, as 'Name: value' (repeatable)")
		if _, err := parseArgs(e, args[1:], 0, ""); err != nil {
			return err
		}
		c, err := af.client()
		if err != nil {
			return err
		}
		var kinds []string
		for k := range strings.SplitSeq(*events, ",") {
			if k = strings.TrimSpace(k); k != "" {
				kinds = append(kinds, k)
			}
		}
		create := client.WebhookCreate{Name: *name, URL: *url, Events: kinds, Token: *token}
		if *filter != "" {
			create.Filter = json.RawMessage(*filter)
		}
		if len(headers) > 0 {
			create.Headers = headers
		}
		create.SignatureScheme = *scheme
		w, err := c.CreateWebhook(ctx, create)
		if err != nil {
			return err
		}
		if *af.json {
			return printJSON(stdout, w)
		}
		fmt.Fprintf(stdout, "created webhook %s (%s)\nsigning token: %s\n", w.ID, w.Name, w.Token)
		return nil
	case "test":
		kind := e.fs.String("event", "", "the event kind of the sample (default: the webhook's first)")
		check := e.fs.Bool("check-verification", false, "also send the sample with a wrong signature and report whether it was refused")
		pos, err := parseArgs(e, args[1:], 1, "a webhook ID")
		if err != nil {
			return err
		}
		c, err := af.client()
		if err != nil {
			return err
		}
		r, err := c.TestWebhook(ctx, pos[0], client.TestRequest{Event: *kind, CheckVerification: *check})
		if err != nil {
			return err
		}
		if *af.json {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "sent a test %s to %s\n", r.Event, r.Request.URL)
		if r.Response != nil {
			fmt.Fprintf(stdout, "answered %d in %d ms\n", r.Response.StatusCode, r.Response.DurationMS)
		}
		if r.Error != "" {
			fmt.Fprintf(stdout, "failed: %s\n", r.Error)
		}
		if v := r.VerificationCheck; v != nil && v.Sent {
			if v.Rejected {
				fmt.Fprintln(stdout, "verification: the wrongly signed sample was refused, as it must be")
			} else {
				fmt.Fprintln(stdout, "verification: the wrongly signed sample was ACCEPTED; the receiver does not verify signatures")
			}
		}
		if !r.Succeeded {
			return errors.New("the test delivery did not succeed")
		}
		return nil
	case "filter-test":
		filter := e.fs.String("filter", "", "the JSON filter (required)")
		payload := e.fs.String("payload", "", "an event's payload as JSON, or @FILE to read it from a file (required; an event log's payload will do)")
		if _, err := parseArgs(e, args[1:], 0, ""); err != nil {
			return err
		}
		c, err := af.client()
		if err != nil {
			return err
		}
		body := []byte(*payload)
		if name, ok := strings.CutPrefix(*payload, "@"); ok {
			if body, err = os.ReadFile(name); err != nil {
				return fmt.Errorf("read payload: %w", err)
			}
		}
		r, err := c.TestFilter(ctx, json.RawMessage(*filter), body)
		if err != nil {
			return err
		}
		if *af.json {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "matches: %t\n%s\n", r.Matches, r.Explanation)
		return nil
	}
	return usageError{"herald webhooks", fmt.Errorf("unknown command %q; want list, create, test or filter-test", args[0])}
}

func logsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e, af, err := apiCommand("herald logs", "list, show or resend", args, stderr)
	if err != nil {
		return err
	}
	switch args[0] {
	case "list":
		var f client.LogFilter
		e.fs.StringVar(&f.WebhookID, "webhook", "", "only this webhook's logs")
		e.fs.StringVar(&f.Status, "status", "", "only logs with this status")
		e.fs.StringVar(&f.Event, "event", "", "only events of this kind")
		e.fs.StringVar(&f.EventID, "event-id", "", "only this event's logs")
		e.fs.IntVar(&f.Limit, "limit", 20, "how many, newest first (at most 500)")
		if _, err := parseArgs(e, args[1:], 0, ""); err != nil {
			return err
		}
		c, err := af.client()
		if err != nil {
			return err
		}
		p, err := c.ListEventLogs(ctx, f)
		if err != nil {
			return err
		}
		if *af.json {
			return printJSON(stdout, p)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tEVENT\tSTATUS\tCODE\tATTEMPTS\tCREATED\tWEBHOOK")
		for _, l := range p.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", l.ID, l.Event, l.Status, code(l.StatusCode), l.AttemptCount,
				l.CreatedAt.Format(time.RFC3339), l.WebhookID)
		}
		return tw.Flush()
	case "show", "resend":
		pos, err := parseArgs(e, args[1:], 1, "an event log ID")
		if err != nil {
			return err
		}
		c, err := af.client()
		if err != nil {
			return err
		}
		var l client.EventLog
		if args[0] == "show" {
			l, err = c.EventLog(ctx, pos[0])
		} else {
			l, err = c.ResendEventLog(ctx, pos[0])
		}
		if err != nil {
			return err
		}
		if *af.json {
			return printJSON(stdout, l)
		}
		fmt.Fprintf(stdout, "log %s: %s %s, %s, webhook %s\n", l.ID, l.Event, l.EventID, l.Status, l.WebhookID)
		for _, a := range l.Attempts {
			fmt.Fprintf(stdout, "  attempt %d (%s) at %s: %s in %d ms", a.Number, a.Trigger, a.SentAt.Format(time.RFC3339), code(a.StatusCode), a.DurationMS)
			if a.Error != nil {
				fmt.Fprintf(stdout, ", %s", *a.Error)
			}
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "payload: %s\n", l.Payload)
		if args[0] == "resend" && len(l.Attempts) > 0 && l.Attempts[len(l.Attempts)-1].Error != nil {
			return errors.New("the resend did not succeed")
		}
		return nil
	}
	return usageError{"herald logs", fmt.Errorf("unknown command %q; want list, show or resend", args[0])}
}

func code(c *int) string {
	if c == nil {
		return "—"
	}
	return fmt.Sprint(*c)
}

func triggerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &envFlags{fs: flag.NewFlagSet("herald trigger", flag.ContinueOnError)}
	e.fs.SetOutput(stderr)
	af := addAPIFlags(e)
	pos, err := parseArgs(e, args, 1, "an event kind: "+strings.Join(client.TriggerKinds, ", "))
	if err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	calls, err := c.Trigger(ctx, pos[0])
	if *af.json {
		if perr := printJSON(stdout, map[string]any{"event": pos[0], "calls": calls}); perr != nil {
			return perr
		}
	} else {
		for _, call := range calls {
			fmt.Fprintln(stdout, call)
		}
	}
	if err != nil {
		return err
	}
	if !*af.json {
		fmt.Fprintf(stdout, "fired %s; see it with: herald logs list --event %s\n", pos[0], pos[0])
	}
	return nil
}

// headerFlags collects repeated --header 'Name: value' flags.
type headerFlags map[string]string

func (h *headerFlags) String() string { return "" }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("%q: want 'Name: value'", v)
	}
	if *h == nil {
		*h = headerFlags{}
	}
	(*h)[strings.TrimSpace(name)] = strings.TrimSpace(value)
	return nil
}
