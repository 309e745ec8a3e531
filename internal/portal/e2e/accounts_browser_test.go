package e2e_test

import (
	"context"
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestBrowserAccountsJourney, in Chromium: a platform sends its customer
// in with a portal link; the customer changes the generated password,
// invites a colleague, signs out; the colleague joins through the
// invitation link with a password of their own and sees the account's
// people without the owner's controls.
func TestBrowserAccountsJourney(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{OperatorToken: operatorToken})
	op := client.New(h.URL, operatorToken, nil)
	ctx := context.Background()
	acct, err := op.CreateAccount(ctx, client.AccountCreate{Name: "Zoë's shop", OwnerEmail: "zoe@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	link, err := op.CreatePortalLink(ctx, acct.Account.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link.URL)
	b := newTab(t, h)

	// The portal link: one click, signed in to that account.
	b.open(u.RequestURI())
	b.contains("h1", "Sign in to herald")
	b.click("#continue")
	if p := b.path(); p != "/webhooks" {
		t.Fatalf("after the link's button the browser is at %s; want /webhooks", p)
	}
	b.contains(".who-email", "zoe@example.com")
	b.screenshot("accounts-1-signed-in-by-link")

	// Change the generated password: a wrong current one is refused beside
	// its field; the right one changes it.
	b.open("/account")
	b.click("a[href='/account/password']")
	b.contains("h1", "Change password")
	const next = "Zoë's own passphrase 🚀"
	b.do(chromedp.SendKeys(chromedp.CSS("#current"), "not it"), chromedp.SendKeys(chromedp.CSS("#password"), next),
		chromedp.SendKeys(chromedp.CSS("#confirm"), next))
	if code := b.click("form[action='/account/password'] button[type=submit]"); code != 422 {
		t.Errorf("a wrong current password: %d; want 422", code)
	}
	b.contains("#current-error", "not your current password")
	b.do(chromedp.SendKeys(chromedp.CSS("#current"), acct.OwnerPassword), chromedp.SendKeys(chromedp.CSS("#password"), next),
		chromedp.SendKeys(chromedp.CSS("#confirm"), next))
	b.click("form[action='/account/password'] button[type=submit]")
	if p := b.path(); p != "/account" {
		t.Fatalf("after the change the browser is at %s", p)
	}
	b.contains(".notice.ok", "Password changed")
	if code, _, _ := newBrowser(t, h).signIn("zoe@example.com", next); code != 303 {
		t.Errorf("the new password over plain HTTP: %d; want it to sign in", code)
	}

	// Invite a colleague as a member: the link is shown once.
	b.click("nav.side a[href='/account/members']")
	b.contains("h1", "People")
	b.do(chromedp.SendKeys(chromedp.CSS("#email"), "sam@example.com"))
	if code := b.click("form[action='/account/members'] button[type=submit]"); code != 200 {
		t.Errorf("invite: %d; want 200 (the people page, after the redirect)", code)
	}
	if p := b.path(); p != "/account/members" {
		t.Errorf("after inviting the browser is at %s; want /account/members", p)
	}
	invite := html.UnescapeString(b.text("#invite-link"))
	b.contains("[data-invitation='sam@example.com']", "member")
	b.screenshot("accounts-2-invited")
	// The last owner cannot make themself a member: the page says why.
	if code := b.click("[data-user='zoe@example.com'] form[action$='/role'] button"); code != 409 {
		t.Errorf("the last owner made a member: %d; want 409", code)
	}
	b.contains("#people-error", "at least one owner")
	b.contains("[data-user='zoe@example.com']", "owner")
	b.click("form[action='/signout'] button")

	// The colleague joins with a password of their own.
	iu, err := url.Parse(invite)
	if err != nil || iu.Path != "/invitation" {
		t.Fatalf("invitation link %q", invite)
	}
	b.open(iu.RequestURI())
	b.contains("main", "sam@example.com")
	b.do(chromedp.SendKeys(chromedp.CSS("#password"), "too short"), chromedp.SendKeys(chromedp.CSS("#confirm"), "too short"))
	if code := b.click("form[action='/invitation'] button[type=submit]"); code != 422 {
		t.Errorf("a short password: %d; want 422", code)
	}
	b.contains("#password-error", "12")
	if v := b.value("#password"); v != "" {
		t.Errorf("the refused invitation form kept the password typed: %q", v)
	}
	b.do(chromedp.SendKeys(chromedp.CSS("#password"), "Sam's passphrase, long"), chromedp.SendKeys(chromedp.CSS("#confirm"), "Sam's passphrase, long"))
	b.click("form[action='/invitation'] button[type=submit]")
	if p := b.path(); p != "/webhooks" {
		t.Fatalf("after joining the browser is at %s; want /webhooks", p)
	}
	b.contains(".who-email", "sam@example.com")
	b.open("/account/members")
	b.contains("[data-user='sam@example.com']", "member", "(you)")
	b.contains("[data-user='zoe@example.com']", "owner")
	if n := b.count("form[action='/account/members']"); n != 0 {
		t.Errorf("a member sees %d invitation forms; want none", n)
	}
	if n := b.count("[data-invitation]"); n != 0 {
		t.Errorf("%d invitations pending after it was used; want none", n)
	}
	if n := b.count("form[action$='/role'], form[action$='/remove']"); n != 0 || strings.Contains(b.exact("main"), "Make") {
		t.Errorf("a member is offered %d of the owner's controls", n)
	}
	b.screenshot("accounts-3-member")
}
