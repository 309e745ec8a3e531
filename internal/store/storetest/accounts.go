package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/store"
)

// testAccountsListedAndDeleted: accounts list newest first in pages;
// deleting one removes every row of it (webhooks, logs and their attempts,
// events, emails, users, sessions, tokens, links) and nothing of another
// account; a log claimed before the delete is no longer held, so the
// dispatcher does not attempt it.
func testAccountsListedAndDeleted(t *testing.T, b *Bundle) {
	other := b.NewAccount(t, "b@example.com")
	third := b.NewAccount(t, "c@example.com")
	page1, next, err := b.St.Accounts(b.Ctx, store.Page{Limit: 2})
	if err != nil || len(page1) != 2 || page1[0].ID != third.ID || page1[1].ID != other.ID || next != other.ID {
		t.Fatalf("first page: %+v, next %q, %v; want c, b, next = b's id", page1, next, err)
	}
	page2, next, err := b.St.Accounts(b.Ctx, store.Page{Limit: 2, Cursor: next})
	if err != nil || len(page2) != 1 || page2[0].ID != b.Account.ID || next != "" {
		t.Fatalf("second page: %+v, next %q, %v; want a alone", page2, next, err)
	}

	// Fill the account with one of everything, and the other account too.
	b.Webhook(t, "doomed")
	b.Fire(t, b.St, 3)
	claims := b.Claim(t, b.St, 0, time.Minute, 10, 10)
	if len(claims) != 3 {
		t.Fatalf("claimed %d logs; want 3", len(claims))
	}
	b.Complete(t, b.St, 50, store.Outcome{LogID: claims[0].LogID, WebhookID: claims[0].WebhookID, Lease: claims[0].Lease,
		Trigger: store.TriggerAutomatic, Result: store.Delivered, Attempt: &store.AttemptRecord{SentAt: b.Clock.Now(), Duration: time.Millisecond}})
	if err := b.St.InTx(b.Ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(b.Ctx, `INSERT INTO emails (id, account_id, recipient, subject, body, created_at) VALUES (?, ?, 'a@example.com', 's', 'b', ?)`,
			store.NewID(), b.Account.ID, b.Clock.Now().UnixMilli())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	owner, err := b.St.PersonByEmail(b.Ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.St.CreateSession(b.Ctx, store.Session{IDHash: "session-a", AccountID: b.Account.ID, OwnerID: owner.ID, CSRFToken: "c",
		CreatedAt: b.Clock.Now(), SeenAt: b.Clock.Now(), ExpiresAt: b.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.St.CreateLink(b.Ctx, b.Account.ID, store.NewLink{Kind: store.LinkPortal, Hash: "link-a", ExpiresAt: b.Clock.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	theirs := b.Account
	b.Account = other
	b.Webhook(t, "kept")
	b.Fire(t, b.St, 1)
	b.Account = theirs

	tables := []string{"webhooks", "webhook_event_logs", "events", "emails", "owners", "portal_sessions", "api_tokens", "signin_links"}
	for _, table := range tables {
		if n := b.Count(t, `SELECT COUNT(*) FROM `+table+` WHERE account_id = ?`, b.Account.ID); n == 0 {
			t.Fatalf("before the delete the account has no %s; the test would prove nothing", table)
		}
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts`); n == 0 {
		t.Fatal("before the delete no attempt is recorded")
	}
	held := store.Held{LogID: claims[1].LogID, Lease: claims[1].Lease}
	otherLease := store.Held{LogID: claims[1].LogID, Lease: claims[1].Lease + "-another"}
	if found, err := b.Q.StillHeld(b.Ctx, []store.Held{held, otherLease}); err != nil || !found[held] || found[otherLease] || len(found) != 1 {
		t.Fatalf("a claimed log before the delete: found %v, %v; want it held under its own lease only", found, err)
	}

	if err := b.St.DeleteAccount(b.Ctx, b.Account.ID); err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		if n := b.Count(t, `SELECT COUNT(*) FROM `+table+` WHERE account_id = ?`, b.Account.ID); n != 0 {
			t.Errorf("%d rows of the deleted account left in %s", n, table)
		}
		if table != "emails" && table != "signin_links" && table != "portal_sessions" {
			if n := b.Count(t, `SELECT COUNT(*) FROM `+table+` WHERE account_id = ?`, other.ID); n == 0 {
				t.Errorf("the other account lost its %s", table)
			}
		}
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM webhook_attempts`); n != 0 {
		t.Errorf("%d attempts left after their account was deleted", n)
	}
	if found, err := b.Q.StillHeld(b.Ctx, []store.Held{held}); err != nil || found[held] {
		t.Errorf("a log claimed before its account was deleted: found %v, %v; want not held", found, err)
	}
	if _, err := b.St.Account(b.Ctx, b.Account.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reading the deleted account: %v; want ErrNotFound", err)
	}
	if err := b.St.DeleteAccount(b.Ctx, b.Account.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again: %v; want ErrNotFound", err)
	}
	if _, err := b.St.PersonByEmail(b.Ctx, "a@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("its owner's email after the delete: %v; want ErrNotFound (free for another account)", err)
	}
}

// testPeopleAndLinks: invitations and portal links are single-use, expire
// by the store's clock, and are scoped to their account; an account keeps
// an owner; a password change ends every other session of its user.
func testPeopleAndLinks(t *testing.T, b *Bundle) {
	other := b.NewAccount(t, "b@example.com")
	owner, err := b.St.PersonByEmail(b.Ctx, "a@example.com")
	if err != nil || owner.Role != store.RoleOwner {
		t.Fatalf("the account's owner: %+v, %v; want role owner", owner, err)
	}
	soon := b.Clock.Now().Add(time.Hour)
	invite := func(accountID, email string, role store.Role, hash string) (store.Link, error) {
		return b.St.CreateLink(b.Ctx, accountID, store.NewLink{Kind: store.LinkInvitation, Email: email, Role: role, Hash: hash, ExpiresAt: soon})
	}
	if _, err := invite(b.Account.ID, "b@example.com", store.RoleMember, "taken"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("inviting an address that signs in elsewhere: %v; want ErrConflict", err)
	}
	if _, err := invite(b.Account.ID, "m@example.com", store.RoleMember, "first"); err != nil {
		t.Fatal(err)
	}
	inv, err := invite(b.Account.ID, "m@example.com", store.RoleMember, "second")
	if err != nil {
		t.Fatal(err)
	}
	if list, err := b.St.Invitations(b.Ctx, b.Account.ID); err != nil || len(list) != 1 || list[0].ID != inv.ID {
		t.Fatalf("invitations: %+v, %v; want the second alone (it replaced the first)", list, err)
	}
	if list, _ := b.St.Invitations(b.Ctx, other.ID); len(list) != 0 {
		t.Errorf("the other account lists %d invitations; want none", len(list))
	}
	if err := b.St.RevokeInvitation(b.Ctx, other.ID, inv.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account revokes the invitation: %v; want ErrNotFound", err)
	}
	if _, err := b.St.AcceptInvitation(b.Ctx, "first", "hash"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the replaced invitation: %v; want ErrNotFound", err)
	}
	if l, err := b.St.LinkByHash(b.Ctx, store.LinkInvitation, "second"); err != nil || l.Email != "m@example.com" {
		t.Errorf("reading the invitation: %+v, %v", l, err)
	}
	if _, err := b.St.LinkByHash(b.Ctx, store.LinkPortal, "second"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an invitation read as a portal link: %v; want ErrNotFound", err)
	}
	member, err := b.St.AcceptInvitation(b.Ctx, "second", "member-hash")
	if err != nil || member.Role != store.RoleMember || member.AccountID != b.Account.ID {
		t.Fatalf("accepting: %+v, %v; want a member of the account", member, err)
	}
	if _, err := b.St.AcceptInvitation(b.Ctx, "second", "again"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an invitation used twice: %v; want ErrNotFound", err)
	}
	if got, err := b.St.PersonByEmail(b.Ctx, "m@example.com"); err != nil || got.PasswordHash != "member-hash" {
		t.Errorf("the member signs in with their own password: %+v, %v", got, err)
	}

	// Roles: the last owner stays.
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"demote the last owner", func() error { return b.St.SetRole(b.Ctx, b.Account.ID, owner.ID, store.RoleMember) }, store.ErrLastOwner},
		{"remove the last owner", func() error { _, err := b.St.RemovePerson(b.Ctx, b.Account.ID, owner.ID); return err }, store.ErrLastOwner},
		{"another account promotes the member", func() error { return b.St.SetRole(b.Ctx, other.ID, member.ID, store.RoleOwner) }, store.ErrNotFound},
		{"another account removes the member", func() error { _, err := b.St.RemovePerson(b.Ctx, other.ID, member.ID); return err }, store.ErrNotFound},
		{"promote the member", func() error { return b.St.SetRole(b.Ctx, b.Account.ID, member.ID, store.RoleOwner) }, nil},
		{"demote the first owner, one owner left", func() error { return b.St.SetRole(b.Ctx, b.Account.ID, owner.ID, store.RoleMember) }, nil},
		{"remove the other, now last, owner", func() error { _, err := b.St.RemovePerson(b.Ctx, b.Account.ID, member.ID); return err }, store.ErrLastOwner},
		{"remove the first user, a member now", func() error { _, err := b.St.RemovePerson(b.Ctx, b.Account.ID, owner.ID); return err }, nil},
	} {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
	}
	if users, err := b.St.People(b.Ctx, b.Account.ID); err != nil || len(users) != 1 || users[0].ID != member.ID || users[0].Role != store.RoleOwner {
		t.Fatalf("users: %+v, %v; want the former member alone, an owner", users, err)
	}

	// A password change ends the user's other sessions, not the one that
	// asked, and no one else's; a reset ends them all.
	session := func(hash string, o store.Person) {
		if err := b.St.CreateSession(b.Ctx, store.Session{IDHash: hash, AccountID: o.AccountID, OwnerID: o.ID, CSRFToken: "c",
			CreatedAt: b.Clock.Now(), SeenAt: b.Clock.Now(), ExpiresAt: b.Clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	otherOwner, _ := b.St.PersonByEmail(b.Ctx, "b@example.com")
	session("mine", member)
	session("my-phone", member)
	session("theirs", otherOwner)
	if err := b.St.ChangePassword(b.Ctx, other.ID, member.ID, "x", "mine"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account changes the password: %v; want ErrNotFound", err)
	}
	if err := b.St.ChangePassword(b.Ctx, b.Account.ID, member.ID, "new-hash", "mine"); err != nil {
		t.Fatal(err)
	}
	alive := func(hash string) bool {
		_, err := b.St.SessionByHash(b.Ctx, hash)
		return err == nil
	}
	if !alive("mine") || alive("my-phone") || !alive("theirs") {
		t.Errorf("after a change: mine %v, my-phone %v, theirs %v; want true, false, true", alive("mine"), alive("my-phone"), alive("theirs"))
	}
	if s, err := b.St.SessionByHash(b.Ctx, "mine"); err != nil || s.OwnerRole != store.RoleOwner || s.OwnerEmail != "m@example.com" {
		t.Errorf("the session carries its user: %+v, %v", s, err)
	}
	if _, err := b.St.ResetPassword(b.Ctx, "nobody@example.com", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resetting an unknown address: %v; want ErrNotFound", err)
	}
	if got, err := b.St.ResetPassword(b.Ctx, "m@example.com", "reset-hash"); err != nil || got.ID != member.ID {
		t.Fatalf("reset: %+v, %v", got, err)
	}
	if alive("mine") || !alive("theirs") {
		t.Errorf("after a reset: mine %v, theirs %v; want false, true", alive("mine"), alive("theirs"))
	}

	// Portal links: single use, the first owner, expiry by the store's clock.
	if _, err := b.St.CreateLink(b.Ctx, store.NewID(), store.NewLink{Kind: store.LinkPortal, Hash: "nowhere", ExpiresAt: soon}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a link for a missing account: %v; want ErrNotFound", err)
	}
	for _, h := range []string{"p1", "p2"} {
		if _, err := b.St.CreateLink(b.Ctx, b.Account.ID, store.NewLink{Kind: store.LinkPortal, Hash: h, ExpiresAt: b.Clock.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if o, err := b.St.UsePortalLink(b.Ctx, "p1"); err != nil || o.ID != member.ID {
		t.Errorf("using a portal link: %+v, %v; want the account's owner", o, err)
	}
	if _, err := b.St.UsePortalLink(b.Ctx, "p1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("using it twice: %v; want ErrNotFound", err)
	}
	b.Clock.Add(time.Minute)
	if _, err := b.St.UsePortalLink(b.Ctx, "p2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("using one at its expiry: %v; want ErrNotFound", err)
	}
}

// testOwnersDemotingEachOtherKeepOne: two owners, each through a process of
// its own, make the other a member at the same moment; one wins, the other
// is refused, and the account keeps an owner.
func testOwnersDemotingEachOtherKeepOne(t *testing.T, b *Bundle) {
	first, err := b.St.PersonByEmail(b.Ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.St.CreateLink(b.Ctx, b.Account.ID, store.NewLink{Kind: store.LinkInvitation, Email: "second@example.com",
		Role: store.RoleOwner, Hash: "second", ExpiresAt: b.Clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	second, err := b.St.AcceptInvitation(b.Ctx, "second", "x")
	if err != nil || second.Role != store.RoleOwner {
		t.Fatalf("the second owner: %+v, %v", second, err)
	}
	handles := []*store.Store{b.St, b.Open(t)}
	targets := []string{second.ID, first.ID}
	for round := range 5 {
		errs := make([]error, 2)
		Parallel(2, func(i int) {
			errs[i] = handles[i].SetRole(b.Ctx, b.Account.ID, targets[i], store.RoleMember)
		})
		refused := 0
		for _, err := range errs {
			switch {
			case errors.Is(err, store.ErrLastOwner):
				refused++
			case err != nil:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		owners := 0
		users, err := b.St.People(b.Ctx, b.Account.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			if u.Role == store.RoleOwner {
				owners++
			}
		}
		if refused != 1 || owners != 1 {
			t.Fatalf("round %d: %d refused, %d owners left; want 1 and 1", round, refused, owners)
		}
		// Both owners again for the next round.
		for _, id := range targets {
			if err := b.St.SetRole(b.Ctx, b.Account.ID, id, store.RoleOwner); err != nil {
				t.Fatal(err)
			}
		}
	}
}
