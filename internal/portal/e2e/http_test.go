package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/ratelimit"
	"github.com/heraldhq/herald/internal/store"
)

// browser is a plain HTTP client with a cookie jar that does not follow
// redirects, so tests see each answer.
type browser struct {
	t    *testing.T
	h    *heraldtest.Herald
	c    *http.Client
	csrf string // the CSRF token of the last page read
}

func newBrowser(t *testing.T, h *heraldtest.Herald) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, h: h, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// do makes a request and returns the status, the Location and the body.
func (b *browser) do(method, path string, form url.Values, header ...string) (int, string, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.h.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, resp.Header.Get("Location"), string(data)
}

func (b *browser) get(path string) (int, string, string) { return b.do("GET", path, nil) }

// post sends a form with the CSRF token of the last page read.
func (b *browser) post(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	form.Set("csrf", b.csrf)
	return b.do("POST", path, form)
}

// submit posts a form as a browser does: a redirect is followed to the
// page it names, whose status, address and body are returned.
func (b *browser) submit(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	code, loc, body := b.post(path, form)
	if code != http.StatusSeeOther {
		return code, loc, body
	}
	code, _, body = b.get(loc)
	return code, loc, body
}

// signIn signs in through the form; a refusal is followed back to the
// sign-in page, which shows it.
func (b *browser) signIn(email, password string) (int, string, string) {
	b.t.Helper()
	b.get("/signin")
	code, loc, body := b.post("/signin", url.Values{"email": {email}, "password": {password}})
	if code == http.StatusSeeOther && strings.HasPrefix(loc, "/signin") {
		return b.get(loc)
	}
	return code, loc, body
}

func mustSignIn(t *testing.T, h *heraldtest.Herald) *browser {
	t.Helper()
	b := newBrowser(t, h)
	if code, loc, body := b.signIn(h.Email, h.Password); code != http.StatusSeeOther || loc != "/webhooks" {
		t.Fatalf("sign in: %d to %q; want 303 to /webhooks\n%s", code, loc, body)
	}
	b.get("/webhooks")
	return b
}

func TestWithoutSessionEveryPageRedirectsToSignIn(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("CRM", rcv.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10e9, "the event delivered", func() bool { return rcv.Count() == 1 && len(h.Logs("")) == 1 })
	logID := h.Logs("")[0].ID
	b := newBrowser(t, h)
	for _, p := range []string{"/", "/webhooks", "/webhooks/new", "/webhooks/" + hook.ID, "/webhooks/" + hook.ID + "/edit",
		"/webhooks/" + hook.ID + "/test", "/webhooks/" + hook.ID + "/signature", "/webhooks/" + hook.ID + "/delete", "/webhook-event-logs",
		"/webhook-event-logs?status=failed", "/webhook-event-logs/" + logID, "/account", "/account/api-tokens", "/no-such-page"} {
		code, loc, body := b.get(p)
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin") {
			t.Errorf("GET %s: %d to %q; want 303 to /signin", p, code, loc)
		}
		if strings.Contains(body, "CRM") || strings.Contains(body, rcv.URL) {
			t.Errorf("GET %s without a session shows the account's data: %s", p, body)
		}
	}
	if _, loc, _ := b.get("/webhooks/" + hook.ID + "?x=1"); loc != "/signin?next="+url.QueryEscape("/webhooks/"+hook.ID+"?x=1") {
		t.Errorf("redirect %q; want it to bring the owner back", loc)
	}
	for _, p := range []string{"/webhooks/new", "/webhooks/" + hook.ID + "/delete", "/webhooks/" + hook.ID + "/test",
		"/webhooks/" + hook.ID + "/token", "/webhooks/" + hook.ID + "/token/rotate", "/webhooks/" + hook.ID + "/token/rotate/finish",
		"/webhook-event-logs/" + logID + "/resend", "/account", "/account/api-tokens",
		"/account/api-tokens/" + hook.ID + "/revoke", "/signout"} {
		if code, loc, _ := b.do("POST", p, url.Values{"name": {"x"}}); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin?") {
			t.Errorf("POST %s: %d to %q; want 303 to /signin", p, code, loc)
		}
	}
	if got := h.Webhook(hook.ID); got.Name != "CRM" {
		t.Errorf("webhook changed without a session: %+v", got)
	}
	if n := rcv.Count(); n != 1 {
		t.Errorf("receiver got %d requests; want only the event's delivery", n)
	}
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})

	b := newBrowser(t, h)
	code, _, body := b.signIn(h.Email, "wrong password")
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "The email address or password is not right.") {
		t.Errorf("wrong password: %d; want 422 with the refusal\n%s", code, body)
	}
	if !strings.Contains(body, `value="`+h.Email+`"`) {
		t.Errorf("the email typed is lost after a refusal")
	}
	if code, loc, _ := b.get("/webhooks"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin") {
		t.Errorf("after a wrong password /webhooks answers %d to %q; want the sign-in page", code, loc)
	}
	if code, _, body := b.signIn("nobody@example.com", h.Password); code != http.StatusUnprocessableEntity || !strings.Contains(body, "is not right") {
		t.Errorf("unknown email: %d; want the same refusal", code)
	}
	if code, _, body := b.signIn("", ""); code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="email-error"`) || !strings.Contains(body, `id="password-error"`) {
		t.Errorf("empty form: %d; want errors next to both fields\n%s", code, body)
	}

	// The sign-in form has its own CSRF token.
	b.get("/signin")
	if code, _, _ := b.do("POST", "/signin", url.Values{"email": {h.Email}, "password": {h.Password}}); code != http.StatusForbidden {
		t.Errorf("sign-in without its token: %d; want 403", code)
	}

	// The right password signs in, to the page asked for, with a cookie
	// scripts cannot read.
	b.get("/signin?next=/account") // reads the form's token
	req, _ := http.NewRequest("POST", h.URL+"/signin", strings.NewReader(url.Values{"csrf": {b.csrf}, "email": {h.Email}, "password": {h.Password}, "next": {"/account"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/account" {
		t.Fatalf("sign in: %d to %q; want 303 to /account", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "herald_session" && c.Value != "" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Path != "/" || len(session.Value) < 43 {
		t.Fatalf("session cookie %+v; want HttpOnly, SameSite=Lax, 256 random bits", session)
	}
	if code, _, body := b.get("/account"); code != http.StatusOK || !strings.Contains(body, h.Email) {
		t.Errorf("signed in, /account answers %d", code)
	}
	// An open redirect through next is refused.
	b2 := newBrowser(t, h)
	b2.get("/signin?next=//evil.example/")
	if _, loc, _ := b2.post("/signin", url.Values{"email": {h.Email}, "password": {h.Password}, "next": {"//evil.example/"}}); loc != "/webhooks" {
		t.Errorf("next=//evil.example/ sent the owner to %q; want /webhooks", loc)
	}

	// Sign-out ends the session on the server, not only in the browser.
	b.get("/webhooks")
	if code, loc, _ := b.post("/signout", url.Values{}); code != http.StatusSeeOther || loc != "/signin" {
		t.Errorf("sign out: %d to %q", code, loc)
	}
	if _, _, body := b.get("/signin"); !strings.Contains(body, "You have signed out.") {
		t.Errorf("the sign-in page does not say the owner signed out")
	}
	if _, _, body := b.get("/signin"); strings.Contains(body, "You have signed out.") {
		t.Errorf("a refresh says again that the owner signed out")
	}
	replay := newBrowser(t, h)
	u, _ := url.Parse(h.URL)
	replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: "herald_session", Value: session.Value}})
	if code, _, _ := replay.get("/webhooks"); code != http.StatusSeeOther {
		t.Errorf("the signed-out session still opens /webhooks: %d", code)
	}
}

func TestSignInIsRateLimited(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := newBrowser(t, h)
	for range 10 {
		b.signIn(h.Email, "wrong")
	}
	code, _, body := b.signIn(h.Email, h.Password)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "Too many failed sign-ins") {
		t.Errorf("11th sign-in: %d; want 429 even with the right password", code)
	}
}

// signInFrom signs in through a proxy that says the browser is at addr.
func (b *browser) signInFrom(addr, email, password string) (int, string, string) {
	b.t.Helper()
	b.do("GET", "/signin", nil, "X-Forwarded-For", addr)
	code, loc, body := b.do("POST", "/signin", url.Values{"email": {email}, "password": {password}, "csrf": {b.csrf}}, "X-Forwarded-For", addr)
	if code == http.StatusSeeOther && strings.HasPrefix(loc, "/signin") {
		return b.do("GET", loc, nil, "X-Forwarded-For", addr)
	}
	return code, loc, body
}

// A stranger who knows the owner's email and fails to sign in from their own
// address is stopped there, even with the right password, but does not keep
// the owner, elsewhere, out.
func TestAStrangersFailuresDoNotLockTheOwnerOut(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{TrustedProxies: ratelimit.Proxies{netip.MustParsePrefix("127.0.0.0/8")}})
	stranger := newBrowser(t, h)
	for range 10 {
		stranger.signInFrom("203.0.113.66", h.Email, "guess")
	}
	if code, _, _ := stranger.signInFrom("203.0.113.66", h.Email, h.Password); code != http.StatusTooManyRequests {
		t.Errorf("the stranger's 11th attempt, right password: %d; want 429", code)
	}
	owner := newBrowser(t, h)
	code, loc, body := owner.signInFrom("198.51.100.20", h.Email, h.Password)
	if code != http.StatusSeeOther || loc != "/webhooks" {
		t.Fatalf("the owner, from another address: %d to %q; want 303 to /webhooks\n%s", code, loc, body)
	}
	u, _ := url.Parse(h.URL)
	known := false
	for _, c := range owner.c.Jar.Cookies(u) {
		known = known || (c.Name == "herald_known" && c.Value != "")
	}
	if !known {
		t.Error("a successful sign-in did not mark the browser as known, so the email's limit would apply to it")
	}
}

func TestFormWithoutCSRFTokenIsRefused(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("CRM", rcv.URL, "license.created")
	b := mustSignIn(t, h)

	form := url.Values{"name": {"Changed"}, "url": {rcv.URL}, "events": {"license.created"}, "enabled": {"on"}}
	for _, c := range []struct {
		name   string
		token  string
		header []string
	}{
		{"no token", "", nil},
		{"wrong token", strings.Repeat("A", 43), nil},
		{"right token from another site", b.csrf, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		if c.token != "" {
			f.Set("csrf", c.token)
		}
		code, _, body := b.do("POST", "/webhooks/"+hook.ID+"/edit", f, c.header...)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d; want 403", c.name, code)
		}
		if !strings.Contains(body, "refused") {
			t.Errorf("%s: the page does not say the form was refused:\n%s", c.name, body)
		}
	}
	if code, _, _ := b.do("POST", "/webhooks/"+hook.ID+"/delete", url.Values{}); code != http.StatusForbidden {
		t.Errorf("delete without token: %d; want 403", code)
	}
	if code, _, _ := b.do("POST", "/webhooks/"+hook.ID+"/test", url.Values{"event": {"license.created"}}); code != http.StatusForbidden {
		t.Errorf("test without token: %d; want 403", code)
	}
	if code, _, _ := b.do("POST", "/webhooks/"+hook.ID+"/recover", url.Values{}); code != http.StatusForbidden {
		t.Errorf("recover without token: %d; want 403", code)
	}
	if got := h.Webhook(hook.ID); got.Name != "CRM" {
		t.Errorf("a refused form changed the webhook: %+v", got)
	}
	if rcv.Count() != 0 {
		t.Errorf("a refused Test sent %d requests", rcv.Count())
	}
	// With the token, the same form goes through.
	if code, loc, body := b.post("/webhooks/"+hook.ID+"/edit", form); code != http.StatusSeeOther {
		t.Fatalf("with the token: %d %q\n%s", code, loc, body)
	}
	if got := h.Webhook(hook.ID); got.Name != "Changed" {
		t.Errorf("name %q; want Changed", got.Name)
	}
}

func TestValidationErrorsStayNextToTheirFieldsWithTheValues(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/webhooks/new")
	code, _, body := b.submit("/webhooks/new", url.Values{"name": {"Billing é"}, "url": {"ftp://example.com/x"},
		"token": {"short"}, "enabled": {"on"}})
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid form: %d; want 422", code)
	}
	for _, want := range []string{
		`id="url-error"><span aria-hidden="true">⚠ </span>URL must use http or https.</p>`,
		`id="token-error"><span aria-hidden="true">⚠ </span>Token must be 16 to 256 characters.</p>`,
		`id="events-error"><span aria-hidden="true">⚠ </span>Events must name at least one event kind.</p>`,
		`value="Billing é"`, `value="ftp://example.com/x"`, `value="short"`, `id="enabled" name="enabled" checked`,
		`aria-invalid="true"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(body, `id="name-error"`) {
		t.Errorf("name is valid but shows an error")
	}
	// A second try keeps chosen events checked while other fields are wrong.
	_, _, body = b.submit("/webhooks/new", url.Values{"name": {""}, "url": {"https://example.com/h"}, "events": {"license.renewed", "license.deleted"}})
	for _, want := range []string{`id="name-error"`, `value="license.renewed" checked`, `value="license.deleted" checked`, `value="license.created">`} {
		if !strings.Contains(body, want) {
			t.Errorf("second try lacks %s", want)
		}
	}
	var list struct{ Data []any }
	h.Must(200, "GET", "/v3/webhooks", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("invalid forms created %d webhooks", len(list.Data))
	}

	b.get("/account")
	code, _, body = b.submit("/account", url.Values{"name": {"Acme"}, "notificationEmail": {"not an email"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="notificationEmail-error"`) || !strings.Contains(body, `value="not an email"`) {
		t.Errorf("account form: %d; want the error beside the email and the value kept\n%s", code, body)
	}
	if code, loc, _ := b.post("/account", url.Values{"name": {"Acme"}, "notificationEmail": {"ops@example.com"}}); code != http.StatusSeeOther || loc != "/account" {
		t.Errorf("account save: %d to %q", code, loc)
	}
	var acct struct {
		NotificationEmail       string
		ExpiringSoonLeadSeconds int64
	}
	h.Must(200, "GET", "/v3/account", nil, &acct)
	if acct.NotificationEmail != "ops@example.com" || acct.ExpiringSoonLeadSeconds != 604800 {
		t.Errorf("account %+v; want ops@example.com and the lead time kept at 604800 by a form without it", acct)
	}
	// The lead time, in hours: shown, refused out of range (nothing saved), saved.
	if _, _, body := b.get("/account"); !strings.Contains(body, `name="expiringSoonLeadHours"`) || !strings.Contains(body, `value="168"`) {
		t.Errorf("settings page lacks the lead time field showing 168 hours")
	}
	for _, bad := range []string{"0.5", "2161", "soon", ""} {
		code, _, body := b.submit("/account", url.Values{"name": {"Acme"}, "notificationEmail": {"ops@example.com"}, "expiringSoonLeadHours": {bad}})
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="expiringSoonLeadHours-error"`) {
			t.Errorf("lead time %q: %d; want 422 with the error beside the field", bad, code)
		}
	}
	if code, loc, _ := b.post("/account", url.Values{"name": {"Acme"}, "notificationEmail": {"ops@example.com"}, "expiringSoonLeadHours": {"1.5"}}); code != http.StatusSeeOther || loc != "/account" {
		t.Errorf("lead time save: %d to %q", code, loc)
	}
	h.Must(200, "GET", "/v3/account", nil, &acct)
	if acct.ExpiringSoonLeadSeconds != 5400 {
		t.Errorf("lead time %d s; want 1.5 hours, 5400", acct.ExpiringSoonLeadSeconds)
	}
}

func TestAnotherAccountsWebhooksAndLogsAreNotFound(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	rcv := heraldtest.NewReceiver(t)
	hook := h.CreateWebhook("Mine", rcv.URL, "license.created")
	h.CreateLicense(nil)
	heraldtest.Eventually(t, 10e9, "a log", func() bool { return len(h.Logs("")) == 1 })
	logID := h.Logs("")[0].ID

	hash, _ := auth.HashPassword("other password")
	if _, err := h.Server.Store.CreateAccount(context.Background(), store.Bootstrap{AccountName: "B", OwnerEmail: "b@example.com",
		PasswordHash: hash, TokenHash: auth.HashToken(auth.NewAPIToken())}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, h)
	if code, _, _ := b.signIn("b@example.com", "other password"); code != http.StatusSeeOther {
		t.Fatalf("sign in as B: %d", code)
	}
	_, _, body := b.get("/webhooks")
	if strings.Contains(body, "Mine") {
		t.Errorf("B's list shows A's webhook")
	}
	for _, p := range []string{"/webhooks/" + hook.ID, "/webhooks/" + hook.ID + "/edit", "/webhooks/" + hook.ID + "/test", "/webhook-event-logs/" + logID} {
		if code, _, _ := b.get(p); code != http.StatusNotFound {
			t.Errorf("B: GET %s = %d; want 404", p, code)
		}
	}
	for _, p := range []string{"/webhooks/" + hook.ID + "/delete", "/webhooks/" + hook.ID + "/enabled", "/webhook-event-logs/" + logID + "/resend", "/webhooks/" + hook.ID + "/token",
		"/webhooks/" + hook.ID + "/token/rotate", "/webhooks/" + hook.ID + "/token/rotate/finish", "/webhooks/" + hook.ID + "/recover"} {
		if code, _, _ := b.post(p, url.Values{"enabled": {"false"}, "overlap": {"3600"}}); code != http.StatusNotFound {
			t.Errorf("B: POST %s = %d; want 404", p, code)
		}
	}
	if _, _, body := b.get("/webhook-event-logs?webhook=" + hook.ID); strings.Contains(body, logID) || strings.Contains(body, "Mine") {
		t.Errorf("B's log list, filtered by A's webhook, shows A's log or its name")
	}
	if _, _, body := b.get("/webhook-event-logs?webhook_name=Mine"); strings.Contains(body, logID) {
		t.Errorf("B's log list, searched by A's webhook's name, shows A's log")
	}
	if _, _, body := b.get("/webhooks?q=Mine"); strings.Contains(body, hook.ID) || countText(body) != "0 of 0 webhooks match" {
		t.Errorf("B's webhook search finds A's webhook (count %q)", countText(body))
	}
	if w := h.Webhook(hook.ID); w.Name != "Mine" || !w.Enabled {
		t.Errorf("A's webhook changed: %+v", w)
	}
	if w, err := h.API.Webhook(context.Background(), hook.ID); err != nil || w.TokenRotation != nil {
		t.Errorf("A's webhook after B's rotation: %+v, %v; want no rotation", w.TokenRotation, err)
	}
}

func TestSecurityHeadersAndStaticCaching(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	resp, err := http.Get(h.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for k, want := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"X-Frame-Options":        "DENY",
		"Cache-Control":          "no-store",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q; want %q", k, got, want)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if regexp.MustCompile(`<script>|\sstyle="|\son[a-z]+="`).Match(page) {
		t.Errorf("the page has inline script or style, which the CSP forbids")
	}
	assets := regexp.MustCompile(`/static/[a-z]+\.[0-9a-f]{10}\.(css|js|svg)`).FindAllString(string(page), -1)
	if len(assets) < 3 {
		t.Fatalf("checksummed assets %v; want css, js and icon", assets)
	}
	for _, a := range assets {
		resp, err := http.Get(h.URL + a)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: %d, Cache-Control %q; want 200, immutable", a, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	if resp, err := http.Get(h.URL + "/static/app.0000000000.css"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("unknown asset: %d; want 404", resp.StatusCode)
		}
	}
	// The API and the health checks are not the portal's.
	if resp, err := http.Get(h.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	}
	if code := h.DoAs("", "GET", "/v3/webhooks", nil, nil); code != 401 {
		t.Errorf("/v3/webhooks without a token: %d; want the API's 401", code)
	}
}

func TestCookiesOverTLSAreSecureAndHostOnly(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	serve := func(req *http.Request) *http.Response {
		rec := httptest.NewRecorder()
		h.Server.Handler().ServeHTTP(rec, req) // an https:// target marks the request as arrived over TLS
		return rec.Result()
	}
	resp := serve(httptest.NewRequest("GET", "https://herald.example/signin", nil))
	page, _ := io.ReadAll(resp.Body)
	signin := findCookie(resp, "__Host-herald_signin")
	if signin == nil || !signin.Secure || !signin.HttpOnly || signin.Path != "/" {
		t.Fatalf("sign-in cookie over TLS %+v; want __Host-, Secure, HttpOnly", signin)
	}
	token := csrfField.FindSubmatch(page)[1]
	req := httptest.NewRequest("POST", "https://herald.example/signin", strings.NewReader(url.Values{
		"csrf": {string(token)}, "email": {h.Email}, "password": {h.Password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(signin)
	resp = serve(req)
	session := findCookie(resp, "__Host-herald_session")
	if resp.StatusCode != http.StatusSeeOther || session == nil || !session.Secure || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("sign in over TLS: %d, session cookie %+v; want Secure, HttpOnly, SameSite=Lax", resp.StatusCode, session)
	}
	req = httptest.NewRequest("GET", "https://herald.example/webhooks", nil)
	req.AddCookie(session)
	if resp := serve(req); resp.StatusCode != http.StatusOK {
		t.Errorf("signed in over TLS, /webhooks answers %d", resp.StatusCode)
	}
}

func findCookie(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name && c.Value != "" {
			return c
		}
	}
	return nil
}
