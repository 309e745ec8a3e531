package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store"
)

var newTokenValue = regexp.MustCompile(`id="new-token">(hrld_[A-Za-z0-9_-]+)<`)

// TestAPITokensPage: Settings → API tokens lists the account's tokens,
// creates one and shows its secret once, refuses bad input beside the
// field creating nothing, and revokes a token so the API refuses it; the
// tokens of another account are not found.
func TestAPITokensPage(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testAPITokensPage)
}

func testAPITokensPage(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	b := mustSignIn(t, h)
	code, _, body := b.get("/account/api-tokens")
	if code != http.StatusOK || !strings.Contains(body, store.FirstTokenName) || !strings.Contains(body, `aria-current="page">API tokens`) {
		t.Fatalf("GET /account/api-tokens: %d; want 200 listing %q under the API tokens entry\n%s", code, store.FirstTokenName, body)
	}

	// Bad input: each field's error beside it, nothing created.
	for _, c := range []struct {
		form  url.Values
		field string
	}{
		{url.Values{"name": {"  "}, "scope": {"read"}}, "name"},
		{url.Values{"name": {"x"}, "scope": {"admin"}}, "scope"},
		{url.Values{"name": {"x"}, "scope": {"read"}, "expires": {"12"}}, "expires"},
	} {
		code, _, body := b.submit("/account/api-tokens", c.form)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="`+c.field+`-error"`) {
			t.Errorf("%v: %d; want 422 with an error beside %s", c.form, code, c.field)
		}
	}
	if n := countTokens(t, h); n != 1 {
		t.Fatalf("%d tokens after bad input; want 1", n)
	}

	// Create a read token: its secret is on the page the answer leads to,
	// once, and works.
	code, loc, body := b.submit("/account/api-tokens", url.Values{"name": {"Dashboard ✓"}, "scope": {"read"}, "expires": {"30"}})
	m := newTokenValue.FindStringSubmatch(body)
	if code != http.StatusOK || loc != "/account/api-tokens" || m == nil {
		t.Fatalf("create: %d at %q; want the tokens page showing the new token\n%s", code, loc, body)
	}
	secret := m[1]
	if got := h.DoAs(secret, "GET", "/v3/webhooks", nil, nil); got != http.StatusOK {
		t.Errorf("the new read token reads: %d; want 200", got)
	}
	if got := h.DoAs(secret, "POST", "/v3/products", map[string]any{"name": "P"}, nil); got != http.StatusForbidden {
		t.Errorf("the new read token changes: %d; want 403", got)
	}
	_, _, body = b.get("/account/api-tokens")
	if strings.Contains(body, secret) {
		t.Error("the list shows a token's secret again")
	}
	if !strings.Contains(body, "Dashboard ✓") || strings.Count(body, "data-token=") != 2 {
		t.Errorf("the list does not show both tokens\n%s", body)
	}
	id := tokenID(t, h, "Dashboard ✓")

	// Another account's owner cannot revoke it.
	hash, _ := auth.HashPassword("other password")
	if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{AccountName: "B", OwnerEmail: "b@example.com",
		PasswordHash: hash, TokenHash: auth.HashToken(auth.NewAPIToken())}); err != nil {
		t.Fatal(err)
	}
	other := newBrowser(t, h)
	if code, _, _ := other.signIn("b@example.com", "other password"); code != http.StatusSeeOther {
		t.Fatalf("sign in as B: %d", code)
	}
	if _, _, body := other.get("/account/api-tokens"); strings.Contains(body, "Dashboard") {
		t.Error("B's list shows A's token")
	}
	if code, _, _ := other.post("/account/api-tokens/"+id+"/revoke", url.Values{}); code != http.StatusNotFound {
		t.Errorf("B revokes A's token: %d; want 404", code)
	}

	// Revoke: the API refuses it at once.
	if code, loc, _ := b.post("/account/api-tokens/"+id+"/revoke", url.Values{}); code != http.StatusSeeOther || loc != "/account/api-tokens" {
		t.Errorf("revoke: %d to %q; want 303 to the list", code, loc)
	}
	if got := h.DoAs(secret, "GET", "/v3/webhooks", nil, nil); got != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d; want 401", got)
	}
	if code, _, _ := b.post("/account/api-tokens/"+id+"/revoke", url.Values{}); code != http.StatusNotFound {
		t.Errorf("revoked twice: %d; want 404", code)
	}
}

func countTokens(t *testing.T, h *heraldtest.Herald) int {
	t.Helper()
	var list struct{ Data []struct{ ID, Name string } }
	h.Must(200, "GET", "/v3/api-tokens?limit=500", nil, &list)
	return len(list.Data)
}

func tokenID(t *testing.T, h *heraldtest.Herald, name string) string {
	t.Helper()
	var list struct{ Data []struct{ ID, Name string } }
	h.Must(200, "GET", "/v3/api-tokens?limit=500", nil, &list)
	for _, tok := range list.Data {
		if tok.Name == name {
			return tok.ID
		}
	}
	t.Fatalf("no token named %q", name)
	return ""
}

// A token's expiry is read by herald's one clock in the API and in the
// portal alike: with the clock moved past it, the API refuses the token,
// the portal has ended the session signed in before (idle longer than it
// may be), and the tokens page marks the token expired.
func TestAPITokenExpiresByHeraldsClock(t *testing.T) {
	t.Parallel()
	clock := heraldtest.NewClock()
	h := heraldtest.Start(t, heraldtest.Options{Now: clock.Now})
	b := mustSignIn(t, h)
	code, _, body := b.submit("/account/api-tokens", url.Values{"name": {"Dashboard"}, "scope": {"read"}, "expires": {"30"}})
	m := newTokenValue.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create: %d; want the tokens page showing the new token\n%s", code, body)
	}
	if strings.Contains(body, "(expired)") {
		t.Errorf("a token 30 days from expiring is marked expired:\n%s", body)
	}
	if got := h.DoAs(m[1], "GET", "/v3/account", nil, nil); got != http.StatusOK {
		t.Fatalf("the new token at the API: %d; want 200", got)
	}

	clock.Advance(31 * 24 * time.Hour)
	if got := h.DoAs(m[1], "GET", "/v3/account", nil, nil); got != http.StatusUnauthorized {
		t.Errorf("the token 31 days on, at the API: %d; want 401", got)
	}
	if code, loc, _ := b.get("/account/api-tokens"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin") {
		t.Errorf("the session signed in 31 days ago: %d to %q; want 303 to the sign-in page", code, loc)
	}
	b = mustSignIn(t, h)
	if _, _, body := b.get("/account/api-tokens"); !regexp.MustCompile(`Dashboard(?s:.*?)\(expired\)`).MatchString(body) {
		t.Errorf("the tokens page 31 days on does not mark the token expired:\n%s", body)
	}
}
