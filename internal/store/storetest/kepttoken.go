package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testAKeptTokenIsCheckedInItsStatement: on PostgreSQL a token Authenticate
// found valid is kept a second (decision 0110), and a change made under it
// (store.WithTokenCheck) checks it in its one statement: a token revoked by
// another process, or expired, fails the change with ErrAPITokenRefused,
// nothing written, even where the change itself would have written nothing
// (the caller learns nothing else). On SQLite no token is kept.
func testAKeptTokenIsCheckedInItsStatement(t *testing.T, b *Bundle) {
	other := b.Open(t)
	expires := b.Clock.Now().Add(time.Hour)
	tok, err := b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: "kept", Scope: store.ScopeWrite, Hash: "hash-kept", ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := b.St.KeptToken("hash-kept"); ok {
		t.Fatal("a token never read is kept")
	}
	if _, _, err := b.St.Authenticate(b.Ctx, "hash-kept"); err != nil {
		t.Fatal(err)
	}
	products := func() int { return b.Count(t, `SELECT COUNT(*) FROM products WHERE account_id = ?`, b.Account.ID) }
	change := func(check *store.TokenCheck, write bool) (bool, error) {
		t.Helper()
		c := store.Change{SQL: `INSERT INTO products (id, account_id, name, created_at, updated_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), 'p', 1, 1 WHERE CAST(? AS BOOLEAN) RETURNING id`, Args: []any{store.NewID(), b.Account.ID, write}}
		return b.St.ChangeAndFire(store.WithTokenCheck(b.Ctx, check), c,
			store.Firing{AccountID: b.Account.ID, Kind: event.LicenseCreated, Data: map[string]any{"n": 1}})
	}
	kept := func(what string) *store.TokenCheck {
		t.Helper()
		acct, got, check, ok := b.St.KeptToken("hash-kept")
		if !ok || acct.ID != b.Account.ID || got.ID != tok.ID || got.Scope != store.ScopeWrite {
			t.Fatalf("%s: kept token %+v of account %q, %v; want %s of %s", what, got, acct.ID, ok, tok.ID, b.Account.ID)
		}
		return check
	}
	if b.St.Engine() == "sqlite" {
		if _, _, _, ok := b.St.KeptToken("hash-kept"); ok {
			t.Error("SQLite keeps a token: its read costs no round trip")
		}
		return
	}

	check := kept("read just now")
	if made, err := change(check, true); !made || err != nil || !check.Made() {
		t.Fatalf("a change under a valid kept token: made %v, %v, checked %v; want made and checked", made, err, check.Made())
	}
	before := products()
	b.Clock.Add(999 * time.Millisecond)
	check = kept("read 999 ms ago")

	// Revoked by another process: this one still keeps it, and its
	// statement refuses it, writing nothing, whether or not the change
	// would have been made.
	if err := other.RevokeAPIToken(b.Ctx, b.Account.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{true, false} {
		if made, err := change(check, write); made || !errors.Is(err, store.ErrAPITokenRefused) || check.Made() {
			t.Errorf("a change (that would write: %v) under a kept token revoked elsewhere: made %v, %v, checked %v; want ErrAPITokenRefused",
				write, made, err, check.Made())
		}
	}
	if n := products(); n != before {
		t.Errorf("refused changes wrote %d products", n-before)
	}
	b.Clock.Add(time.Millisecond)
	if _, _, _, ok := b.St.KeptToken("hash-kept"); ok {
		t.Error("a token read a second ago is still kept")
	}
	if _, _, err := b.St.Authenticate(b.Ctx, "hash-kept"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the revoked token read again: %v; want ErrNotFound", err)
	}

	// Expired between its read and the statement.
	soon := b.Clock.Now().Add(500 * time.Millisecond)
	tok, err = b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: "soon", Scope: store.ScopeWrite, Hash: "hash-kept", ExpiresAt: &soon})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.St.Authenticate(b.Ctx, "hash-kept"); err != nil {
		t.Fatal(err)
	}
	check = kept("expiring")
	b.Clock.Add(500 * time.Millisecond)
	if _, _, _, ok := b.St.KeptToken("hash-kept"); ok {
		t.Error("a token kept past its expiry is given")
	}
	if made, err := change(check, true); made || !errors.Is(err, store.ErrAPITokenRefused) {
		t.Errorf("a change under a kept token that expired since: made %v, %v; want ErrAPITokenRefused", made, err)
	}

	// Revoked here: forgotten at once.
	long := b.Clock.Now().Add(time.Hour)
	if tok, err = b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: "here", Scope: store.ScopeWrite, Hash: "hash-here", ExpiresAt: &long}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.St.Authenticate(b.Ctx, "hash-here"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := b.St.KeptToken("hash-here"); !ok {
		t.Fatal("a token just read is not kept")
	}
	if err := b.St.RevokeAPIToken(b.Ctx, b.Account.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := b.St.KeptToken("hash-here"); ok {
		t.Error("a token revoked by this process is still kept")
	}
}
