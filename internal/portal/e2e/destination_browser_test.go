package e2e_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestBrowserTheWebhookFormPicksAType: the form's type picker shows only
// the chosen type's fields (http's URL, or a destination's config);
// a refused config names its field beside it, the others kept as typed;
// a saved destination shows where it publishes and never its secret,
// and its edit form keeps the type and masks the password.
func TestBrowserTheWebhookFormPicksAType(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := signInTab(t, h)
	b.open("/webhooks/new")
	visible := func(css string) bool {
		return run(b, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+jsString(css)+`); return !!e && e.offsetParent !== null })()`))
	}
	if !visible("#url") || visible("#kafka-topic") || visible("#rabbitmq-url") {
		t.Fatalf("http chosen: url shown %v, kafka's topic %v, rabbitmq's url %v; want only the URL", visible("#url"), visible("#kafka-topic"), visible("#rabbitmq-url"))
	}
	b.set("#type", "kafka")
	if visible("#url") || !visible("#kafka-topic") || !visible("#kafka-brokers") || visible("#nats-subject") {
		t.Fatalf("kafka chosen: url %v, topic %v, brokers %v, nats subject %v; want kafka's fields only", visible("#url"), visible("#kafka-topic"), visible("#kafka-brokers"), visible("#nats-subject"))
	}
	b.accessible()
	b.screenshot("webhook-form-kafka")

	// A broker without a port is refused beside its field.
	b.set("#name", "Stream")
	b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")))
	b.set("#kafka-brokers", "127.0.0.1")
	b.set("#kafka-topic", "licensing")
	b.set("#kafka-sasl-mechanism", "PLAIN")
	b.set("#kafka-sasl-username", "herald")
	b.set("#kafka-sasl-password", "p4ssw0rd")
	if code := b.click("form[action='/webhooks/new'] button[type=submit]"); code != 422 {
		t.Errorf("a broker without a port answered %d; want 422", code)
	}
	b.contains("#kafka-brokers-error", "host:port")
	if got := b.value("#kafka-topic"); got != "licensing" {
		t.Errorf("after the refusal the topic reads %q; want it kept", got)
	}
	if !visible("#kafka-topic") || visible("#url") {
		t.Errorf("after the refusal, kafka's fields shown %v, url %v; want kafka's", visible("#kafka-topic"), visible("#url"))
	}
	b.set("#kafka-brokers", "127.0.0.1:9092")
	b.set("#kafka-sasl-password", "p4ssw0rd")
	b.click("form[action='/webhooks/new'] button[type=submit]")
	b.contains("main", "kafka://127.0.0.1:9092/licensing")

	hooks, err := h.API.ListWebhooks(t.Context(), client.WebhookFilter{})
	if err != nil || len(hooks.Data) != 1 {
		t.Fatalf("webhooks: %v %v", hooks, err)
	}
	w := hooks.Data[0]
	sasl, _ := w.Config["sasl"].(map[string]any)
	if w.Type != "kafka" || sasl["password"] != "********" || sasl["username"] != "herald" {
		t.Errorf("saved type %q config %v; want kafka with the password masked", w.Type, w.Config)
	}
	b.open("/webhooks/" + w.ID + "/edit")
	if got := b.value("#kafka-sasl-password"); got != "********" {
		t.Errorf("edit form shows the password as %q; want it masked", got)
	}
	if b.count("#url") != 0 || b.count("#nats-subject") != 0 {
		t.Errorf("a kafka webhook's edit form shows a URL or another type's fields")
	}
	b.set("#kafka-topic", "renamed")
	b.click("form[action$='/edit'] button[type=submit]")
	b.contains("main", "kafka://127.0.0.1:9092/renamed")
}
