package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/openapitest"
)

// noCommand are the API calls docs/cli.md says have no command, each for
// its reason there: the operator's calls (herald accounts does the same on
// the database), the reference itself, the public signing keys (what
// receivers fetch) and the probes. A call added to
// the reference must get a command, or be added here and there.
var noCommand = []string{
	"DELETE /v3/operator/accounts/{id}",
	"GET /healthz",
	"GET /metrics",
	"GET /readyz",
	"GET /v3/openapi.json",
	"GET /v3/operator/accounts",
	"GET /v3/signing-keys",
	"PATCH /v3/operator/accounts/{id}",
	"POST /v3/operator/accounts",
	"POST /v3/operator/accounts/{id}/portal-link",
}

var callRow = regexp.MustCompile("^\\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` \\| (.+) \\|$")

// "Every API call has its command": each operation of the reference is a
// row of docs/cli.md's table, with its commands or "none"; each command
// there runs, says in its help the call it makes, and refuses a flag it
// does not know (exit 2). The calls with none are exactly noCommand.
func TestEveryAPICallHasItsCommand(t *testing.T) {
	t.Parallel()
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)

	page, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	commands := map[string][]string{} // call → commands
	var none []string
	for line := range strings.SplitSeq(string(page), "\n") {
		m := callRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		op := m[1] + " " + m[2]
		if _, dup := commands[op]; dup || slices.Contains(none, op) {
			t.Errorf("docs/cli.md lists %s twice", op)
		}
		if strings.HasPrefix(m[3], "none: ") {
			none = append(none, op)
			continue
		}
		for _, c := range regexp.MustCompile("`(herald [^`]+)`").FindAllStringSubmatch(m[3], -1) {
			commands[op] = append(commands[op], c[1])
		}
		if len(commands[op]) == 0 {
			t.Errorf("docs/cli.md: %s has neither a command nor none: %q", op, m[3])
		}
	}
	slices.Sort(none)
	if !slices.Equal(none, noCommand) {
		t.Errorf("docs/cli.md gives no command for %v; want exactly %v", none, noCommand)
	}
	for _, op := range ops {
		if _, ok := commands[op]; !ok && !slices.Contains(none, op) {
			t.Errorf("%s: in the reference, not in docs/cli.md's table of calls and commands", op)
		}
	}
	for op := range commands {
		if !slices.Contains(ops, op) {
			t.Errorf("docs/cli.md lists %s, which the reference does not have", op)
		}
	}

	for op, cmds := range commands {
		for _, c := range cmds {
			t.Run(c+" "+op, func(t *testing.T) {
				t.Parallel()
				args := strings.Fields(c)[1:]
				code, out := runToEnd(t, nil, append(args, "--help")...)
				if code != 0 || !strings.Contains(out, "Usage: "+c) || !strings.Contains(out, "("+op+")") {
					t.Errorf("%s --help: exit %d, printed\n%s\nwant its usage, naming %s", c, code, out, op)
				}
				code, out = runToEnd(t, nil, append(args, "--no-such-flag")...)
				if code != 2 || !strings.Contains(out, "flag provided but not defined: --no-such-flag") {
					t.Errorf("%s --no-such-flag: exit %d, %q; want the flag refused, exit 2", c, code, out)
				}
			})
		}
	}
}

// The commands of the licensing resources, the account and a recovery make
// their calls against a real herald: fields given as JSON (or @FILE), lists
// as tables, answers as the API gave them, refusals naming the field.
func TestLicensingAccountAndRecoveryCommands(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	// One attempt: a failed delivery is at once a log to recover; a held
	// resend outlasts a slow machine.
	p := startServe(t, append(env, "HERALD_MAX_ATTEMPTS=1", "HERALD_ATTEMPT_TIMEOUT=5m"), freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	run := runner(t, cli)
	idOf := func(out string) string {
		t.Helper()
		var v struct{ ID, Key string }
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
			t.Fatalf("want a resource with an id; got %q (%v)", out, err)
		}
		return v.ID
	}

	if out := run(0, "account", "show"); !strings.Contains(out, "Notification email:") || !strings.Contains(out, "Expiring-soon lead:") {
		t.Errorf("account show printed %q", out)
	}
	if out := run(0, "account", "update", "--expiring-soon-lead", "48h"); !strings.Contains(out, "48h") {
		t.Errorf("account update printed %q; want the new lead time", out)
	}
	if out := run(1, "account", "update", "--expiring-soon-lead", "1s"); !strings.Contains(out, "422") || !strings.Contains(out, "expiringSoonLeadSeconds") {
		t.Errorf("a lead time out of range: %q; want the 422 naming the field", out)
	}

	file := filepath.Join(t.TempDir(), "product.json")
	os.WriteFile(file, []byte(`{"name": "Pro", "metadata": {"tier": "gold"}}`), 0o600)
	product := idOf(run(0, "products", "create", "--data", "@"+file))
	if out := run(0, "products", "list"); !strings.Contains(out, "ID") || !strings.Contains(out, "NAME") || !strings.Contains(out, product) || !strings.Contains(out, "Pro") {
		t.Errorf("products list printed %q", out)
	}
	if out := run(0, "products", "update", product, "--data", `{"name": "Pro 2"}`); !strings.Contains(out, `"name": "Pro 2"`) {
		t.Errorf("products update printed %q", out)
	}
	if out := run(1, "products", "create", "--data", `{}`); !strings.Contains(out, "422") || !strings.Contains(out, "name") {
		t.Errorf("a product without a name: %q; want the 422 naming the field", out)
	}
	user := idOf(run(0, "users", "create", "--data", `{"email": "buyer@example.com"}`))
	out := run(0, "licenses", "create", "--data", `{"productId": "`+product+`", "userId": "`+user+`", "validity": 30}`)
	license := idOf(out)
	var lic struct{ Key string }
	json.Unmarshal([]byte(out), &lic)
	if out := run(0, "licenses", "list", "--product", product); !strings.Contains(out, license) {
		t.Errorf("licenses list --product printed %q", out)
	}
	run(0, "licenses", "renew", license)
	if out := run(0, "licenses", "set-expiry", license, "--expires-at", "2030-01-02T03:04:05Z"); !strings.Contains(out, "2030-01-02T03:04:05") {
		t.Errorf("licenses set-expiry printed %q", out)
	}
	activation := idOf(run(0, "activations", "create", "--data", `{"licenseKey": "`+lic.Key+`", "fingerprint": "machine-1"}`))
	if out := run(0, "activations", "list", "--license", license); !strings.Contains(out, activation) || !strings.Contains(out, "machine-1") {
		t.Errorf("activations list printed %q", out)
	}
	run(0, "activations", "get", activation)
	release := idOf(run(0, "releases", "create", "--data", `{"productId": "`+product+`", "version": "1.0.0"}`))
	file1 := idOf(run(0, "releases", "add-file", release, "--data", `{"filename": "app.zip", "size": 1024}`))
	if out := run(0, "releases", "delete-file", release, file1); !strings.Contains(out, "removed file "+file1) {
		t.Errorf("releases delete-file printed %q", out)
	}
	trial := idOf(run(0, "trial-activations", "create", "--data", `{"productId": "`+product+`", "fingerprint": "machine-2"}`))
	for _, del := range [][2]string{{"trial-activations", trial}, {"releases", release}, {"activations", activation}, {"licenses", license}, {"users", user}, {"products", product}} {
		run(0, del[0], "delete", del[1])
		run(1, del[0], "get", del[1]) // 404
	}

	// A recovery shown and cancelled by its id.
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusServiceUnavailable, "down")
	out = run(0, "webhooks", "create", "--name", "down", "--url", rcv.URL, "--events", "license.created")
	hook := regexp.MustCompile(`created webhook (\S+)`).FindStringSubmatch(out)[1]
	run(0, "trigger", "license.created")
	heraldtest.Eventually(t, 60*time.Second, "the delivery to fail", func() bool {
		var page struct{ Data []struct{ Status string } }
		return json.Unmarshal([]byte(run(0, "logs", "list", "--webhook", hook, "--json")), &page) == nil && len(page.Data) == 1 && page.Data[0].Status == "failed"
	})
	held := rcv.Hold(t)
	out = run(0, "webhooks", "recover", hook, "--since", "1h")
	rid := regexp.MustCompile(`recovery (\S+) started: 1 events`).FindStringSubmatch(out)
	if rid == nil {
		t.Fatalf("webhooks recover printed %q", out)
	}
	held.Wait(t, 30*time.Second, "the recovery's resend")
	if out := run(0, "webhooks", "recovery", hook, rid[1]); !strings.Contains(out, rid[1]) || !strings.Contains(out, "running") {
		t.Errorf("webhooks recovery printed %q; want it running", out)
	}
	if out := run(0, "webhooks", "cancel-recovery", hook, rid[1]); !strings.Contains(out, "cancelled") {
		t.Errorf("webhooks cancel-recovery printed %q; want it cancelled", out)
	}
	held.Release()
}
