package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/client"
)

var logsNoun = noun{name: "logs", about: "Event logs: each event's delivery to one webhook, with every attempt.", verbs: []verb{
	{name: "list", op: "GET /v3/webhook-event-logs", about: "list event logs, newest first, a page at a time", setup: logsList},
	{name: "show", args: []string{"ID"}, op: "GET /v3/webhook-event-logs/{id}", about: "show a log: every attempt, the receiver's answer and the exact payload", setup: logShow(false)},
	{name: "resend", args: []string{"ID"}, op: "POST /v3/webhook-event-logs/{id}/resend", about: "send a log's event again now, with the same bytes", setup: logShow(true)},
	{name: "skip", args: []string{"ID"}, op: "POST /v3/webhook-event-logs/{id}/skip", about: "let the later events of a held log's license go on (the log stays failed)", setup: logSkip},
}}

func logsList(e *envFlags) func(x *call) error {
	var f client.LogFilter
	e.fs.StringVar(&f.WebhookID, "webhook", "", "only this webhook's logs")
	statuses := e.fs.String("status", "", "only logs with these statuses, comma-separated: queued, pending, retrying, succeeded, failed, cancelled")
	e.fs.StringVar(&f.Event, "event", "", "only events of this kind")
	e.fs.StringVar(&f.EventID, "event-id", "", "only this event's logs")
	e.fs.BoolVar(&f.Holding, "holding", false, "only the failed logs that hold their license's later events back (resend or skip them)")
	since := e.fs.String("since", "", "only events at or after this time: RFC 3339, or how long ago, such as 2h or 3d")
	until := e.fs.String("until", "", "only events before this time, as --since")
	e.fs.IntVar(&f.Limit, "limit", 20, "how many, at most 500")
	e.fs.StringVar(&f.Cursor, "cursor", "", "the page after the one that printed this cursor")
	return func(x *call) error {
		var err error
		now := time.Now()
		if f.Since, err = parseSince(*since, now); err != nil {
			return usageError{"herald logs list", fmt.Errorf("--since %w", err)}
		}
		if f.Until, err = parseSince(*until, now); err != nil {
			return usageError{"herald logs list", fmt.Errorf("--until %w", err)}
		}
		for _, s := range splitList(*statuses) {
			f.Statuses = append(f.Statuses, strings.ToLower(s))
		}
		p, err := x.c.ListEventLogs(x.ctx, f)
		if err != nil {
			return err
		}
		names := map[string]string{}
		if !x.json {
			names = webhookNames(x, p.Data)
		}
		err = x.show(func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tEVENT\tSTATUS\tCODE\tATTEMPTS\tCREATED\tWEBHOOK")
			for _, l := range p.Data {
				hook := l.WebhookID
				if n := names[l.WebhookID]; n != "" {
					hook = n + " (" + l.WebhookID + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", l.ID, l.Event, l.Status, code(l.StatusCode), l.AttemptCount,
					l.CreatedAt.Format(time.RFC3339), hook)
			}
		})
		// The next page keeps the filters: repeat every flag given.
		var line []string
		e.fs.Visit(func(fl *flag.Flag) {
			if fl.Name != "cursor" && fl.Name != "json" && fl.Name != "server" && fl.Name != "api-token" {
				line = append(line, "--"+fl.Name, fl.Value.String())
			}
		})
		x.more(p.NextCursor, strings.Join(append([]string{"herald logs list"}, line...), " "))
		return err
	}
}

// webhookNames names the webhooks of a page of logs, one call per webhook;
// a webhook it cannot read (deleted since) keeps its id alone. The answer
// kept for --json is the logs', so it is put back after.
func webhookNames(x *call, logs []client.EventLog) map[string]string {
	names := map[string]string{}
	kept := x.answer
	defer func() { x.answer = kept }()
	for _, l := range logs {
		if _, seen := names[l.WebhookID]; seen {
			continue
		}
		names[l.WebhookID] = ""
		if w, err := x.c.Webhook(x.ctx, l.WebhookID); err == nil {
			names[l.WebhookID] = w.Name
		}
	}
	return names
}

func logShow(resend bool) func(e *envFlags) func(x *call) error {
	return func(e *envFlags) func(x *call) error {
		return func(x *call) error {
			var l client.EventLog
			var err error
			if resend {
				l, err = x.c.ResendEventLog(x.ctx, x.pos[0])
			} else {
				l, err = x.c.EventLog(x.ctx, x.pos[0])
			}
			if err != nil {
				return err
			}
			if x.json {
				if err := x.printAnswer(); err != nil {
					return err
				}
			} else {
				printLog(x.out, l)
			}
			if resend && len(l.Attempts) > 0 && l.Attempts[len(l.Attempts)-1].Error != nil {
				return errors.New("the resend did not succeed")
			}
			return nil
		}
	}
}

func logSkip(e *envFlags) func(x *call) error {
	return func(x *call) error {
		l, err := x.c.SkipEventLog(x.ctx, x.pos[0])
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		printLog(x.out, l)
		return nil
	}
}

func printLog(w io.Writer, l client.EventLog) {
	plural := "s"
	if l.AttemptCount == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "log %s: %s %s, %s, webhook %s, %d attempt%s\n", l.ID, l.Event, l.EventID, l.Status, l.WebhookID, l.AttemptCount, plural)
	x := &call{out: w}
	for _, a := range l.Attempts {
		fmt.Fprintf(w, "attempt %d (%s) at %s: %s in %d ms", a.Number, a.Trigger, a.SentAt.Format(time.RFC3339), code(a.StatusCode), a.DurationMS)
		if a.Error != nil {
			fmt.Fprintf(w, ", %s", *a.Error)
		}
		fmt.Fprintln(w)
		if a.StatusCode != nil {
			printBody(x, a.ResponseBody)
		}
	}
	if l.NextAttemptAt != nil {
		fmt.Fprintf(w, "next attempt: %s (in %s)\n", l.NextAttemptAt.Format(time.RFC3339), max(0, time.Until(*l.NextAttemptAt)).Round(time.Second))
	}
	if l.Holding {
		fmt.Fprintf(w, "holding: its license's later events wait for it; resend it (herald logs resend %s) or skip it (herald logs skip %s)\n", l.ID, l.ID)
	}
	fmt.Fprintf(w, "payload: %s\n", l.Payload)
}

var apiTokensNoun = noun{name: "api-tokens", about: "The account's API tokens: each program's credentials for the API.", verbs: []verb{
	{name: "list", op: "GET /v3/api-tokens", about: "list the tokens: name, scope, who made it, last use and expiry, never a secret", setup: apiTokensList},
	{name: "create", op: "POST /v3/api-tokens", about: "make a token; prints its secret, the one time it is shown", setup: apiTokenCreate},
	{name: "revoke", args: []string{"ID"}, op: "DELETE /v3/api-tokens/{id}", about: "revoke a token: it answers 401 from then on", setup: apiTokenRevoke},
}}

func apiTokensList(e *envFlags) func(x *call) error {
	limit := e.fs.Int("limit", 50, "how many, at most 500")
	cursor := e.fs.String("cursor", "", "the page after the one that printed this cursor")
	return func(x *call) error {
		p, err := x.c.ListAPITokens(x.ctx, client.ListOptions{Limit: *limit, Cursor: *cursor})
		if err != nil {
			return err
		}
		err = x.show(func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tMADE BY\tCREATED\tLAST USED\tEXPIRES")
			for _, t := range p.Data {
				by := "(not recorded)"
				if t.CreatedBy != nil {
					by = t.CreatedBy.Email
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Scope, by, t.CreatedAt.Format(time.RFC3339), when(t.LastUsedAt), when(t.ExpiresAt))
			}
		})
		x.more(p.NextCursor, "herald api-tokens list")
		return err
	}
}

func apiTokenCreate(e *envFlags) func(x *call) error {
	name := e.fs.String("name", "", "what the token is for (required)")
	scope := e.fs.String("scope", "write", "write, or read for GET calls only")
	expires := e.fs.String("expires", "", "when it stops working: RFC 3339, or how long from now, such as 720h or 90d (default: never)")
	e.check(func() error { return required("herald api-tokens create", "name", *name) })
	return func(x *call) error {
		in := client.APITokenCreate{Name: *name, Scope: *scope}
		if *expires != "" {
			now := time.Now()
			ago, err := parseSince(*expires, now)
			if err != nil {
				return usageError{"herald api-tokens create", fmt.Errorf("--expires %w", err)}
			}
			at := ago
			if ago.Before(now) && !strings.Contains(*expires, "T") { // a duration: from now, not ago
				at = now.Add(now.Sub(ago))
			}
			in.ExpiresAt = &at
		}
		t, err := x.c.CreateAPIToken(x.ctx, in)
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "created API token %s (%s, %s)\ntoken: %s\nkeep it now: herald shows it only this once\n", t.ID, t.Name, t.Scope, t.Secret)
		return nil
	}
}

func apiTokenRevoke(e *envFlags) func(x *call) error {
	return func(x *call) error {
		if err := x.c.RevokeAPIToken(x.ctx, x.pos[0]); err != nil {
			return err
		}
		if !x.json {
			fmt.Fprintf(x.out, "revoked API token %s\n", x.pos[0])
		}
		return nil
	}
}

var emailsNoun = noun{name: "emails", about: "The notification emails herald wrote to the account: sent, or kept when herald has no SMTP server.", verbs: []verb{
	{name: "list", op: "GET /v3/emails", about: "list the emails, newest first, with their text", setup: emailsList},
}}

func emailsList(e *envFlags) func(x *call) error {
	limit := e.fs.Int("limit", 10, "how many, at most 500")
	cursor := e.fs.String("cursor", "", "the page after the one that printed this cursor")
	return func(x *call) error {
		p, err := x.c.ListEmails(x.ctx, client.ListOptions{Limit: *limit, Cursor: *cursor})
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		if len(p.Data) == 0 {
			fmt.Fprintln(x.out, "no emails yet: herald writes one when a webhook turns Unhealthy or is suspended")
		}
		for i, m := range p.Data {
			if i > 0 {
				fmt.Fprintln(x.out)
			}
			fmt.Fprintf(x.out, "%s  %s  to %s\nSubject: %s\n", m.CreatedAt.Format(time.RFC3339), m.Status, m.To, m.Subject)
			if m.Note != nil {
				fmt.Fprintf(x.out, "(%s)\n", *m.Note)
			}
			fmt.Fprintf(x.out, "\n%s\n", strings.TrimRight(m.Body, "\n"))
		}
		x.more(p.NextCursor, "herald emails list")
		return nil
	}
}

// triggerCmd is `herald trigger KIND`: a verb of no noun.
func triggerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	v := verb{args: []string{"KIND"}, about: "make the real API calls that fire an event of KIND: " + strings.Join(client.TriggerKinds, ", "),
		setup: func(e *envFlags) func(x *call) error {
			var kind string
			e.check(func() error {
				// An unknown kind is a mistake on the command line: said
				// before any call, with the kinds there are.
				if kind = e.pos[0]; !slices.Contains(client.TriggerKinds, kind) {
					return usageError{"herald trigger", fmt.Errorf("unknown event kind %q; want one of %s", kind, strings.Join(client.TriggerKinds, ", "))}
				}
				return nil
			})
			cleanup := e.fs.Bool("cleanup", true, "delete the product and user the calls made, once the event has fired; they are test data, so that fires nothing (--cleanup=false keeps them)")
			return func(x *call) error {
				kind = x.pos[0]
				calls, err := x.c.TriggerWith(x.ctx, kind, client.TriggerOptions{Cleanup: *cleanup})
				if x.json {
					if perr := printJSON(x.out, map[string]any{"event": kind, "calls": calls}); perr != nil {
						return perr
					}
				} else {
					for _, c := range calls {
						fmt.Fprintln(x.out, c)
					}
				}
				if err != nil {
					return err
				}
				if !x.json {
					fmt.Fprintf(x.out, "fired %s; see it with: herald logs list --event %s\n", kind, kind)
				}
				return nil
			}
		}}
	if len(args) > 0 && (args[0] == "help") {
		args = []string{"--help"}
	}
	return runVerb(ctx, "herald trigger", v, args, stdout, stderr)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
