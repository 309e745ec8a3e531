package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testFiltersChooseWhoGetsALog: a webhook whose filter the event's payload
// fails gets no log at all, as if it did not subscribe; one whose filter it
// passes, or with none, gets its log; a filter is kept, replaced and
// removed, and another account's webhooks never see it.
func testFiltersChooseWhoGetsALog(t *testing.T, b *Bundle) {
	plain := b.Webhook(t, "plain")
	pro, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "pro", URL: "https://example.com/pro",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_pro_0123456789",
		Filter: json.RawMessage(`{"data.plan":"pro"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.St.Webhook(b.Ctx, b.Account.ID, pro.ID); err != nil || string(got.Filter) != `{"data.plan":"pro"}` {
		t.Fatalf("read back filter %s, %v; want the one saved", got.Filter, err)
	}
	// A disabled webhook's filter decides too: it gets a cancelled log only
	// for events it would have been sent.
	off, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "off", URL: "https://example.com/off",
		Events: []event.Kind{event.LicenseCreated}, Enabled: false, Token: "whsec_off_0123456789",
		Filter: json.RawMessage(`{"data.n": {"$gte": 2}}`)})
	if err != nil {
		t.Fatal(err)
	}
	fire := func(data map[string]any) map[string]store.LogStatus {
		t.Helper()
		var id string
		if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
			var err error
			id, err = tx.Fire(b.Ctx, b.Account.ID, event.LicenseCreated, data)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		got := map[string]store.LogStatus{}
		for _, l := range b.logs(t, store.LogFilter{EventID: id}) {
			got[l.WebhookID] = l.Status
		}
		return got
	}
	tests := []struct {
		data map[string]any
		want map[string]store.LogStatus
	}{
		{map[string]any{"plan": "pro", "n": 1}, map[string]store.LogStatus{plain.ID: store.Queued, pro.ID: store.Queued}},
		{map[string]any{"plan": "basic", "n": 2}, map[string]store.LogStatus{plain.ID: store.Queued, off.ID: store.Cancelled}},
		{map[string]any{"n": 3, "plan": "pro"}, map[string]store.LogStatus{plain.ID: store.Queued, pro.ID: store.Queued, off.ID: store.Cancelled}},
	}
	for _, tt := range tests {
		got := fire(tt.data)
		if len(got) != len(tt.want) {
			t.Errorf("fired %v: logs %v; want %v", tt.data, got, tt.want)
			continue
		}
		for id, s := range tt.want {
			if got[id] != s {
				t.Errorf("fired %v: logs %v; want %v", tt.data, got, tt.want)
			}
		}
	}

	// Replaced, then removed.
	f := json.RawMessage(`{"data.plan":"basic"}`)
	if w, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, pro.ID, store.WebhookPatch{Filter: &f}); err != nil || string(w.Filter) != string(f) {
		t.Fatalf("replace filter: %s, %v", w.Filter, err)
	}
	if got := fire(map[string]any{"plan": "basic"}); got[pro.ID] != store.Queued {
		t.Errorf("after the filter changed to basic, logs %v; want one for %s", got, pro.ID)
	}
	name := "renamed"
	if w, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, pro.ID, store.WebhookPatch{Name: &name}); err != nil || string(w.Filter) != string(f) {
		t.Fatalf("a patch without a filter changed it: %s, %v", w.Filter, err)
	}
	var none json.RawMessage
	if w, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, pro.ID, store.WebhookPatch{Filter: &none}); err != nil || w.Filter != nil {
		t.Fatalf("remove filter: %s, %v", w.Filter, err)
	}
	if got := fire(map[string]any{"plan": "pro"}); got[pro.ID] != store.Queued {
		t.Errorf("after the filter was removed, logs %v; want one for %s", got, pro.ID)
	}

	// Another account's event is matched against its own webhooks only.
	other := b.NewAccount(t, "other@example.com")
	if _, err := b.St.CreateWebhook(b.Ctx, other.ID, store.NewWebhook{Name: "o", URL: "https://example.com/o",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_o_0123456789",
		Filter: json.RawMessage(`{"data.plan":"pro"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := fire(map[string]any{"plan": "pro"}); len(got) != 2 || got[plain.ID] == "" || got[pro.ID] == "" {
		t.Errorf("logs %v; want those of this account's %s and %s alone", got, plain.ID, pro.ID)
	}
}

// testHeadersAreSealedAndClaimed: a webhook's custom headers are stored
// sealed (no value in the clear in the database), read back, carried by
// every claim for an attempt, replaced and removed.
func testHeadersAreSealedAndClaimed(t *testing.T, b *Bundle) {
	secret := "key-" + store.NewID()
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "h", URL: "https://example.com/h",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_h_0123456789",
		Headers: map[string]string{"X-Api-Key": secret, "X-Tenant": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhooks WHERE headers_sealed IS NOT NULL AND id = ?`, w.ID); n != 1 {
		t.Fatalf("%d webhooks with sealed headers; want 1", n)
	}
	var sealed []byte
	if err := b.St.QueryRow(b.Ctx, `SELECT headers_sealed FROM webhooks WHERE id = ?`, w.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), secret) || strings.Contains(string(sealed), "X-Api-Key") {
		t.Fatalf("the stored headers hold a name or value in the clear")
	}
	got, err := b.St.Webhook(b.Ctx, b.Account.ID, w.ID)
	if err != nil || got.Headers["X-Api-Key"] != secret || got.Headers["X-Tenant"] != "acme" || len(got.Headers) != 2 {
		t.Fatalf("read back headers %v, %v", got.Headers, err)
	}
	b.Fire(t, b.St, 1)
	c := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(c) != 1 || c[0].Headers["X-Api-Key"] != secret {
		t.Fatalf("claimed %+v; want one claim carrying the headers", c)
	}

	// Replaced; a patch of another field leaves them; removed.
	repl := map[string]string{"Authorization": "Bearer t"}
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Headers: &repl}); err != nil || len(u.Headers) != 1 || u.Headers["Authorization"] != "Bearer t" {
		t.Fatalf("replace headers: %v, %v", u.Headers, err)
	}
	name := "renamed"
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Name: &name}); err != nil || len(u.Headers) != 1 {
		t.Fatalf("a patch without headers changed them: %v, %v", u.Headers, err)
	}
	none := map[string]string{}
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Headers: &none}); err != nil || u.Headers != nil {
		t.Fatalf("remove headers: %v, %v", u.Headers, err)
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhooks WHERE headers_sealed IS NULL AND id = ?`, w.ID); n != 1 {
		t.Errorf("removed headers left a sealed value")
	}

	// A sealed value moved to another webhook does not open there.
	other := b.Webhook(t, "other")
	if _, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Headers: &repl}); err != nil {
		t.Fatal(err)
	}
	if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(b.Ctx, `UPDATE webhooks SET headers_sealed = (SELECT headers_sealed FROM webhooks WHERE id = ?) WHERE id = ?`, w.ID, other.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.St.Webhook(b.Ctx, b.Account.ID, other.ID); err == nil {
		t.Errorf("another webhook's sealed headers opened")
	}
}

// testSignatureSchemeIsKeptAndClaimed: a webhook is signed the herald way
// unless it asks for Standard Webhooks; its scheme is stored, changed, and
// carried by every claim.
func testSignatureSchemeIsKeptAndClaimed(t *testing.T, b *Bundle) {
	plain := b.Webhook(t, "plain")
	if plain.SignatureScheme != store.SchemeHerald {
		t.Errorf("default scheme %q; want %q", plain.SignatureScheme, store.SchemeHerald)
	}
	sw, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "sw", URL: "https://example.com/sw",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_sw_0123456789", SignatureScheme: store.SchemeStandardWebhooks})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.St.Webhook(b.Ctx, b.Account.ID, sw.ID); err != nil || got.SignatureScheme != store.SchemeStandardWebhooks {
		t.Fatalf("read back scheme %q, %v", got.SignatureScheme, err)
	}
	b.Fire(t, b.St, 1)
	claims := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	schemes := map[string]string{}
	for _, c := range claims {
		schemes[c.WebhookID] = c.SignatureScheme
	}
	if schemes[plain.ID] != store.SchemeHerald || schemes[sw.ID] != store.SchemeStandardWebhooks {
		t.Errorf("claims carry schemes %v; want herald for %s and standard-webhooks for %s", schemes, plain.ID, sw.ID)
	}
	herald := store.SchemeHerald
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, sw.ID, store.WebhookPatch{SignatureScheme: &herald}); err != nil || u.SignatureScheme != herald {
		t.Fatalf("change scheme: %q, %v", u.SignatureScheme, err)
	}
}
