package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// Help follows one convention: `herald NOUN --help` lists the verbs,
// `herald NOUN VERB --help` the flags, written --name, and never the value
// of a secret taken from the environment.
func TestAPICommandHelp(t *testing.T) {
	t.Parallel()
	const secret = "hrld_do_not_print_me_0123456789"
	env := []string{"HERALD_API_TOKEN=" + secret}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"webhooks", "--help"}, []string{"Usage: herald webhooks VERB [flags]", "  list ", "  get ID ", "  recover ID ", "herald webhooks VERB --help"}},
		{[]string{"logs", "--help"}, []string{"Usage: herald logs VERB [flags]", "  show ID ", "  resend ID "}},
		{[]string{"api-tokens", "--help"}, []string{"  create ", "  revoke ID "}},
		{[]string{"webhooks", "list", "--help"}, []string{"Usage: herald webhooks list [flags]", "  --status STRING", "  --api-token STRING", "$HERALD_API_TOKEN"}},
		{[]string{"logs", "show", "--help"}, []string{"Usage: herald logs show ID [flags]"}},
		{[]string{"webhooks", "recover", "--help"}, []string{"  --since STRING", "2h"}},
		{[]string{"trigger", "--help"}, []string{"Usage: herald trigger KIND [flags]", "license.created"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out := runToEnd(t, env, tt.args...)
			if code != 0 {
				t.Errorf("exit %d; want 0:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("printed\n%s\nwant %q in it", out, w)
				}
			}
			if strings.Contains(out, secret) || strings.Contains(out, "Usage of") || strings.Contains(out, "unknown command") {
				t.Errorf("printed\n%s\nwith the token, Go's usage line or an unknown command", out)
			}
			for _, line := range strings.Split(out, "\n") {
				if l := strings.TrimSpace(line); strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--") {
					t.Errorf("a flag written with one dash: %q", line)
				}
			}
		})
	}
}

// What a newcomer gets wrong is answered with what to do.
func TestAPICommandMistakesSayWhatToDo(t *testing.T) {
	t.Parallel()
	dead := "http://" + freeAddr(t) // nothing listens there
	tests := []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{[]string{"HERALD_SERVER=" + dead}, []string{"webhooks", "list"}, 1, "no herald answers at " + dead},
		{[]string{"HERALD_SERVER=" + dead}, []string{"webhooks", "list"}, 1, "herald serve"},
		{nil, []string{"webhooks", "list", "--server", "127.0.0.1:8080"}, 1, `--server "127.0.0.1:8080": want a URL such as http://`},
		{nil, []string{"webhooks", "frobnicate"}, 2, `unknown verb "frobnicate"; want list, get, create`},
		{nil, []string{"webhooks", "recover", "x", "--since", "yesterday"}, 2, "how long ago, such as 2h"},
		{[]string{"HERALD_SERVER=" + dead}, []string{"trigger", "license.exploded"}, 2, "license.created, license.updated"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out := runToEnd(t, append([]string{"HERALD_API_TOKEN=hrld_x"}, tt.env...), tt.args...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, printed %q; want exit %d and %q", code, out, tt.code, tt.want)
			}
		})
	}
}

// Every webhook call has its verb; lists page with a hint and --json prints
// the API's own answer; a receiver that accepts a forged signature fails
// the check; a log shows the receiver's answer and when the next attempt is.
func TestWebhookVerbsCoverTheAPI(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	p := startServe(t, append(env, "HERALD_RETRY_INTERVAL=1h"), freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	run := runner(t, cli)
	lax := heraldtest.NewReceiver(t) // accepts anything, forged or not
	lax.Status(200, "ok")
	out := run(0, "webhooks", "create", "--name", "lax", "--url", lax.URL, "--events", "license.created")
	id := regexp.MustCompile(`created webhook (\S+)`).FindStringSubmatch(out)[1]

	// The same name and URL again is refused with the way on; --again adds it.
	if out := run(1, "webhooks", "create", "--name", "lax", "--url", lax.URL, "--events", "license.created"); !strings.Contains(out, "webhook "+id+" is already named \"lax\"") || !strings.Contains(out, "herald webhooks update "+id) {
		t.Errorf("a second create printed %q; want it refused, naming the first", out)
	}
	out = run(0, "webhooks", "create", "--name", "lax", "--url", lax.URL, "--events", "license.created", "--again")
	second := regexp.MustCompile(`created webhook (\S+)`).FindStringSubmatch(out)[1]

	if out := run(1, "webhooks", "test", id, "--check-verification"); !strings.Contains(out, "ACCEPTED") || !strings.Contains(out, "accepted a wrongly signed request") {
		t.Errorf("a check against a lax receiver printed %q; want it to fail", out)
	}
	if out := run(0, "webhooks", "test", id); !strings.Contains(out, "answered 200") || !strings.Contains(out, "  | ok") {
		t.Errorf("webhooks test printed %q; want the answer and its body", out)
	}

	// Verbs for every call.
	run(0, "webhooks", "delete", second)
	if out := run(0, "webhooks", "update", id, "--name", "renamed", "--events", "license.created,license.renewed"); !strings.Contains(out, "renamed") || !strings.Contains(out, "license.created,license.renewed") {
		t.Errorf("update printed %q", out)
	}
	if out := run(0, "webhooks", "disable", id); !strings.Contains(out, "false") {
		t.Errorf("disable printed %q", out)
	}
	if out := run(0, "webhooks", "enable", id); !strings.Contains(out, "true") {
		t.Errorf("enable printed %q", out)
	}
	if out := run(0, "webhooks", "get", id); !strings.Contains(out, "Undelivered:") || !strings.Contains(out, "renamed") {
		t.Errorf("get printed %q; want every setting, the undelivered count too", out)
	}
	if out := run(0, "webhooks", "rotate", id, "--overlap", "1h"); !strings.Contains(out, "both sign until") {
		t.Errorf("rotate printed %q", out)
	}
	if out := run(0, "webhooks", "token", id); !strings.Contains(out, "next token: whsec_") {
		t.Errorf("token printed %q; want the next token during a rotation", out)
	}
	if out := run(0, "webhooks", "finish-rotation", id); !strings.Contains(out, "the next token signs alone") {
		t.Errorf("finish-rotation printed %q", out)
	}
	if out := run(0, "webhooks", "recover", id, "--since", "2h", "--dry-run"); !strings.Contains(out, "0 events would be resent") {
		t.Errorf("recover --dry-run printed %q", out)
	}
	if out := run(0, "webhooks", "list", "--status", "healthy"); !strings.Contains(out, id) {
		t.Errorf("list --status healthy printed %q; want the webhook", out)
	}

	// --json is the API's answer: the page, with its cursor, and a newline.
	run(0, "webhooks", "create", "--name", "third", "--url", lax.URL, "--events", "license.created")
	out = run(0, "webhooks", "list", "--json", "--limit", "1")
	var page struct {
		Data       []map[string]any
		NextCursor string
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Data) != 1 || page.NextCursor == "" || !strings.HasSuffix(out, "}\n") {
		t.Fatalf("list --json printed %q (%v); want the API's page", out, err)
	}
	if _, ok := page.Data[0]["undeliveredCount"]; !ok {
		t.Errorf("list --json lacks undeliveredCount: %q", out)
	}
	// The next page's line keeps the page's size, as the logs' does.
	if out := run(0, "webhooks", "list", "--limit", "1"); !strings.Contains(out, "more: herald webhooks list --limit 1 --cursor "+page.NextCursor) {
		t.Errorf("a first page printed %q; want how to read the next, a page of the same size", out)
	}

	// API tokens.
	out = run(0, "api-tokens", "create", "--name", "ci", "--scope", "read", "--expires", "30d")
	m := regexp.MustCompile(`created API token (\S+) \(ci, read\)\ntoken: (hrld_\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("api-tokens create printed %q", out)
	}
	if out := run(0, "api-tokens", "list"); !strings.Contains(out, m[1]) || strings.Contains(out, m[2]) {
		t.Errorf("api-tokens list printed %q; want the token listed without its secret", out)
	}
	run(0, "api-tokens", "revoke", m[1])

	// A failing receiver: the log shows its answer and the next attempt.
	failing := heraldtest.NewReceiver(t)
	failing.Status(503, "database is down for maintenance")
	run(0, "webhooks", "create", "--name", "failing", "--url", failing.URL, "--events", "product.created")
	run(0, "trigger", "product.created")
	var logs struct{ Data []struct{ ID, Status string } }
	heraldtest.Eventually(t, 30*time.Second, "a retrying log", func() bool {
		out := run(0, "logs", "list", "--status", "retrying,FAILED", "--json")
		return json.Unmarshal([]byte(out), &logs) == nil && len(logs.Data) == 1
	})
	out = run(0, "logs", "show", logs.Data[0].ID)
	for _, want := range []string{"attempt 1 (automatic)", ": 503 in", "  | database is down for maintenance", "next attempt: ", "1 attempt\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs show printed\n%s\nwant %q", out, want)
		}
	}
}

// herald accounts works on the database directly: beside no database, and
// beside a herald serve that holds its SQLite file, it says what to do.
func TestAccountsCommandSaysWhatToDoWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	code, out := runToEnd(t, env, "accounts", "list")
	if code != 1 || !strings.Contains(out, "no such database file; herald serve makes it at first start") {
		t.Errorf("no database: exit %d, %q; want where to run it", code, out)
	}
	startServe(t, env, freeAddr(t))
	code, out = runToEnd(t, env, "accounts", "list")
	if code != 1 || !strings.Contains(out, "another herald process is using it") || !strings.Contains(out, "Stop herald serve first, or, while it runs, use the operator API") {
		t.Errorf("beside a running herald: exit %d, %q; want the way on", code, out)
	}
}

// Without --smtp-url herald says at start that emails are not sent, and
// herald emails list shows the ones it kept.
func TestEmailsListShowsKeptEmails(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	p := startServe(t, append(env, "HERALD_MAX_ATTEMPTS=1", "HERALD_SUSPEND_AFTER=1", "HERALD_SMTP_URL="), freeAddr(t))
	if !strings.Contains(p.out.String(), "notification emails are not being sent") {
		t.Errorf("start printed\n%s\nwant the warning that emails are not sent", p.out.String())
	}
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	if code, out := runToEnd(t, cli, "emails", "list"); code != 0 || !strings.Contains(out, "no emails yet") {
		t.Errorf("emails list before any: exit %d, %q", code, out)
	}
	down := heraldtest.NewReceiver(t)
	down.Status(500, "")
	runToEnd(t, cli, "webhooks", "create", "--name", "down", "--url", down.URL, "--events", "license.created")
	runToEnd(t, cli, "trigger", "license.created")
	heraldtest.Eventually(t, 30*time.Second, "the kept suspension email", func() bool {
		code, out := runToEnd(t, cli, "emails", "list")
		return code == 0 && strings.Contains(out, "kept  to ") && strings.Contains(out, `Subject: Webhook "down" suspended`) &&
			strings.Contains(out, "(not sent: no SMTP server configured)")
	})
}

// herald trigger makes test data and, unless told to keep it, deletes it
// afterwards without firing anything: subscribers hear the triggered
// change alone, and the account is left as it was.
func TestTriggerCleansUpItsTestData(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	p := startServe(t, env, freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	rcv := heraldtest.NewReceiver(t)
	kinds := "product.created,product.deleted,license.created,license.deleted,license.renewed,user.created,user.deleted"
	if code, out := runToEnd(t, cli, "webhooks", "create", "--name", "all", "--url", rcv.URL, "--events", kinds); code != 0 {
		t.Fatalf("webhooks create: %d %s", code, out)
	}
	count := func(path string) int {
		var page struct{ Data []any }
		req, _ := http.NewRequest("GET", p.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&page)
		return len(page.Data)
	}
	events := func() []string {
		var kinds []string
		for _, r := range rcv.Requests() {
			var e struct{ Event string }
			json.Unmarshal(r.Body, &e)
			kinds = append(kinds, e.Event)
		}
		slices.Sort(kinds)
		return kinds
	}
	tests := []struct {
		args   []string
		events []string // every event delivered so far
		left   int      // products left
	}{
		{[]string{"trigger", "license.renewed"}, []string{"license.created", "license.renewed", "product.created"}, 0},
		{[]string{"trigger", "product.deleted"}, []string{"license.created", "license.renewed", "product.created", "product.created", "product.deleted"}, 0},
		{[]string{"trigger", "user.created", "--cleanup=false"}, []string{"license.created", "license.renewed", "product.created", "product.created", "product.deleted", "user.created"}, 0},
		{[]string{"trigger", "product.created", "--cleanup=false"}, []string{"license.created", "license.renewed", "product.created", "product.created", "product.created", "product.deleted", "user.created"}, 1},
	}
	for _, tt := range tests {
		if code, out := runToEnd(t, cli, tt.args...); code != 0 {
			t.Fatalf("herald %v: exit %d\n%s", tt.args, code, out)
		}
		heraldtest.Eventually(t, 30*time.Second, fmt.Sprintf("the events of %v", tt.args), func() bool { return len(rcv.Requests()) >= len(tt.events) })
		if got := events(); !slices.Equal(got, tt.events) {
			t.Errorf("after herald %v, delivered %v; want %v", tt.args, got, tt.events)
		}
		if n := count("/v3/products"); n != tt.left {
			t.Errorf("after herald %v, %d products left; want %d", tt.args, n, tt.left)
		}
	}
	if n := count("/v3/users"); n != 1 {
		t.Errorf("%d users left; want the one kept", n)
	}
}
