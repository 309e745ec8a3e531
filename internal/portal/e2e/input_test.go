package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// Control characters in the portal's forms are refused beside their field
// (PostgreSQL cannot store a NUL), alike on both engines, and change nothing;
// at sign-in they get the usual refusal, never a 500.
func TestControlCharactersInFormsAreRefused(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		for _, email := range []string{"a\x00b@example.com", h.Email + "\x00", "a\x01b@example.com"} {
			code, _, body := newBrowser(t, h).signIn(email, h.Password)
			if code != http.StatusUnprocessableEntity || !strings.Contains(body, "The email address or password is not right.") {
				t.Errorf("sign-in as %q: %d; want 422 with the usual refusal", email, code)
			}
		}
		b := mustSignIn(t, h)
		rcv := heraldtest.NewReceiver(t)
		hook := h.CreateWebhook("w", rcv.URL, "license.created")
		var before struct{ Data []map[string]any }
		h.Must(200, "GET", "/v3/webhooks", nil, &before)
		for _, c := range []struct {
			page, field string
			form        url.Values
		}{
			{"/webhooks/new", "name", url.Values{"name": {"a\x00b"}, "url": {rcv.URL}, "events": {"license.created"}}},
			{"/webhooks/new", "url", url.Values{"name": {"n"}, "url": {rcv.URL + "/a\x00b"}, "events": {"license.created"}}},
			{"/webhooks/new", "token", url.Values{"name": {"n"}, "url": {rcv.URL}, "events": {"license.created"}, "token": {"abcdefghijklmnop\x00qrs"}}},
			{"/webhooks/new", "events", url.Values{"name": {"n"}, "url": {rcv.URL}, "events": {"license.created\x00"}}},
			{"/webhooks/" + hook.ID + "/edit", "name", url.Values{"name": {"a\x7fb"}, "url": {rcv.URL}, "events": {"license.created"}}},
			{"/account", "name", url.Values{"name": {"a\x00b"}, "notificationEmail": {"ops@example.com"}}},
			{"/account", "notificationEmail", url.Values{"name": {"Acme"}, "notificationEmail": {"ops\x00@example.com"}}},
		} {
			b.get(c.page)
			code, _, body := b.submit(c.page, c.form)
			if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="`+c.field+`-error"`) {
				t.Errorf("%s with a control character in %s: %d; want 422 with the error beside it", c.page, c.field, code)
			}
		}
		var after struct{ Data []map[string]any }
		h.Must(200, "GET", "/v3/webhooks", nil, &after)
		var acct struct{ Name, NotificationEmail string }
		h.Must(200, "GET", "/v3/account", nil, &acct)
		if len(after.Data) != 1 || after.Data[0]["name"] != "w" || acct.Name != "My account" || acct.NotificationEmail != h.Email {
			t.Errorf("refused forms changed something: webhooks %v, account %+v", after.Data, acct)
		}
	})
}

// A form body over the portal's limit answers 413: 64 KiB for forms behind
// sign-in.
func TestOversizedFormIs413(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	b := mustSignIn(t, h)
	b.get("/account")
	form := url.Values{"name": {"Acme"}, "notificationEmail": {"ops@example.com"}, "csrf": {b.csrf}}
	pad := 64<<10 - len(form.Encode()) - len("&pad=")
	for _, c := range []struct {
		extra int
		want  int
	}{{0, http.StatusSeeOther}, {1, http.StatusRequestEntityTooLarge}} {
		form.Set("pad", strings.Repeat("a", pad+c.extra))
		if code, _, _ := b.do("POST", "/account", form); code != c.want {
			t.Errorf("a form of 64 KiB + %d bytes: %d; want %d", c.extra, code, c.want)
		}
	}
}

// A control character in a page's address never reaches the store
// (PostgreSQL fails on a NUL): 404 in the path, 400 in the query.
func TestControlCharactersInAddressesAreRefused(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: dbURL})
		b := mustSignIn(t, h)
		for _, c := range []struct {
			path string
			want int
		}{
			{"/webhooks/a%00b", 404}, {"/webhooks/a%00b/edit", 404}, {"/webhook-event-logs/a%00b", 404},
			{"/webhook-event-logs?webhook=a%00b", 400}, {"/webhook-event-logs?cursor=a%00b", 400}, {"/webhooks?cursor=a%00b", 400},
		} {
			if code, _, _ := b.get(c.path); code != c.want {
				t.Errorf("GET %s: %d; want %d", c.path, code, c.want)
			}
		}
	})
}
