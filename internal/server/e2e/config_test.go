package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/admission"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/retention"
	"github.com/heraldhq/herald/internal/server"
)

func TestConfigValidateNamesTheFlag(t *testing.T) {
	tests := []struct {
		name string
		cfg  server.Config
		want string // "" when valid
	}{
		{"zero is every default", server.Config{}, ""},
		{"metadata without private networks", server.Config{AllowMetadata: true}, "--allow-metadata-addresses needs --allow-private-networks"},
		{"egress proxy not http", server.Config{EgressProxy: "socks5://proxy.internal:1080"}, "--egress-proxy: want an http:// URL"},
		{"egress proxy without a port", server.Config{EgressProxy: "http://proxy.internal"}, "--egress-proxy: want the proxy's host and port"},
		{"metadata with private networks", server.Config{AllowMetadata: true, AllowPrivate: true}, ""},
		{"short operator token", server.Config{OperatorToken: "short"}, "--operator-token must be at least 32 characters"},
		{"short first password", server.Config{BootstrapPassword: "a"}, "HERALD_BOOTSTRAP_PASSWORD must be 12 to 1024 characters"},
		{"first password", server.Config{BootstrapPassword: "twelve chars"}, ""},
		{"short first token", server.Config{BootstrapToken: "x"}, "HERALD_BOOTSTRAP_TOKEN must be at least 32 characters"},
		{"first token", server.Config{BootstrapToken: "hrld_0123456789abcdef0123456789abcdef"}, ""},
		{"negative reminder", server.Config{SuspendedReminder: -time.Hour}, "--suspended-reminder must not be negative"},
		{"public URL without a scheme", server.Config{PublicURL: "herald.example.com"}, `--public-url "herald.example.com": want an http or https address`},
		{"public URL", server.Config{PublicURL: "https://herald.example.com"}, ""},
		{"negative retention", server.Config{Retention: retention.Config{Keep: -time.Hour}}, "--retention must not be negative"},
		{"request bodies below the largest body", server.Config{BodiesInFlight: 1000}, "--max-request-bodies must be at least 1MiB"},
		{"negative connections", server.Config{Conns: admission.Conns{PerAddress: -1}}, "--max-connections and --max-connections-per-address must not be negative"},
		{"delivery's own", server.Config{Delivery: delivery.Config{AttemptTimeout: 10 * time.Second, Lease: 10 * time.Second}}, "--lease must be longer than --attempt-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v; want an error saying %q", err, tt.want)
			}
		})
	}
	// Every mistake at once, so that one start shows them all.
	err := server.Config{AllowMetadata: true, SuspendedReminder: -1, Delivery: delivery.Config{MaxAttempts: -1}}.Validate()
	for _, want := range []string{"--allow-metadata-addresses", "--suspended-reminder", "--max-attempts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want it to name %s too", err, want)
		}
	}
}

// Open refuses what Validate refuses, before it makes a database.
func TestOpenRefusesAnInvalidConfig(t *testing.T) {
	url := heraldtest.SQLiteURL(t)
	_, err := server.Open(t.Context(), server.Config{DatabaseURL: url, SecretKey: make([]byte, 32),
		Delivery: delivery.Config{AttemptTimeout: 10 * time.Second, Lease: 5 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "--lease") {
		t.Fatalf("Open with a lease shorter than the attempt: %v; want a refusal naming --lease", err)
	}
}
