package e2e_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/store"
)

// A webhook with a client certificate reaches a real TLS receiver on
// loopback that requires one: deliveries and the Test present it, and are
// verified against the webhook's CA. The receiver refuses a connection
// without a certificate, and one with a certificate of another CA, so the
// webhook's own certificate is what lets them through. Its key is never
// shown; its subject and expiry are; a key that does not match is refused
// naming tls.clientKey; and an expiry within 14 days is emailed once.
func TestMutualTLSToAReceiver(t *testing.T) {
	t.Parallel()
	rcv := heraldtest.NewTLSReceiver(t)
	// The receiver refuses a client without a certificate.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(rcv.ServerCA.PEM))
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if resp, err := plain.Post(rcv.URL, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("the receiver answered %d without a client certificate; want the handshake refused", resp.StatusCode)
	}

	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.SQLiteURL(t), ReminderCheck: 50 * time.Millisecond})
	ctx := context.Background()
	expires := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	pair := rcv.ClientCA.Issue(t, "herald-client", "Example Ltd", expires)
	hook, err := h.API.CreateWebhook(ctx, client.WebhookCreate{Name: "gateway", URL: rcv.URL, Events: []string{"license.created"},
		TLS: &client.ClientCertificate{ClientCertificate: pair.CertPEM, ClientKey: pair.KeyPEM, CACertificate: rcv.ServerCA.PEM}})
	if err != nil {
		t.Fatal(err)
	}
	if hook.TLS == nil || hook.TLS.ClientKey != "********" || hook.TLS.Subject != "CN=herald-client,O=Example Ltd" ||
		!hook.TLS.ExpiresAt.Equal(expires) || hook.TLS.CACertificate == nil {
		t.Fatalf("got tls %+v; want the key masked, the subject and expiry shown", hook.TLS)
	}
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 20*time.Second, "the delivery over mutual TLS", func() bool { return succeededLogs(h, hook.ID) == 1 })
	if got := rcv.Subjects(); len(got) != 1 || got[0] != "CN=herald-client,O=Example Ltd" {
		t.Errorf("the receiver saw client certificates %q; want the webhook's", got)
	}
	res, err := h.API.TestWebhook(ctx, hook.ID, client.TestRequest{Event: "license.created"})
	if err != nil || !res.Succeeded {
		t.Fatalf("Test over mutual TLS: %+v, %v", res, err)
	}

	// The warning: emailed once for this certificate.
	heraldtest.Eventually(t, 20*time.Second, "the expiry warning", func() bool { return len(certificateEmails(t, h)) == 1 })
	subject, body := notify.Words(certificateEmails(t, h)[0], "")
	if !strings.Contains(subject, "client certificate expires "+expires.UTC().Format("2006-01-02")) || !strings.Contains(body, hook.ID) {
		t.Errorf("got the warning %q:\n%s", subject, body)
	}

	// Another CA's certificate is refused by the receiver: the attempt
	// fails in the handshake.
	other := heraldtest.NewTLSReceiver(t).ClientCA.Issue(t, "stranger", "Elsewhere", time.Now().Add(90*24*time.Hour))
	if _, err := h.API.UpdateWebhook(ctx, hook.ID, client.WebhookUpdate{TLS: &client.ClientCertificate{ClientCertificate: other.CertPEM,
		ClientKey: other.KeyPEM, CACertificate: rcv.ServerCA.PEM}}); err != nil {
		t.Fatal(err)
	}
	res, err = h.API.TestWebhook(ctx, hook.ID, client.TestRequest{Event: "license.created"})
	if err != nil || res.Succeeded || res.Error == "" {
		t.Fatalf("Test with a stranger's certificate: %+v, %v; want it refused", res, err)
	}
	if n := len(rcv.Subjects()); n != 2 {
		t.Errorf("the receiver served %d requests; want 2 (none with the stranger's certificate)", n)
	}

	// A masked key keeps the stored one; one that does not match its
	// certificate is refused, naming the field, and changes nothing.
	var p struct {
		Errors []struct{ Field, Detail string }
	}
	mismatched := map[string]any{"tls": map[string]any{"clientCertificate": pair.CertPEM, "clientKey": "********"}}
	if got := h.Do("PATCH", "/v3/webhooks/"+hook.ID, mismatched, &p); got != http.StatusUnprocessableEntity || len(p.Errors) != 1 ||
		p.Errors[0].Field != "tls.clientKey" || !strings.Contains(p.Errors[0].Detail, "does not match") {
		t.Fatalf("a key of another certificate: got %d %+v; want 422 naming tls.clientKey", got, p.Errors)
	}
	if got := h.Webhook(hook.ID); got.TLS == nil || got.TLS.Subject != "CN=stranger,O=Elsewhere" {
		t.Fatalf("a refused change changed the certificate: %+v", got.TLS)
	}
	var raw json.RawMessage
	h.Must(http.StatusOK, "GET", "/v3/webhooks/"+hook.ID, nil, &raw)
	if strings.Contains(string(raw), "PRIVATE KEY") {
		t.Errorf("a webhook's answer shows its key: %s", raw)
	}
	h.Must(http.StatusOK, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"tls": map[string]any{"clientCertificate": other.CertPEM,
		"clientKey": "********", "caCertificate": rcv.ServerCA.PEM}}, nil)
	if got := h.Webhook(hook.ID); got.TLS == nil || got.TLS.Subject != "CN=stranger,O=Elsewhere" {
		t.Fatalf("a masked key did not keep the certificate: %+v", got.TLS)
	}
	h.Must(http.StatusOK, "PATCH", "/v3/webhooks/"+hook.ID, map[string]any{"tls": nil}, nil)
	if got := h.Webhook(hook.ID); got.TLS != nil {
		t.Errorf("got tls %+v after removing it", got.TLS)
	}
	if n := len(certificateEmails(t, h)); n != 1 {
		t.Errorf("got %d expiry warnings; want 1 (the stranger's certificate expires later)", n)
	}
}

// certificateEmails are the account's expiry warnings.
func certificateEmails(t *testing.T, h *heraldtest.Herald) []store.Email {
	t.Helper()
	emails, err := h.Server.Store.Emails(t.Context(), accountOf(t, h))
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Email
	for _, e := range emails {
		if e.Kind == store.EmailCertificateExpiring {
			out = append(out, e)
		}
	}
	return out
}
