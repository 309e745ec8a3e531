package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/destination/types"
	"github.com/heraldhq/herald/internal/validator"
)

var webhooksNoun = noun{name: "webhooks", about: "The account's webhooks: the receivers events are sent to.", verbs: []verb{
	{name: "list", op: "GET /v3/webhooks", about: "list the webhooks, newest first, a page at a time", setup: webhooksList},
	{name: "get", args: []string{"ID"}, op: "GET /v3/webhooks/{id}", about: "show one webhook", setup: webhookGet},
	{name: "create", op: "POST /v3/webhooks", about: "add a webhook; prints its signing token", setup: webhookCreate},
	{name: "update", args: []string{"ID"}, op: "PATCH /v3/webhooks/{id}", about: "change a webhook's name, URL, events, token, filter, headers or signature scheme", setup: webhookUpdate},
	{name: "delete", args: []string{"ID"}, op: "DELETE /v3/webhooks/{id}", about: "delete a webhook and its logs", setup: webhookDelete},
	{name: "enable", args: []string{"ID"}, op: "PATCH /v3/webhooks/{id}", about: "send it events again", setup: webhookEnable(true)},
	{name: "disable", args: []string{"ID"}, op: "PATCH /v3/webhooks/{id}", about: "stop sending it events (they are logged as cancelled)", setup: webhookEnable(false)},
	{name: "test", args: []string{"ID"}, op: "POST /v3/webhooks/{id}/test", about: "send a sample event and show the receiver's answer", setup: webhookTest},
	{name: "token", args: []string{"ID"}, op: "GET /v3/webhooks/{id}/token", about: "print the signing token (and the next one during a rotation)", setup: webhookToken},
	{name: "rotate", args: []string{"ID"}, op: "POST /v3/webhooks/{id}/token/rotate", about: "start replacing the signing token, with an overlap", setup: webhookRotate},
	{name: "finish-rotation", args: []string{"ID"}, op: "POST /v3/webhooks/{id}/token/rotate/finish", about: "end the rotation under way now: the next token signs alone", setup: webhookFinishRotation},
	{name: "recover", args: []string{"ID"}, op: "POST /v3/webhooks/{id}/recover", about: "resend, once each, the events a webhook missed", setup: webhookRecover},
	{name: "recoveries", args: []string{"ID"}, op: "GET /v3/webhooks/{id}/recoveries", about: "list a webhook's recoveries and their progress", setup: webhookRecoveries},
	{name: "recovery", args: []string{"ID", "RECOVERY_ID"}, op: "GET /v3/webhooks/{id}/recoveries/{rid}", about: "show one recovery's progress", setup: webhookRecovery(false)},
	{name: "cancel-recovery", args: []string{"ID", "RECOVERY_ID"}, op: "DELETE /v3/webhooks/{id}/recoveries/{rid}", about: "stop a running recovery; resends in flight are still recorded", setup: webhookRecovery(true)},
	{name: "pull-token", args: []string{"ID"}, op: "POST /v3/webhooks/{id}/pull-tokens", about: "make a pull token for a pull webhook: it reads that webhook's events and nothing else", setup: webhookPullToken},
	{name: "events", args: []string{"ID"}, op: "GET /v3/webhooks/{id}/events", about: "read a pull webhook's events after a cursor (herald listen --pull forwards them)", setup: webhookEvents},
	{name: "ack", args: []string{"ID", "CURSOR"}, op: "POST /v3/webhooks/{id}/events/ack", about: "acknowledge a pull webhook's events up to a cursor", setup: webhookAck},
	{name: "filter-test", op: "POST /v3/webhooks/filter-test", about: "say whether a filter matches an event's payload, and why; exit 1 when it does not", setup: webhookFilterTest},
}}

func webhookTable(x *call, hooks ...client.Webhook) func(tw *tabwriter.Writer) {
	return func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tENABLED\tUNDELIVERED\tRATE LIMIT\tEVENTS\tURL")
		for _, w := range hooks {
			rate := "none"
			if w.RateLimit != nil {
				rate = fmt.Sprintf("%d/s", *w.RateLimit)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%d\t%s\t%s\t%s\n", w.ID, w.Name, w.Status, w.Enabled, w.UndeliveredCount, rate, strings.Join(w.Events, ","), w.URL)
		}
	}
}

func webhooksList(e *envFlags) func(x *call) error {
	status := e.fs.String("status", "", "only webhooks with this status: Healthy, Unhealthy or Suspended (any case)")
	limit := e.fs.Int("limit", 50, "how many, at most 500")
	cursor := e.fs.String("cursor", "", "the page after the one that printed this cursor")
	return func(x *call) error {
		p, err := x.c.ListWebhooks(x.ctx, client.WebhookFilter{Status: healthName(*status), ListOptions: client.ListOptions{Limit: *limit, Cursor: *cursor}})
		if err != nil {
			return err
		}
		if err := x.show(webhookTable(x, p.Data...)); err != nil {
			return err
		}
		// The next page keeps the filter and the page's size.
		line := "herald webhooks list"
		if *status != "" {
			line += " --status " + healthName(*status)
		}
		e.fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "limit" {
				line += " --limit " + fl.Value.String()
			}
		})
		x.more(p.NextCursor, line)
		return nil
	}
}

func webhookGet(e *envFlags) func(x *call) error {
	return func(x *call) error {
		w, err := x.c.Webhook(x.ctx, x.pos[0])
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		printWebhook(x.out, w)
		return nil
	}
}

// printWebhook shows every setting of a webhook, one a line, as `get` does:
// what the list's row leaves out (the filter, the headers, the scheme, the
// rotation, when it was made) included. Header values stay masked, as the
// API answers them.
func printWebhook(out io.Writer, w client.Webhook) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	rate := "none"
	if w.RateLimit != nil {
		rate = fmt.Sprintf("%d/s", *w.RateLimit)
	}
	filter := "none"
	if w.HasFilter() {
		var b bytes.Buffer
		if json.Compact(&b, w.Filter) == nil {
			filter = b.String()
		}
	}
	headers := "none"
	if len(w.Headers) > 0 {
		names := slices.Sorted(maps.Keys(w.Headers))
		for i, n := range names {
			names[i] = n + ": " + w.Headers[n]
		}
		headers = strings.Join(names, "\n\t")
	}
	rotation := "none"
	if r := w.TokenRotation; r != nil {
		rotation = fmt.Sprintf("under way since %s; both tokens sign until %s", r.StartedAt.Format(time.RFC3339), r.EndsAt.Format(time.RFC3339))
	}
	rows := [][2]string{
		{"ID", w.ID}, {"Name", w.Name}, {"Type", cmpOr(w.Type, "http")}, {"URL", w.URL}, {"Events", strings.Join(w.Events, ", ")},
		{"Enabled", strconv.FormatBool(w.Enabled)}, {"Status", w.Status}, {"Undelivered", strconv.Itoa(w.UndeliveredCount)},
		{"Filter", filter}, {"Headers", headers}, {"Signature scheme", w.SignatureScheme}, {"Rate limit", rate},
		{"Ordering", orderingText(w)},
	}
	if w.Config != nil {
		b, _ := json.Marshal(w.Config) // secrets come masked
		rows = append(rows, [2]string{"Config", string(b)})
	}
	rows = append(rows, reachRows(w)...)
	rows = append(rows, [][2]string{
		{"Token rotation", rotation}, {"Created", w.CreatedAt.Format(time.RFC3339)}, {"Updated", w.UpdatedAt.Format(time.RFC3339)},
	}...)
	if w.PublicKey != "" {
		rows = append(rows, [2]string{"Public key", w.PublicKey})
		if r := w.TokenRotation; r != nil && r.NextPublicKey != "" {
			rows = append(rows, [2]string{"Next public key", r.NextPublicKey})
		}
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
	}
	tw.Flush()
}

func webhookCreate(e *envFlags) func(x *call) error {
	name := e.fs.String("name", "", "the webhook's name (required)")
	u := e.fs.String("url", "", "the receiver's URL (required for --type http)")
	typ := e.fs.String("type", "", "http (default): POST to --url; pull: no URL, a consumer reads its events (herald listen --pull); or a destination, publishing to a broker: "+strings.Join(types.Names()[1:], ", "))
	config := e.fs.String("config", "", `a destination's config as JSON, e.g. '{"brokers": ["kafka:9092"], "topic": "licensing"}' (docs/destinations.md)`)
	events := e.fs.String("events", "", "comma-separated event kinds (required)")
	token := e.fs.String("token", "", "the signing token: "+validator.TokenRule+"; with --signature-scheme standard-webhooks, "+validator.StandardTokenRule+"; with standard-webhooks-ed25519, "+validator.PrivateKeyRule+" (default: herald makes one)")
	disabled := e.fs.Bool("disabled", false, "create it disabled")
	again := e.fs.Bool("again", false, "create it even when a webhook has this name and URL already")
	filter := e.fs.String("filter", "", `a JSON filter on the payload, e.g. '{"data.metadata.plan": "pro"}' (default: none)`)
	scheme := e.fs.String("signature-scheme", "", "how deliveries are signed: herald (default), standard-webhooks or standard-webhooks-ed25519 (public-key signatures)")
	var rate optRate
	e.fs.Var(&rate, "rate-limit", "the most deliveries per second to send it, 1 to 10000, or none (default: none)")
	var headers headerFlags
	e.fs.Var(&headers, "header", "a custom header to send with every request, as 'Name: value' (repeatable)")
	retry := addRetryFlags(e.fs, "herald webhooks create", false)
	ordering := e.fs.String("ordering", "", "none (default): each event on its own; license: a license's events in the order they fired")
	onFailure := e.fs.String("ordering-on-failure", "", "with --ordering license, what a failed event does to the later ones: hold (default) or continue")
	reach := addReachFlags(e.fs, "herald webhooks create", false)
	var filterJSON json.RawMessage
	var policy *client.RetryPolicy
	var configMap map[string]any
	e.check(func() error {
		destination := *typ != "" && *typ != "http" && *typ != "pull"
		// Named in the order the help gives them: the name, where to
		// (an http webhook's url, a destination's config), the events.
		needs := []string{"name", *name}
		switch {
		case *typ == "pull": // no url, no config: its consumer reads its events
		case destination:
			needs = append(needs, "config", *config)
		default:
			needs = append(needs, "url", *u)
		}
		needs = append(needs, "events", *events)
		if err := required("herald webhooks create", needs...); err != nil {
			return err
		}
		if err := reach.read(false); err != nil {
			return err
		}
		var err error
		if configMap, err = configFlag("herald webhooks create", *config); err != nil {
			return err
		}
		if policy, err = retry.policy(); err != nil {
			return err
		}
		if err := checkOrdering("herald webhooks create", *ordering, *onFailure, true); err != nil {
			return err
		}
		if *filter == "" {
			return nil
		}
		filterJSON, err = jsonFlag("herald webhooks create", "filter", *filter, false)
		return err
	})
	return func(x *call) error {
		if !*again {
			// The same name and URL twice is most often a command run
			// twice: the second webhook gets another token, and its
			// deliveries fail at a receiver that knows the first one.
			f := client.WebhookFilter{ListOptions: client.ListOptions{Limit: 500}}
			for {
				p, err := x.c.ListWebhooks(x.ctx, f)
				if err != nil {
					return err
				}
				for _, w := range p.Data {
					if w.Name == *name && w.URL == *u {
						return fmt.Errorf("webhook %s is already named %q at %s; change it with 'herald webhooks update %s', or pass --again to add a second one",
							w.ID, w.Name, w.URL, w.ID)
					}
				}
				if f.Cursor = p.NextCursor; f.Cursor == "" {
					break
				}
			}
		}
		in := client.WebhookCreate{Name: *name, URL: *u, Events: splitList(*events), Token: *token, SignatureScheme: *scheme,
			Type: *typ, Config: configMap}
		in.Filter = filterJSON
		if len(headers) > 0 {
			in.Headers = headers
		}
		if *disabled {
			in.Enabled = new(bool)
		}
		if rate.v != nil {
			in.RateLimit = *rate.v
		}
		in.RetryPolicy = policy
		in.Ordering, in.OrderingOnFailure = *ordering, *onFailure
		reach.setCreate(&in)
		w, err := x.c.CreateWebhook(x.ctx, in)
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "created webhook %s (%s)\nsigning token: %s\n", w.ID, w.Name, w.Token)
		if w.PublicKey != "" {
			fmt.Fprintf(x.out, "public key: %s (receivers verify with it; the token is the private key)\n", w.PublicKey)
		}
		fmt.Fprintf(x.out, "next: herald trigger %s, then herald logs list --webhook %s\n", cmpOr(firstOf(w.Events), "KIND"), w.ID)
		return nil
	}
}

// orderingText says how a webhook's events are ordered.
func orderingText(w client.Webhook) string {
	if w.Ordering != "license" {
		return cmpOr(w.Ordering, "none")
	}
	return "license (a failed event: " + w.OrderingOnFailure + ")"
}

// checkOrdering checks --ordering and --ordering-on-failure before any
// call; "" is unset, which create takes as the default.
func checkOrdering(command, ordering, onFailure string, create bool) error {
	if ordering != "" && ordering != "none" && ordering != "license" {
		return usageError{command, fmt.Errorf("--ordering %q: want none or license", ordering)}
	}
	if onFailure != "" && onFailure != "hold" && onFailure != "continue" {
		return usageError{command, fmt.Errorf("--ordering-on-failure %q: want hold or continue", onFailure)}
	}
	if create && onFailure != "" && ordering != "license" {
		return usageError{command, errors.New("--ordering-on-failure applies to --ordering license: pass both")}
	}
	return nil
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func webhookUpdate(e *envFlags) func(x *call) error {
	var enabled optBool
	name := e.fs.String("name", "", "a new name")
	u := e.fs.String("url", "", "a new receiver URL")
	events := e.fs.String("events", "", "new comma-separated event kinds, in place of the old")
	token := e.fs.String("token", "", "a new signing token, at once (see rotate for one with an overlap): "+validator.TokenRule+"; with --signature-scheme standard-webhooks, "+validator.StandardTokenRule+"; with standard-webhooks-ed25519, "+validator.PrivateKeyRule)
	e.fs.Var(&enabled, "enabled", "true or false")
	filter := e.fs.String("filter", "", `a new JSON filter on the payload; 'null' removes it`)
	scheme := e.fs.String("signature-scheme", "", "how deliveries are signed: herald, standard-webhooks or standard-webhooks-ed25519 (public-key signatures)")
	var rate optRate
	e.fs.Var(&rate, "rate-limit", "the most deliveries per second to send it, 1 to 10000; none removes the limit")
	var headers headerFlags
	e.fs.Var(&headers, "header", "a custom header, as 'Name: value' (repeatable); the headers given replace the old ones")
	noHeaders := e.fs.Bool("no-headers", false, "remove every custom header")
	retry := addRetryFlags(e.fs, "herald webhooks update", true)
	ordering := e.fs.String("ordering", "", "none: each event on its own; license: a license's events in the order they fired")
	onFailure := e.fs.String("ordering-on-failure", "", "what a failed event of an ordered webhook does to the later ones: hold or continue")
	config := e.fs.String("config", "", `a destination's new config as JSON, or @FILE; a secret given as "********" keeps the stored one`)
	reach := addReachFlags(e.fs, "herald webhooks update", true)
	set := map[string]bool{}
	var filterJSON json.RawMessage
	var policy *client.RetryPolicy
	var configMap map[string]any
	e.check(func() error {
		e.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		var err error
		if configMap, err = configFlag("herald webhooks update", *config); err != nil {
			return err
		}
		if policy, err = retry.policy(); err != nil {
			return err
		}
		if err := checkOrdering("herald webhooks update", *ordering, *onFailure, false); err != nil {
			return err
		}
		if err := reach.read(true); err != nil {
			return err
		}
		if !set["filter"] {
			return nil
		}
		filterJSON, err = jsonFlag("herald webhooks update", "filter", *filter, false)
		return err
	})
	return func(x *call) error {
		var in client.WebhookUpdate
		in.RetryPolicy = policy
		if set["filter"] {
			in.Filter = &filterJSON
		}
		if set["signature-scheme"] {
			in.SignatureScheme = scheme
		}
		if set["header"] || *noHeaders {
			h := map[string]string(headers)
			if h == nil {
				h = map[string]string{}
			}
			in.Headers = &h
		}
		if set["name"] {
			in.Name = name
		}
		if set["url"] {
			in.URL = u
		}
		if set["events"] {
			kinds := splitList(*events)
			in.Events = &kinds
		}
		if set["token"] {
			in.Token = token
		}
		in.Enabled = enabled.v
		in.RateLimit = rate.v
		if set["ordering"] {
			in.Ordering = ordering
		}
		if set["ordering-on-failure"] {
			in.OrderingOnFailure = onFailure
		}
		if reach.tls != nil || reach.oauth2 != nil {
			// PATCH replaces a certificate or client whole: what the flags
			// leave out is the webhook's.
			w, err := x.c.Webhook(x.ctx, x.pos[0])
			if err != nil {
				return err
			}
			reach.merged(w)
		}
		reach.setUpdate(&in)
		in.Config = configMap
		if in.Config == nil && !reach.changes() && in.Ordering == nil && in.OrderingOnFailure == nil && !set["name"] && !set["url"] && !set["events"] && !set["token"] && enabled.v == nil && in.Filter == nil && in.SignatureScheme == nil && in.Headers == nil && in.RateLimit == nil && in.RetryPolicy == nil {
			return usageError{"herald webhooks update", errors.New("nothing to change: pass --name, --url, --events, --token, --enabled, --filter, --header, --no-headers, --signature-scheme, --rate-limit, --max-attempts, --backoff, --retry-interval, --max-retry-interval, --default-retry, --ordering, --ordering-on-failure, --config, --payload, --client-cert, --client-key, --client-ca, --no-client-cert, --oauth2-…, or --no-oauth2")}
		}
		w, err := x.c.UpdateWebhook(x.ctx, x.pos[0], in)
		if err != nil {
			return err
		}
		return x.show(webhookTable(x, w))
	}
}

func webhookEnable(on bool) func(e *envFlags) func(x *call) error {
	return func(e *envFlags) func(x *call) error {
		return func(x *call) error {
			w, err := x.c.UpdateWebhook(x.ctx, x.pos[0], client.WebhookUpdate{Enabled: &on})
			if err != nil {
				return err
			}
			return x.show(webhookTable(x, w))
		}
	}
}

func webhookDelete(e *envFlags) func(x *call) error {
	return func(x *call) error {
		if err := x.c.DeleteWebhook(x.ctx, x.pos[0]); err != nil {
			return err
		}
		if !x.json {
			fmt.Fprintf(x.out, "deleted webhook %s\n", x.pos[0])
		}
		return nil
	}
}

func webhookTest(e *envFlags) func(x *call) error {
	kind := e.fs.String("event", "", "the event kind of the sample (default: the webhook's first)")
	check := e.fs.Bool("check-verification", false, "also send the sample with a wrong signature, and fail unless the receiver refuses it")
	signWith := e.fs.String("sign-with", "", "current or next: the token that signs (next during a rotation)")
	return func(x *call) error {
		r, err := x.c.TestWebhook(x.ctx, x.pos[0], client.TestRequest{Event: *kind, CheckVerification: *check, SignWith: *signWith})
		if err != nil {
			return err
		}
		if x.json {
			if err := x.printAnswer(); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(x.out, "sent a test %s to %s\n", r.Event, r.Request.URL)
			if r.Response != nil {
				fmt.Fprintf(x.out, "answered %d in %d ms\n", r.Response.StatusCode, r.Response.DurationMS)
				printBody(x, r.Response.Body)
			}
			if r.Error != "" {
				fmt.Fprintf(x.out, "failed: %s\n", r.Error)
			}
		}
		v := r.VerificationCheck
		forged := v != nil && v.Sent && !v.Rejected
		if !x.json && v != nil && v.Sent {
			if v.Rejected {
				fmt.Fprintln(x.out, "verification: the wrongly signed sample was refused, as it must be")
			} else {
				fmt.Fprintln(x.out, "verification: the wrongly signed sample was ACCEPTED; the receiver does not verify signatures (docs/receiving.md shows how)")
			}
		}
		switch {
		case !r.Succeeded:
			return errors.New("the test delivery did not succeed")
		case forged:
			return errors.New("the receiver accepted a wrongly signed request")
		}
		return nil
	}
}

// printBody prints the start of a receiver's answer, indented.
func printBody(x *call, body string) {
	if body = strings.TrimRight(body, "\r\n"); body == "" {
		fmt.Fprintln(x.out, "  (empty body)")
		return
	}
	const most = 2000
	if len(body) > most {
		body = body[:most] + " …"
	}
	for line := range strings.SplitSeq(body, "\n") {
		fmt.Fprintf(x.out, "  | %s\n", line)
	}
}

func webhookToken(e *envFlags) func(x *call) error {
	return func(x *call) error {
		token, next, err := x.c.WebhookTokens(x.ctx, x.pos[0])
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "token: %s\n", token)
		if next != "" {
			fmt.Fprintf(x.out, "next token: %s\n", next)
		}
		return nil
	}
}

func rotationLine(x *call, w client.Webhook) error {
	if x.json {
		return x.printAnswer()
	}
	if r := w.TokenRotation; r != nil {
		fmt.Fprintf(x.out, "rotating %s's token: both sign until %s; read the next with 'herald webhooks token %s'\n", w.ID, r.EndsAt.Format(time.RFC3339), w.ID)
	} else {
		fmt.Fprintf(x.out, "webhook %s is signed by one token; no rotation is under way\n", w.ID)
	}
	return nil
}

func webhookRotate(e *envFlags) func(x *call) error {
	overlap := e.fs.Duration("overlap", 24*time.Hour, "how long both tokens sign, from a minute to 30 days")
	return func(x *call) error {
		w, err := x.c.RotateWebhookToken(x.ctx, x.pos[0], *overlap)
		if client.IsStatus(err, http.StatusConflict) {
			// The API names its own call; here the command is what to run.
			until := ""
			if cur, gerr := x.c.Webhook(x.ctx, x.pos[0]); gerr == nil && cur.TokenRotation != nil {
				until = " (both tokens sign until " + cur.TokenRotation.EndsAt.Format(time.RFC3339) + ")"
			}
			return fmt.Errorf("webhook %s is already rotating its token%s: finish that rotation with 'herald webhooks finish-rotation %s', or wait for its end, then rotate again",
				x.pos[0], until, x.pos[0])
		}
		if err != nil {
			return err
		}
		return rotationLine(x, w)
	}
}

func webhookFinishRotation(e *envFlags) func(x *call) error {
	return func(x *call) error {
		// The API finishes nothing quietly when no rotation is under way;
		// the command says so, as the user meant to end one.
		before, err := x.c.Webhook(x.ctx, x.pos[0])
		if err != nil {
			return err
		}
		if before.TokenRotation == nil {
			return fmt.Errorf("webhook %s has no token rotation under way: nothing to finish; start one with 'herald webhooks rotate %s'", x.pos[0], x.pos[0])
		}
		w, err := x.c.FinishWebhookTokenRotation(x.ctx, x.pos[0])
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "finished %s's rotation: the next token signs alone from now, and the old one is erased; read it with 'herald webhooks token %s'\n", w.ID, w.ID)
		return nil
	}
}

func webhookRecover(e *envFlags) func(x *call) error {
	since := e.fs.String("since", "", "events at or after this time: RFC 3339, or how long ago, such as 2h or 3d (required)")
	until := e.fs.String("until", "", "events before this time, as --since (default: now)")
	statuses := e.fs.String("status", "", "failed, cancelled or both, comma-separated (default: both)")
	dry := e.fs.Bool("dry-run", false, "count what would be resent, and send nothing")
	return func(x *call) error {
		now := time.Now()
		if *since == "" {
			return usageError{"herald webhooks recover", errors.New("--since is required: how far back to look, such as 2h, 3d or 2026-01-02T15:04:05Z")}
		}
		s, err := parseSince(*since, now)
		if err != nil {
			return usageError{"herald webhooks recover", fmt.Errorf("--since %w", err)}
		}
		u, err := parseSince(*until, now)
		if err != nil {
			return usageError{"herald webhooks recover", fmt.Errorf("--until %w", err)}
		}
		req := client.RecoverRequest{Since: s, Until: u, Statuses: splitList(*statuses)}
		n, err := x.c.CountRecoverable(x.ctx, x.pos[0], req)
		if err != nil {
			return err
		}
		if *dry {
			if x.json {
				return x.printAnswer()
			}
			fmt.Fprintf(x.out, "%d events would be resent; run again without --dry-run to send them\n", n)
			return nil
		}
		if n == 0 {
			// No recovery is started for nothing: an empty one in the
			// list would only say that something had been resent.
			if x.json {
				return x.printAnswer()
			}
			fmt.Fprintf(x.out, "nothing to resend: webhook %s has no failed or cancelled events in that time; no recovery was started\n", x.pos[0])
			return nil
		}
		r, err := x.c.Recover(x.ctx, x.pos[0], req)
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "recovery %s started: %d events to resend\nfollow it with: herald webhooks recoveries %s\n", r.ID, r.Count, x.pos[0])
		return nil
	}
}

func webhookRecoveries(e *envFlags) func(x *call) error {
	limit := e.fs.Int("limit", 20, "how many, at most 500")
	cursor := e.fs.String("cursor", "", "the page after the one that printed this cursor")
	return func(x *call) error {
		p, err := x.c.ListRecoveries(x.ctx, x.pos[0], client.ListOptions{Limit: *limit, Cursor: *cursor})
		if err != nil {
			return err
		}
		err = x.show(func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tSTATUS\tSENT\tOF\tSUCCEEDED\tFAILED\tSTARTED\tFINISHED")
			for _, r := range p.Data {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.ID, r.Status, r.Sent, r.Count, r.Succeeded, r.Failed,
					r.CreatedAt.Format(time.RFC3339), when(r.FinishedAt))
			}
		})
		x.more(p.NextCursor, "herald webhooks recoveries "+x.pos[0])
		return err
	}
}

func webhookFilterTest(e *envFlags) func(x *call) error {
	e.summary += "\n\nExit status: 0 when the filter matches, 1 when it does not (or herald refused the filter),\n2 for a command line herald cannot read; so a script can gate on it."
	filter := e.fs.String("filter", "", "the JSON filter (required)")
	payload := e.fs.String("payload", "", "an event's payload as JSON, or @FILE to read it from a file (required; an event log's payload will do)")
	var filterJSON, body json.RawMessage
	e.check(func() error {
		const cmd = "herald webhooks filter-test"
		if err := required(cmd, "filter", *filter, "payload", *payload); err != nil {
			return err
		}
		var err error
		if filterJSON, err = jsonFlag(cmd, "filter", *filter, false); err != nil {
			return err
		}
		body, err = jsonFlag(cmd, "payload", *payload, true)
		return err
	})
	return func(x *call) error {
		r, err := x.c.TestFilter(x.ctx, filterJSON, body)
		if err != nil {
			return err
		}
		if x.json {
			err = x.printAnswer()
		} else {
			fmt.Fprintf(x.out, "matches: %t\n%s\n", r.Matches, r.Explanation)
		}
		if err == nil && !r.Matches {
			return errQuiet // the answer said it; exit 1 lets a script gate on it
		}
		return err
	}
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

func webhookRecovery(cancel bool) func(e *envFlags) func(x *call) error {
	return func(e *envFlags) func(x *call) error {
		return func(x *call) error {
			var r client.Recovery
			var err error
			if cancel {
				r, err = x.c.CancelRecovery(x.ctx, x.pos[0], x.pos[1])
			} else {
				r, err = x.c.Recovery(x.ctx, x.pos[0], x.pos[1])
			}
			if err != nil {
				return err
			}
			return x.show(func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ID\tSTATUS\tSENT\tOF\tSUCCEEDED\tFAILED\tSTARTED\tFINISHED")
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.ID, r.Status, r.Sent, r.Count, r.Succeeded, r.Failed,
					r.CreatedAt.Format(time.RFC3339), when(r.FinishedAt))
			})
		}
	}
}

func webhookPullToken(e *envFlags) func(x *call) error {
	return func(x *call) error {
		token, err := x.c.CreatePullToken(x.ctx, x.pos[0])
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "pull token: %s\nshown this once; read with 'herald listen --pull %s --pull-token TOKEN --forward URL'\n", token, x.pos[0])
		return nil
	}
}

func webhookEvents(e *envFlags) func(x *call) error {
	after := e.fs.String("after", "", "the cursor of the last event handled (default: every event not acknowledged)")
	limit := e.fs.Int("limit", 100, "how many, at most 1000")
	wait := e.fs.Duration("wait", 0, "how long to wait for an event when none is ready, at most 50s")
	return func(x *call) error {
		if *limit < 1 || *limit > 1000 {
			return usageError{x.cmd, fmt.Errorf("--limit %d: want 1 to 1000", *limit)}
		}
		if *wait < 0 || *wait > 50*time.Second {
			return usageError{x.cmd, fmt.Errorf("--wait %s: want 0 to 50s", *wait)}
		}
		got, err := x.c.ReadEvents(x.ctx, x.pos[0], client.ReadOptions{After: *after, Limit: *limit, Wait: *wait})
		if err != nil {
			return err
		}
		return x.show(func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "CURSOR\tEVENT\tID\tBYTES")
			for _, ev := range got.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", ev.Cursor, ev.Event, ev.ID, len(ev.Body))
			}
			fmt.Fprintf(tw, "next: --after %s\n", got.Cursor)
		})
	}
}

func webhookAck(e *envFlags) func(x *call) error {
	return func(x *call) error {
		n, err := x.c.AckEvents(x.ctx, x.pos[0], x.pos[1])
		if err != nil {
			return err
		}
		if x.json {
			return x.printAnswer()
		}
		fmt.Fprintf(x.out, "acknowledged %d events of webhook %s up to cursor %s\n", n, x.pos[0], x.pos[1])
		return nil
	}
}

// configFlag reads --config: a JSON object, or @FILE holding one; "" is
// none.
func configFlag(command, value string) (map[string]any, error) {
	if value == "" {
		return nil, nil
	}
	b, err := jsonFlag(command, "config", value, true)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, usageError{command, errors.New("--config must be a JSON object of the destination's fields")}
	}
	return m, nil
}
