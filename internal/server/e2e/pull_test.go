package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// A pull webhook through a whole herald: nothing is POSTed; its consumer,
// with a pull token, waits for events and is woken by a firing, reads them
// in firing order with signatures the Standard Webhooks library verifies,
// and acknowledges them by cursor, which completes their logs; a resend
// queues an event again. The pull token reads that one webhook and calls
// nothing else; a read token cannot make one.
func TestPullWebhookIsReadVerifiedAndAcknowledged(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testPullWebhook)
}

func testPullWebhook(t *testing.T, dbURL string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	posted := h.CreateWebhook("posted", rcv.URL, "license.created")
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "behind a firewall", Type: "pull", Events: []string{"license.created"},
		SignatureScheme: "standard-webhooks", Ordering: "license"})
	if err != nil {
		t.Fatal(err)
	}
	if hook.Type != "pull" || hook.URL != "" {
		t.Fatalf("pull webhook: type %q url %q; want pull and no url", hook.Type, hook.URL)
	}
	token, err := h.API.CreatePullToken(ctx, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	pull := client.New(h.URL, token, &http.Client{Timeout: time.Minute})

	// A read waiting for an event returns when one fires.
	first := make(chan client.PullEvents, 1)
	go func() {
		got, err := pull.ReadEvents(ctx, hook.ID, client.ReadOptions{Wait: 45 * time.Second})
		if err != nil {
			t.Errorf("waiting read: %v", err)
		}
		first <- got
	}()
	time.Sleep(200 * time.Millisecond) // let the read start waiting; it finds the event either way
	licenses := []string{h.CreateLicense(nil)}
	got := <-first
	if len(got.Data) != 1 {
		t.Fatalf("waiting read: %d events; want the one fired", len(got.Data))
	}
	for range 3 {
		licenses = append(licenses, h.CreateLicense(nil))
	}
	rest, err := pull.ReadEvents(ctx, hook.ID, client.ReadOptions{After: got.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	events := append(got.Data, rest.Data...)
	if len(events) != 4 {
		t.Fatalf("read %d events; want 4", len(events))
	}
	verifier, err := standardwebhooks.NewWebhook(hook.Token)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		if err := verifier.Verify([]byte(e.Body), e.Header()); err != nil {
			t.Errorf("event %d: the Standard Webhooks library refuses it: %v (headers %v)", i, err, e.Headers)
		}
		var body struct {
			ID   string `json:"id"`
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(e.Body), &body); err != nil {
			t.Fatal(err)
		}
		if body.Data.ID != licenses[i] || body.ID != e.ID {
			t.Errorf("event %d is license %s's (id %s); want license %s's, in firing order", i, body.Data.ID, body.ID, licenses[i])
		}
	}
	tampered := []byte(events[0].Body)
	tampered[len(tampered)-2] ^= 1
	if verifier.Verify(tampered, events[0].Header()) == nil {
		t.Error("a tampered body verifies; want it refused")
	}

	// Acknowledging the third completes the first three; the fourth is read
	// again.
	if n, err := pull.AckEvents(ctx, hook.ID, events[2].Cursor); err != nil || n != 3 {
		t.Fatalf("ack: %d, %v; want 3 acknowledged", n, err)
	}
	left, err := pull.ReadEvents(ctx, hook.ID, client.ReadOptions{})
	if err != nil || len(left.Data) != 1 || left.Data[0].ID != events[3].ID {
		t.Fatalf("read after the ack: %+v, %v; want the fourth event alone", left.Data, err)
	}
	logs := h.Logs("webhookId=" + hook.ID + "&status=succeeded")
	if len(logs) != 3 {
		t.Fatalf("%d logs succeeded; want 3", len(logs))
	}
	l := h.Log(logs[0].ID)
	if len(l.Attempts) != 1 || l.Attempts[0].Trigger != "pull" {
		t.Fatalf("acknowledged log's attempts: %+v; want one, trigger pull", l.Attempts)
	}
	// A resend queues it again, for the consumer.
	if _, err := h.API.ResendEventLog(ctx, logs[0].ID); err != nil {
		t.Fatal(err)
	}
	again, err := pull.ReadEvents(ctx, hook.ID, client.ReadOptions{After: events[3].Cursor})
	if err != nil || len(again.Data) != 1 || again.Data[0].LogID != logs[0].ID {
		t.Fatalf("read after a resend: %+v, %v; want the resent event", again.Data, err)
	}

	// The HTTP webhook got its POSTs; the pull webhook none.
	heraldtest.Eventually(t, 10*time.Second, "the http webhook's four deliveries", func() bool { return rcv.Count() == 4 })

	// The pull token reads its webhook's events, nothing else.
	for _, c := range []struct {
		what   string
		call   func() error
		status int
	}{
		{"another webhook's events", func() error {
			_, err := pull.ReadEvents(ctx, posted.ID, client.ReadOptions{})
			return err
		}, http.StatusNotFound},
		{"the webhooks", func() error { _, err := pull.ListWebhooks(ctx, client.WebhookFilter{}); return err }, http.StatusForbidden},
		{"its webhook", func() error { _, err := pull.Webhook(ctx, hook.ID); return err }, http.StatusForbidden},
		{"a pull token", func() error { _, err := pull.CreatePullToken(ctx, hook.ID); return err }, http.StatusForbidden},
		{"an http webhook's events with an API token", func() error {
			_, err := h.API.ReadEvents(ctx, posted.ID, client.ReadOptions{})
			return err
		}, http.StatusConflict},
		{"a cursor never answered", func() error { _, err := pull.AckEvents(ctx, hook.ID, "999"); return err }, http.StatusUnprocessableEntity},
	} {
		if err := c.call(); !client.IsStatus(err, c.status) {
			t.Errorf("%s with the pull token: %v; want %d", c.what, err, c.status)
		}
	}
	read, err := h.API.CreateAPIToken(ctx, client.APITokenCreate{Name: "reader", Scope: "read"})
	if err != nil {
		t.Fatal(err)
	}
	reader := client.New(h.URL, read.Secret, nil)
	if _, err := reader.CreatePullToken(ctx, hook.ID); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("a pull token made with a read token: %v; want 403", err)
	}
	if _, err := reader.ReadEvents(ctx, hook.ID, client.ReadOptions{}); err != nil {
		t.Errorf("a read token reading the events: %v; want them", err)
	}
	if _, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "p", Type: "pull", URL: rcv.URL, Events: []string{"license.created"}}); !client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("a pull webhook with a url: %v; want 422", err)
	}
}

// A pull webhook's filter decides its events as an http webhook's does.
func TestPullWebhookFilters(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	ctx := context.Background()
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "pro only", Type: "pull", Events: []string{"license.created"},
		Filter: json.RawMessage(`{"data.metadata.plan": "pro"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.CreateLicense(map[string]any{"plan": "free"})
	pro := h.CreateLicense(map[string]any{"plan": "pro"})
	got, err := h.API.ReadEvents(ctx, hook.ID, client.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 1 {
		t.Fatalf("%d events read; want the pro license's alone", len(got.Data))
	}
	var body struct {
		Data struct{ ID string } `json:"data"`
	}
	json.Unmarshal([]byte(got.Data[0].Body), &body)
	if body.Data.ID != pro {
		t.Errorf("read license %s's event; want %s's", body.Data.ID, pro)
	}
}

// A pull webhook that wants thin events reads them thin, signed as read.
func TestPullWebhookReadsThinEvents(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	ctx := context.Background()
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "thin", Type: "pull", Payload: "thin", Events: []string{"license.created"},
		SignatureScheme: "standard-webhooks"})
	if err != nil {
		t.Fatal(err)
	}
	h.CreateLicense(map[string]any{"secret": "kept at herald"})
	got, err := h.API.ReadEvents(ctx, hook.ID, client.ReadOptions{})
	if err != nil || len(got.Data) != 1 {
		t.Fatalf("read: %+v, %v; want one event", got.Data, err)
	}
	e := got.Data[0]
	if strings.Contains(e.Body, "kept at herald") || !strings.Contains(e.Body, "/v3/licenses/") {
		t.Errorf("thin event body %s; want the id and the path, not the object", e.Body)
	}
	verifier, err := standardwebhooks.NewWebhook(hook.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifier.Verify([]byte(e.Body), e.Header()); err != nil {
		t.Errorf("the Standard Webhooks library refuses the thin event: %v", err)
	}
}
