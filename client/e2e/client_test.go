package e2e_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// start runs a real herald with a receiver subscribed to kinds (every kind
// Trigger fires when none), and a client of it.
func start(t *testing.T, kinds ...string) (*client.Client, *heraldtest.Receiver, client.Webhook) {
	t.Helper()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	c := client.New(h.URL, h.Token, nil)
	if len(kinds) == 0 {
		kinds = client.TriggerKinds
	}
	w, err := c.CreateWebhook(t.Context(), client.WebhookCreate{Name: "client", URL: rcv.URL, Events: kinds})
	if err != nil {
		t.Fatal(err)
	}
	if w.Token == "" || w.Status != "Healthy" || !w.Enabled {
		t.Fatalf("created %+v; want a token, Healthy and enabled", w)
	}
	return c, rcv, w
}

// kinds are the event kinds the receiver got, each delivery verified.
func kinds(t *testing.T, rcv *heraldtest.Receiver, token string) []string {
	var out []string
	for _, r := range rcv.Requests() {
		if err := webhook.Verify(token, r.Body, r.Header.Get("webhook-signature")); err != nil {
			t.Errorf("a delivery failed verification (%v): %s", err, r.Body)
		}
		var p struct{ Event string }
		json.Unmarshal(r.Body, &p)
		out = append(out, p.Event)
	}
	return out
}

// Trigger fires each kind it names through the real API, and the event
// reaches the webhook.
func TestTriggerFiresEachKind(t *testing.T) {
	t.Parallel()
	c, rcv, w := start(t)
	for _, kind := range client.TriggerKinds {
		calls, err := c.Trigger(t.Context(), kind)
		if err != nil {
			t.Fatalf("trigger %s: %v (calls %v)", kind, err, calls)
		}
		heraldtest.Eventually(t, 30*time.Second, kind+" to be delivered", func() bool {
			return slices.Contains(kinds(t, rcv, w.Token), kind)
		})
	}
	if _, err := c.Trigger(t.Context(), "license.exploded"); err == nil {
		t.Error("trigger of an unknown kind succeeded")
	}
}

// Logs, a resend and a test through the client, and the problem herald
// answers when a call is refused.
func TestLogsResendTestAndProblems(t *testing.T) {
	t.Parallel()
	// Not the expiry kinds: the triggered license expires 30 s later, and
	// its deliveries would come between the resend's.
	c, rcv, w := start(t, "license.created", "license.renewed")
	ctx := t.Context()
	if _, err := c.Trigger(ctx, "license.created"); err != nil {
		t.Fatal(err)
	}
	var logs client.Page[client.EventLog]
	heraldtest.Eventually(t, 30*time.Second, "the license.created log to succeed", func() bool {
		var err error
		logs, err = c.ListEventLogs(ctx, client.LogFilter{WebhookID: w.ID, Event: "license.created"})
		return err == nil && len(logs.Data) == 1 && logs.Data[0].Status == "succeeded"
	})
	l := logs.Data[0]
	if l.Attempts != nil {
		t.Errorf("a listed log carries attempts: %+v", l.Attempts)
	}
	full, err := c.EventLog(ctx, l.ID)
	if err != nil || len(full.Attempts) != 1 || full.Attempts[0].Trigger != "automatic" || full.Payload == "" {
		t.Fatalf("log %+v, %v; want one automatic attempt and the payload", full, err)
	}
	before := rcv.Count()
	resent, err := c.ResendEventLog(ctx, l.ID)
	if err != nil || len(resent.Attempts) != 2 || resent.Attempts[1].Trigger != "resend" {
		t.Fatalf("resend: %+v, %v; want a second attempt, a resend", resent, err)
	}
	if got := rcv.Requests()[before].Body; string(got) != full.Payload {
		t.Errorf("the resend sent %s; want the same bytes %s", got, full.Payload)
	}
	// The resend's attempt keeps the headers sent: the signature the receiver got among them.
	sig := rcv.Requests()[before].Header.Get("webhook-signature")
	if h := resent.Attempts[1].Headers; h == nil || !slices.Contains(h.Request, client.Header{Name: "webhook-signature", Value: sig}) {
		t.Errorf("the resend's attempt headers %+v; want the signature sent, %q", h, sig)
	}

	res, err := c.TestWebhook(ctx, w.ID, client.TestRequest{Event: "license.renewed"})
	if err != nil || !res.Succeeded || res.Event != "license.renewed" || res.Response == nil || res.Response.StatusCode != 204 {
		t.Errorf("test: %+v, %v; want a 204 to a license.renewed sample", res, err)
	}

	_, err = c.CreateWebhook(ctx, client.WebhookCreate{Name: "bad", URL: "ftp://example.com/", Events: []string{"license.created"}})
	var pe *client.Error
	if !errors.As(err, &pe) || pe.Status != 422 || pe.RequestID == "" || len(pe.Errors) == 0 || pe.Errors[0].Field != "url" {
		t.Errorf("create with an ftp URL: %#v; want a 422 naming url, with the request id", err)
	}
	if _, err := c.EventLog(ctx, "no-such-log"); !client.IsStatus(err, 404) {
		t.Errorf("an unknown log: %v; want 404", err)
	}
	schema, err := c.EventTypeSchema(ctx, "license.renewed")
	var sch struct {
		Title string `json:"title"`
	}
	if err != nil || json.Unmarshal(schema, &sch) != nil || sch.Title != "license.renewed" {
		t.Errorf("license.renewed's schema: %s, %v; want the schema titled with the kind", schema, err)
	}
	if _, err := c.EventTypeSchema(ctx, "license.exploded"); !client.IsStatus(err, 404) {
		t.Errorf("an unknown kind's schema: %v; want 404", err)
	}
	bad := client.New(c.BaseURL(), "hrld_wrong", nil)
	if _, err := bad.ListWebhooks(ctx, client.WebhookFilter{}); !client.IsStatus(err, 401) {
		t.Errorf("a wrong token: %v; want 401", err)
	}
}

// Trigger knows every kind herald fires, so `herald trigger` can show each:
// it fires every licensing kind, and refuses each operational one (which
// only a change of a webhook's health fires) with how to see it.
func TestTriggerKnowsEveryKind(t *testing.T) {
	var kinds, operational []string
	for _, k := range event.Kinds {
		if k.Operational() {
			operational = append(operational, string(k))
		} else {
			kinds = append(kinds, string(k))
		}
	}
	slices.Sort(kinds)
	got := slices.Sorted(slices.Values(client.TriggerKinds))
	if !slices.Equal(got, kinds) {
		t.Errorf("Trigger fires %v; herald's licensing kinds are %v", got, kinds)
	}
	if got := slices.Sorted(slices.Values(client.OperationalKinds)); !slices.Equal(got, slices.Sorted(slices.Values(operational))) {
		t.Errorf("client.OperationalKinds %v; herald's operational kinds are %v", got, operational)
	}
	c := client.New("http://127.0.0.1:1", "hrld_unused", nil)
	for _, k := range client.OperationalKinds {
		calls, err := c.Trigger(t.Context(), k)
		if err == nil || len(calls) != 0 || !strings.Contains(err.Error(), "POST /v3/webhooks/{id}/test") {
			t.Errorf("Trigger(%s) = %v, %v; want no call and how to see one", k, calls, err)
		}
	}
}

// A create retried with the same idempotency key is made once: the retry
// gets the first answer, and one event goes out.
func TestIdempotencyKeyMakesARetryHarmless(t *testing.T) {
	t.Parallel()
	c, _, w := start(t)
	ctx := t.Context()
	p, err := c.CreateProduct(ctx, "Idempotent", nil)
	if err != nil {
		t.Fatal(err)
	}
	keyed := client.WithIdempotencyKey(ctx, "create-license-0001")
	first, err := c.CreateLicense(keyed, client.LicenseCreate{ProductID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateLicense(keyed, client.LicenseCreate{ProductID: p.ID})
	if err != nil || again.ID != first.ID || again.Key != first.Key {
		t.Fatalf("the retry: %+v, %v; want the first answer, license %s", again, err, first.ID)
	}
	if _, err := c.CreateLicense(keyed, client.LicenseCreate{ProductID: p.ID, Validity: 7}); !client.IsStatus(err, 422) {
		t.Errorf("the same key with another body: %v; want 422", err)
	}
	// An event's logs are written with the change that fired it, so once
	// the calls have answered, the logs tell how many events there were.
	logs, err := c.ListEventLogs(ctx, client.LogFilter{WebhookID: w.ID, Event: "license.created"})
	if err != nil || len(logs.Data) != 1 {
		t.Errorf("%d license.created logs (%v); want 1", len(logs.Data), err)
	}
}

// A read token made through the client reads and is refused changes; once
// revoked it is refused everything.
func TestAPITokensThroughTheClient(t *testing.T) {
	t.Parallel()
	c, _, _ := start(t)
	ctx := t.Context()
	tok, err := c.CreateAPIToken(ctx, client.APITokenCreate{Name: "dashboard", Scope: "read"})
	if err != nil || tok.Secret == "" || tok.Scope != "read" {
		t.Fatalf("create: %+v, %v; want a read token with its secret", tok, err)
	}
	reader := client.New(c.BaseURL(), tok.Secret, nil)
	if _, err := reader.ListWebhooks(ctx, client.WebhookFilter{}); err != nil {
		t.Errorf("a read token reading: %v", err)
	}
	if _, err := reader.CreateProduct(ctx, "Nope", nil); !client.IsStatus(err, 403) {
		t.Errorf("a read token creating: %v; want 403", err)
	}
	list, err := c.ListAPITokens(ctx, client.ListOptions{})
	if err != nil || len(list.Data) != 2 || list.Data[0].Secret != "" || list.Data[1].Secret != "" {
		t.Errorf("list: %+v, %v; want the first token and this one, without secrets", list, err)
	}
	if err := c.RevokeAPIToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.ListWebhooks(ctx, client.WebhookFilter{}); !client.IsStatus(err, 401) {
		t.Errorf("a revoked token: %v; want 401", err)
	}
}
