package storetest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testAChangeSeesEveryWebhookChangeBeforeIt makes changes with
// ChangeAndFire through one handle while another (another process, on
// PostgreSQL) changes the account's webhooks between them: each change's
// event gets its logs from the webhooks as they stand when it is made, never
// from an earlier read (on PostgreSQL a set kept from one and checked by its
// version, decision 0109). Every kind of change a firing reads is made: a
// webhook added, disabled, its events and filter changed, suspended, and
// deleted.
func testAChangeSeesEveryWebhookChangeBeforeIt(t *testing.T, b *Bundle) {
	other := b.Open(t)
	a := b.Webhook(t, "a")
	n := 0
	seen := map[string]bool{} // logs of the changes before
	fire := func() map[string]store.LogStatus {
		t.Helper()
		n++
		product := store.NewID()
		change := store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), 'p', 1, 1 WHERE true RETURNING id`, Args: []any{product, b.Account.ID}}
		made, err := b.St.ChangeAndFire(b.Ctx, change,
			store.Firing{AccountID: b.Account.ID, Kind: event.LicenseCreated, Data: map[string]any{"plan": "pro", "n": n}})
		if err != nil || !made {
			t.Fatalf("change %d: made %v, %v", n, made, err)
		}
		got := map[string]store.LogStatus{}
		for _, l := range b.logs(t, store.LogFilter{}) {
			if !seen[l.ID] {
				seen[l.ID] = true
				got[l.WebhookID] = l.Status
			}
		}
		return got
	}
	patch := func(id string, p store.WebhookPatch) {
		t.Helper()
		if _, err := other.UpdateWebhook(b.Ctx, b.Account.ID, id, p); err != nil {
			t.Fatal(err)
		}
	}
	no, pro, otherPlan := false, json.RawMessage(`{"data.plan": "pro"}`), json.RawMessage(`{"data.plan": "free"}`)

	var bID string
	steps := []struct {
		what   string
		change func()
		want   func() map[string]store.LogStatus
	}{
		{"first", func() {}, func() map[string]store.LogStatus { return map[string]store.LogStatus{a.ID: store.Queued} }},
		{"again, nothing changed", func() {}, func() map[string]store.LogStatus { return map[string]store.LogStatus{a.ID: store.Queued} }},
		{"a webhook added by another process", func() {
			w, err := other.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "b", URL: "https://example.com/b",
				Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_b_0123456789"})
			if err != nil {
				t.Fatal(err)
			}
			bID = w.ID
		}, func() map[string]store.LogStatus {
			return map[string]store.LogStatus{a.ID: store.Queued, bID: store.Queued}
		}},
		{"a disabled", func() { patch(a.ID, store.WebhookPatch{Enabled: &no}) },
			func() map[string]store.LogStatus {
				return map[string]store.LogStatus{a.ID: store.Cancelled, bID: store.Queued}
			}},
		{"b filtered out", func() { patch(bID, store.WebhookPatch{Filter: &otherPlan}) },
			func() map[string]store.LogStatus { return map[string]store.LogStatus{a.ID: store.Cancelled} }},
		{"b filtered in", func() { patch(bID, store.WebhookPatch{Filter: &pro}) },
			func() map[string]store.LogStatus {
				return map[string]store.LogStatus{a.ID: store.Cancelled, bID: store.Queued}
			}},
		{"b suspended", func() {
			if err := other.InTx(b.Ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(b.Ctx, `UPDATE webhooks SET status = 'Suspended' WHERE id = ?`, bID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}, func() map[string]store.LogStatus {
			return map[string]store.LogStatus{a.ID: store.Cancelled, bID: store.Cancelled}
		}},
		{"a subscribed elsewhere", func() { patch(a.ID, store.WebhookPatch{Events: []event.Kind{event.LicenseDeleted}}) },
			func() map[string]store.LogStatus { return map[string]store.LogStatus{bID: store.Cancelled} }},
		{"b deleted", func() {
			if err := other.DeleteWebhook(b.Ctx, b.Account.ID, bID); err != nil {
				t.Fatal(err)
			}
		}, func() map[string]store.LogStatus { return map[string]store.LogStatus{} }},
		{"a subscribed again and enabled", func() {
			yes := true
			patch(a.ID, store.WebhookPatch{Events: []event.Kind{event.LicenseCreated}, Enabled: &yes})
		}, func() map[string]store.LogStatus { return map[string]store.LogStatus{a.ID: store.Queued} }},
	}
	for _, s := range steps {
		s.change()
		if got, want := fire(), s.want(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: logs by webhook %v; want %v (a: %s, b: %s)", s.what, got, want, a.ID, bID)
		}
	}
}
