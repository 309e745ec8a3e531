package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

type apiToken struct {
	ID, Name, Scope, Token string
	ExpiresAt, LastUsedAt  *string
}

// newToken creates a token through the API and returns it with its secret.
func newToken(t *testing.T, h *heraldtest.Herald, name, scope string) apiToken {
	t.Helper()
	var tok apiToken
	h.Must(201, "POST", "/v3/api-tokens", map[string]any{"name": name, "scope": scope}, &tok)
	if !strings.HasPrefix(tok.Token, auth.APITokenPrefix) {
		t.Fatalf("created token's secret %q; want one starting %s", tok.Token, auth.APITokenPrefix)
	}
	return tok
}

func tokens(t *testing.T, h *heraldtest.Herald) []apiToken {
	t.Helper()
	var list struct{ Data []apiToken }
	h.Must(200, "GET", "/v3/api-tokens?limit=500", nil, &list)
	return list.Data
}

func TestReadTokenReadsAndIsRefusedEveryChange(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testReadTokenReadsAndIsRefusedEveryChange)
}

func testReadTokenReadsAndIsRefusedEveryChange(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("mine", rcv.URL, "license.created")
	read := newToken(t, h, "dashboard", "read")

	for _, path := range []string{"/v3/account", "/v3/webhooks", "/v3/webhooks/" + hook.ID,
		"/v3/webhook-event-logs", "/v3/api-tokens", "/v3/products", "/v3/licenses"} {
		if got := h.DoAs(read.Token, "GET", path, nil, nil); got != http.StatusOK {
			t.Errorf("read token: GET %s = %d; want 200", path, got)
		}
	}
	// A webhook's signing token is a secret: write tokens only.
	if got := h.DoAs(read.Token, "GET", "/v3/webhooks/"+hook.ID+"/token", nil, nil); got != http.StatusForbidden {
		t.Errorf("read token: GET the webhook's token = %d; want 403", got)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", "/v3/account", map[string]any{"name": "taken over"}},
		{"POST", "/v3/webhooks", map[string]any{"name": "x", "url": rcv.URL, "events": []string{"license.created"}}},
		{"PATCH", "/v3/webhooks/" + hook.ID, map[string]any{"name": "renamed"}},
		{"DELETE", "/v3/webhooks/" + hook.ID, nil},
		{"POST", "/v3/webhooks/" + hook.ID + "/test", nil},
		{"POST", "/v3/products", map[string]any{"name": "P"}},
		{"POST", "/v3/api-tokens", map[string]any{"name": "escalated", "scope": "write"}},
		{"DELETE", "/v3/api-tokens/" + read.ID, nil},
		{"POST", "/v3/no-such-call", nil},
	} {
		var p struct{ Type string }
		if got := h.DoAs(read.Token, c.method, c.path, c.body, &p); got != http.StatusForbidden || !strings.HasSuffix(p.Type, "/read-only-token") {
			t.Errorf("read token: %s %s = %d %q; want 403 read-only-token", c.method, c.path, got, p.Type)
		}
	}
	if got := h.Webhook(hook.ID).Name; got != "mine" {
		t.Errorf("webhook renamed to %q by a read token", got)
	}
	if n := len(h.Logs("")); n != 0 || rcv.Count() != 0 {
		t.Errorf("a read token's refused calls made %d logs and %d deliveries", n, rcv.Count())
	}
	if got := tokens(t, h); len(got) != 2 {
		t.Errorf("%d tokens after the read token's attempts; want 2", len(got))
	}
	// The token's use shows, to within the recording interval.
	for _, tok := range tokens(t, h) {
		if tok.ID == read.ID && tok.LastUsedAt == nil {
			t.Errorf("the read token was used but lastUsedAt is null")
		}
	}
}

func TestAPITokenLifecycle(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testAPITokenLifecycle)
}

// testAPITokenLifecycle: the secret is shown once and never listed; the
// account's first token is listed; a revoked or expired token answers 401;
// another account's token ids answer 404.
func testAPITokenLifecycle(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	ctx := context.Background()
	tok := newToken(t, h, "deploy", "write")
	list := tokens(t, h)
	if len(list) != 2 || list[0].ID != tok.ID || list[1].Name != store.FirstTokenName || list[1].Scope != "write" {
		t.Fatalf("tokens %+v; want deploy, then the first token", list)
	}
	for _, l := range list {
		if l.Token != "" {
			t.Errorf("a list shows token %s's secret", l.ID)
		}
	}
	if got := h.DoAs(tok.Token, "GET", "/v3/account", nil, nil); got != 200 {
		t.Fatalf("the new token: %d; want 200", got)
	}

	// Another account: its ids are not found, its list holds only its own.
	other := auth.NewAPIToken()
	if _, err := h.Server.Store.CreateAccount(ctx, store.Bootstrap{AccountName: "B", OwnerEmail: "b@example.com", PasswordHash: "x", TokenHash: auth.HashToken(other)}); err != nil {
		t.Fatal(err)
	}
	var theirs struct{ Data []apiToken }
	h.DoAs(other, "GET", "/v3/api-tokens", nil, &theirs)
	if len(theirs.Data) != 1 || theirs.Data[0].ID == list[1].ID {
		t.Errorf("account B lists %+v; want its own first token only", theirs.Data)
	}
	if got := h.DoAs(other, "DELETE", "/v3/api-tokens/"+tok.ID, nil, nil); got != http.StatusNotFound {
		t.Errorf("account B revokes A's token: %d; want 404", got)
	}
	if got := h.Do("DELETE", "/v3/api-tokens/"+theirs.Data[0].ID, nil, nil); got != http.StatusNotFound {
		t.Errorf("account A revokes B's token: %d; want 404", got)
	}
	if got := h.DoAs(tok.Token, "GET", "/v3/account", nil, nil); got != 200 {
		t.Errorf("after B's attempt the token answers %d; want 200", got)
	}

	// Revoked: 401 at the next request.
	h.Must(204, "DELETE", "/v3/api-tokens/"+tok.ID, nil, nil)
	if got := h.DoAs(tok.Token, "GET", "/v3/account", nil, nil); got != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d; want 401", got)
	}

	// Expired: the store refuses a token whose expiry has passed by its
	// clock (storetest moves that clock across the instant); here one that
	// expired a moment ago.
	acct, err := h.Server.Store.AccountByTokenHash(ctx, auth.HashToken(h.Token))
	if err != nil {
		t.Fatal(err)
	}
	expired, past := auth.NewAPIToken(), h.Server.Store.Now().Add(-time.Millisecond)
	if _, err := h.Server.Store.CreateAPIToken(ctx, acct.ID, store.NewAPIToken{Name: "old", Scope: store.ScopeWrite, Hash: auth.HashToken(expired), ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	if got := h.DoAs(expired, "GET", "/v3/account", nil, nil); got != http.StatusUnauthorized {
		t.Errorf("an expired token: %d; want 401", got)
	}
}

func TestBadAPITokenInputNamesTheFieldAndCreatesNothing(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testBadAPITokenInput)
}

func testBadAPITokenInput(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"scope": "write"}, "name"},
		{map[string]any{"name": "  ", "scope": "write"}, "name"},
		{map[string]any{"name": strings.Repeat("n", 201), "scope": "write"}, "name"},
		{map[string]any{"name": "a\tb", "scope": "write"}, "name"},
		{map[string]any{"name": "n"}, "scope"},
		{map[string]any{"name": "n", "scope": "admin"}, "scope"},
		{map[string]any{"name": "n", "scope": "write", "expiresAt": "tomorrow"}, "expiresAt"},
		{map[string]any{"name": "n", "scope": "write", "expiresAt": past}, "expiresAt"},
		{map[string]any{"name": "n", "scope": "write", "token": "hrld_mine"}, "token"},
	} {
		var p struct{ Errors []struct{ Field string } }
		got := h.Do("POST", "/v3/api-tokens", c.body, &p)
		if got != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Field != c.field {
			t.Errorf("%v: %d %+v; want 422 naming %s", c.body, got, p.Errors, c.field)
		}
	}
	if n := len(tokens(t, h)); n != 1 {
		t.Errorf("%d tokens after only bad input; want the first one alone", n)
	}
}
