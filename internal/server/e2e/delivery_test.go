package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

const nonASCII = "Zoë – 日本語 – 🚀"

func TestDeliveryIsRawUTF8AndSignedOverTheRawBytes(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testDeliveryIsRawUTF8AndSignedOverTheRawBytes)
}

func testDeliveryIsRawUTF8AndSignedOverTheRawBytes(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("orders", rcv.URL, "license.created")
	h.CreateLicense(map[string]any{"customer": nonASCII})

	heraldtest.Eventually(t, 10*time.Second, "the delivery", func() bool { return rcv.Count() == 1 })
	got := rcv.Requests()[0]
	if !bytes.Contains(got.Body, []byte(nonASCII)) {
		t.Errorf("body lacks the raw UTF-8 of %q: %s", nonASCII, got.Body)
	}
	if bytes.Contains(got.Body, []byte(`\u`)) {
		t.Errorf("body has \\u escapes: %s", got.Body)
	}
	if cl := got.Header.Get("Content-Length"); cl != strconv.Itoa(len(got.Body)) {
		t.Errorf("Content-Length %s; want %d", cl, len(got.Body))
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	sig := got.Header.Get("WEBHOOK-SIGNATURE") // any casing reads it
	if err := webhook.Verify(hook.Token, got.Body, sig); err != nil {
		t.Errorf("a receiver hashing the raw bytes rejects the delivery: %v", err)
	}
	var parsed map[string]any
	if err := json.Unmarshal(got.Body, &parsed); err != nil {
		t.Fatal(err)
	}
	reserialised, _ := json.Marshal(parsed)
	if webhook.Verify(hook.Token, reserialised, sig) == nil {
		t.Errorf("re-serialised JSON reproduced the signature; the test cannot tell right from wrong receivers")
	}
	p, err := webhook.Parse(got.Body)
	if err != nil {
		t.Fatal(err)
	}
	if p.Event != "license.created" || got.Header.Get("webhook-id") != p.ID {
		t.Errorf("event %q, webhook-id %q, id %q", p.Event, got.Header.Get("webhook-id"), p.ID)
	}
	if !strings.HasPrefix(got.Header.Get("User-Agent"), "herald/") {
		t.Errorf("User-Agent %q", got.Header.Get("User-Agent"))
	}
	heraldtest.Eventually(t, 5*time.Second, "the log to succeed", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].Status == "succeeded"
	})
	l := h.Logs("webhookId=" + hook.ID)[0]
	if l.Payload != string(got.Body) || l.EventID != p.ID {
		t.Errorf("log payload differs from the bytes sent:\n%s\n%s", l.Payload, got.Body)
	}
}

func TestFailingReceiverGetsFiveAttemptsOfTheSameBytes(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testFailingReceiverGetsFiveAttemptsOfTheSameBytes)
}

func testFailingReceiverGetsFiveAttemptsOfTheSameBytes(t *testing.T, db string) {
	const interval = 150 * time.Millisecond
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{RetryInterval: interval}})
	rcv := heraldtest.NewReceiver(t)
	rcv.Status(500, "boom")
	hook := h.CreateWebhook("failing", rcv.URL, "license.created")
	h.CreateLicense(nil)

	heraldtest.Eventually(t, 20*time.Second, "the log to fail", func() bool {
		logs := h.Logs("webhookId=" + hook.ID)
		return len(logs) == 1 && logs[0].Status == "failed"
	})
	reqs := rcv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("got %d attempts; want 5", len(reqs))
	}
	for i, r := range reqs[1:] {
		if !bytes.Equal(r.Body, reqs[0].Body) || r.Header.Get("webhook-signature") != reqs[0].Header.Get("webhook-signature") {
			t.Errorf("attempt %d sent other bytes or signature", i+2)
		}
		// A retry falls due the interval after the previous answer, which
		// comes after the receiver saw the request; but due times are kept
		// to the millisecond, so the claim may come up to 1ms early.
		if gap := r.At.Sub(reqs[i].At); gap < interval-time.Millisecond {
			t.Errorf("attempt %d came %s after the previous; want at least %s (to the millisecond)", i+2, gap, interval)
		}
	}
	if got := h.Webhook(hook.ID).Status; got != "Unhealthy" {
		t.Errorf("webhook %s; want Unhealthy", got)
	}
	l := h.Log(h.Logs("webhookId=" + hook.ID)[0].ID)
	if l.AttemptCount != 5 || len(l.Attempts) != 5 {
		t.Fatalf("attemptCount %d, %d attempts; want 5", l.AttemptCount, len(l.Attempts))
	}
	for _, a := range l.Attempts {
		if a.StatusCode == nil || *a.StatusCode != 500 || a.Trigger != "automatic" || a.ResponseBody != "boom" || a.ReceivedAt == nil {
			t.Errorf("attempt %+v", a)
		}
	}
	if l.RetryReason == nil || !strings.Contains(*l.RetryReason, "500") {
		t.Errorf("retryReason %v; want the 500 named", l.RetryReason)
	}
}

func TestTimeoutAndRedirectFailTheAttempt(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testTimeoutAndRedirectFailTheAttempt)
}

func testTimeoutAndRedirectFailTheAttempt(t *testing.T, db string) {
	// Long enough that the redirect is answered within it on a busy machine
	// (it must fail for its 302, not a time-out); the slow receiver never answers.
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Delivery: delivery.Config{AttemptTimeout: 3 * time.Second, MaxAttempts: 1}})
	slow := heraldtest.NewReceiver(t)
	slow.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Minute):
		case <-r.Context().Done():
		}
	})
	target := heraldtest.NewReceiver(t)
	redirect := heraldtest.NewReceiver(t)
	redirect.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	})
	slowHook := h.CreateWebhook("slow", slow.URL, "license.created")
	redirectHook := h.CreateWebhook("redirect", redirect.URL, "license.created")
	h.CreateLicense(nil)

	for _, tc := range []struct {
		hook, want string
	}{{slowHook.ID, "timed out"}, {redirectHook.ID, "302"}} {
		heraldtest.Eventually(t, 10*time.Second, "the log to fail", func() bool {
			logs := h.Logs("webhookId=" + tc.hook)
			return len(logs) == 1 && logs[0].Status == "failed"
		})
		l := h.Log(h.Logs("webhookId=" + tc.hook)[0].ID)
		if l.RetryReason == nil || !strings.Contains(*l.RetryReason, tc.want) {
			t.Errorf("retryReason %v; want it to say %q", l.RetryReason, tc.want)
		}
		if got := h.Webhook(tc.hook).Status; got != "Unhealthy" {
			t.Errorf("webhook %s; want Unhealthy", got)
		}
	}
	if target.Count() != 0 {
		t.Errorf("the redirect was followed")
	}
}

func TestDisabledWebhookLogsCancelledAndSendsNothing(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testDisabledWebhookLogsCancelledAndSendsNothing)
}

func testDisabledWebhookLogsCancelledAndSendsNothing(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	rcv := heraldtest.NewReceiver(t)
	var hook heraldtest.Webhook
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "off", "url": rcv.URL, "events": []string{"license.created"}, "enabled": false}, &hook)
	live := heraldtest.NewReceiver(t)
	liveHook := h.CreateWebhook("on", live.URL, "license.created")
	h.CreateLicense(nil)

	heraldtest.Eventually(t, 10*time.Second, "the enabled webhook's delivery", func() bool { return live.Count() == 1 })
	logs := h.Logs("webhookId=" + hook.ID)
	if len(logs) != 1 || logs[0].Status != "cancelled" {
		t.Fatalf("logs %+v; want one cancelled", logs)
	}
	if rcv.Count() != 0 {
		t.Errorf("a disabled webhook got %d requests", rcv.Count())
	}
	if h.Logs("webhookId=" + liveHook.ID)[0].EventID != logs[0].EventID {
		t.Error("the two logs of one event carry different event ids")
	}
}
