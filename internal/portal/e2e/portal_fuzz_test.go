package e2e_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/server"
	"github.com/heraldhq/herald/internal/store"
)

// fuzzForms are the portal's form posts; {hook} is a webhook that exists,
// {loopback} one whose Test the guard refuses at connect time.
var fuzzForms = []string{
	"/signin",
	"/webhooks/new",
	"/webhooks/{hook}/edit",
	"/account",
	"/webhooks/{loopback}/test",
	"/webhooks/{loopback}/enabled",
	"/webhooks/{hook}/token",
	"/webhooks/{hook}/signature",
}

// FuzzPortalForm posts any urlencoded body to the form its first byte picks,
// signed in and with a valid CSRF token (the sign-in form with its own), and
// wants every answer below 500.
func FuzzPortalForm(f *testing.F) {
	p := openFuzzPortal(f)
	for form, bodies := range [][]string{
		{"email=owner%40example.com&password=correct+horse+battery+staple", "email=owner%40example.com&password=wrong",
			"email=a%00b%40example.com&password=x", "email=&password=", "next=%2F%2Fevil.example&email=x&password=y", "email=%ff%fe&password=%00"},
		{"name=CRM&url=https%3A%2F%2Fexample.com%2Fhooks&events=license.created&enabled=on",
			"name=CRM&url=http%3A%2F%2F169.254.169.254%2F&events=license.created&events=license.created&token=short",
			"name=&url=&events=nope", "name=%ff&url=https%3A%2F%2Fexample.com%2F%ff&events=license.created&token=%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff",
			"name=a%00b&url=https%3A%2F%2Fexample.com%2F&events=license.created&token=" + strings.Repeat("t", 300)},
		{"name=renamed&url=https%3A%2F%2Fexample.com%2Fhooks&events=license.created&events=product.created&enabled=on",
			"name=%e2%80%a8&url=ftp%3A%2F%2Fx&token="},
		{"name=Acme&notificationEmail=ops%40example.com", "name=&notificationEmail=not+an+email", "name=%00&notificationEmail=a%00%40b.c", "name=%ff&notificationEmail=%ff%40example.com"},
		{"event=license.renewed&checkVerification=on", "event=nope", "event=", ""},
		{"enabled=true", "enabled=false", "enabled=maybe&next=%2Fwebhooks", "enabled=on&next=https%3A%2F%2Fevil.example%2F"},
		{"", "password=x"},
		{"body=%7B%22a%22%3A%22Zo%C3%AB%22%7D&signature=abc", "body=%ff%fe&encoding=text&lineEndings=crlf&signature=sha256%3D00",
			"body=%0D%0A&encoding=base64", "body=%7B%7D&encoding=nope&lineEndings=nope&signature=%00",
			// Nested past the limit and at it, and one wide object.
			"body=" + strings.Repeat("%5B", 2000) + strings.Repeat("%5D", 2000) + "&signature=abc",
			"body=" + strings.Repeat("%5B", 64) + strings.Repeat("%5D", 64) + "&signature=abc",
			"body=%7B" + strings.Repeat("%22k%22%3A0%2C", 1000) + "%22k%22%3A0%7D&signature=abc"},
	} {
		for _, b := range bodies {
			f.Add(uint8(form), b)
		}
	}
	for form := range fuzzForms {
		for _, b := range []string{"", "&&&", "=", "%", "%zz", "a=%", "a;b=c", "csrf=other", "\x00", "\xff",
			strings.Repeat("a=b&", 2000), "name=" + strings.Repeat("%41", 5000),
			// A one-time form token: well formed, and one holding a NUL.
			"form=" + strings.Repeat("A", 43) + "&page=/webhooks", "form=" + strings.Repeat("A", 42) + "%00"} {
			f.Add(uint8(form), b)
		}
	}
	f.Fuzz(func(t *testing.T, form uint8, body string) {
		path := p.ids.Replace(fuzzForms[int(form)%len(fuzzForms)])
		token, cookie := p.csrf, p.session
		if path == "/signin" {
			token, cookie = p.signInCSRF, p.signInCookie
		}
		// The real token comes first, and Get reads the first value.
		req := httptest.NewRequest("POST", path, strings.NewReader("csrf="+token+"&"+body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		p.handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %s with %q: %d\nlog:\n%s", path, body, rec.Code, p.log)
		}
	})
}

type fuzzPortal struct {
	handler               http.Handler
	ids                   *strings.Replacer
	log                   *heraldtest.Output
	session, signInCookie *http.Cookie
	csrf, signInCSRF      string
}

// openFuzzPortal opens one herald for a whole fuzz run (on SQLite unless
// heraldtest.FuzzEngineEnv says postgres), with the outbound guard on and no
// dispatcher running, and signs its owner in once.
func openFuzzPortal(f *testing.F) *fuzzPortal {
	f.Helper()
	const email, password = "owner@example.com", "correct horse battery staple"
	key := make([]byte, 32)
	rand.Read(key)
	token := auth.NewAPIToken()
	p := &fuzzPortal{log: &heraldtest.Output{}}
	srv, err := server.Open(context.Background(), server.Config{
		DatabaseURL: heraldtest.FuzzDatabaseURL(f), SecretKey: key,
		BootstrapEmail: email, BootstrapPassword: password, BootstrapToken: token,
		RateLimit: -1, RateLimitAnonymous: -1, // fuzzing finds bad answers, not rates
		Logger: slog.New(slog.NewTextHandler(p.log, nil)),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Store.Close() })
	p.handler = srv.Handler()

	do := func(method, path, body string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		p.handler.ServeHTTP(rec, req)
		return rec
	}
	page := do("GET", "/signin", "")
	p.signInCookie, p.signInCSRF = cookieNamed(page, "herald_signin"), csrfOf(f, page)
	if p.signInCookie == nil {
		f.Fatalf("GET /signin set no sign-in cookie: %v", page.Result().Cookies())
	}
	signIn := do("POST", "/signin", "csrf="+p.signInCSRF+"&email=owner%40example.com&password=correct+horse+battery+staple", p.signInCookie)
	if p.session = cookieNamed(signIn, "herald_session"); signIn.Code != http.StatusSeeOther || p.session == nil {
		f.Fatalf("sign in: %d %s", signIn.Code, signIn.Body)
	}
	p.csrf = csrfOf(f, do("GET", "/account", "", p.session))

	acct, err := srv.Store.AccountByTokenHash(context.Background(), auth.HashToken(token))
	if err != nil {
		f.Fatal(err)
	}
	hook := func(url string) string {
		w, err := srv.Store.CreateWebhook(context.Background(), acct.ID, store.NewWebhook{Name: "w", URL: url,
			Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: auth.NewWebhookToken()})
		if err != nil {
			f.Fatal(err)
		}
		return w.ID
	}
	p.ids = strings.NewReplacer("{hook}", hook("https://example.com/hooks"), "{loopback}", hook("http://127.0.0.1:9/"))
	return p
}

func cookieNamed(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func csrfOf(f *testing.F, rec *httptest.ResponseRecorder) string {
	f.Helper()
	m := csrfField.FindStringSubmatch(rec.Body.String())
	if m == nil {
		f.Fatalf("no CSRF token in the page (%d)", rec.Code)
	}
	return m[1]
}
