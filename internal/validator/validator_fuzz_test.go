package validator_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/validator"
)

// FuzzCheckWebhook feeds any name, URL, token and event list (one kind a
// line) to CheckWebhook under both policies: it must not panic, and every
// field it does not name in an error holds a value its rules allow.
func FuzzCheckWebhook(f *testing.F) {
	for _, s := range []struct{ name, url, token, events string }{
		{"CRM", "https://example.com/hooks", "whsec_0123456789abcdef", "license.created"},
		{"  CRM  ", " https://example.com/ ", "short", "license.created\nlicense.created"},
		{"", "", "", ""},
		{strings.Repeat("é", 201), "http://127.0.0.1/", strings.Repeat("t", 257), "nope"},
		{"a\x00b", "http://169.254.169.254/", "whsec_\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "license.created\x00"},
		{"\xff\xfe", "http://[::1]:0/", "\u2028\u2028\u2028\u2028\u2028\u2028", "\n\n"},
		{"\u200b", "HTTP://EXAMPLE.COM", "                ", "license.expiresAt.updated\ntrial-activation.deleted"},
	} {
		f.Add(s.name, s.url, s.token, s.events)
	}
	f.Fuzz(func(t *testing.T, name, url, token, events string) {
		var kinds []event.Kind
		for _, k := range strings.Split(events, "\n") {
			kinds = append(kinds, event.Kind(k))
		}
		for _, p := range []netguard.Policy{{}, {AllowPrivate: true}} {
			n, u, tok, ks := name, url, token, kinds
			errs := validator.CheckWebhook(p, validator.Webhook{Name: &n, URL: &u, Token: &tok, Events: &ks}, true)
			bad := map[string]bool{}
			for _, e := range errs {
				if e.Field == "" || e.Detail == "" {
					t.Fatalf("an error without a field or detail: %+v", e)
				}
				bad[strings.SplitN(e.Field, "[", 2)[0]] = true
			}
			if !bad["name"] && (n == "" || n != strings.TrimSpace(n) || utf8.RuneCountInString(n) > validator.MaxNameLength) {
				t.Fatalf("name %q passed", n)
			}
			if !bad["url"] && p.ValidateURL(u) != nil {
				t.Fatalf("url %q passed CheckWebhook but not %+v.ValidateURL", u, p)
			}
			if !bad["token"] && (len(tok) < validator.MinTokenLength || len(tok) > validator.MaxTokenLength) {
				t.Fatalf("token of %d bytes passed", len(tok))
			}
			if !bad["events"] {
				seen := map[event.Kind]bool{}
				for _, k := range ks {
					if !k.Valid() || seen[k] {
						t.Fatalf("events %q passed", ks)
					}
					seen[k] = true
				}
			}
		}
	})
}
