package e2e_test

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

type retryPolicy struct {
	MaxAttempts        int    `json:"maxAttempts"`
	Backoff            string `json:"backoff"`
	IntervalSeconds    int    `json:"intervalSeconds"`
	MaxIntervalSeconds int    `json:"maxIntervalSeconds"`
}

// TestAWebhookRetriesByItsOwnPolicy: a webhook's retry policy is kept and
// shown, decides how many attempts its events get and when the next is
// due (shown on the log), and goes back to the default on null; a wrong
// policy is refused naming the field, changing nothing.
func TestAWebhookRetriesByItsOwnPolicy(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		rcv := heraldtest.NewReceiver(t)
		rcv.Status(http.StatusInternalServerError, "down")
		want := retryPolicy{MaxAttempts: 2, Backoff: "exponential", IntervalSeconds: 2, MaxIntervalSeconds: 4}
		var hook struct {
			ID          string      `json:"id"`
			RetryPolicy retryPolicy `json:"retryPolicy"`
		}
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "policy", "url": rcv.URL, "events": []string{"license.created"},
			"retryPolicy": want}, &hook)
		if hook.RetryPolicy != want {
			t.Fatalf("created with retry policy %+v; want %+v", hook.RetryPolicy, want)
		}

		h.CreateLicense(nil)
		type logJSON struct {
			ID            string               `json:"id"`
			Status        string               `json:"status"`
			AttemptCount  int                  `json:"attemptCount"`
			NextAttemptAt *string              `json:"nextAttemptAt"`
			Attempts      []heraldtest.Attempt `json:"attempts"`
		}
		var logID string
		var first logJSON
		heraldtest.Eventually(t, 20*time.Second, "the first attempt to fail", func() bool {
			logs := h.Logs("webhookId=" + hook.ID)
			if len(logs) != 1 {
				return false
			}
			logID = logs[0].ID
			h.Must(200, "GET", "/v3/webhook-event-logs/"+logID, nil, &first)
			return first.AttemptCount >= 1
		})
		if first.Status == "retrying" {
			// The wait after attempt 1 of an exponential policy: its
			// interval, drawn between half of it and all of it, counted
			// from when the attempt's answer came.
			next, err := time.Parse(time.RFC3339Nano, *first.NextAttemptAt)
			if err != nil || len(first.Attempts) != 1 || first.Attempts[0].ReceivedAt == nil {
				t.Fatalf("retrying log: next attempt %v (%v), attempts %+v", first.NextAttemptAt, err, first.Attempts)
			}
			answered := *first.Attempts[0].ReceivedAt
			if wait := next.Sub(answered); wait < time.Second-10*time.Millisecond || wait > 2*time.Second+time.Second {
				t.Errorf("next attempt %v after the first answer; want 1 s to 2 s", wait)
			}
		}
		var last logJSON
		heraldtest.Eventually(t, 30*time.Second, "the event to end its attempts", func() bool {
			h.Must(200, "GET", "/v3/webhook-event-logs/"+logID, nil, &last)
			return last.Status == "failed"
		})
		if last.AttemptCount != 2 || last.NextAttemptAt != nil {
			t.Errorf("failed after %d attempts, next %v; want 2, none", last.AttemptCount, last.NextAttemptAt)
		}

		for _, tc := range []struct {
			name  string
			sent  any
			field string
		}{
			{"too many attempts", map[string]any{"maxAttempts": 31}, "retryPolicy.maxAttempts"},
			{"no attempt", map[string]any{"maxAttempts": 0}, "retryPolicy.maxAttempts"},
			{"attempts as text", map[string]any{"maxAttempts": "5"}, "retryPolicy.maxAttempts"},
			{"unknown backoff", map[string]any{"backoff": "linear"}, "retryPolicy.backoff"},
			{"no interval", map[string]any{"intervalSeconds": 0}, "retryPolicy.intervalSeconds"},
			{"cap under the interval", map[string]any{"backoff": "exponential", "intervalSeconds": 60, "maxIntervalSeconds": 30}, "retryPolicy.maxIntervalSeconds"},
			{"fixed with another cap", map[string]any{"intervalSeconds": 60, "maxIntervalSeconds": 120}, "retryPolicy.maxIntervalSeconds"},
			{"longer than 3 days", map[string]any{"maxAttempts": 30, "intervalSeconds": 86400}, "retryPolicy"},
			{"exponential past 3 days", map[string]any{"maxAttempts": 30, "backoff": "exponential", "intervalSeconds": 60, "maxIntervalSeconds": 86400}, "retryPolicy"},
			{"unknown field", map[string]any{"attempts": 3}, "retryPolicy.attempts"},
			{"not an object", 5, "retryPolicy"},
		} {
			var p problem
			if code := h.Do("PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"retryPolicy": tc.sent}, &p); code != 422 ||
				len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
				t.Errorf("%s: %d %+v; want 422 naming %s", tc.name, code, p.Errors, tc.field)
			}
		}
		h.Must(200, "GET", "/v3/webhooks/"+hook.ID, nil, &hook)
		if hook.RetryPolicy != want {
			t.Errorf("after refused changes the policy is %+v; want %+v", hook.RetryPolicy, want)
		}

		// Fields left out take their defaults; 30 attempts a day apart
		// would pass 3 days, 3 do not.
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"retryPolicy": map[string]any{"maxAttempts": 4, "intervalSeconds": 86400}}, &hook)
		if got := (retryPolicy{4, "fixed", 86400, 86400}); hook.RetryPolicy != got {
			t.Errorf("policy %+v; want %+v", hook.RetryPolicy, got)
		}
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"retryPolicy": map[string]any{"backoff": "exponential"}}, &hook)
		if got := (retryPolicy{5, "exponential", 300, 3600}); hook.RetryPolicy != got {
			t.Errorf("policy %+v; want %+v", hook.RetryPolicy, got)
		}
		var plain struct {
			RetryPolicy retryPolicy `json:"retryPolicy"`
		}
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "plain", "url": rcv.URL, "events": []string{"license.created"}}, &plain)
		h.Must(200, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"retryPolicy": nil}, &hook)
		if !reflect.DeepEqual(hook.RetryPolicy, plain.RetryPolicy) || plain.RetryPolicy.MaxAttempts != 5 || plain.RetryPolicy.Backoff != "fixed" {
			t.Errorf("back to the default: %+v; a new webhook's %+v; want the default, 5 attempts, fixed", hook.RetryPolicy, plain.RetryPolicy)
		}
	})
}
