package portal_test

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
	if p := b.path(); p != "/account?done=password" {
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
	if code := b.click("form[action='/account/members'] button[type=submit]"); code != 201 {
		t.Errorf("invite: %d; want 201", code)
	}
	invite := html.UnescapeString(b.text("#invite-link"))
	b.contains("[data-invitation='sam@example.com']", "member")
	b.screenshot("accounts-2-invited")
	b.click("form[action='/signout'] button")

	// The colleague joins with a password of their own.
	iu, err := url.Parse(invite)
	if err != nil || iu.Path != "/invitation" {
		t.Fatalf("invitation link %q", invite)
	}
	b.open(iu.RequestURI())
	b.contains("main", "sam@example.com")
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
	if strings.Contains(b.exact("main"), "Make owner") {
		t.Error("a member is offered the owner's controls")
	}
	b.screenshot("accounts-3-member")
}
