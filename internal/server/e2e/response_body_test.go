package e2e_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// A failing receiver's answers are kept only in part, so that they do not
// grow the database by their whole size on every attempt; a Test, which is
// never stored, shows more.
func TestRecordedAttemptsKeepOnlyTheStartOfABigAnswer(t *testing.T) {
	t.Parallel()
	for _, s := range heraldtest.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			testRecordedAttemptsKeepOnlyTheStartOfABigAnswer(t, s)
		})
	}
}

// Each limit needs a herald of its own, so each gets a new database.
func testRecordedAttemptsKeepOnlyTheStartOfABigAnswer(t *testing.T, s heraldtest.Store) {
	// 1 MiB of two-byte characters, so an odd limit falls inside one.
	big := strings.Repeat("é", 1<<19)
	tests := []struct {
		name  string
		limit int // delivery.Config.ResponseBodyLimit
		want  int // bytes kept
	}{
		{"default", 0, delivery.DefaultResponseBodyLimit},
		{"configured", 1001, 1000},
		{"none", -1, 0},
		{"above the cap", 1 << 20, store.MaxResponseBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: s.URL(t),
				Delivery: delivery.Config{MaxAttempts: 1, ResponseBodyLimit: tt.limit}})
			rcv := heraldtest.NewReceiver(t)
			rcv.Status(500, big)
			hook := h.CreateWebhook("big answers", rcv.URL, "license.created")
			h.CreateLicense(nil)
			heraldtest.Eventually(t, 20*time.Second, "the failed attempt", func() bool {
				return len(h.Logs("webhookId="+hook.ID+"&status=failed")) == 1
			})
			l := h.Log(h.Logs("webhookId=" + hook.ID)[0].ID)
			if len(l.Attempts) != 1 {
				t.Fatalf("%d attempts; want 1", len(l.Attempts))
			}
			got := l.Attempts[0].ResponseBody
			if len(got) != tt.want || !strings.HasPrefix(big, got) || !utf8.ValidString(got) {
				t.Errorf("kept %d bytes of the answer (a prefix of it: %v); want its first %d", len(got), strings.HasPrefix(big, got), tt.want)
			}

			// A resend keeps the same.
			h.Must(200, "POST", "/v3/webhook-event-logs/"+l.ID+"/resend", nil, nil)
			l = h.Log(l.ID)
			if len(l.Attempts) != 2 || len(l.Attempts[1].ResponseBody) != tt.want {
				t.Errorf("resend: %d attempts, the last keeping %d bytes; want 2 and %d", len(l.Attempts), len(l.Attempts[len(l.Attempts)-1].ResponseBody), tt.want)
			}

			// A Test shows up to 64 KiB whatever the limit: it is not stored.
			var res struct{ Response struct{ Body string } }
			h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", nil, &res)
			if len(res.Response.Body) != store.MaxResponseBody {
				t.Errorf("Test showed %d bytes of the answer; want %d", len(res.Response.Body), store.MaxResponseBody)
			}
		})
	}
}
