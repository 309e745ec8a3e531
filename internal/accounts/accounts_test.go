package accounts_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/accounts"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

func open(t *testing.T, url string) *store.Store {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	st, err := store.Open(context.Background(), url, store.Options{Key: key})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// signsIn says whether the owner email signs in with password and the
// token authenticates as the account.
func signsIn(t *testing.T, st *store.Store, c accounts.Created, email string) {
	t.Helper()
	ctx := context.Background()
	o, err := st.PersonByEmail(ctx, email)
	if err != nil || o.AccountID != c.Account.ID || !auth.CheckPassword(o.PasswordHash, c.OwnerPassword) {
		t.Errorf("%s: owner %+v, %v; want of account %s, signing in with the password returned", email, o, err, c.Account.ID)
	}
	a, tok, err := st.APITokenByHash(ctx, auth.HashToken(c.APIToken))
	if err != nil || a.ID != c.Account.ID || tok.Scope != store.ScopeWrite {
		t.Errorf("API token: account %s scope %q, %v; want account %s, write", a.ID, tok.Scope, err, c.Account.ID)
	}
}

func TestCreateFirstOnceWithWhatItIsGiven(t *testing.T) {
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		st, ctx := open(t, url), context.Background()
		given := accounts.New{Name: "My account", OwnerEmail: "o@example.com", Password: "a given password", APIToken: auth.NewAPIToken()}
		c, created, err := accounts.CreateFirst(ctx, st, given)
		if err != nil || !created {
			t.Fatalf("CreateFirst on an empty database: created %v, %v", created, err)
		}
		if c.GeneratedPassword || c.GeneratedToken || c.OwnerPassword != given.Password || c.APIToken != given.APIToken {
			t.Errorf("given credentials: got %+v", c)
		}
		if c.Account.NotificationEmail != "o@example.com" {
			t.Errorf("notification email %q; want the owner's", c.Account.NotificationEmail)
		}
		signsIn(t, st, c, "o@example.com")
		if _, created, err := accounts.CreateFirst(ctx, st, accounts.New{Name: "Again", OwnerEmail: "p@example.com"}); created || err != nil {
			t.Errorf("CreateFirst on a database with an account: created %v, %v; want neither", created, err)
		}
	})
}

func TestCreateGeneratesCredentialsAndRefusesATakenAddress(t *testing.T) {
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		st, ctx := open(t, url), context.Background()
		c, err := accounts.Create(ctx, st, accounts.New{Name: "A", OwnerEmail: "a@example.com", NotificationEmail: "ops@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if !c.GeneratedPassword || !c.GeneratedToken || c.OwnerPassword == "" || !strings.HasPrefix(c.APIToken, auth.APITokenPrefix) {
			t.Errorf("generated credentials: got %+v", c)
		}
		if c.Account.Name != "A" || c.Account.NotificationEmail != "ops@example.com" {
			t.Errorf("account %+v", c.Account)
		}
		signsIn(t, st, c, "a@example.com")
		if _, err := accounts.Create(ctx, st, accounts.New{Name: "B", OwnerEmail: "a@example.com"}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second account for a@example.com: %v; want store.ErrConflict", err)
		}
		if list, _, err := st.Accounts(ctx, store.Page{Limit: 10}); err != nil || len(list) != 1 {
			t.Errorf("accounts after the refusal: %d, %v; want 1", len(list), err)
		}
	})
}

func TestPortalLinkIsUnderTheBaseAndExpires(t *testing.T) {
	testdb.ForEachStore(t, func(t *testing.T, url string) {
		st, ctx := open(t, url), context.Background()
		c, err := accounts.Create(ctx, st, accounts.New{Name: "A", OwnerEmail: "a@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		l, err := accounts.NewPortalLink(ctx, st, c.Account.ID, accounts.DefaultPortalLinkTTL, "https://herald.example/")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(l.URL, "https://herald.example"+accounts.PortalLinkPath+"?token=") {
			t.Errorf("link %s", l.URL)
		}
		if d := l.ExpiresAt.Sub(st.Now()); d <= 0 || d > accounts.DefaultPortalLinkTTL {
			t.Errorf("link expires in %v; want within %v", d, accounts.DefaultPortalLinkTTL)
		}
		if _, err := accounts.NewPortalLink(ctx, st, "no-such-account", accounts.DefaultPortalLinkTTL, "https://herald.example"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a link for no account: %v; want store.ErrNotFound", err)
		}
	})
}
