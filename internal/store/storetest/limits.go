package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testAccountLimits: an operator's limits are set, shown and cleared; a
// webhook cap refuses the webhook past it with the limit and the count;
// and concurrent creates from several handles never exceed it together.
func testAccountLimits(t *testing.T, b *Bundle) {
	if a, err := b.St.Account(b.Ctx, b.Account.ID); err != nil || a.Limits.Webhooks != nil || a.Limits.APIRequestsPerSecond != nil {
		t.Fatalf("new account's limits: %+v, %v; want none", a.Limits, err)
	}
	if _, err := b.St.SetAccountLimits(b.Ctx, store.NewID(), store.LimitsPatch{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("limits of a missing account: %v; want ErrNotFound", err)
	}
	five, ten := int64(5), int64(10)
	a, err := b.St.SetAccountLimits(b.Ctx, b.Account.ID, store.LimitsPatch{
		Webhooks: &store.LimitChange{Value: &five}, APIRequestsPerSecond: &store.LimitChange{Value: &ten}})
	if err != nil || a.Limits.Webhooks == nil || *a.Limits.Webhooks != 5 || a.Limits.APIRequestsPerSecond == nil || *a.Limits.APIRequestsPerSecond != 10 {
		t.Fatalf("set limits: %+v, %v; want 5 webhooks, 10 a second", a.Limits, err)
	}
	// The token's account carries its limits, for the API's rate.
	accts, _, err := b.St.Accounts(b.Ctx, store.Page{Limit: 10})
	if err != nil || len(accts) != 1 || accts[0].Limits.Webhooks == nil || *accts[0].Limits.Webhooks != 5 {
		t.Fatalf("listed account: %+v, %v; want its limits", accts, err)
	}

	// Twelve creates at once from three handles: five succeed, the others
	// are refused with the limit and the count.
	handles := []*store.Store{b.St, b.Open(t), b.Open(t)}
	var created, refused atomic.Int32
	Parallel(12, func(i int) {
		_, err := handles[i%len(handles)].CreateWebhook(b.Ctx, b.Account.ID, store.NewWebhook{Name: fmt.Sprint("w", i),
			URL: "https://example.com/", Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_0123456789abcdef"})
		var le *store.WebhookLimitError
		switch {
		case err == nil:
			created.Add(1)
		case errors.As(err, &le):
			if le.Limit != 5 || le.Count != 5 {
				t.Errorf("refused with %+v; want limit 5, count 5", le)
			}
			refused.Add(1)
		default:
			t.Errorf("create webhook: %v", err)
		}
	})
	if created.Load() != 5 || refused.Load() != 7 {
		t.Errorf("created %d, refused %d; want 5, 7", created.Load(), refused.Load())
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhooks WHERE account_id = ?`, b.Account.ID); n != 5 {
		t.Errorf("%d webhooks; want 5", n)
	}

	// Cleared, the cap is gone and the rate stays.
	a, err = b.St.SetAccountLimits(b.Ctx, b.Account.ID, store.LimitsPatch{Webhooks: &store.LimitChange{}})
	if err != nil || a.Limits.Webhooks != nil || a.Limits.APIRequestsPerSecond == nil {
		t.Fatalf("cleared cap: %+v, %v; want no cap, the rate kept", a.Limits, err)
	}
	b.Webhook(t, "sixth")
}
