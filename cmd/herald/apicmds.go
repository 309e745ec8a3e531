package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/client"
)

// The commands that call a running herald's API are nouns with verbs
// (herald webhooks list), all alike: flags written --name, in any place
// on the line; `herald NOUN --help` lists the verbs and `herald NOUN VERB
// --help` the flags (never a secret's value); a table by default and, with
// --json, the API's own answer; exit 0 when it worked, 1 when herald
// refused or a check failed, 2 for a command line herald cannot read.
// docs/cli.md writes the same down for users.

// noun is a group of verbs: webhooks, logs, api-tokens...
type noun struct {
	name, about string
	verbs       []verb
}

// verb is one command: its positional arguments, what it does, and setup,
// which registers its flags and returns what runs once they are parsed.
type verb struct {
	name  string
	args  []string // positional arguments, by name: ID, KIND
	op    string   // the API call it makes, as the reference writes it: "GET /v3/webhooks"
	about string
	// public: the call needs no API token (the event kinds).
	public bool
	setup  func(e *envFlags) func(x *call) error
}

// call is one run of a verb: the parsed positionals, the client, and the
// API's latest answer kept for --json.
type call struct {
	cmd    string // "herald webhooks create", for the usage errors a verb finds
	ctx    context.Context
	c      *client.Client
	pos    []string
	out    io.Writer
	json   bool
	answer []byte
}

// show prints the API's latest answer with --json, and otherwise calls table.
func (x *call) show(table func(w *tabwriter.Writer)) error {
	if x.json {
		return x.printAnswer()
	}
	tw := tabwriter.NewWriter(x.out, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// printAnswer prints the API's answer as it came, indented, with a newline.
func (x *call) printAnswer() error {
	var b bytes.Buffer
	if len(x.answer) == 0 {
		return nil
	}
	if err := json.Indent(&b, x.answer, "", "  "); err != nil {
		b.Reset()
		b.Write(x.answer)
	}
	_, err := x.out.Write(append(bytes.TrimRight(b.Bytes(), " \r\n"), '\n'))
	return err
}

// more prints how to read the next page of a list.
func (x *call) more(next, line string) {
	if next != "" && !x.json {
		fmt.Fprintf(x.out, "more: %s --cursor %s\n", line, next)
	}
}

// apiNouns are the API's resources as commands, in the order of help.
var apiNouns = append([]noun{webhooksNoun, logsNoun, apiTokensNoun, emailsNoun, accountNoun, eventTypesNoun}, resourceNouns()...)

func resourceNouns() []noun {
	out := make([]noun, len(resources))
	for i, r := range resources {
		out[i] = r.nounOf()
	}
	return out
}

const apiUsage = `Run against a running herald (--server, $HERALD_SERVER; --api-token, $HERALD_API_TOKEN),
one command for each API call (docs/cli.md lists them):
  herald webhooks VERB     list, get, create, update, delete, enable, disable,
                           test, token, rotate, finish-rotation, recover,
                           recoveries, recovery, cancel-recovery, filter-test
  herald logs VERB         list, show, resend
  herald api-tokens VERB   list, create, revoke
  herald emails list       the notification emails herald wrote, sent or kept
  herald account VERB      show, update
  herald event-types VERB  list, schema
  herald products VERB     list, get, create, update, delete
  herald users VERB        list, get, create, update, delete
  herald licenses VERB     list, get, create, update, delete, renew, set-expiry
  herald activations VERB  list, get, create, delete
  herald releases VERB     list, get, create, delete, add-file, delete-file
  herald trial-activations VERB
                           list, get, create, delete
  herald trigger KIND      make the API calls that fire an event of KIND
`

// apiFlags are the flags of the commands that call a running herald.
type apiFlags struct {
	server, token *string
	json          *bool
}

func addAPIFlags(e *envFlags) apiFlags {
	e.Group("Every API command")
	return apiFlags{
		server: e.String("server", "HERALD_SERVER", "http://127.0.0.1:8080", "the herald to call"),
		// Its value is never shown: help prints the variable's name only.
		token: e.String("api-token", "HERALD_API_TOKEN", "", "the account's API token (required; printed at herald's first start)"),
		json:  e.Bool("json", "", false, "print the API's answer as JSON instead of a table"),
	}
}

func (f apiFlags) client() (*client.Client, error) {
	if *f.server == "" { // HERALD_SERVER= set empty means the default
		*f.server = "http://127.0.0.1:8080"
	}
	u, err := url.Parse(*f.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want a URL such as http://127.0.0.1:8080", *f.server)
	}
	if *f.token == "" {
		return nil, errors.New("no API token: pass --api-token or set HERALD_API_TOKEN (printed at herald's first start; more in the portal under Settings → API tokens)")
	}
	return client.New(*f.server, *f.token, nil), nil
}

// nounCmd runs one of n's verbs, or lists them.
func nounCmd(ctx context.Context, n noun, args []string, stdout, stderr io.Writer) error {
	cmd := "herald " + n.name
	names := make([]string, len(n.verbs))
	for i, v := range n.verbs {
		names[i] = v.name
	}
	if len(args) == 0 {
		nounUsage(stderr, n)
		return usageError{cmd, errors.New("name a verb: " + strings.Join(names, ", "))}
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		nounUsage(stdout, n)
		return nil
	}
	i := slices.IndexFunc(n.verbs, func(v verb) bool { return v.name == args[0] })
	if i < 0 {
		return usageError{cmd, fmt.Errorf("unknown verb %q; want %s", args[0], strings.Join(names, ", "))}
	}
	return runVerb(ctx, cmd, n.verbs[i], args[1:], stdout, stderr)
}

func nounUsage(w io.Writer, n noun) {
	fmt.Fprintf(w, "Usage: herald %s VERB [flags]\n\n%s\n\nVerbs:\n", n.name, n.about)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range n.verbs {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(v.name+" "+strings.Join(v.args, " ")), v.about)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'herald %s VERB --help' for a verb's flags.\n", n.name)
}

// runVerb parses a verb's flags, which may come before or after its
// positionals (herald logs show ID --json), and runs it.
func runVerb(ctx context.Context, cmd string, v verb, args []string, stdout, stderr io.Writer) error {
	name := strings.TrimSpace(cmd + " " + v.name)
	e := &envFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	e.synopsis = strings.TrimSpace(name + " " + strings.Join(v.args, " "))
	e.summary = v.about
	if v.op != "" {
		e.summary += " (" + v.op + ")"
	}
	e.fs.SetOutput(stderr)
	run := v.setup(e)
	af := addAPIFlags(e)
	e.fs.SetOutput(io.Discard)
	e.fs.Usage = func() {}
	var pos []string
	for {
		if err := e.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.usage(stdout)
				return err
			}
			return usageError{name, err}
		}
		if e.fs.NArg() == 0 {
			break
		}
		pos = append(pos, e.fs.Arg(0))
		args = e.fs.Args()[1:]
	}
	if len(e.errs) > 0 {
		return errors.Join(e.errs...)
	}
	if len(pos) != len(v.args) {
		want := "no argument"
		if len(v.args) > 0 {
			want = strings.Join(v.args, " ")
		}
		return usageError{name, fmt.Errorf("want %s, got %d argument(s)", want, len(pos))}
	}
	e.pos = pos
	if err := e.runChecks(); err != nil {
		return err
	}
	if v.public && *af.token == "" {
		*af.token = "-" // sent, and not read: these calls need none
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	x := &call{cmd: name, c: c, pos: pos, out: stdout, json: *af.json}
	x.ctx = client.WithAnswer(ctx, &x.answer)
	return explain(run(x), *af.server)
}

// explain turns a failure to reach herald into what to do about it.
func explain(err error, server string) error {
	var op *net.OpError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("no herald answers at %s (%v): is it running? Start it with 'herald serve', or name another with --server or HERALD_SERVER", server, op.Err)
	}
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status == 401 {
		return fmt.Errorf("%w\nCheck --api-token or HERALD_API_TOKEN: it must be one of this account's API tokens (the operator token calls /v3/operator/ only)", err)
	}
	return err
}

// jsonFlag reads a flag that takes JSON, or, with fromFile, @FILE to read
// it from a file. Text that is not JSON is refused in the flag's words,
// before any call: the API would never see it.
func jsonFlag(cmd, name, value string, fromFile bool) (json.RawMessage, error) {
	b := []byte(value)
	if file, ok := strings.CutPrefix(value, "@"); ok && fromFile {
		var err error
		if b, err = os.ReadFile(file); err != nil {
			return nil, usageError{cmd, fmt.Errorf("--%s: cannot read %s: %w", name, file, errors.Unwrap(err))}
		}
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, usageError{cmd, fmt.Errorf("--%s is not valid JSON: %v", name, err)}
	}
	return b, nil
}

// required refuses a command line that leaves out required flags, naming
// every one missing; flags are pairs of a flag's name and its value.
func required(cmd string, flags ...string) error {
	var missing []string
	for i := 0; i+1 < len(flags); i += 2 {
		if strings.TrimSpace(flags[i+1]) == "" {
			missing = append(missing, "--"+flags[i])
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usageError{cmd, fmt.Errorf("%s is required", missing[0])}
	}
	return usageError{cmd, fmt.Errorf("%s and %s are required", strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1])}
}

// splitList reads a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for k := range strings.SplitSeq(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// healthName writes a webhook status as the API does, whatever its case.
func healthName(s string) string {
	for _, h := range []string{"Healthy", "Unhealthy", "Suspended"} {
		if strings.EqualFold(s, h) {
			return h
		}
	}
	return s
}

// parseSince reads a time as RFC 3339 or as a duration ago: 2h, 90m, 3d.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == days {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want a time such as 2026-01-02T15:04:05Z, or how long ago, such as 2h, 90m or 3d", s)
}

func code(c *int) string {
	if c == nil {
		return "—"
	}
	return fmt.Sprint(*c)
}

func when(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.Format(time.RFC3339)
}

// optBool reads a flag that is true, false or unset.
type optBool struct{ v *bool }

func (o *optBool) String() string {
	if o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *optBool) Set(s string) error {
	var b bool
	switch strings.ToLower(s) {
	case "true", "yes", "1":
		b = true
	case "false", "no", "0":
	default:
		return errors.New("want true or false")
	}
	o.v = &b
	return nil
}

// optRate is a rate limit flag: deliveries per second, or none (0), and
// whether it was given. The API checks the range (1 to 10000).
type optRate struct{ v *int }

func (o *optRate) String() string {
	switch {
	case o.v == nil:
		return ""
	case *o.v == 0:
		return "none"
	}
	return strconv.Itoa(*o.v)
}

func (o *optRate) Set(s string) error {
	n := 0
	if !strings.EqualFold(s, "none") {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n == 0 {
			return errors.New("want a whole number of deliveries per second, or none")
		}
	}
	o.v = &n
	return nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// parseArgs parses flags that may come before or after the positional
// arguments (herald accounts delete ID --force), and returns the
// positionals; names says what they are, for help and mistakes.
func parseArgs(e *envFlags, args []string, want int, names string) ([]string, error) {
	out := e.fs.Output()
	e.fs.SetOutput(io.Discard)
	e.fs.Usage = func() {}
	defer e.fs.SetOutput(out)
	var pos []string
	for {
		if err := e.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.synopsis = e.fs.Name()
				if want == 1 {
					e.synopsis += " ID"
				}
				e.usage(out)
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
