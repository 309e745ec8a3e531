package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestRetryAfterDelaysTheNextAttempt: a receiver on loopback answers 429 or
// 503 with Retry-After, as seconds or as an HTTP date. Each answer is a
// failed attempt whose next attempt is due when the receiver asked (capped
// at an hour), never sooner than the retry interval, and whose retry reason
// and attempt say so; a malformed header, or one on another status, is
// ignored. The bounds compare the next attempt with the attempt's own
// answer, so a busy machine moves both alike.
func TestRetryAfterDelaysTheNextAttempt(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testRetryAfterDelaysTheNextAttempt)
}

func testRetryAfterDelaysTheNextAttempt(t *testing.T, db string) {
	const interval = 30 * time.Second
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{RetryInterval: interval}})
	date := time.Now().Add(90 * time.Second).UTC().Truncate(time.Second)
	tests := []struct {
		name       string
		code       int
		retryAfter string
		least      time.Duration // after the answer
		reason     string
	}{
		{"429 with seconds", 429, "120", 120 * time.Second, "receiver answered 429; receiver asked to retry after 120 s"},
		{"503 with an HTTP date", 503, date.Format(http.TimeFormat), 0, "receiver answered 503; receiver asked to retry after "},
		{"429 past the cap", 429, "86400", time.Hour, "receiver answered 429; receiver asked to retry after 86400 s; retrying after at most 3600 s"},
		{"429 sooner than the interval", 429, "5", interval, "receiver answered 429; receiver asked to retry after 5 s; retrying after the retry interval, 30 s"},
		{"503 malformed", 503, "in a while", interval, "receiver answered 503"},
		{"500 with seconds", 500, "120", interval, "receiver answered 500"},
	}
	hooks := make([]string, len(tests))
	for i, tt := range tests {
		rcv := heraldtest.NewReceiver(t)
		rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", tt.retryAfter)
			w.WriteHeader(tt.code)
		})
		hooks[i] = h.CreateWebhook(tt.name, rcv.URL, "license.created").ID
	}
	h.CreateLicense(nil)
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var id string
			heraldtest.Eventually(t, 10*time.Second, "the first attempt recorded", func() bool {
				logs := h.Logs("webhookId=" + hooks[i] + "&status=retrying")
				if len(logs) == 1 {
					id = logs[0].ID
				}
				return id != ""
			})
			l, err := h.API.EventLog(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if l.AttemptCount != 1 || len(l.Attempts) != 1 || l.NextAttemptAt == nil || l.RetryReason == nil {
				t.Fatalf("log %+v; want one failed attempt and the next one due", l)
			}
			a := l.Attempts[0]
			answered := *a.ReceivedAt
			// The date's seconds depend on when the answer came; every other
			// reason is exact.
			matches := *l.RetryReason == tt.reason || (tt.least == 0 && strings.HasPrefix(*l.RetryReason, tt.reason))
			if a.Error == nil || *a.Error != *l.RetryReason || !matches {
				t.Errorf("retry reason %q, attempt error %v; want %q in both", *l.RetryReason, a.Error, tt.reason)
			}
			least := answered.Add(tt.least)
			if tt.least == 0 {
				least = date
			}
			// The next attempt is due from the least the rule allows, plus the
			// moments between the answer and its recording.
			if next := *l.NextAttemptAt; next.Before(least) || next.After(least.Add(time.Minute)) {
				t.Errorf("next attempt due %s after the answer; want from %s after it", next.Sub(answered).Round(time.Second), least.Sub(answered).Round(time.Second))
			}
		})
	}
}
