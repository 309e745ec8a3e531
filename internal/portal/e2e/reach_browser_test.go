package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestBrowserWebhookFormReach: in a real browser, the webhook form takes a
// thin payload, a client certificate and an OAuth2 client; a key that is
// not the certificate's is refused beside its field, and the refused form
// comes back without the key typed in; saved, the webhook's page shows
// the certificate's subject, its deliveries reach a receiver that requires
// it with thin bodies, and its edit form shows the key and the secret
// masked, which saving again keeps.
func TestBrowserWebhookFormReach(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewTLSReceiver(t)
	pair := rcv.ClientCA.Issue(t, "portal-client", "Example", time.Now().Add(60*24*time.Hour))
	stranger := rcv.ClientCA.Issue(t, "stranger", "Example", time.Now().Add(60*24*time.Hour))
	b := signInTab(t, h)

	b.click("a.button.primary[href='/webhooks/new']")
	b.set("#name", "Gateway")
	b.set("#url", rcv.URL)
	b.do(chromedp.Click(chromedp.CSS("input[name=events][value='license.created']")))
	b.set("#payload", "thin")
	setLines(b, "[id='tls.clientCertificate']", pair.CertPEM)
	setLines(b, "[id='tls.clientKey']", stranger.KeyPEM)
	setLines(b, "[id='tls.caCertificate']", rcv.ServerCA.PEM)
	b.set("[id='oauth2.tokenUrl']", rcv.URL+"/token")
	b.set("[id='oauth2.clientId']", "portal")
	b.set("[id='oauth2.clientSecret']", "portal-secret-9k")
	b.set("[id='oauth2.scopes']", "a b")
	if code := b.click("form[action='/webhooks/new'] button[type=submit]"); code != http.StatusUnprocessableEntity {
		t.Fatalf("a key of another certificate: %d; want 422", code)
	}
	b.contains("[id='tls.clientKey-error']", "Private key key does not match certificate")
	if v := b.value("[id='tls.clientKey']"); v != "" {
		t.Errorf("the refused form kept the key typed in: %q", v)
	}
	if v := b.value("[id='oauth2.clientSecret']"); v != "" {
		t.Errorf("the refused form kept the secret typed in: %q", v)
	}
	if v := b.value("[id='tls.clientCertificate']"); !strings.Contains(v, "BEGIN CERTIFICATE") {
		t.Errorf("the refused form lost the certificate")
	}
	setLines(b, "[id='tls.clientKey']", pair.KeyPEM)
	// Without a secret, the OAuth2 client is refused; emptied, it is none.
	for _, id := range []string{"oauth2.tokenUrl", "oauth2.clientId", "oauth2.scopes"} {
		b.set("[id='"+id+"']", "")
	}
	b.click("form[action='/webhooks/new'] button[type=submit]")
	b.contains(".notice.ok", "Webhook added.")
	b.contains("#tls-value", "CN=portal-client,O=Example")
	b.contains("#payload-value", "Thin")
	id := strings.TrimPrefix(strings.SplitN(b.path(), "?", 2)[0], "/webhooks/")

	licenseID := h.CreateLicense(nil)
	heraldtest.Eventually(t, 30*time.Second, "the delivery over mutual TLS", func() bool { return rcv.Count() == 1 })
	var body struct{ Data struct{ ID, Path string } }
	if err := json.Unmarshal(rcv.Requests()[0].Body, &body); err != nil || body.Data.Path != "/v3/licenses/"+licenseID {
		t.Errorf("got body %s; want a thin one", rcv.Requests()[0].Body)
	}

	b.open("/webhooks/" + id + "/edit")
	if v := b.value("[id='tls.clientKey']"); v != "********" {
		t.Errorf("the edit form shows the key as %q; want it masked", v)
	}
	b.set("#name", "Gateway v2")
	b.click("form[action$='/edit'] button[type=submit]")
	b.contains(".notice.ok", "Webhook saved.")
	if w := h.Webhook(id); w.Name != "Gateway v2" || w.TLS == nil || w.TLS.Subject != "CN=portal-client,O=Example" || w.Payload != "thin" {
		t.Errorf("after saving the form unchanged: %+v %+v; want the certificate kept", w.TLS, w.Payload)
	}
}

// setLines sets a field to a value of several lines (a PEM text), as if
// pasted.
func setLines(b *tab, css, value string) {
	b.t.Helper()
	lit, _ := json.Marshal(value)
	run(b, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+jsString(css)+`); e.value = `+string(lit)+
		`; e.dispatchEvent(new Event("input", {bubbles: true})); return true })()`))
}
