package main_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// scrape reads /metrics at base and parses the exposition; a scrape that is
// not valid Prometheus text, or that the linter faults, fails the test.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "herald_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	return fams
}

// value is the value of the series of family name whose labels include
// want; -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// What an operator scrapes from a running herald: requests by route,
// events by kind, deliveries by status class and failure reason, the
// backlog, webhooks by status, suspensions, the outbox and the build, in an
// exposition that parses and lints clean.
func TestMetricsShowWhatHappened(t *testing.T) {
	t.Parallel()
	env, token := serveEnv(t)
	env = append(env, "HERALD_MAX_ATTEMPTS=1", "HERALD_SUSPEND_AFTER=1")
	good := startApp(t)
	bad := heraldtest.NewReceiver(t)
	bad.Status(503, "down")
	p := startServe(t, env, freeAddr(t))
	c := client.New(p.url, token, nil)
	ctx := t.Context()
	for name, url := range map[string]string{"good": good.url, "bad": bad.URL} {
		if _, err := c.CreateWebhook(ctx, client.WebhookCreate{Name: name, URL: url, Events: []string{"license.created"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Trigger(ctx, "license.created"); err != nil {
		t.Fatal(err)
	}

	var fams map[string]*dto.MetricFamily
	heraldtest.Eventually(t, 30*time.Second, "both attempts, the suspension and its email", func() bool {
		fams = scrape(t, p.url)
		return value(fams, "herald_delivery_attempts_total", map[string]string{"result": "succeeded"}) == 1 &&
			value(fams, "herald_delivery_attempts_total", map[string]string{"result": "failed"}) == 1 &&
			value(fams, "herald_webhook_suspensions_total", nil) == 1 &&
			value(fams, "herald_emails_total", map[string]string{"result": "kept"}) == 1
	})
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"herald_events_fired_total", map[string]string{"kind": "license.created"}, 1},
		{"herald_events_fired_total", map[string]string{"kind": "product.created"}, 1},
		{"herald_events_fired_total", map[string]string{"kind": "license.deleted"}, 0},
		{"herald_http_requests_total", map[string]string{"route": "POST /v3/licenses", "method": "POST", "code": "201"}, 1},
		{"herald_http_requests_total", map[string]string{"route": "POST /v3/webhooks", "method": "POST", "code": "201"}, 2},
		{"herald_http_request_duration_seconds", map[string]string{"route": "POST /v3/licenses"}, 1},
		{"herald_delivery_responses_total", map[string]string{"class": "2xx"}, 1},
		{"herald_delivery_responses_total", map[string]string{"class": "5xx"}, 1},
		{"herald_delivery_failures_total", map[string]string{"reason": "status"}, 1},
		{"herald_webhooks", map[string]string{"status": "Healthy", "enabled": "true"}, 1},
		{"herald_webhooks", map[string]string{"status": "Suspended", "enabled": "true"}, 1},
		{"herald_backlog_event_logs", map[string]string{"status": "queued"}, 0},
		{"herald_backlog_due_event_logs", nil, 0},
		{"herald_backlog_oldest_due_seconds", nil, 0},
		{"herald_email_outbox_unsent", nil, 0},
		{"herald_database_up", nil, 1},
		{"herald_delivery_lease_takeovers_total", nil, 0},
		{"herald_build_info", nil, 1},
	} {
		if got := value(fams, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v; want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if value(fams, "herald_db_connections_max", nil) < 1 {
		t.Error("no database pool figures")
	}
	// SQLite's one writer ran at least the webhooks' and the license's
	// transactions, in as many commits or fewer.
	if txs, commits := value(fams, "herald_db_writer_transactions_total", nil), value(fams, "herald_db_writer_commits_total", nil); txs < 3 || commits < 1 || commits > txs ||
		value(fams, "herald_db_writer_busy_seconds_total", nil) <= 0 {
		t.Errorf("the writer's figures: %v transactions in %v commits, busy %v s", txs, commits, value(fams, "herald_db_writer_busy_seconds_total", nil))
	}
	// Scrapes and probes are not requests an operator wants counted.
	if value(fams, "herald_http_requests_total", map[string]string{"route": "GET /metrics"}) != -1 {
		t.Error("scrapes of /metrics are counted as requests")
	}
}
