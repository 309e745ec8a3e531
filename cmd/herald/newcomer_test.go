package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/validator"
	"github.com/heraldhq/herald/webhook"
)

// A command line herald cannot read is refused in its own words, before
// any call is made (nothing listens at the server given: a call would be
// answered "no herald answers"), with exit status 2: JSON that is not
// JSON, a required flag left out, a value out of range, an unknown kind or
// flag.
func TestCommandLineMistakesExitTwoBeforeAnyCall(t *testing.T) {
	t.Parallel()
	dead := "http://" + freeAddr(t)
	env := []string{"HERALD_SERVER=" + dead, "HERALD_API_TOKEN=hrld_x", "HERALD_WEBHOOK_TOKEN="}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"webhooks", "update", "ID", "--filter", "{bad json"}, "herald webhooks update: --filter is not valid JSON: invalid character 'b'"},
		{[]string{"webhooks", "create", "--name", "n", "--url", "https://example.com", "--events", "license.created", "--filter", "{bad json"}, "--filter is not valid JSON"},
		{[]string{"webhooks", "filter-test", "--filter", "{bad", "--payload", "{}"}, "--filter is not valid JSON"},
		{[]string{"webhooks", "filter-test", "--filter", "{}", "--payload", "not json"}, "--payload is not valid JSON"},
		{[]string{"webhooks", "filter-test", "--filter", "{}", "--payload", "@/no/such/file.json"}, "--payload: cannot read /no/such/file.json"},
		{[]string{"webhooks", "create", "--name", "n", "--url", "https://example.com"}, "herald webhooks create: --events is required"},
		{[]string{"webhooks", "create"}, "--name, --url and --events are required"},
		{[]string{"api-tokens", "create"}, "herald api-tokens create: --name is required"},
		{[]string{"listen"}, "herald listen: --token or $HERALD_WEBHOOK_TOKEN is required"},
		{[]string{"listen", "--token", "t", "--port", "99999"}, "--port 99999 is not a port"},
		{[]string{"listen", "--token", "t", "--forward", "localhost:3000"}, `--forward "localhost:3000": want an absolute http or https URL`},
		{[]string{"trigger", "license.bogus"}, `herald trigger: unknown event kind "license.bogus"; want one of license.created, license.updated`},
		{[]string{"version", "--bogus"}, "herald version: flag provided but not defined: --bogus"},
		{[]string{"products", "create"}, "herald products create: --data is required"},
		{[]string{"products", "create", "--data", "{"}, "--data is not valid JSON"},
		{[]string{"licenses", "set-expiry", "ID", "--expires-at", "soon"}, `--expires-at "soon": want a time such as`},
		{[]string{"account", "update"}, "nothing to change"},
		{[]string{"backup"}, "herald backup: --to is required"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out := runToEnd(t, env, tt.args...)
			if code != 2 || !strings.Contains(out, tt.want) || !strings.Contains(out, "--help' for usage") {
				t.Errorf("exit %d, printed %q; want exit 2 and %q with the help hint", code, out, tt.want)
			}
			if strings.Contains(out, "no herald answers") || strings.Contains(out, "MarshalJSON") {
				t.Errorf("printed %q: a call was made, or Go's own error shown", out)
			}
		})
	}
}

// The first start's credentials are held to the rules of every other
// password and token, and refused before herald starts.
func TestBootstrapCredentialsAreChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"HERALD_BOOTSTRAP_PASSWORD=a"}, "HERALD_BOOTSTRAP_PASSWORD must be 12 to 1024 characters"},
		{[]string{"HERALD_BOOTSTRAP_TOKEN=x"}, "HERALD_BOOTSTRAP_TOKEN must be at least 32 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			addr := freeAddr(t)
			code, out := runToEnd(t, append(append(env, "HERALD_ADDR="+addr), tt.env...), "serve")
			if code != 1 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, printed %q; want exit 1 and %q", code, out, tt.want)
			}
			if status, _ := get(t, "http://"+addr+"/readyz"); status != 0 {
				t.Errorf("something answers at %s (%d); want herald not started", addr, status)
			}
		})
	}
}

// A webhook's token rule is said one way: in both commands' help, in the
// API's 422 and in the reference.
func TestTheTokenRuleIsOneRule(t *testing.T) {
	t.Parallel()
	rule := "16 to 256 characters"
	if validator.TokenRule != rule {
		t.Fatalf("validator.TokenRule = %q; this test says %q", validator.TokenRule, rule)
	}
	for _, verb := range []string{"create", "update"} {
		if code, out := runToEnd(t, nil, "webhooks", verb, "--help"); code != 0 || !strings.Contains(out, "--token STRING\n      ") ||
			!strings.Contains(out, rule) || !strings.Contains(out, validator.StandardTokenRule) {
			t.Errorf("webhooks %s --help: exit %d, %q; want the --token rule, %q and %q", verb, code, out, rule, validator.StandardTokenRule)
		}
	}
	ref, err := os.ReadFile("../../internal/openapi/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(ref), rule+" for the `herald` scheme"); n < 2 {
		t.Errorf("the reference says %q of the token %d times; want in WebhookCreate and WebhookUpdate", rule, n)
	}
	env, token := serveEnv(t)
	p := startServe(t, env, freeAddr(t))
	code, out := runToEnd(t, []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token},
		"webhooks", "create", "--name", "n", "--url", "https://example.com/h", "--events", "license.created", "--token", "short")
	if code != 1 || !strings.Contains(out, "422") || !strings.Contains(out, "token: must be "+rule) {
		t.Errorf("a short token: exit %d, %q; want the 422 saying %q", code, out, rule)
	}
}

// The everyday commands say what happened in the user's words: a webhook's
// every setting, the names of the webhooks a log list shows, a rotation
// finished (or none to finish), a rotation already under way named by its
// command, a recovery of nothing not started, a filter that does not match
// exiting 1, and the delivery settings in force at start.
func TestEverydayCommandsSayWhatHappened(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	p := startServe(t, append(env, "HERALD_MAX_ATTEMPTS=3", "HERALD_RETRY_INTERVAL=2m", "HERALD_SUSPEND_AFTER=7"), freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	run := runner(t, cli)
	heraldtest.Eventually(t, 20*time.Second, "the start line", func() bool {
		return strings.Contains(p.out.String(), `msg="herald serving"`)
	})
	if out := p.out.String(); !strings.Contains(out, "allow_private_networks=true max_attempts=3 retry_interval=2m0s attempt_timeout=15s suspend_after=7") {
		t.Errorf("the start line is %q; want the delivery settings in force", out)
	}

	a := startApp(t)
	out := run(0, "webhooks", "create", "--name", "Billing", "--url", a.url, "--events", "license.created",
		"--filter", `{"data.metadata.plan": "pro"}`, "--header", "X-Api-Key: secret-1", "--rate-limit", "20", "--signature-scheme", "standard-webhooks")
	id := regexp.MustCompile(`created webhook (\S+)`).FindStringSubmatch(out)[1]
	out = run(0, "webhooks", "get", id)
	// Each label's value, however wide the column of labels is.
	spaced := regexp.MustCompile(`:[ \t]+`)
	flat := spaced.ReplaceAllString(out, ": ")
	for _, want := range []string{"Name:", "Billing", `Filter: {"data.metadata.plan":"pro"}`, "Headers: X-Api-Key: ********",
		"Signature scheme: standard-webhooks", "Rate limit: 20/s", "Token rotation: none", "Created:", "Status: Healthy"} {
		if !strings.Contains(flat, want) {
			t.Errorf("webhooks get printed\n%s\nwant %q in it", out, want)
		}
	}
	if strings.Contains(out, "secret-1") {
		t.Errorf("webhooks get printed a header's value:\n%s", out)
	}

	// A rotation: none to finish, one started, a second refused with the
	// command that ends the first, then finished.
	if out := run(1, "webhooks", "finish-rotation", id); !strings.Contains(out, "has no token rotation under way: nothing to finish") ||
		!strings.Contains(out, "herald webhooks rotate "+id) {
		t.Errorf("finish-rotation with none under way printed %q", out)
	}
	run(0, "webhooks", "rotate", id, "--overlap", "1h")
	if out := run(1, "webhooks", "rotate", id); !strings.Contains(out, "is already rotating its token") ||
		!strings.Contains(out, "'herald webhooks finish-rotation "+id+"'") || strings.Contains(out, "POST") {
		t.Errorf("a second rotate printed %q; want the command that finishes the first", out)
	}
	if out := run(0, "webhooks", "finish-rotation", id); !strings.Contains(out, "finished "+id+"'s rotation: the next token signs alone") {
		t.Errorf("finish-rotation printed %q", out)
	}

	// A healthy webhook has nothing to recover: no empty recovery is made.
	if out := run(0, "webhooks", "recover", id, "--since", "1h"); !strings.Contains(out, "nothing to resend") {
		t.Errorf("recover of a healthy webhook printed %q", out)
	}
	if out := run(0, "webhooks", "recoveries", id, "--json"); !strings.Contains(out, `"data": []`) {
		t.Errorf("recoveries after recovering nothing: %q; want none", out)
	}

	// A filter that does not match exits 1, so a script can gate on it.
	if out := run(1, "webhooks", "filter-test", "--filter", `{"event": "license.deleted"}`, "--payload", `{"event": "license.created", "data": {}}`); !strings.Contains(out, "matches: false") {
		t.Errorf("a filter that does not match printed %q", out)
	}
	if out := run(0, "webhooks", "filter-test", "--help"); !strings.Contains(out, "1 when it does not") {
		t.Errorf("filter-test --help printed %q; want the exit status explained", out)
	}

	// Logs name their webhooks.
	run(0, "webhooks", "create", "--name", "Audit", "--url", a.url, "--events", "license.created")
	run(0, "trigger", "license.created")
	heraldtest.Eventually(t, 30*time.Second, "the log", func() bool {
		return strings.Contains(run(0, "logs", "list"), "Audit (")
	})
}

// herald listen takes the next token of a rotation, says where a busy port
// is, and has a summary in its help, as herald backup does.
func TestListenTakesTheNextTokenAndNamesABusyPort(t *testing.T) {
	t.Parallel()
	const current, next = "whsec_current_token_0123456789", "whsec_next_token_0123456789ab"
	p := startListen(t, []string{"HERALD_WEBHOOK_TOKEN=" + current, "HERALD_WEBHOOK_NEXT_TOKEN=" + next}, "--port", "0")
	body := []byte(`{"id":"evt-1","event":"license.created","data":{},"triggeredAt":"2026-01-02T03:04:05.000Z"}`)
	for _, token := range []string{next, current, "whsec_some_other_token_01234"} {
		req, _ := http.NewRequest("POST", p.url, bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(token, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusOK
		if token != next && token != current {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want {
			t.Errorf("signed with %s: %d; want %d", token, resp.StatusCode, want)
		}
	}
	heraldtest.Eventually(t, 10*time.Second, "the refused one printed", func() bool {
		return strings.Contains(p.out.String(), "signature does not match the body under either token")
	})

	busy := busyAddr(t)
	port := busy[strings.LastIndex(busy, ":")+1:]
	code, out := runToEnd(t, []string{"HERALD_WEBHOOK_TOKEN=" + current}, "listen", "--port", port)
	if code != 1 || !strings.Contains(out, "--port "+port+": 127.0.0.1:"+port+" is in use") || !strings.Contains(out, "choose another port with --port") {
		t.Errorf("a busy port: exit %d, %q; want the port named with what to do", code, out)
	}
	for cmd, want := range map[string]string{"listen": "A local receiver for building an integration", "backup": "Copy a SQLite herald's database"} {
		if code, out := runToEnd(t, nil, cmd, "--help"); code != 0 || !strings.Contains(out, "\n\n"+want) || !strings.Contains(out, "--next-token STRING") && cmd == "listen" {
			t.Errorf("%s --help: exit %d, %q; want the summary %q", cmd, code, out, want)
		}
	}
}

// A backup into a folder that is not there names the folder, not the file
// the copy is first written to.
func TestBackupNamesAMissingFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := sqliteEnv(t, dir, "")
	if code, out := runToEnd(t, env, "migrate", "--create"); code != 0 {
		t.Fatalf("migrate: %d %s", code, out)
	}
	to := filepath.Join(dir, "missing", "dir", "x.db")
	code, out := runToEnd(t, env, "backup", "--to", to)
	if code != 1 || !strings.Contains(out, "the folder "+filepath.Dir(to)+" does not exist") || strings.Contains(out, ".tmp") {
		t.Errorf("exit %d, printed %q; want the missing folder named", code, out)
	}
}

// The event kinds are listed with what fires them, and each one's schema
// printed; neither needs a token.
func TestEventTypesCommands(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	p := startServe(t, env, freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN="}
	code, out := runToEnd(t, cli, "event-types", "list")
	if code != 0 || !strings.Contains(out, "KIND") || !strings.Contains(out, "license.created") || !strings.Contains(out, "webhook.suspended") {
		t.Errorf("event-types list: exit %d, %q", code, out)
	}
	code, out = runToEnd(t, cli, "event-types", "schema", "license.created")
	var schema map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &schema) != nil || schema["title"] != "license.created" {
		t.Errorf("event-types schema: exit %d, %q", code, out)
	}
	code, out = runToEnd(t, cli, "event-types", "schema", "license.bogus")
	if code != 1 || !strings.Contains(out, "404") || !strings.Contains(out, "license.created, license.updated") {
		t.Errorf("an unknown kind's schema: exit %d, %q; want the 404 naming the kinds", code, out)
	}
}
