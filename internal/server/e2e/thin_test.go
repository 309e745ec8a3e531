package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/webhook"
)

// A thin webhook's deliveries carry the event's id, kind, time and
// sequence and, as data, the object's id and the API path that answers
// it, signed as sent; the receiver reads the object there with a read API
// token, as it is now. A change back to full sends the object again.
func TestThinEventsNameTheObjectAndItsPath(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.SQLiteURL(t)})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "thin", URL: rcv.URL, Events: []string{"license.created"}, Payload: "thin"})
	if err != nil {
		t.Fatal(err)
	}
	if hook.Payload != "thin" {
		t.Fatalf("got payload %q; want thin", hook.Payload)
	}
	licenseID := h.CreateLicense(map[string]any{"customer": "a secret they must not hold"})
	heraldtest.Eventually(t, 20*time.Second, "the thin delivery", func() bool { return rcv.Count() == 1 })
	got := rcv.Requests()[0]
	if err := webhook.Verify(hook.Token, got.Body, got.Header.Get("webhook-signature")); err != nil {
		t.Fatalf("the thin body does not verify: %v", err)
	}
	var body struct {
		ID, Event, TriggeredAt string
		Sequence               int
		Data                   map[string]any
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": licenseID, "path": "/v3/licenses/" + licenseID}
	if body.Event != "license.created" || body.ID != got.Header.Get("webhook-id") || body.TriggeredAt == "" || body.Sequence != 1 ||
		len(body.Data) != 2 || body.Data["id"] != want["id"] || body.Data["path"] != want["path"] {
		t.Fatalf("got body %s; want the envelope with data %v", got.Body, want)
	}
	if strings.Contains(string(got.Body), "a secret they must not hold") {
		t.Fatal("the thin body carries the object's data")
	}
	// The receiver reads the path with a read token.
	read, err := h.API.CreateAPIToken(ctx, client.APITokenCreate{Name: "receiver", Scope: "read"})
	if err != nil {
		t.Fatal(err)
	}
	var license struct{ ID string }
	if code := h.DoAs(read.Secret, "GET", body.Data["path"].(string), nil, &license); code != http.StatusOK || license.ID != licenseID {
		t.Fatalf("GET %s with a read token: %d %+v", body.Data["path"], code, license)
	}

	full := "full"
	if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{Payload: &full}); err != nil {
		t.Fatal(err)
	}
	h.CreateLicense(map[string]any{"customer": "full again"})
	heraldtest.Eventually(t, 20*time.Second, "the full delivery", func() bool { return rcv.Count() == 2 })
	if b := rcv.Requests()[1].Body; !strings.Contains(string(b), "full again") {
		t.Errorf("after the change to full got %s; want the object", b)
	}
	var p struct {
		Errors []struct{ Field string }
	}
	if code := h.Do("PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"payload": "slim"}, &p); code != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "payload" {
		t.Errorf("payload slim: got %d %+v; want 422 naming payload", code, p.Errors)
	}
}
