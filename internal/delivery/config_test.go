package delivery_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/delivery"
)

func TestConfigValidateNamesTheFlag(t *testing.T) {
	tests := []struct {
		name string
		cfg  delivery.Config
		want string // "" when valid
	}{
		{"zero is every default", delivery.Config{}, ""},
		{"the defaults written out", delivery.Config{AttemptTimeout: 15 * time.Second, MaxAttempts: 5, RetryInterval: 5 * time.Minute,
			SuspendAfter: 50, Concurrency: 512, PerWebhook: 64, Lease: 40 * time.Second}, ""},
		{"negative attempt time-out", delivery.Config{AttemptTimeout: -time.Second}, "--attempt-timeout must be positive and at most 24h0m0s"},
		{"attempt time-out past its cap", delivery.Config{AttemptTimeout: 25 * time.Hour}, "--attempt-timeout must be positive and at most 24h0m0s"},
		{"negative max attempts", delivery.Config{MaxAttempts: -1}, "--max-attempts must be at least 1"},
		{"negative retry interval", delivery.Config{RetryInterval: -time.Second}, "--retry-interval must not be negative"},
		{"negative suspend-after", delivery.Config{SuspendAfter: -1}, "--suspend-after must be at least 1"},
		{"negative concurrency", delivery.Config{Concurrency: -1}, "--concurrency and --per-webhook-concurrency must be at least 1"},
		{"negative per-webhook concurrency", delivery.Config{PerWebhook: -1}, "--concurrency and --per-webhook-concurrency must be at least 1"},
		{"a lease no longer than the attempt", delivery.Config{AttemptTimeout: 10 * time.Second, Lease: 10 * time.Second}, "--lease must be longer than --attempt-timeout"},
		{"a lease shorter than the default attempt", delivery.Config{Lease: 5 * time.Second}, "--lease must be longer than --attempt-timeout"},
		{"a lease just longer than the attempt", delivery.Config{AttemptTimeout: 10 * time.Second, Lease: 11 * time.Second}, ""},
		{"negative lease", delivery.Config{Lease: -time.Second}, "--lease must be longer than --attempt-timeout"},
		// Past the cap is the cap (the flag refuses it: --response-body-limit).
		{"kept response bodies past the cap", delivery.Config{ResponseBodyLimit: attempt.MaxResponseBody + 1}, ""},
		{"no response bodies kept", delivery.Config{ResponseBodyLimit: -1}, ""},
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
}

// An invalid lease used to be replaced by the default without a word; now
// a Dispatcher is never made with one.
func TestNewRefusesAnInvalidLease(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "--lease") {
			t.Errorf("New with a lease shorter than the attempt: recovered %v; want a panic naming --lease", r)
		}
	}()
	delivery.New(nil, delivery.Config{AttemptTimeout: 10 * time.Second, Lease: 5 * time.Second})
}
