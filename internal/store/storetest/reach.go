package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/receivertest"
	"github.com/heraldhq/herald/internal/store"
)

// testReachIsSealedKeptAndWarned: a webhook's payload form, client
// certificate and OAuth2 client are kept, read back (the list too) and
// read by the dispatcher; the key and the secret are sealed (not in the
// row as written); a change of one leaves the others; null removes; and a
// certificate within 14 days of its expiry is warned of once, by any
// number of processes, and a new one again.
func testReachIsSealedKeptAndWarned(t *testing.T, b *Bundle) {
	now := b.Clock.Now()
	ca := receivertest.NewCA(t, "test CA")
	pair := ca.Issue(t, "client", "Org", now.Add(10*24*time.Hour))
	oauth := &store.WebhookOAuth2{TokenURL: "https://auth.example.com/token", ClientID: "id", ClientSecret: "oauth-secret-Xy7", Scopes: []string{"a", "b"}}
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "reach", URL: "https://example.com/r",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_reach_0123456789",
		Reach: store.WebhookReach{Payload: store.PayloadThin, OAuth2: oauth,
			TLS: &store.WebhookTLS{ClientCertificate: pair.CertPEM, ClientKey: pair.KeyPEM, CACertificate: ca.PEM}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.St.Webhook(b.Ctx, b.Account.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Payload != store.PayloadThin || got.TLS == nil || got.TLS.ClientKey != pair.KeyPEM || got.TLS.Subject != "CN=client,O=Org" ||
		got.OAuth2 == nil || got.OAuth2.ClientSecret != oauth.ClientSecret || len(got.OAuth2.Scopes) != 2 {
		t.Fatalf("read back %+v", got.WebhookReach)
	}
	list, _, err := b.St.Webhooks(b.Ctx, b.Account.ID, store.WebhookFilter{Page: store.Page{Limit: 10}})
	if err != nil || len(list) == 0 || list[0].TLS == nil || list[0].Payload != store.PayloadThin {
		t.Fatalf("the list reads %+v, %v", list, err)
	}
	r, err := b.St.WebhookReach(b.Ctx, w.ID)
	if err != nil || !r.Thin || r.TLS == nil || r.TLS.CACertificate != ca.PEM || r.OAuth2 == nil || r.OAuth2.TokenURL != oauth.TokenURL {
		t.Fatalf("the dispatcher reads %+v, %v", r, err)
	}
	var tlsRow, oauthRow []byte
	if err := b.St.QueryRow(b.Ctx, `SELECT tls_sealed, oauth2_sealed FROM webhooks WHERE id = ?`, w.ID).Scan(&tlsRow, &oauthRow); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(tlsRow, []byte("PRIVATE KEY")) || bytes.Contains(oauthRow, []byte(oauth.ClientSecret)) {
		t.Error("a key or secret is stored in the clear")
	}

	gen := b.St.ReachGeneration()
	full := store.PayloadFull
	u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Reach: store.ReachPatch{Payload: &full}})
	if err != nil || u.Payload != full || u.TLS == nil || u.OAuth2 == nil {
		t.Fatalf("a change of payload: %+v, %v; want the rest kept", u.WebhookReach, err)
	}
	if b.St.ReachGeneration() == gen {
		t.Error("a change of reach left the generation where it was")
	}

	// Two processes look at once: one email.
	other := b.Open(t)
	n1, err1 := b.St.WarnExpiringCertificates(b.Ctx, now)
	n2, err2 := other.WarnExpiringCertificates(b.Ctx, now)
	if err1 != nil || err2 != nil || n1+n2 != 1 {
		t.Fatalf("warned %d and %d (%v, %v); want one in all", n1, n2, err1, err2)
	}
	if n, _ := b.St.WarnExpiringCertificates(b.Ctx, now.Add(time.Hour)); n != 0 {
		t.Errorf("warned %d more of the same certificate", n)
	}
	renewed := ca.Issue(t, "client", "Org", now.Add(12*24*time.Hour))
	nt := &store.WebhookTLS{ClientCertificate: renewed.CertPEM, ClientKey: renewed.KeyPEM}
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Reach: store.ReachPatch{TLS: &nt}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.St.WarnExpiringCertificates(b.Ctx, now); n != 1 {
		t.Errorf("warned %d of a new certificate; want 1", n)
	}
	var none *store.WebhookTLS
	var noClient *store.WebhookOAuth2
	u, err = b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Reach: store.ReachPatch{TLS: &none, OAuth2: &noClient}})
	if err != nil || u.TLS != nil || u.OAuth2 != nil {
		t.Fatalf("removing: %+v, %v", u.WebhookReach, err)
	}
	if r, err := b.St.WebhookReach(b.Ctx, w.ID); err != nil || r.TLS != nil || r.OAuth2 != nil || r.Thin {
		t.Fatalf("the dispatcher reads %+v, %v after removing", r, err)
	}
}
