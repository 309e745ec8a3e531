package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testADestinationsConfigIsSealed: a webhook of another type keeps its type
// and its config sealed (no secret in the clear in its row), reads both
// back, claims its logs with its url (which names its type), and gives
// its config by id to the attempt that publishes; a patch of the config
// replaces it, and one of another field leaves it.
func testADestinationsConfigIsSealed(t *testing.T, b *Bundle) {
	secret := "pw-" + store.NewID()
	config := json.RawMessage(`{"url":"amqp://herald:` + secret + `@broker.example.com:5672/","exchange":"x","routingKey":"k"}`)
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "bus", URL: "rabbitmq://broker.example.com:5672/x/k",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_d_0123456789", Type: "rabbitmq", Config: config})
	if err != nil {
		t.Fatal(err)
	}
	var sealed []byte
	var typ string
	if err := b.St.QueryRow(b.Ctx, `SELECT type, config_sealed FROM webhooks WHERE id = ?`, w.ID).Scan(&typ, &sealed); err != nil {
		t.Fatal(err)
	}
	if typ != "rabbitmq" || len(sealed) == 0 || strings.Contains(string(sealed), secret) || strings.Contains(string(sealed), "amqp") {
		t.Fatalf("stored type %q, config %d bytes (in the clear: %v); want rabbitmq, sealed", typ, len(sealed), strings.Contains(string(sealed), secret))
	}
	got, err := b.St.Webhook(b.Ctx, b.Account.ID, w.ID)
	if err != nil || got.Type != "rabbitmq" || string(got.Config) != string(config) {
		t.Fatalf("read back type %q config %s, %v", got.Type, got.Config, err)
	}
	plain := b.Webhook(t, "plain")
	if p, err := b.St.Webhook(b.Ctx, b.Account.ID, plain.ID); err != nil || p.Type != store.TypeHTTP || p.Config != nil {
		t.Fatalf("an http webhook reads type %q config %s, %v; want http and none", p.Type, p.Config, err)
	}

	b.Fire(t, b.St, 1)
	claims := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	var found bool
	for _, c := range claims {
		if c.WebhookID == w.ID {
			found = c.URL == w.URL
		}
	}
	if !found {
		t.Fatalf("claims %+v; want the destination's log, with its url", claims)
	}
	typ, opened, err := b.St.WebhookDestination(b.Ctx, w.ID)
	if err != nil || typ != "rabbitmq" || string(opened) != string(config) {
		t.Fatalf("WebhookDestination: %q %s %v", typ, opened, err)
	}

	next := json.RawMessage(`{"url":"amqp://herald:` + secret + `@broker.example.com:5672/","exchange":"y","routingKey":"k"}`)
	where := "rabbitmq://broker.example.com:5672/y/k"
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Config: &next, URL: &where}); err != nil || string(u.Config) != string(next) || u.URL != where {
		t.Fatalf("replace config: %s %q, %v", u.Config, u.URL, err)
	}
	name := "renamed"
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Name: &name}); err != nil || string(u.Config) != string(next) || u.Type != "rabbitmq" {
		t.Fatalf("a patch without config changed it: %s %q, %v", u.Config, u.Type, err)
	}
}
