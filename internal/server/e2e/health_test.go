package e2e_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/notify/smtptest"
	"github.com/heraldhq/herald/webhook"
)

// failEvents fires n license.created events and waits until the webhook has
// n completed logs.
func failEvents(t *testing.T, h *heraldtest.Herald, hookID string, n int) {
	t.Helper()
	before := len(h.Logs("webhookId=" + hookID + "&status=failed"))
	for range n {
		h.CreateLicense(nil)
	}
	heraldtest.Eventually(t, 30*time.Second, "the events to fail", func() bool {
		return len(h.Logs("webhookId="+hookID+"&status=failed")) == before+n
	})
}

func TestFiftyFailedEventsSuspendAndEmailOnce(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testFiftyFailedEventsSuspendAndEmailOnce)
}

func testFiftyFailedEventsSuspendAndEmailOnce(t *testing.T, db string) {
	mail := smtptest.Start(t)
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, SMTPURL: mail.URL(), Delivery: delivery.Config{MaxAttempts: 1}})
	h.Must(200, "PATCH", "/v3/account", map[string]any{"notificationEmail": "alerts@example.com"}, nil)
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(503, "down")
	hook := h.CreateWebhook("Zoë's CRM", rcv.URL, "license.created")

	failEvents(t, h, hook.ID, 49)
	if got := h.Webhook(hook.ID).Status; got != "Unhealthy" {
		t.Fatalf("after 49 failed events: %s; want Unhealthy", got)
	}
	failEvents(t, h, hook.ID, 1)
	if got := h.Webhook(hook.ID).Status; got != "Suspended" {
		t.Fatalf("after 50 failed events: %s; want Suspended", got)
	}
	// The warning of Unhealthy, then the suspension's.
	msgs := mail.WaitFor(t, 2, 10*time.Second)
	for _, m := range msgs {
		if len(m.To) != 1 || m.To[0] != "alerts@example.com" {
			t.Errorf("email to %v; want alerts@example.com", m.To)
		}
		if !strings.Contains(m.Subject+m.Text, "Zoë's CRM") {
			t.Errorf("email does not name the webhook: %q %q", m.Subject, m.Text)
		}
		// Without --public-url the page is named by its path, and the
		// missing setting said so, rather than a host invented.
		if !strings.Contains(m.Text, "/webhooks/"+hook.ID+" in herald's portal") || !strings.Contains(m.Text, "--public-url") {
			t.Errorf("email does not name the webhook's page:\n%s", m.Text)
		}
	}
	if !strings.Contains(msgs[0].Subject, "Unhealthy") || !strings.Contains(msgs[1].Subject, "suspended") {
		t.Errorf("emails %q, %q; want the Unhealthy warning, then the suspension", msgs[0].Subject, msgs[1].Subject)
	}
	// The warning counts what is left when it is written: 49 when the first
	// failure was recorded alone, fewer when a busy recorder took several
	// failures in the batch that turned the webhook Unhealthy.
	if m := regexp.MustCompile(`(\d+) more events? fails? after all retries`).FindStringSubmatch(msgs[0].Text); m == nil {
		t.Errorf("the Unhealthy warning does not say how many more failed events suspend the webhook:\n%s", msgs[0].Text)
	} else if n, _ := strconv.Atoi(m[1]); n < 1 || n > 49 {
		t.Errorf("the Unhealthy warning says %d more failed events lead to suspension; want 1 to 49", n)
	}

	// While suspended: events are logged, nothing is sent, no second email.
	sent := rcv.Count()
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 5*time.Second, "the suspended event's log", func() bool {
		return len(h.Logs("webhookId="+hook.ID+"&status=cancelled")) == 1
	})
	time.Sleep(300 * time.Millisecond) // would-be attempts have had their chance
	if rcv.Count() != sent {
		t.Errorf("a suspended webhook got %d more requests", rcv.Count()-sent)
	}
	if n := len(mail.Messages()); n != 2 {
		t.Errorf("%d emails; want exactly 2", n)
	}
}

func TestSuccessfulResendMakesSuspendedWebhookHealthy(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testSuccessfulResendMakesSuspendedWebhookHealthy)
}

func testSuccessfulResendMakesSuspendedWebhookHealthy(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{MaxAttempts: 1, SuspendAfter: 2}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(500, "")
	hook := h.CreateWebhook("recovering", rcv.URL, "license.created")
	failEvents(t, h, hook.ID, 2)
	if got := h.Webhook(hook.ID).Status; got != "Suspended" {
		t.Fatalf("status %s; want Suspended", got)
	}
	logID := h.Logs("webhookId=" + hook.ID)[0].ID
	before := h.Log(logID)

	// A failing resend is recorded and changes nothing else.
	var l heraldtest.Log
	h.Must(200, "POST", "/v3/webhook-event-logs/"+logID+"/resend", nil, &l)
	if l.Status != "failed" || len(l.Attempts) != len(before.Attempts)+1 || h.Webhook(hook.ID).Status != "Suspended" {
		t.Fatalf("after a failed resend: log %s with %d attempts, webhook %s", l.Status, len(l.Attempts), h.Webhook(hook.ID).Status)
	}

	rcv.Status(200, "ok")
	h.Must(200, "POST", "/v3/webhook-event-logs/"+logID+"/resend", nil, &l)
	last := l.Attempts[len(l.Attempts)-1]
	if l.Status != "succeeded" || last.Trigger != "resend" || last.StatusCode == nil || *last.StatusCode != 200 {
		t.Fatalf("after a good resend: log %s, last attempt %+v", l.Status, last)
	}
	if got := h.Webhook(hook.ID).Status; got != "Healthy" {
		t.Errorf("webhook %s; want Healthy", got)
	}
	// attemptCount counts resends, in the answer, a log's page and a list.
	if l.AttemptCount != len(l.Attempts) || h.Log(logID).AttemptCount != len(l.Attempts) || h.Logs("webhookId=" + hook.ID)[0].AttemptCount != len(l.Attempts) {
		t.Errorf("attemptCount %d (read again %d, listed %d); want %d, every attempt", l.AttemptCount, h.Log(logID).AttemptCount,
			h.Logs("webhookId=" + hook.ID)[0].AttemptCount, len(l.Attempts))
	}
	reqs := rcv.Requests()
	if string(reqs[len(reqs)-1].Body) != before.Payload {
		t.Errorf("resend sent other bytes than the log's payload")
	}
}

func TestTestDeliveryIsNeverLoggedAndNeverTouchesHealth(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testTestDeliveryIsNeverLoggedAndNeverTouchesHealth)
}

func testTestDeliveryIsNeverLoggedAndNeverTouchesHealth(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(500, "nope")
	hook := h.CreateWebhook("tested", rcv.URL, "license.renewed", "license.created")

	var res struct {
		Event   string
		Request struct {
			URL, Body, Signature string
			Headers              map[string]string
		}
		Response *struct {
			StatusCode int
			Body       string
		}
		Error     *string
		Succeeded bool
	}
	h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", nil, &res)
	if res.Event != "license.renewed" {
		t.Errorf("event %q; want the first subscribed, license.renewed", res.Event)
	}
	if res.Succeeded || res.Response == nil || res.Response.StatusCode != 500 || res.Response.Body != "nope" || res.Error == nil {
		t.Errorf("result %+v; want the receiver's 500 reported", res)
	}
	got := rcv.Requests()
	if len(got) != 1 || string(got[0].Body) != res.Request.Body {
		t.Fatalf("the body shown is not the body sent")
	}
	if err := webhook.Verify(hook.Token, []byte(res.Request.Body), res.Request.Signature); err != nil {
		t.Errorf("signature shown does not verify: %v", err)
	}
	if got[0].Header.Get("webhook-signature") != res.Request.Signature {
		t.Errorf("signature shown is not the one sent")
	}
	if !strings.Contains(res.Request.Body, "日本語") || strings.Contains(res.Request.Body, `\u`) {
		t.Errorf("sample lacks raw non-ASCII: %s", res.Request.Body)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(res.Request.Body), &p); err != nil || p["event"] != "license.renewed" {
		t.Errorf("sample payload %s", res.Request.Body)
	}

	h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", map[string]any{"event": "activation.deleted"}, &res)
	if res.Event != "activation.deleted" {
		t.Errorf("event %q; want activation.deleted", res.Event)
	}
	if logs := h.Logs(""); len(logs) != 0 {
		t.Errorf("test deliveries left %d logs", len(logs))
	}
	if got := h.Webhook(hook.ID).Status; got != "Healthy" {
		t.Errorf("failed tests made the webhook %s", got)
	}
}
