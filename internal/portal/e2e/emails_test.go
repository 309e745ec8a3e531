package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/notify/smtptest"
)

// TestSettingsShowTheNotificationEmails: without an SMTP server, Settings
// says that notification emails are not being sent and shows the ones
// herald kept, text and all; with one, it lists them without the warning.
func TestSettingsShowTheNotificationEmails(t *testing.T) {
	t.Parallel()
	for _, smtp := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "sent"}[smtp], func(t *testing.T) {
			t.Parallel()
			o := heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 1}}
			if smtp {
				o.SMTPURL = smtptest.Start(t).URL()
			}
			h := heraldtest.Start(t, o)
			b := mustSignIn(t, h)
			if _, _, body := b.get("/account"); !strings.Contains(body, "None yet.") {
				t.Errorf("Settings before any email lacks the empty state:\n%s", body)
			}
			rcv := heraldtest.NewReceiver(t)
			rcv.Status(500, "")
			hook := h.CreateWebhook("down-hook", rcv.URL, "license.created")
			h.CreateLicense(nil)
			want := "kept, not sent"
			if smtp {
				want = "· sent</summary>"
			}
			var body string
			heraldtest.Eventually(t, 30*time.Second, "the suspension email on Settings", func() bool {
				var code int
				code, _, body = b.get("/account")
				return code == http.StatusOK && strings.Contains(body, want)
			})
			for _, w := range []string{"down-hook", "/webhooks/" + hook.ID, `id="emails-title"`} {
				if !strings.Contains(body, w) {
					t.Errorf("Settings lacks %q:\n%s", w, body)
				}
			}
			if got := strings.Contains(body, `id="emails-kept"`); got == smtp {
				t.Errorf("the warning that emails are not sent shown: %t; want %t", got, !smtp)
			}
		})
	}
}
