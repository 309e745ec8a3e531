package e2e_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// A signed-in person's error pages keep the sidebar and Sign out, and the
// header names the account beside the person.
func TestSignedInPagesKeepTheShell(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	for _, path := range []string{"/webhooks", "/no-such-page", "/webhooks/01a20000-0000-7000-8000-000000000000"} {
		code, _, body := b.get(path)
		if path != "/webhooks" && code != http.StatusNotFound {
			t.Errorf("%s: %d; want 404", path, code)
		}
		for _, want := range []string{`<nav class="side"`, ">Sign out</button>", `<span class="who-account">`, `<span class="who-email">` + h.Email} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", path, want, body)
			}
		}
		if strings.Contains(body, `<span class="who-account"></span>`) {
			t.Errorf("%s: the header names no account", path)
		}
	}
}

// A webhook's own page lists its logs without a webhook column; the logs
// page, of every webhook, keeps it.
func TestWebhookPageLogsHaveNoWebhookColumn(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("mine", rcv.URL, "license.created")
	h.CreateLicense(nil)
	b := mustSignIn(t, h)
	const column = `<th scope="col">Webhook</th>`
	_, _, page := b.get("/webhooks/" + hook.ID)
	if !strings.Contains(page, "<code>license.created</code>") || strings.Contains(page, column) || strings.Contains(page, `data-label="Webhook"`) {
		t.Errorf("the webhook's page: want its log without a webhook column:\n%s", page)
	}
	if _, _, all := b.get("/webhook-event-logs"); !strings.Contains(all, column) || !strings.Contains(all, `data-label="Webhook"`) {
		t.Errorf("the logs page lacks the webhook column:\n%s", all)
	}
}

// A finished recovery of an earlier outage is not shown under a fresh
// Suspended banner; the one of the current outage is.
func TestAnEarlierOutagesRecoveryIsNotShownUnderANewBanner(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 1}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(500, "")
	hook := h.CreateWebhook("flaky", rcv.URL, "license.created")
	suspend := func() {
		t.Helper()
		h.CreateLicense(nil)
		heraldtest.Eventually(t, 30*time.Second, "the webhook suspended", func() bool { return h.Webhook(hook.ID).Status == "Suspended" })
	}
	suspend()
	// Recover while it still fails: the recovery finishes, the outage goes on.
	h.Must(202, "POST", "/v3/webhooks/"+hook.ID+"/recover", map[string]any{"since": "2000-01-01T00:00:00Z"}, nil)
	heraldtest.Eventually(t, 30*time.Second, "the recovery to finish", func() bool {
		var p struct{ Data []struct{ Status string } }
		h.Must(200, "GET", "/v3/webhooks/"+hook.ID+"/recoveries", nil, &p)
		return len(p.Data) == 1 && p.Data[0].Status == "done"
	})
	b := mustSignIn(t, h)
	if _, _, page := b.get("/webhooks/" + hook.ID); !strings.Contains(page, `id="recovery-progress"`) {
		t.Errorf("the current outage's finished recovery is not shown:\n%s", page)
	}
	// Healthy again by a good resend, then a new outage.
	rcv.Status(200, "ok")
	log := h.Logs("webhookId=" + hook.ID)[0]
	h.Must(200, "POST", "/v3/webhook-event-logs/"+log.ID+"/resend", nil, nil)
	rcv.Status(500, "")
	suspend()
	if _, _, page := b.get("/webhooks/" + hook.ID); strings.Contains(page, `id="recovery-progress"`) {
		t.Errorf("the earlier outage's recovery is shown under the new banner:\n%s", page)
	}
}

// The webhook form's error summary lists its fields in the order the page
// shows them, the receiver controls (signature scheme, filter, headers)
// among them: each link in the summary comes in the order of the errors
// beside the fields.
func TestWebhookFormSummaryFollowsEveryField(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	form := url.Values{"name": {""}, "url": {"ftp://x"}, "token": {"short"}, "signatureScheme": {"svix"},
		"filter": {`{"data.plan": {"$near": 1}}`}, "headers": {"Host: evil"}}
	code, _, page := b.submit("/webhooks/new", form)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("a form wrong in every field answered %d; want 422", code)
	}
	summary := page[strings.Index(page, `id="error-summary"`):]
	summary = summary[:strings.Index(summary, "</ul>")]
	var listed []string
	for _, m := range regexp.MustCompile(`href="#([a-zA-Z]+)-error"`).FindAllStringSubmatch(summary, -1) {
		listed = append(listed, m[1])
	}
	var beside []string
	for _, m := range regexp.MustCompile(`<p class="field-error" id="([a-zA-Z]+)-error"`).FindAllStringSubmatch(page, -1) {
		beside = append(beside, m[1])
	}
	if len(listed) < 7 || !slices.Equal(listed, beside) {
		t.Errorf("the summary lists %v; want the fields in error in the page's order, %v (all 7)", listed, beside)
	}
}
