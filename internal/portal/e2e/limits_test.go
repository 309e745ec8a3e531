package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

// Add webhook at the account's webhook cap is refused with 409 and the
// API's words (the limit and how many exist), keeping what was typed.
func TestAddWebhookAtTheAccountsCapSaysTheLimit(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	accts, _, err := h.Server.Store.Accounts(t.Context(), store.Page{Limit: 1})
	if err != nil || len(accts) != 1 {
		t.Fatalf("accounts: %v", err)
	}
	one := int64(1)
	if _, err := h.Server.Store.SetAccountLimits(t.Context(), accts[0].ID, store.LimitsPatch{Webhooks: &store.LimitChange{Value: &one}}); err != nil {
		t.Fatal(err)
	}
	b := mustSignIn(t, h)
	form := func(name string) url.Values {
		return url.Values{"name": {name}, "url": {"https://example.com/" + name}, "events": {"license.created"}, "enabled": {"on"}}
	}
	b.get("/webhooks/new")
	if code, loc, _ := b.post("/webhooks/new", form("first")); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/webhooks/") {
		t.Fatalf("first webhook: %d %q; want 303 to its page", code, loc)
	}
	b.get("/webhooks/new")
	code, _, body := b.submit("/webhooks/new", form("second"))
	if code != http.StatusConflict {
		t.Fatalf("past the cap: %d; want 409", code)
	}
	for _, want := range []string{"this account may have at most 1 webhook; it has 1", `role="alert"`, `value="second"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the refused form lacks %s", want)
		}
	}
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 1 {
		t.Errorf("%d webhooks; want 1", len(list.Data))
	}
}
