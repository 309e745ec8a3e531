package e2e_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestLogShowsEachAttemptsHeadersAndWhenAnAttemptIsInFlight: a real
// delivery's log page shows, per attempt, the headers herald sent (the
// signature the receiver got among them, the token nowhere) and the headers
// the receiver answered with; while an attempt is in flight the log says
// since when rather than "Sent —".
func TestLogShowsEachAttemptsHeadersAndWhenAnAttemptIsInFlight(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case held <- struct{}{}:
			<-release // the first delivery waits until the test has read the page
		default:
		}
		w.Header().Set("X-Receiver-Trace", "abc-123")
		w.WriteHeader(http.StatusAccepted)
	})
	hook := h.CreateWebhook("CRM", rcv.URL, "license.created")
	h.CreateLicense(nil)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never arrived")
	}
	b := mustSignIn(t, h)
	logID := h.Logs("")[0].ID
	_, _, page := b.get("/webhook-event-logs/" + logID)
	for _, want := range []string{`id="in-flight"`, "the first attempt has been in flight since", "<time datetime="} {
		if !strings.Contains(page, want) {
			t.Errorf("the log of an attempt in flight lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<dt>Sent</dt>") {
		t.Errorf("the log of an attempt in flight says Sent —:\n%s", page)
	}
	close(release)
	heraldtest.Eventually(t, 10*time.Second, "the delivery recorded", func() bool { return h.Log(logID).Status == "succeeded" })

	_, _, page = b.get("/webhook-event-logs/" + logID)
	sig := rcv.Requests()[0].Header.Get("webhook-signature")
	page = html.UnescapeString(page) // html/template writes + as &#43;
	for _, want := range []string{`data-headers="request"`, "<dt>webhook-signature</dt><dd>" + sig + "</dd>",
		"<dt>content-type</dt><dd>application/json; charset=utf-8</dd>",
		`data-headers="response"`, "<dt>x-receiver-trace</dt><dd>abc-123</dd>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the log page lacks %q", want)
		}
	}
	if hook.Token == "" || strings.Contains(html.UnescapeString(page), hook.Token) {
		t.Errorf("the log page shows the webhook's token (or the test has none to look for)")
	}
	if strings.Contains(page, `id="in-flight"`) {
		t.Errorf("a completed log still says an attempt is in flight")
	}
}

// TestWordingOfFailuresAndUnsentLogs: a failed Test says what the receiver
// answered as a sentence; a log cancelled because its webhook is disabled
// asks for one thing (enable, then resend), and its payload is not said to
// have been sent.
func TestWordingOfFailuresAndUnsentLogs(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(http.StatusInternalServerError, "boom")
	hook := h.CreateWebhook("CRM", rcv.URL, "license.created")
	b := mustSignIn(t, h)

	b.get("/webhooks/" + hook.ID + "/test")
	_, _, page := b.submit("/webhooks/"+hook.ID+"/test", url.Values{"event": {"license.created"}})
	if !strings.Contains(page, "<strong>Failed:</strong> The receiver answered 500 Internal Server Error in ") ||
		strings.Contains(page, "Failed.") {
		t.Errorf("a failed test does not read as a sentence:\n%s", page)
	}

	h.Must(http.StatusOK, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"enabled": false}, nil)
	h.CreateLicense(nil)
	logID := h.Logs("")[0].ID
	_, _, page = b.get("/webhook-event-logs/" + logID)
	code, _, refused := b.submit("/webhook-event-logs/"+logID+"/resend", url.Values{})
	if code != http.StatusConflict {
		t.Fatalf("resend of a disabled webhook's log: %d; want 409", code)
	}
	for _, p := range []string{page, refused} {
		if strings.Contains(p, "Resend to deliver it now") || !strings.Contains(p, "enable it, then resend") {
			t.Errorf("the cancelled log of a disabled webhook gives mixed advice:\n%s", p)
		}
		if strings.Contains(p, "Exactly as signed and sent") || !strings.Contains(p, "Never sent") {
			t.Errorf("the payload of a log never sent is said to have been sent:\n%s", p)
		}
	}
}

// TestRefusedFiltersOpenWithAFocusedSummary: a filter that is not right
// opens the list with an error summary that takes the focus and links to
// the field's error, as a refused form does.
func TestRefusedFiltersOpenWithAFocusedSummary(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	for _, p := range []string{"/webhooks?status=Lost", "/webhook-event-logs?status=lost"} {
		code, _, page := b.get(p)
		if code != http.StatusUnprocessableEntity {
			t.Errorf("GET %s: %d; want 422", p, code)
		}
		if !strings.Contains(page, `id="error-summary" tabindex="-1" data-focus`) || !strings.Contains(page, `<a href="#status-error">`) {
			t.Errorf("GET %s: no focused error summary linking to the status error:\n%s", p, page)
		}
	}
}
