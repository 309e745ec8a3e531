package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/proxytest"
)

// With --egress-proxy every delivery, and the Test action, leaves through
// the proxy (Debian's tinyproxy here, with credentials): the receiver gets
// them signed as ever, and the proxy's log holds a tunnel for each
// connection herald opened, none made without it.
func TestDeliveriesLeaveThroughTheEgressProxy(t *testing.T) {
	t.Parallel()
	px := proxytest.Start(t, "herald", "egress-secret-1")
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.SQLiteURL(t), EgressProxy: px.URL})
	ctx := context.Background()
	rcv := heraldtest.NewReceiver(t)
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "behind", URL: rcv.URL, Events: []string{"license.created"}})
	if err != nil {
		t.Fatal(err)
	}
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10*time.Second, "the delivery through the proxy", func() bool { return rcv.Count() == 1 })
	if got := rcv.Requests()[0].Header.Get("webhook-signature"); got == "" {
		t.Errorf("the delivery arrived unsigned: %v", rcv.Requests()[0].Header)
	}
	if n := px.Tunnels(t); n < 1 {
		t.Fatalf("the proxy made %d tunnels; want the delivery's", n)
	}
	before := px.Tunnels(t)
	// A Test to a fresh receiver needs a fresh connection: the proxy makes it.
	other := heraldtest.NewReceiver(t)
	if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{URL: &other.URL}); err != nil {
		t.Fatal(err)
	}
	res, err := h.API.TestWebhook(ctx, hook.ID, client.TestRequest{Event: "license.created"})
	if err != nil || !res.Succeeded {
		t.Fatalf("test through the proxy: %+v, %v", res, err)
	}
	if other.Count() != 1 || px.Tunnels(t) != before+1 {
		t.Errorf("the Test reached the receiver %d times through %d new tunnels; want 1 through 1", other.Count(), px.Tunnels(t)-before)
	}
}
