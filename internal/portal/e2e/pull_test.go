package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

var newPullToken = regexp.MustCompile(`id="new-pull-token">(hrldpull_[A-Za-z0-9_-]+)<`)

// A pull webhook's page says it has no URL and makes a pull token, shown
// once, which reads the webhook's events; an http webhook makes none.
func TestPullWebhookPageMakesAPullToken(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	ctx := context.Background()
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "Behind a firewall", Type: "pull", Events: []string{"license.created"}})
	if err != nil {
		t.Fatal(err)
	}
	b := mustSignIn(t, h)
	code, _, body := b.get("/webhooks/" + hook.ID)
	if code != http.StatusOK || !strings.Contains(body, `id="webhook-type">Pull`) || strings.Contains(body, "<dt>URL</dt>") {
		t.Fatalf("GET the pull webhook's page: %d; want it to say pull, with no URL\n%s", code, body)
	}
	code, loc, body := b.submit("/webhooks/"+hook.ID+"/pull-tokens", url.Values{})
	m := newPullToken.FindStringSubmatch(body)
	if code != http.StatusOK || loc != "/webhooks/"+hook.ID || m == nil {
		t.Fatalf("create a pull token: %d at %q; want the webhook's page showing it\n%s", code, loc, body)
	}
	h.CreateLicense(nil)
	got, err := client.New(h.URL, m[1], nil).ReadEvents(ctx, hook.ID, client.ReadOptions{})
	if err != nil || len(got.Data) != 1 {
		t.Fatalf("read with the portal's pull token: %+v, %v; want the event", got.Data, err)
	}
	if _, _, body = b.get("/webhooks/" + hook.ID); strings.Contains(body, m[1]) {
		t.Error("the page shows the pull token again")
	}

	posted := h.CreateWebhook("posted", "https://example.com/hook", "license.created")
	b.get("/webhooks/" + posted.ID)
	if code, _, _ := b.submit("/webhooks/"+posted.ID+"/pull-tokens", url.Values{}); code != http.StatusConflict {
		t.Errorf("a pull token for an http webhook: %d; want 409", code)
	}
}

// The webhook form makes a pull webhook: no URL asked for, none stored.
func TestWebhookFormMakesAPullWebhook(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	code, _, body := b.get("/webhooks/new")
	if code != http.StatusOK || !strings.Contains(body, `<option value="pull"`) {
		t.Fatalf("GET /webhooks/new: %d; want the pull type offered\n%s", code, body)
	}
	code, loc, body := b.submit("/webhooks/new", url.Values{"name": {"On premises"}, "type": {"pull"}, "events": {"license.created"},
		"enabled": {"on"}, "signatureScheme": {"herald"}, "ordering": {"none"}, "orderingOnFailure": {"hold"}})
	if code != http.StatusOK || !strings.HasPrefix(loc, "/webhooks/") || !strings.Contains(body, `id="webhook-type">Pull`) {
		t.Fatalf("create a pull webhook: %d at %q; want its page\n%s", code, loc, body)
	}
	hooks, err := h.API.ListWebhooks(context.Background(), client.WebhookFilter{})
	if err != nil || len(hooks.Data) != 1 || hooks.Data[0].Type != "pull" || hooks.Data[0].URL != "" {
		t.Fatalf("webhooks: %+v, %v; want one pull webhook without a URL", hooks.Data, err)
	}
}
