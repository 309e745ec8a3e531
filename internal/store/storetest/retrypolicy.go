package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testRetryPolicyIsKeptAndClaimed: a webhook's own retry policy is kept,
// read back, carried by its claims (for the dispatcher to schedule the
// next attempt), replaced, and removed to follow the default again; a
// webhook without one reads nil.
func testRetryPolicyIsKeptAndClaimed(t *testing.T, b *Bundle) {
	plain := b.Webhook(t, "plain")
	if plain.RetryPolicy != nil {
		t.Errorf("a webhook made without a policy has %+v", *plain.RetryPolicy)
	}
	own := store.RetryPolicy{MaxAttempts: 8, Backoff: store.BackoffExponential, IntervalSeconds: 60, MaxIntervalSeconds: 3600}
	w, err := b.St.CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: "own", URL: "https://example.com/own",
		Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_own_0123456789", RetryPolicy: &own})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.St.Webhook(b.Ctx, b.Account.ID, w.ID); err != nil || got.RetryPolicy == nil || *got.RetryPolicy != own {
		t.Fatalf("read back %+v, %v; want %+v", got.RetryPolicy, err, own)
	}
	b.Fire(t, b.St, 1)
	claimed := map[string]*store.RetryPolicy{}
	for _, c := range b.Claim(t, b.St, 0, time.Minute, 10, 10) {
		claimed[c.WebhookID] = c.RetryPolicy
	}
	if p, ok := claimed[w.ID]; !ok || p == nil || *p != own {
		t.Errorf("the claim of %s carries %+v; want %+v", w.ID, p, own)
	}
	if p, ok := claimed[plain.ID]; !ok || p != nil {
		t.Errorf("the claim of %s carries %+v (claimed %v); want none", plain.ID, p, ok)
	}
	fixed := store.RetryPolicy{MaxAttempts: 3, Backoff: store.BackoffFixed, IntervalSeconds: 10, MaxIntervalSeconds: 10}
	pf := &fixed
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{RetryPolicy: &pf}); err != nil || u.RetryPolicy == nil || *u.RetryPolicy != fixed {
		t.Fatalf("replace: %+v, %v", u.RetryPolicy, err)
	}
	name := "renamed"
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{Name: &name}); err != nil || u.RetryPolicy == nil || *u.RetryPolicy != fixed {
		t.Fatalf("another change kept %+v, %v; want %+v", u.RetryPolicy, err, fixed)
	}
	var none *store.RetryPolicy
	if u, err := b.St.UpdateWebhook(b.Ctx, b.Account.ID, w.ID, store.WebhookPatch{RetryPolicy: &none}); err != nil || u.RetryPolicy != nil {
		t.Fatalf("remove: %+v, %v", u.RetryPolicy, err)
	}
}
