package e2e_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/internal/heraldtest"
)

const operatorToken = "operator-token-0123456789abcdef0123456789"

var inviteLink = regexp.MustCompile(`id="invite-link">([^<]+)<`)

// TestPasswordChange: Settings → Change password needs the current
// password and a good new one (each error beside its field, nothing
// changed); a change keeps this browser signed in, signs every other
// browser of the user out, and only the new password signs in.
func TestPasswordChange(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testPasswordChange)
}

func testPasswordChange(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db})
	b, phone := mustSignIn(t, h), mustSignIn(t, h)
	if code, _, body := b.get("/account/password"); code != http.StatusOK || !strings.Contains(body, `name="current"`) {
		t.Fatalf("GET /account/password: %d\n%s", code, body)
	}
	const next = "a much better passphrase ✓"
	for _, c := range []struct {
		form  url.Values
		field string
		code  int
	}{
		{url.Values{"current": {""}, "password": {next}, "confirm": {next}}, "current", 422},
		{url.Values{"current": {h.Password}, "password": {"short"}, "confirm": {"short"}}, "password", 422},
		{url.Values{"current": {h.Password}, "password": {next}, "confirm": {next + "!"}}, "confirm", 422},
		{url.Values{"current": {"not my password"}, "password": {next}, "confirm": {next}}, "current", 422},
	} {
		b.get("/account/password")
		code, loc, body := b.submit("/account/password", c.form)
		if loc != "/account/password" || code != c.code || !strings.Contains(body, `id="`+c.field+`-error"`) {
			t.Errorf("%v: %d at %q; want %d back on the form with an error beside %s\n%s", c.form, code, loc, c.code, c.field, body)
		}
		for _, k := range []string{"current", "password", "confirm"} {
			if v := c.form.Get(k); v != "" && strings.Contains(body, `value="`+v+`"`) {
				t.Errorf("%v: the refused form shows the %s typed", c.form, k)
			}
		}
	}
	if code, _, _ := phone.get("/webhooks"); code != http.StatusOK {
		t.Fatalf("after refused changes the other browser is signed out: %d", code)
	}
	b.get("/account/password")
	code, loc, _ := b.post("/account/password", url.Values{"current": {h.Password}, "password": {next}, "confirm": {next}})
	if code != http.StatusSeeOther || loc != "/account" {
		t.Fatalf("change: %d to %q; want 303 to /account", code, loc)
	}
	if code, _, body := b.get("/account"); code != http.StatusOK || !strings.Contains(body, "Password changed") {
		t.Errorf("this browser after the change: %d; want still signed in, told it is done (its flash survives the change)", code)
	}
	if _, _, body := b.get("/account"); strings.Contains(body, "Password changed") {
		t.Error("a refresh says again that the password changed")
	}
	if code, loc, _ := phone.get("/webhooks"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin") {
		t.Errorf("the other browser after the change: %d to %q; want sent to sign in", code, loc)
	}
	if code, _, _ := newBrowser(t, h).signIn(h.Email, h.Password); code == http.StatusSeeOther {
		t.Error("the old password still signs in")
	}
	if code, loc, _ := newBrowser(t, h).signIn(h.Email, next); code != http.StatusSeeOther || loc != "/webhooks" {
		t.Errorf("the new password: %d to %q; want signed in", code, loc)
	}
}

// TestPeopleAndInvitations: an owner invites by email with a role; the link
// (shown once) lets the person choose a password and sign in as a member,
// once; members use the portal but manage no one; the last owner can be
// neither removed nor made a member; another account's people are not
// found.
func TestPeopleAndInvitations(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testPeopleAndInvitations)
}

func testPeopleAndInvitations(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, OperatorToken: operatorToken})
	owner := mustSignIn(t, h)
	for _, c := range []struct {
		form  url.Values
		field string
		code  int
	}{
		{url.Values{"email": {"not an address"}, "role": {"member"}}, "email", 422},
		{url.Values{"email": {"m@example.com"}, "role": {"admin"}}, "role", 422},
		{url.Values{"email": {h.Email}, "role": {"member"}}, "email", 409},
	} {
		owner.get("/account/members")
		code, loc, body := owner.submit("/account/members", c.form)
		if loc != "/account/members" || code != c.code || !strings.Contains(body, `id="`+c.field+`-error"`) || !strings.Contains(body, `value="`+html.EscapeString(c.form.Get("email"))+`"`) {
			t.Errorf("invite %v: %d at %q; want %d back on the page with an error beside %s and the email kept", c.form, code, loc, c.code, c.field)
		}
	}
	owner.get("/account/members")
	code, loc, body := owner.submit("/account/members", url.Values{"email": {"m@example.com"}, "role": {"member"}})
	m := inviteLink.FindStringSubmatch(body)
	if loc != "/account/members" || code != http.StatusOK || m == nil || strings.Count(body, "data-invitation=") != 1 {
		t.Fatalf("invite: %d at %q; want a redirect to the people page showing the link and one pending invitation\n%s", code, loc, body)
	}
	link, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || link.Path != "/invitation" || !strings.HasPrefix(m[1], h.URL) {
		t.Fatalf("invitation link %q; want %s/invitation?token=…", m[1], h.URL)
	}
	if _, _, body := owner.get("/account/members"); strings.Contains(body, link.Query().Get("token")) {
		t.Error("the people page shows the invitation's secret again")
	}
	if code, _, _ := owner.get(loc); code != http.StatusOK {
		t.Errorf("the people page refreshed: %d; want 200", code)
	}

	member := newBrowser(t, h)
	if code, _, body := member.get(link.RequestURI()); code != http.StatusOK || !strings.Contains(body, "m@example.com") {
		t.Fatalf("the invitation page: %d\n%s", code, body)
	}
	form := url.Values{"token": {link.Query().Get("token")}, "password": {"short"}, "confirm": {"short"}}
	if code, loc, body := member.submit("/invitation", form); code != 422 || loc != link.RequestURI() || !strings.Contains(body, `id="password-error"`) || !strings.Contains(body, "m@example.com") {
		t.Errorf("a short password: %d at %q; want 422 back on the invitation beside the password", code, loc)
	}
	if code, _, body := member.get(link.RequestURI()); code != http.StatusOK || strings.Contains(body, `id="password-error"`) {
		t.Errorf("the invitation refreshed: %d; want 200 without the error", code)
	}
	form.Set("password", "the member's own passphrase")
	form.Set("confirm", "the member's own passphrase")
	if code, loc, body := member.post("/invitation", form); code != http.StatusSeeOther || loc != "/webhooks" {
		t.Fatalf("accept: %d to %q\n%s", code, loc, body)
	}
	if code, _, _ := newBrowser(t, h).get(link.RequestURI()); code != http.StatusNotFound {
		t.Errorf("the invitation opened again: %d; want 404 (single use)", code)
	}
	again := newBrowser(t, h)
	again.get("/signin")
	if code, loc, body := again.submit("/invitation", form); code != http.StatusNotFound || loc != "/signin" || !strings.Contains(body, "has been used or has expired") {
		t.Errorf("the invitation's form sent again: %d at %q; want the sign-in page saying the link is gone (404)", code, loc)
	}
	if code, loc, _ := newBrowser(t, h).signIn("m@example.com", "the member's own passphrase"); code != http.StatusSeeOther || loc != "/webhooks" {
		t.Errorf("the member signs in with their password: %d to %q", code, loc)
	}

	// A member uses the portal and manages no one.
	code, _, body = member.get("/account/members")
	if code != http.StatusOK || !strings.Contains(body, "m@example.com (you)") || strings.Contains(body, `action="/account/members"`) {
		t.Errorf("a member's people page: %d; want the list without the invitation form\n%s", code, body)
	}
	if code, _, _ := member.get("/webhooks"); code != http.StatusOK {
		t.Errorf("a member's webhooks: %d", code)
	}
	if code, _, _ := member.post("/account/members", url.Values{"email": {"x@example.com"}, "role": {"owner"}}); code != http.StatusForbidden {
		t.Errorf("a member invites: %d; want 403", code)
	}

	ids := userIDs(t, owner)
	for _, c := range []struct {
		name, path string
		form       url.Values
		code       int
		says       string
	}{
		{"the last owner made a member", "/account/members/" + ids[h.Email] + "/role", url.Values{"role": {"member"}}, http.StatusConflict, "keeps at least one owner"},
		{"the last owner removed", "/account/members/" + ids[h.Email] + "/remove", url.Values{}, http.StatusConflict, "keeps at least one owner"},
		{"a role that is none", "/account/members/" + ids["m@example.com"] + "/role", url.Values{"role": {"admin"}}, http.StatusUnprocessableEntity, "A role is owner or member"},
		{"a member made an owner", "/account/members/" + ids["m@example.com"] + "/role", url.Values{"role": {"owner"}}, http.StatusOK, "Role changed."},
		{"the first owner made a member", "/account/members/" + ids[h.Email] + "/role", url.Values{"role": {"member"}}, http.StatusOK, "Role changed."},
	} {
		code, loc, body := owner.submit(c.path, c.form)
		if code != c.code || loc != "/account/members" || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d at %q; want %d on the people page saying %q\n%s", c.name, code, loc, c.code, c.says, body)
		}
	}
	if code, _, _ := owner.post("/account/members", url.Values{"email": {"y@example.com"}, "role": {"member"}}); code != http.StatusForbidden {
		t.Errorf("the first owner, a member now, invites: %d; want 403 (roles are read at each request)", code)
	}

	// Another account's owner finds none of these people.
	b, err := client.New(h.URL, operatorToken, nil).CreateAccount(context.Background(), client.AccountCreate{Name: "B", OwnerEmail: "b@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	other := newBrowser(t, h)
	if code, _, _ := other.signIn("b@example.com", b.OwnerPassword); code != http.StatusSeeOther {
		t.Fatalf("B signs in with the password its creation answered: %d", code)
	}
	if _, _, body := other.get("/account/members"); strings.Contains(body, "m@example.com") {
		t.Error("B's people page lists A's member")
	}
	for _, path := range []string{"/account/members/" + ids["m@example.com"] + "/remove", "/account/members/" + ids[h.Email] + "/role"} {
		if code, _, _ := other.post(path, url.Values{"role": {"owner"}}); code != http.StatusNotFound {
			t.Errorf("B: POST %s = %d; want 404", path, code)
		}
	}
	member.get("/account/members")
	if code, _, body := member.submit("/account/members/"+ids[h.Email]+"/remove", url.Values{}); code != http.StatusOK || !strings.Contains(body, "Removed from the account") {
		t.Errorf("A's owner removes the former first owner: %d; want the people page saying so", code)
	}
	if code, _, _ := owner.get("/webhooks"); code != http.StatusSeeOther {
		t.Errorf("a removed user's browser: %d; want sent to sign in", code)
	}
}

var userRow = regexp.MustCompile(`<tr data-user="([^"]+)">[\s\S]*?/account/members/([0-9a-f-]{36})/role`)

// userIDs reads each person's id, by email, from the owner's people page.
func userIDs(t *testing.T, b *browser) map[string]string {
	t.Helper()
	_, _, body := b.get("/account/members")
	ids := map[string]string{}
	for _, m := range userRow.FindAllStringSubmatch(body, -1) {
		ids[m[1]] = m[2]
	}
	if len(ids) == 0 {
		t.Fatalf("no people on the page\n%s", body)
	}
	return ids
}

// TestPortalLink: an operator's portal link opens a page that changes
// nothing (a link preview does not spend it); its button signs in to that
// account, once.
func TestPortalLink(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, testPortalLink)
}

func testPortalLink(t *testing.T, db string) {
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, OperatorToken: operatorToken})
	op := client.New(h.URL, operatorToken, nil)
	ctx := context.Background()
	acct, err := op.CreateAccount(ctx, client.AccountCreate{Name: "Linked", OwnerEmail: "linked@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := op.CreatePortalLink(ctx, acct.Account.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(l.URL)
	b := newBrowser(t, h)
	for range 2 { // a preview, then the person
		if code, _, body := b.get(u.RequestURI()); code != http.StatusOK || !strings.Contains(body, "Continue to herald") {
			t.Fatalf("the link's page: %d\n%s", code, body)
		}
	}
	if code, loc, body := b.submit("/signin/link", url.Values{"token": {"not-the-token"}}); code != http.StatusNotFound || loc != "/signin" || !strings.Contains(body, "has been used or has expired") {
		t.Errorf("a wrong token: %d at %q; want the sign-in page saying the link is gone (404)", code, loc)
	}
	b.get(u.RequestURI())
	if code, loc, body := b.post("/signin/link", url.Values{"token": {u.Query().Get("token")}}); code != http.StatusSeeOther || loc != "/webhooks" {
		t.Fatalf("continue: %d to %q\n%s", code, loc, body)
	}
	if _, _, body := b.get("/account"); !strings.Contains(body, "linked@example.com") || !strings.Contains(body, `value="Linked"`) {
		t.Errorf("signed in to another account than the link's\n%s", body)
	}
	if code, _, _ := newBrowser(t, h).get(u.RequestURI()); code != http.StatusNotFound {
		t.Errorf("the link after use: %d; want 404", code)
	}
}

// TestPeopleFormsActOnceAndSurviveAnEndedSession: the invitation form
// posted three times at once makes one invitation and every post lands on
// the people page, whose link shows once; sent again later it says it was
// already sent. A form sent after the session ended is not acted on: after
// sign-in the invitation form has its email and role back, the password
// form none of the passwords typed.
func TestPeopleFormsActOnceAndSurviveAnEndedSession(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	_, _, page := b.get("/account/members")
	form := with(formFields(t, page, "/account/members"), url.Values{"email": {"twice@example.com"}, "role": {"member"}})
	for _, loc := range postAll(t, b, []string{h.URL}, "/account/members", form, 3) {
		if loc != "/account/members" {
			t.Errorf("a post of the invitation form went to %q; want /account/members", loc)
		}
	}
	_, _, body := b.get("/account/members")
	if strings.Count(body, "data-invitation=") != 1 || len(inviteLink.FindAllString(body, -1)) != 1 {
		t.Errorf("three posts of one form: %d invitations, %d links shown; want one of each\n%s",
			strings.Count(body, "data-invitation="), len(inviteLink.FindAllString(body, -1)), body)
	}
	if _, _, body := b.get("/account/members"); inviteLink.MatchString(body) {
		t.Error("a refresh shows the invitation's link again")
	}
	if _, _, body := b.submit("/account/members", form); !strings.Contains(body, "already been sent") || strings.Count(body, "data-invitation=") != 1 {
		t.Errorf("the form sent again later: want it refused as already sent, still one invitation\n%s", body)
	}

	_, _, page = b.get("/account/members")
	hidden := formFields(t, page, "/account/members")
	endSession(t, h, b)
	code, loc, _ := b.post("/account/members", with(hidden, url.Values{"email": {"late@example.com"}, "role": {"owner"}}))
	if code != http.StatusSeeOther || loc != "/signin?next="+url.QueryEscape("/account/members") {
		t.Fatalf("the invitation form after the session ended: %d to %q", code, loc)
	}
	b.get(loc)
	b.post("/signin", url.Values{"email": {h.Email}, "password": {h.Password}, "next": {"/account/members"}})
	_, _, body = b.get("/account/members")
	for _, want := range []string{"nothing was changed", `value="late@example.com"`, `value="owner" selected`} {
		if !strings.Contains(body, want) {
			t.Errorf("the people page after sign-in lacks %s", want)
		}
	}
	if strings.Contains(body, `data-invitation="late@example.com"`) {
		t.Error("the invitation sent after the session ended was acted on")
	}

	_, _, page = b.get("/account/password")
	hidden = formFields(t, page, "/account/password")
	endSession(t, h, b)
	const typed = "a new passphrase typed late"
	_, loc, _ = b.post("/account/password", with(hidden, url.Values{"current": {h.Password}, "password": {typed}, "confirm": {typed}}))
	b.get(loc)
	b.post("/signin", url.Values{"email": {h.Email}, "password": {h.Password}, "next": {"/account/password"}})
	_, _, body = b.get("/account/password")
	if !strings.Contains(body, "nothing was done") || strings.Contains(body, typed) || strings.Contains(body, `value="`+h.Password+`"`) {
		t.Errorf("the password form after sign-in: want a note that nothing was done and no password typed\n%s", body)
	}
	if code, _, _ := newBrowser(t, h).signIn(h.Email, h.Password); code != http.StatusSeeOther {
		t.Error("the password change sent after the session ended was acted on")
	}
}

// A person who leaves takes their API tokens with them: a member makes a
// write token in the portal and another through the API with it; the
// owner's token list names who made each; removing the member says it
// revoked the two, and both answer 401 from then on, while the owner's
// token still works.
func TestRemovingAPersonRevokesTheTokensTheyMade(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	owner := mustSignIn(t, h)
	owner.get("/account/members")
	_, _, body := owner.submit("/account/members", url.Values{"email": {"m@example.com"}, "role": {"member"}})
	m := inviteLink.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no invitation link\n%s", body)
	}
	link, _ := url.Parse(html.UnescapeString(m[1]))
	member := newBrowser(t, h)
	member.get(link.RequestURI())
	const password = "the member's own passphrase"
	if code, loc, _ := member.post("/invitation", url.Values{"token": {link.Query().Get("token")}, "password": {password}, "confirm": {password}}); code != http.StatusSeeOther || loc != "/webhooks" {
		t.Fatalf("accept: %d to %q", code, loc)
	}
	member.get("/account/api-tokens")
	_, _, body = member.submit("/account/api-tokens", url.Values{"name": {"member's"}, "scope": {"write"}, "expires": {""}})
	tm := newTokenValue.FindStringSubmatch(body)
	if tm == nil {
		t.Fatalf("the member's token was not shown\n%s", body)
	}
	viaPortal := tm[1]
	made, err := client.New(h.URL, viaPortal, nil).CreateAPIToken(context.Background(), client.APITokenCreate{Name: "made with it", Scope: "read"})
	if err != nil {
		t.Fatal(err)
	}
	viaAPI := made.Secret

	list, err := h.API.ListAPITokens(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	makers := map[string]string{}
	for _, tok := range list.Data {
		if tok.CreatedBy != nil {
			makers[tok.Name] = tok.CreatedBy.Email
		}
	}
	if makers["member's"] != "m@example.com" || makers["made with it"] != "m@example.com" || makers["First token"] != h.Email {
		t.Errorf("the tokens' makers %v; want the member's two and the owner's first", makers)
	}
	if _, _, body := owner.get("/account/api-tokens"); !strings.Contains(body, `data-label="Made by">m@example.com<`) {
		t.Errorf("the portal's token list does not say the member made theirs\n%s", body)
	}

	ids := userIDs(t, owner)
	code, _, body := owner.submit("/account/members/"+ids["m@example.com"]+"/remove", url.Values{})
	if code != http.StatusOK || !strings.Contains(body, "The 2 API tokens they made are revoked.") {
		t.Errorf("removing the member: %d; want the people page saying their 2 tokens are revoked\n%s", code, body)
	}
	for what, tok := range map[string]string{"made in the portal": viaPortal, "made through the API": viaAPI} {
		if got := h.DoAs(tok, "GET", "/v3/api-tokens", nil, nil); got != http.StatusUnauthorized {
			t.Errorf("the removed member's token %s: %d; want 401", what, got)
		}
	}
	if got := h.Do("GET", "/v3/api-tokens", nil, nil); got != http.StatusOK {
		t.Errorf("the owner's token after the member left: %d; want 200", got)
	}
}
