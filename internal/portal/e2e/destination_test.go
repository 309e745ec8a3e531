package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestADestinationFormRefusesAnHTTPReceiversReach: a browser without the
// form's script shows the client certificate and OAuth2 fields whatever
// the type; filled in for a destination they are refused beside their
// fields, as the API refuses them, and nothing is made.
func TestADestinationFormRefusesAnHTTPReceiversReach(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	code, _, body := b.submit("/webhooks/new", url.Values{"name": {"Bus"}, "type": {"nats"}, "events": {"license.created"},
		"nats.url": {"nats://127.0.0.1:4222"}, "nats.subject": {"licensing"},
		"tls.clientCertificate": {"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		"oauth2.tokenUrl":       {"https://auth.example.com/token"}, "oauth2.clientId": {"herald"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("a nats destination with a client certificate and an OAuth2 client: %d; want 422", code)
	}
	for _, id := range []string{"tls.clientCertificate-error", "oauth2.tokenUrl-error"} {
		_, rest, found := strings.Cut(body, `id="`+id+`"`)
		msg, _, _ := strings.Cut(rest, "</p>")
		if !found || !strings.Contains(msg, "applies to http webhooks only") {
			t.Errorf("the page lacks %s saying the field applies to http webhooks only", id)
		}
	}
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("the refused form made %d webhooks", len(list.Data))
	}
}
