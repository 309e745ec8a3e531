package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// The everyday commands against a running herald, as a developer would use
// them: make a webhook, fire a real event, read its log, resend it, test the
// webhook.
func TestWebhooksLogsAndTriggerCommands(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	a := startApp(t)
	p := startServe(t, env, freeAddr(t))
	cli := []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN=" + token}
	run := runner(t, cli)

	out := run(0, "webhooks", "create", "--name", "cli", "--url", a.url, "--events", "license.created,license.renewed")
	m := regexp.MustCompile(`created webhook (\S+) \(cli\)\nsigning token: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("webhooks create printed %q", out)
	}
	hookID := m[1]
	if out := run(0, "webhooks", "list"); !strings.Contains(out, hookID) || !strings.Contains(out, "Healthy") {
		t.Errorf("webhooks list printed %q; want the new webhook, Healthy", out)
	}

	out = run(0, "trigger", "license.created")
	if !strings.Contains(out, "POST /v3/products\nPOST /v3/licenses\nDELETE /v3/products/") || !strings.Contains(out, "(cleanup: test data, fires nothing)\nfired license.created") {
		t.Errorf("trigger printed %q; want the calls it made", out)
	}
	heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { return len(a.requests()) == 1 })

	var page struct {
		Data []struct{ ID, Status, Event string }
	}
	heraldtest.Eventually(t, 30*time.Second, "the log to succeed", func() bool {
		out := run(0, "logs", "list", "--webhook", hookID, "--json")
		return json.Unmarshal([]byte(out), &page) == nil && len(page.Data) == 1 && page.Data[0].Status == "succeeded"
	})
	logID := page.Data[0].ID
	code := strconv.Itoa(appStatus)
	if out := run(0, "logs", "show", logID); !strings.Contains(out, "attempt 1 (automatic)") || !strings.Contains(out, ": "+code+" in") {
		t.Errorf("logs show printed %q; want its automatic attempt answered %s", out, code)
	}
	if out := run(0, "logs", "resend", logID, "--json"); !strings.Contains(out, `"trigger": "resend"`) {
		t.Errorf("logs resend printed %q; want the new resend attempt", out)
	}
	if n := len(a.requests()); n != 2 {
		t.Errorf("the receiver got %d requests; want the delivery and the resend", n)
	}
	// A delivered log holds nothing back: skipping it is refused.
	if out := run(1, "logs", "skip", logID); !strings.Contains(out, "holds back no later event") {
		t.Errorf("logs skip of a delivered log printed %q; want the 409's reason", out)
	}
	// Ordering: set at creation and changed; a bad value is refused before any call.
	if out := run(0, "webhooks", "create", "--name", "ordered", "--url", a.url, "--events", "license.created",
		"--ordering", "license", "--ordering-on-failure", "continue"); !strings.Contains(out, "created webhook") {
		t.Errorf("webhooks create --ordering printed %q", out)
	}
	run(0, "webhooks", "update", hookID, "--ordering", "license")
	if out := run(0, "webhooks", "get", hookID); !strings.Contains(out, "Ordering:") || !strings.Contains(out, "license (a failed event: hold)") {
		t.Errorf("webhooks update --ordering license printed %q; want the ordering shown", out)
	}
	if out := run(2, "webhooks", "update", hookID, "--ordering", "account"); !strings.Contains(out, "--ordering") {
		t.Errorf("webhooks update --ordering account printed %q; want the flag named", out)
	}
	if out := run(2, "webhooks", "create", "--name", "x", "--url", a.url, "--events", "license.created", "--ordering-on-failure", "wait"); !strings.Contains(out, "--ordering-on-failure") {
		t.Errorf("webhooks create --ordering-on-failure wait printed %q; want the flag named", out)
	}
	run(0, "webhooks", "update", hookID, "--ordering", "none")
	if out := run(0, "webhooks", "test", hookID, "--event", "license.renewed"); !strings.Contains(out, "sent a test license.renewed") || !strings.Contains(out, "answered "+code) {
		t.Errorf("webhooks test printed %q", out)
	}

	// A filter at creation, and tried against a delivered payload.
	out = run(0, "webhooks", "create", "--name", "pro", "--url", a.url, "--events", "license.created", "--filter", `{"data.metadata.plan": "pro"}`,
		"--header", "X-Api-Key: k-1", "--header", "X-Tenant:acme", "--signature-scheme", "standard-webhooks", "--json")
	if !strings.Contains(out, `"filter": {`) || !strings.Contains(out, `"data.metadata.plan": "pro"`) ||
		!strings.Contains(out, `"X-Api-Key": "********"`) || !strings.Contains(out, `"X-Tenant": "********"`) || !strings.Contains(out, `"signatureScheme": "standard-webhooks"`) {
		t.Errorf("webhooks create --filter --header printed %q; want the webhook with its filter and masked headers", out)
	}
	// An ed25519 webhook shows its public key; a token that is no private
	// key is refused, naming the flag's field.
	out = run(0, "webhooks", "create", "--name", "ed", "--url", a.url, "--events", "license.created", "--signature-scheme", "standard-webhooks-ed25519")
	if !strings.Contains(out, "public key: whpk_") {
		t.Errorf("webhooks create --signature-scheme standard-webhooks-ed25519 printed %q; want its public key", out)
	}
	if out := run(1, "webhooks", "create", "--name", "ed2", "--url", a.url, "--events", "license.created", "--signature-scheme", "standard-webhooks-ed25519",
		"--token", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"); !strings.Contains(out, "whsk_") {
		t.Errorf("an ed25519 webhook with an HMAC secret printed %q; want the private key's rule", out)
	}
	// A rate limit at creation, changed, removed; a bad one refused.
	out = run(0, "webhooks", "create", "--name", "throttled", "--url", a.url, "--events", "license.created", "--rate-limit", "50", "--json")
	var throttled struct {
		ID        string
		RateLimit *int
	}
	if err := json.Unmarshal([]byte(out), &throttled); err != nil || throttled.RateLimit == nil || *throttled.RateLimit != 50 {
		t.Errorf("webhooks create --rate-limit 50 printed %q; want rateLimit 50", out)
	}
	if out := run(0, "webhooks", "update", throttled.ID, "--rate-limit", "20"); !strings.Contains(out, "RATE LIMIT") || !strings.Contains(out, "20/s") {
		t.Errorf("webhooks update --rate-limit 20 printed %q; want the webhook throttled at 20/s", out)
	}
	if out := run(0, "webhooks", "update", throttled.ID, "--rate-limit", "none", "--json"); !strings.Contains(out, `"rateLimit": null`) {
		t.Errorf("webhooks update --rate-limit none printed %q; want rateLimit null", out)
	}
	if out := run(1, "webhooks", "update", throttled.ID, "--rate-limit", "20000"); !strings.Contains(out, "422") || !strings.Contains(out, "rateLimit") {
		t.Errorf("--rate-limit 20000: %q; want a 422 naming rateLimit", out)
	}
	if out := run(2, "webhooks", "update", throttled.ID, "--rate-limit", "fast"); !strings.Contains(out, "rate-limit") {
		t.Errorf("--rate-limit fast: %q; want the flag named", out)
	}
	// A retry policy at creation, changed, back to the default; bad ones
	// refused naming the flag or the field.
	out = run(0, "webhooks", "create", "--name", "patient", "--url", a.url, "--events", "license.created",
		"--max-attempts", "8", "--backoff", "exponential", "--retry-interval", "30s", "--max-retry-interval", "1h", "--json")
	var patient struct {
		ID          string
		RetryPolicy client.RetryPolicy
	}
	if err := json.Unmarshal([]byte(out), &patient); err != nil || patient.RetryPolicy != (client.RetryPolicy{MaxAttempts: 8, Backoff: "exponential", IntervalSeconds: 30, MaxIntervalSeconds: 3600}) {
		t.Errorf("webhooks create with a retry policy printed %q; want 8 attempts, exponential from 30 s to 3600 s", out)
	}
	if out := run(0, "webhooks", "update", patient.ID, "--max-attempts", "3", "--json"); !strings.Contains(out, `"maxAttempts": 3`) || !strings.Contains(out, `"backoff": "fixed"`) {
		t.Errorf("webhooks update --max-attempts 3 printed %q; want 3 attempts, the other fields their defaults", out)
	}
	if out := run(0, "webhooks", "update", patient.ID, "--default-retry", "--json"); !strings.Contains(out, `"maxAttempts": 5`) {
		t.Errorf("webhooks update --default-retry printed %q; want the default's 5 attempts", out)
	}
	if out := run(1, "webhooks", "update", patient.ID, "--max-attempts", "30", "--retry-interval", "24h"); !strings.Contains(out, "422") || !strings.Contains(out, "retryPolicy") {
		t.Errorf("a policy past 3 days: %q; want a 422 naming retryPolicy", out)
	}
	if out := run(2, "webhooks", "update", patient.ID, "--max-attempts", "31"); !strings.Contains(out, "--max-attempts") {
		t.Errorf("--max-attempts 31: %q; want the flag named", out)
	}
	if out := run(2, "webhooks", "update", patient.ID, "--retry-interval", "1.5s"); !strings.Contains(out, "--retry-interval") {
		t.Errorf("--retry-interval 1.5s: %q; want the flag named", out)
	}
	payload := filepath.Join(t.TempDir(), "payload.json")
	os.WriteFile(payload, a.requests()[0].Body, 0o600)
	if out := run(0, "webhooks", "filter-test", "--filter", `{"event": {"$prefix": "license."}}`, "--payload", "@"+payload); !strings.Contains(out, "matches: true\nevent $prefix \"license.\": holds (found \"license.created\")") {
		t.Errorf("webhooks filter-test printed %q", out)
	}
	if out := run(1, "webhooks", "filter-test", "--filter", `{"data.plan": {"$in": 1}}`, "--payload", "{}"); !strings.Contains(out, `path "data.plan", operator $in`) {
		t.Errorf("a bad filter: %q; want the path and the operator named", out)
	}

	// Mistakes are named.
	if out := run(2, "trigger", "license.exploded"); !strings.Contains(out, `unknown event kind "license.exploded"`) {
		t.Errorf("an unknown kind: %q", out)
	}
	if out := run(1, "logs", "show", "no-such-log"); !strings.Contains(out, "404") {
		t.Errorf("an unknown log: %q", out)
	}
	if code, out := runToEnd(t, []string{"HERALD_SERVER=" + p.url, "HERALD_API_TOKEN="}, "logs", "list"); code == 0 || !strings.Contains(out, "no API token") {
		t.Errorf("no token: exit %d, %q; want a failure saying so", code, out)
	}
	if out := run(2, "logs", "show"); !strings.Contains(out, "want ID") {
		t.Errorf("no log id: %q", out)
	}
}
