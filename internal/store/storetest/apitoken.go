package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testAPITokens: an account is created with one write token; more can be
// added, listed newest first in pages, looked up by hash with their account
// and scope, and revoked, each only by their own account; an expired or
// revoked token is not found, an expired one stays listed.
func testAPITokens(t *testing.T, b *Bundle) {
	other := b.NewAccount(t, "b@example.com")
	first := b.tokens(t, b.Account.ID)
	if len(first) != 1 || first[0].Name != store.FirstTokenName || first[0].Scope != store.ScopeWrite || first[0].ExpiresAt != nil {
		t.Fatalf("a new account's tokens: %+v; want one write token named %q, no expiry", first, store.FirstTokenName)
	}
	expires := b.Clock.Now().Add(time.Hour)
	read, err := b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: "CI", Scope: store.ScopeRead, Hash: "hash-read", ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	write, err := b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: "deploy", Scope: store.ScopeWrite, Hash: "hash-write"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.St.CreateAPIToken(b.Ctx, other.ID, store.NewAPIToken{Name: "dup", Scope: store.ScopeWrite, Hash: "hash-write"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second token with a taken hash: %v; want ErrConflict", err)
	}

	page1, next, err := b.St.APITokens(b.Ctx, b.Account.ID, store.Page{Limit: 2})
	if err != nil || len(page1) != 2 || page1[0].ID != write.ID || page1[1].ID != read.ID || next != read.ID {
		t.Fatalf("first page: %d tokens, next %q, %v; want deploy and CI, next = CI's id", len(page1), next, err)
	}
	page2, next, err := b.St.APITokens(b.Ctx, b.Account.ID, store.Page{Limit: 2, Cursor: next})
	if err != nil || len(page2) != 1 || page2[0].ID != first[0].ID || next != "" {
		t.Fatalf("second page: %d tokens, next %q, %v; want the first token and no next", len(page2), next, err)
	}
	if got := b.tokens(t, other.ID); len(got) != 1 {
		t.Errorf("the other account lists %d tokens; want its own one", len(got))
	}

	for _, tc := range []struct {
		hash  string
		scope store.Scope
	}{{"hash-read", store.ScopeRead}, {"hash-write", store.ScopeWrite}} {
		acct, tok, err := b.St.APITokenByHash(b.Ctx, tc.hash)
		if err != nil || acct.ID != b.Account.ID || tok.Scope != tc.scope {
			t.Errorf("%s: account %q, scope %q, %v; want %q, %q", tc.hash, acct.ID, tok.Scope, err, b.Account.ID, tc.scope)
		}
	}
	if _, _, err := b.St.APITokenByHash(b.Ctx, "unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown hash: %v; want ErrNotFound", err)
	}

	// Expiry follows the store's clock: valid until the instant, then gone.
	b.Clock.Add(time.Hour - time.Millisecond)
	if _, _, err := b.St.Authenticate(b.Ctx, "hash-read"); err != nil {
		t.Errorf("a millisecond before its expiry: %v", err)
	}
	b.Clock.Add(time.Millisecond)
	if _, _, err := b.St.Authenticate(b.Ctx, "hash-read"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("at its expiry: %v; want ErrNotFound", err)
	}
	if got := b.tokens(t, b.Account.ID); len(got) != 3 {
		t.Errorf("%d tokens listed after one expired; want 3 (expired ones stay until revoked)", len(got))
	}

	// Revoking is scoped to the account.
	if err := b.St.RevokeAPIToken(b.Ctx, other.ID, write.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account revokes the token: %v; want ErrNotFound", err)
	}
	if _, _, err := b.St.APITokenByHash(b.Ctx, "hash-write"); err != nil {
		t.Errorf("after another account's revoke: %v; want the token still valid", err)
	}
	if err := b.St.RevokeAPIToken(b.Ctx, b.Account.ID, write.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.St.APITokenByHash(b.Ctx, "hash-write"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a revoked token: %v; want ErrNotFound", err)
	}
	if err := b.St.RevokeAPIToken(b.Ctx, b.Account.ID, write.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked twice: %v; want ErrNotFound", err)
	}
}

// testAPITokenUseAcrossProcesses: a use is recorded at once the first time
// and then at most once per LastUsedInterval, whichever process sees it;
// and a revocation by one process refuses the token at the next lookup of
// every other (no process keeps tokens in memory).
func testAPITokenUseAcrossProcesses(t *testing.T, b *Bundle) {
	second := b.Open(t)
	tok, err := b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: "t", Scope: store.ScopeWrite, Hash: "hash-t"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.LastUsedAt != nil {
		t.Fatalf("a new token was used at %v", tok.LastUsedAt)
	}
	start := b.Clock.Now()
	steps := []struct {
		st       *store.Store
		advance  time.Duration
		wantUsed time.Time
	}{
		{b.St, 0, start},                                         // first use: recorded
		{second, 30 * time.Second, start},                        // within the interval, another process: not written
		{b.St, 29 * time.Second, start},                          // still within it
		{second, time.Second, start.Add(store.LastUsedInterval)}, // an interval later: written
	}
	for i, s := range steps {
		b.Clock.Add(s.advance)
		if _, _, err := s.st.Authenticate(b.Ctx, "hash-t"); err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
		_, got, err := b.St.APITokenByHash(b.Ctx, "hash-t")
		if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(s.wantUsed) {
			t.Errorf("after use %d: last used %v (%v); want %v", i+1, got.LastUsedAt, err, s.wantUsed)
		}
	}

	if err := b.St.RevokeAPIToken(b.Ctx, b.Account.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := second.Authenticate(b.Ctx, "hash-t"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked by one process, used at another: %v; want ErrNotFound", err)
	}
}

// tokens lists all of an account's tokens.
func (b *Bundle) tokens(t testing.TB, accountID string) []store.APIToken {
	t.Helper()
	list, _, err := b.St.APITokens(b.Ctx, accountID, store.Page{Limit: 500})
	if err != nil {
		t.Fatalf("list api tokens: %v", err)
	}
	return list
}

// testRemovingAPersonRevokesTheirTokens: each token names who made it, and
// removing a person revokes the tokens they made, and only those, saying
// how many; the first token of an account is its owner's.
func testRemovingAPersonRevokesTheirTokens(t *testing.T, b *Bundle) {
	owner, err := b.St.PersonByEmail(b.Ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.St.CreateLink(b.Ctx, b.Account.ID, store.NewLink{Kind: store.LinkInvitation, Email: "m@example.com", Role: store.RoleMember,
		Hash: "invite", ExpiresAt: b.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	member, err := b.St.AcceptInvitation(b.Ctx, "invite", "member-hash")
	if err != nil {
		t.Fatal(err)
	}
	made := func(name, by string) store.APIToken {
		t.Helper()
		tok, err := b.St.CreateAPIToken(b.Ctx, b.Account.ID, store.NewAPIToken{Name: name, Scope: store.ScopeWrite, Hash: "hash-" + name, CreatedBy: by})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	made("member's", member.ID)
	made("member's too", member.ID)
	mine := made("owner's", owner.ID)
	made("unknown maker's", "")
	list, _, err := b.St.APITokens(b.Ctx, b.Account.ID, store.Page{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	makers := map[string]string{}
	for _, tok := range list {
		makers[tok.Name] = tok.CreatedByEmail
	}
	want := map[string]string{store.FirstTokenName: "a@example.com", "member's": "m@example.com", "member's too": "m@example.com",
		"owner's": "a@example.com", "unknown maker's": ""}
	for name, email := range want {
		if got, ok := makers[name]; !ok || got != email {
			t.Errorf("token %q made by %q (listed: %v); want %q", name, got, ok, email)
		}
	}
	revoked, err := b.St.RemovePerson(b.Ctx, b.Account.ID, member.ID)
	if err != nil || revoked != 2 {
		t.Fatalf("removing the member revoked %d, %v; want the 2 tokens they made", revoked, err)
	}
	for _, h := range []string{"hash-member's", "hash-member's too"} {
		if _, _, err := b.St.APITokenByHash(b.Ctx, h); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a token the removed member made still works: %v", err)
		}
	}
	for _, h := range []string{"hash-owner's", "hash-unknown maker's"} {
		if _, tok, err := b.St.APITokenByHash(b.Ctx, h); err != nil {
			t.Errorf("%s: %v; want it kept", h, err)
		} else if h == "hash-owner's" && tok.CreatedBy != owner.ID {
			t.Errorf("the owner's token names %q as its maker; want %q", tok.CreatedBy, mine.CreatedBy)
		}
	}
}
