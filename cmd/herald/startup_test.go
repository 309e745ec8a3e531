package main_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// busyAddr is an address a listener of the test holds until it ends.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// get fetches url and returns the status and body; the status is 0 when
// nothing answers.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// The first account's credentials are printed once, so a start that cannot
// serve must not create it: it exits, printing no credential, and the next
// start that can serve creates the account and prints them.
func TestFailedStartPrintsNoCredentialsAndCreatesNoAccount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  func(busy, free string) []string
		want func(busy string) string
	}{
		{"addr in use",
			func(busy, _ string) []string { return []string{"HERALD_ADDR=" + busy} },
			func(busy string) string { return "--addr " + busy + ": cannot listen: bind: address already in use" }},
		{"metrics-addr in use",
			func(busy, free string) []string {
				return []string{"HERALD_ADDR=" + free, "HERALD_METRICS_ADDR=" + busy}
			},
			func(busy string) string {
				return "--metrics-addr " + busy + ": cannot listen: bind: address already in use"
			}},
		{"mail-from not an address",
			func(_, free string) []string {
				return []string{"HERALD_ADDR=" + free, "HERALD_SMTP_URL=smtp://127.0.0.1:1", "HERALD_MAIL_FROM=not an address"}
			},
			func(string) string { return "invalid From address" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			env = append(env, "HERALD_BOOTSTRAP_TOKEN=") // generated, so printed
			busy := busyAddr(t)
			code, out := runToEnd(t, append(env, tt.env(busy, freeAddr(t))...), "serve")
			if code == 0 || !strings.Contains(out, tt.want(busy)) {
				t.Errorf("exit %d, printed %q; want a failure saying %s", code, out, tt.want(busy))
			}
			if strings.Contains(out, "shown once") || strings.Contains(out, "created the first account") {
				t.Errorf("printed %q; want no credential from a start that cannot serve", out)
			}

			p := startServe(t, env, freeAddr(t))
			// The output is copied from a pipe, so it may trail readiness.
			heraldtest.Eventually(t, 20*time.Second, "the start line", func() bool {
				return strings.Contains(p.out.String(), `msg="herald serving"`)
			})
			out = p.out.String()
			for _, want := range []string{"created the first account", "portal password (shown once): ", "API token (shown once): hrld_"} {
				if !strings.Contains(out, want) {
					t.Errorf("the next start printed %q; want %q", out, want)
				}
			}
		})
	}
}

// A retention or other duration too long for Go's time.Duration used to wrap
// around (213504d became 25 minutes; longer ones turned negative and
// disabled retention). It is refused, naming the flag and the limit.
func TestServeRefusesDurationsThatOverflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"retention 213504d", nil, []string{"--retention", "213504d"}, `--retention "213504d" is longer than the longest retention, 106751d`},
		{"retention 200000d", []string{"HERALD_RETENTION=200000d"}, nil, `--retention "200000d" is longer than the longest retention, 106751d`},
		{"retention hours", nil, []string{"--retention", "3000000h"}, `--retention "3000000h": want a duration such as 30d, 12h or 1d12h, at most 106751d`},
		{"attempt-timeout flag", nil, []string{"--attempt-timeout", "3000000h"}, `invalid value "3000000h" for flag --attempt-timeout: want a duration such as 15s, 5m or 1h30m, at most 2562047h`},
		{"retry-interval variable", []string{"HERALD_RETRY_INTERVAL=3000000h"}, nil, `$HERALD_RETRY_INTERVAL "3000000h": want a duration such as 15s, 5m or 1h30m, at most 2562047h`},
		{"attempt-timeout lease overflow", nil, []string{"--attempt-timeout", "2000000h"}, "--attempt-timeout must be positive and at most 24h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			code, out := runToEnd(t, append(append(env, "HERALD_ADDR="+freeAddr(t)), tt.env...), append([]string{"serve"}, tt.args...)...)
			if code == 0 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, printed %q; want a failure saying %s", code, out, tt.want)
			}
		})
	}
	// The longest retention is accepted.
	env, _ := serveEnv(t)
	p := command(t, append(env, "HERALD_ADDR="+freeAddr(t)), "serve", "--retention", "106751d")
	heraldtest.Eventually(t, 20*time.Second, "the start line", func() bool {
		return strings.Contains(p.out.String(), `msg="herald serving"`)
	})
	if out := p.out.String(); !strings.Contains(out, "retention=106751d") {
		t.Errorf("start printed %q; want retention=106751d", out)
	}
}

// A mistyped SQLite path given to `herald migrate` is refused, leaving no
// database or key file behind, unless --create asks for a new database;
// `herald serve` still makes one for the quick start.
func TestMigrateRefusesAMissingSQLiteFileUnlessCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "herlad.db")
	env := []string{"HERALD_SECRET_KEY=", "HERALD_SECRET_KEY_FILE=", "HERALD_DATABASE_URL=sqlite:" + db}

	code, out := runToEnd(t, env, "migrate")
	if code == 0 || !strings.Contains(out, "--database sqlite:"+db+": open sqlite "+db+": no such database file; check the path, or pass --create") {
		t.Errorf("migrate: exit %d, printed %q; want the missing file refused, pointing at --create", code, out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%s holds %d files after a refused migrate; want none", dir, len(entries))
	}

	code, out = runToEnd(t, env, "migrate", "--create")
	if code != 0 || !strings.Contains(out, "created secret key file "+db+".key") || !strings.Contains(out, "sqlite schema at version") {
		t.Errorf("migrate --create: exit %d, printed %q; want a new database and key file", code, out)
	}
	for _, f := range []string{db, db + ".key"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after migrate --create: %v", err)
		}
	}
	code, out = runToEnd(t, env, "migrate")
	if code != 0 || !strings.Contains(out, "sqlite schema at version") {
		t.Errorf("migrate of the existing database: exit %d, printed %q; want success", code, out)
	}

	// The quick start: serve on a path where nothing exists yet.
	fresh := filepath.Join(t.TempDir(), "herald.db")
	p := startServe(t, []string{"HERALD_SECRET_KEY=", "HERALD_SECRET_KEY_FILE=", "HERALD_DATABASE_URL=sqlite:" + fresh}, freeAddr(t))
	heraldtest.Eventually(t, 20*time.Second, "the start line", func() bool {
		return strings.Contains(p.out.String(), `msg="herald serving"`)
	})
	if out := p.out.String(); !strings.Contains(out, "created secret key file "+fresh+".key") || !strings.Contains(out, "API token (shown once)") {
		t.Errorf("serve on a new path printed %q; want a new key file and the first account's credentials", out)
	}
}

// With --metrics-addr, /metrics is served there alone, and goes with the
// server; without it, /metrics stays on the API's address.
func TestMetricsAddrServesMetricsAlone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  func(metrics string) []string
		args func(metrics string) []string
	}{
		{"flag", func(string) []string { return nil }, func(m string) []string { return []string{"--metrics-addr", m} }},
		{"variable", func(m string) []string { return []string{"HERALD_METRICS_ADDR=" + m} }, func(string) []string { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			addr, metrics := freeAddr(t), freeAddr(t)
			p := command(t, append(append(env, "HERALD_ADDR="+addr), tt.env(metrics)...), append([]string{"serve"}, tt.args(metrics)...)...)
			heraldtest.Eventually(t, 20*time.Second, "herald serve to be ready", func() bool {
				code, _ := get(t, "http://"+addr+"/readyz")
				return code == http.StatusOK
			})
			heraldtest.Eventually(t, 20*time.Second, "the start line", func() bool {
				return strings.Contains(p.out.String(), `msg="herald serving"`)
			})
			code, body := get(t, "http://"+metrics+"/metrics")
			if code != http.StatusOK || !strings.Contains(body, "herald_delivery_claimed_total") || !strings.Contains(body, "go_goroutines") {
				t.Errorf("GET metrics address /metrics: %d %.300q; want 200 and the exposition", code, body)
			}
			if code, body := get(t, "http://"+addr+"/metrics"); code != http.StatusNotFound {
				t.Errorf("GET API address /metrics: %d %.300q; want 404", code, body)
			}
			if code, _ := get(t, "http://"+metrics+"/v3/webhooks"); code != http.StatusNotFound {
				t.Errorf("GET metrics address /v3/webhooks: %d; want 404: only /metrics is served there", code)
			}
			if out := p.out.String(); !strings.Contains(out, "metrics_addr="+metrics) {
				t.Errorf("start printed %q; want metrics_addr=%s", out, metrics)
			}
			if st := p.stop(t, syscall.SIGTERM); st.ExitCode() != 0 {
				t.Fatalf("herald exited %v after SIGTERM; want 0", st)
			}
			if _, err := net.DialTimeout("tcp", metrics, 5*time.Second); err == nil {
				t.Errorf("the metrics address %s still accepts connections after herald stopped", metrics)
			}
		})
	}
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		env, _ := serveEnv(t)
		p := startServe(t, env, freeAddr(t))
		if code, body := get(t, p.url+"/metrics"); code != http.StatusOK || !strings.Contains(body, "herald_delivery_claimed_total") {
			t.Errorf("GET /metrics without --metrics-addr: %d %.300q; want 200 and the exposition", code, body)
		}
	})
}
