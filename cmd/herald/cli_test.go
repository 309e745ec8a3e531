package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// runToEnd runs the binary to its end and returns its exit code and output.
func runToEnd(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	p := command(t, env, args...)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("herald %v is still running after 30s:\n%s", args, p.out)
	}
	return p.cmd.ProcessState.ExitCode(), p.out.String()
}

// runner returns a function that runs the binary with env to its end,
// fails the test unless it exits with wantCode, and returns its output.
func runner(t *testing.T, env []string) func(wantCode int, args ...string) string {
	return func(wantCode int, args ...string) string {
		t.Helper()
		code, out := runToEnd(t, env, args...)
		if code != wantCode {
			t.Fatalf("herald %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, wantCode, out)
		}
		return out
	}
}

// A command line herald cannot read is answered with one line and a hint,
// not the whole usage, and exit status 2.
func TestBadFlagsExitTwoWithAOneLineHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-x"}, "herald serve: flag provided but not defined: --x\nRun 'herald serve --help' for usage.\n"},
		{[]string{"migrate", "--nope"}, "herald migrate: flag provided but not defined: --nope\nRun 'herald migrate --help' for usage.\n"},
		{[]string{"listen", "--port", "x"}, "herald listen: invalid value \"x\" for flag --port: parse error\nRun 'herald listen --help' for usage.\n"},
		{[]string{"serve", "extra"}, "herald serve: unexpected argument \"extra\"\nRun 'herald serve --help' for usage.\n"},
		{[]string{"serv"}, "herald: unknown command \"serv\"\nRun 'herald --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out := runToEnd(t, nil, tt.args...)
			if code != 2 || out != tt.want {
				t.Errorf("exit %d, printed %q; want exit 2 and %q", code, out, tt.want)
			}
		})
	}
	// -h still prints every flag, and succeeds.
	code, out := runToEnd(t, nil, "serve", "-h")
	if code != 0 || !strings.Contains(out, "Usage: herald serve [flags]") || !strings.Contains(out, "--retention") {
		t.Errorf("serve -h: exit %d, printed %q; want the flags and exit 0", code, out)
	}
}

// Help writes flags as the README does (--flag), grouped, each with its
// variable and its built-in default (not the one the environment set).
func TestHelpShowsFlagsGroupedWithVariableAndDefault(t *testing.T) {
	t.Parallel()
	code, out := runToEnd(t, []string{"HERALD_RETRY_INTERVAL=1m"}, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"\nServer:\n  --addr STRING\n      address the API listens on\n      $HERALD_ADDR, default 127.0.0.1:8080\n",
		"\nDelivery:\n", "\nSecurity:\n", "\nLimits:\n", "\nLogs and diagnostics:\n",
		"  --retry-interval DURATION\n      time between attempts, a duration such as 90s, 5m or 1h30m\n      $HERALD_RETRY_INTERVAL, default 5m\n",
		"  --retention STRING\n", "$HERALD_RETENTION, default 30d\n",
		"  --allow-private-networks\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "-") && !strings.HasPrefix(strings.TrimSpace(line), "--") {
			t.Errorf("a flag written with one dash: %q", line)
		}
	}
}

func TestUnknownLogSettingsNameTheAllowedValues(t *testing.T) {
	t.Parallel()
	tests := []struct{ flag, value, want string }{
		{"--log-level", "verbose", `--log-level "verbose": want debug, info, warn or error`},
		{"--log-format", "logfmt", `--log-format "logfmt": want text or json`},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			code, out := runToEnd(t, env, "serve", tt.flag, tt.value)
			if code == 0 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, printed %q; want a failure saying %s", code, out, tt.want)
			}
		})
	}
}

// A database URL herald cannot open is refused before any key file is
// created for it.
func TestRefusedDatabaseURLCreatesNoKeyFile(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"migrate", "serve"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "herald.key")
			code, out := runToEnd(t, []string{"HERALD_SECRET_KEY=", "HERALD_SECRET_KEY_FILE=" + keyFile}, cmd, "--database", "mysql://x")
			if code == 0 || !strings.Contains(out, "must start with sqlite: or postgres://") {
				t.Errorf("exit %d, printed %q; want the URL refused", code, out)
			}
			if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
				t.Errorf("key file %s: %v; want none created", keyFile, err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s holds %d files; want none", dir, len(entries))
			}
		})
	}
}

// Completed logs are kept 30 days and 4 KiB of each answer unless told
// otherwise, and the start line says what is in effect.
func TestServeShowsRetentionAndResponseBodyLimitAtStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"defaults", nil, nil, "retention=30d response_body_limit=4096"},
		{"flags", nil, []string{"--retention", "12h", "--response-body-limit", "1KiB"}, "retention=12h0m0s response_body_limit=1024"},
		{"environment", []string{"HERALD_RETENTION=0", "HERALD_RESPONSE_BODY_LIMIT=0"}, nil, "retention=forever response_body_limit=0"},
		{"bytes", nil, []string{"--response-body-limit", "65536"}, "retention=30d response_body_limit=65536"},
		{"direct", nil, nil, "egress_proxy=direct"},
		// The proxy's password is masked in the start line.
		{"egress proxy", []string{"HERALD_EGRESS_PROXY=http://herald:proxy-pass-42@127.0.0.1:3128"}, nil, "egress_proxy=http://herald:xxxxx@127.0.0.1:3128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			p := command(t, append(append(env, "HERALD_ADDR="+freeAddr(t)), tt.env...), append([]string{"serve"}, tt.args...)...)
			heraldtest.Eventually(t, 20*time.Second, "the start line", func() bool {
				return strings.Contains(p.out.String(), `msg="herald serving"`)
			})
			if out := p.out.String(); !strings.Contains(out, tt.want) || strings.Contains(out, "proxy-pass-42") {
				t.Errorf("start printed %q; want it to show %q (and no proxy password)", out, tt.want)
			}
		})
	}
}

func TestServeRefusesAResponseBodyLimitOutOfBounds(t *testing.T) {
	t.Parallel()
	for _, limit := range []string{"65537", "65KiB", "1MiB", "-1", "4kb", "lots"} {
		t.Run(limit, func(t *testing.T) {
			t.Parallel()
			env, _ := serveEnv(t)
			code, out := runToEnd(t, env, "serve", "--response-body-limit", limit)
			if code == 0 || !strings.Contains(out, "--response-body-limit: \""+limit+"\": want a size from 0 to 64KiB") {
				t.Errorf("exit %d, printed %q; want the limit refused with its bounds", code, out)
			}
		})
	}
}

func TestServeRefusesAnEgressProxyItCannotUse(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	code, out := runToEnd(t, env, "serve", "--egress-proxy", "socks5://proxy.internal:1080")
	if code == 0 || !strings.Contains(out, "--egress-proxy: want an http:// URL") {
		t.Errorf("exit %d, printed %q; want the proxy refused, the flag named", code, out)
	}
}

func TestAllowMetadataAddressesNeedsPrivateNetworks(t *testing.T) {
	t.Parallel()
	env, _ := serveEnv(t)
	code, out := runToEnd(t, append(env, "HERALD_ALLOW_PRIVATE_NETWORKS=false", "HERALD_ALLOW_METADATA_ADDRESSES=true"), "serve")
	if code == 0 || !strings.Contains(out, "--allow-metadata-addresses needs --allow-private-networks") {
		t.Errorf("exit %d, printed %q; want the switch refused alone", code, out)
	}
}
