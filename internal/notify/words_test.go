package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/store"
)

// The words of the warnings, from the facts the store queues them with
// (store/storetest holds the facts to what happened).
func TestWordsOfTheWarnings(t *testing.T) {
	const publicURL = "https://herald.example.com"
	code := func(n int) *int { return &n }
	failure := func(status int) *event.Failure {
		return &event.Failure{EventID: "evt-1", LogID: "log-1", Event: event.LicenseCreated, StatusCode: code(status),
			Reason:   "receiver answered " + map[int]string{503: "503", 502: "502", 500: "500"}[status] + "; no attempts left",
			FailedAt: "2026-11-25T10:00:00.000Z"}
	}
	hook := store.EmailFacts{WebhookID: "wh-1", Name: "w", URL: "https://example.com/w/secret-path?key=1"}
	unhealthy, suspended, reminder := hook, hook, hook
	unhealthy.Streak, unhealthy.SuspendAfter, unhealthy.Failure = 1, 3, failure(503)
	suspended.Streak, suspended.SuspendAfter, suspended.Failure = 3, 3, failure(502)
	reminder.Streak, reminder.Failure = 3, failure(500)
	disabled := unhealthy
	disabled.Failure, disabled.Reason = nil, "its receiver answered 410 Gone, which asks that nothing more be sent"
	reminder.Since, reminder.Every = time.Date(2026, 11, 18, 9, 30, 0, 0, time.UTC), 7*24*time.Hour
	link := publicURL + "/webhooks/wh-1"
	tests := []struct {
		name    string
		email   store.Email
		subject string
		want    []string
	}{
		{"unhealthy", store.Email{Kind: store.EmailUnhealthy, Facts: &unhealthy}, `Webhook "w" is Unhealthy`,
			[]string{`"w"`, "wh-1", "Sends to (origin):   https://example.com\n", "evt-1", "log-1", "license.created", "HTTP 503",
				"receiver answered 503; no attempts left", "2 more events fail", link}},
		{"suspended", store.Email{Kind: store.EmailSuspended, Facts: &suspended}, `Webhook "w" suspended`,
			[]string{`"w"`, "wh-1", "evt-1", "HTTP 502", "3 most recent completed events", "does not lift the suspension",
				"Sends to (origin):   https://example.com\n", "herald webhooks recover wh-1 --since", link}},
		{"reminder", store.Email{Kind: store.EmailReminder, Facts: &reminder}, `Webhook "w" is still suspended`,
			[]string{`"w"`, "wh-1", "HTTP 500", "since 2026-11-18 09:30 UTC", "every 7 days",
				"herald webhooks recover wh-1 --since", link}},
		{"disabled", store.Email{Kind: store.EmailDisabled, Facts: &disabled}, `Webhook "w" disabled: its receiver answered 410 Gone`,
			[]string{`"w"`, "wh-1", "Why: its receiver answered 410 Gone, which asks", "enable the webhook", "resend", link}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subject, body := notify.Words(tt.email, publicURL+"/")
			if subject != tt.subject {
				t.Errorf("subject %q; want %q", subject, tt.subject)
			}
			if strings.Contains(body, "secret-path") || strings.Contains(body, "key=1") {
				t.Errorf("email shows the receiver's path or query, which may hold its secret:\n%s", body)
			}
			for _, want := range tt.want {
				if !strings.Contains(body, want) {
					t.Errorf("email lacks %q:\n%s", want, body)
				}
			}
		})
	}

	// One failure from suspension: singular.
	last := unhealthy
	last.Streak = 2
	if _, body := notify.Words(store.Email{Kind: store.EmailUnhealthy, Facts: &last}, publicURL); !strings.Contains(body, "1 more event fails") {
		t.Errorf("one failure left:\n%s", body)
	}
	// Without the portal's address, the page's path, and why no host.
	if _, body := notify.Words(store.Email{Kind: store.EmailSuspended, Facts: &suspended}, ""); !strings.Contains(body, "/webhooks/wh-1 in herald's portal") ||
		!strings.Contains(body, "--public-url") || strings.Contains(body, "https://herald") {
		t.Errorf("without --public-url:\n%s", body)
	}
	// An email queued before herald kept facts keeps the words it was queued with.
	if s, b := notify.Words(store.Email{Kind: store.EmailSuspended, Subject: "old subject", Body: "old body"}, publicURL); s != "old subject" || b != "old body" {
		t.Errorf("an email without facts: %q %q; want its own words", s, b)
	}
}
