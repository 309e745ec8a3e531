package validator_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/validator"
)

func ptr[T any](v T) *T { return &v }

func TestCheckWebhook(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		in     validator.Webhook
		create bool
		want   []string // fields, in order
	}{
		{"complete", validator.Webhook{Name: ptr(" CRM "), URL: ptr("https://example.com/h"), Events: ptr([]event.Kind{event.LicenseCreated})}, true, nil},
		{"missing on create", validator.Webhook{}, true, []string{"name", "url", "events"}},
		{"nothing on update", validator.Webhook{}, false, nil},
		{"blank name", validator.Webhook{Name: ptr("   ")}, false, []string{"name"}},
		{"long name", validator.Webhook{Name: ptr(strings.Repeat("é", 201))}, false, []string{"name"}},
		{"private url", validator.Webhook{URL: ptr("http://127.0.0.1/h")}, false, []string{"url"}},
		{"no events", validator.Webhook{Events: ptr([]event.Kind{})}, false, []string{"events"}},
		{"bad and repeated events", validator.Webhook{Events: ptr([]event.Kind{"x.y", event.LicenseCreated, event.LicenseCreated})}, false, []string{"events[0]", "events[2]"}},
		{"short token", validator.Webhook{Token: ptr("short")}, false, []string{"token"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := validator.CheckWebhook(netguard.Policy{}, c.in, c.create)
			var fields []string
			for _, e := range got {
				fields = append(fields, e.Field)
			}
			if strings.Join(fields, ",") != strings.Join(c.want, ",") {
				t.Errorf("fields %v; want %v (%v)", fields, c.want, got)
			}
		})
	}
	name := " CRM "
	validator.CheckWebhook(netguard.Policy{}, validator.Webhook{Name: &name}, false)
	if name != "CRM" {
		t.Errorf("name %q after check; want it trimmed", name)
	}
}

func TestEmail(t *testing.T) {
	t.Parallel()
	var v validator.Errors
	good := " ops@example.com "
	validator.CheckEmail(&v, "email", &good)
	if len(v) != 0 || good != "ops@example.com" {
		t.Errorf("good address: %v, %q", v, good)
	}
	for _, bad := range []string{"", "ops", "Ops <ops@example.com>", "ops@"} {
		if validator.Email(bad) {
			t.Errorf("Email(%q) = true; want false", bad)
		}
	}
}

// Control characters are refused in every single-line field the rules
// check, naming the field; PostgreSQL could not store a NUL at all.
func TestControlCharactersAreRefused(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"a\x00b", "a\nb", "a\tb", "a\x7fb", "a\u0085b", "a\u009fb", "a\xffb"} {
		hook := validator.Webhook{Name: ptr(bad), URL: ptr("https://example.com/" + bad), Token: ptr(strings.Repeat("t", 20) + bad)}
		got := validator.CheckWebhook(netguard.Policy{}, hook, false)
		var v validator.Errors
		name, email := bad, "a"+bad+"@example.com"
		validator.CheckAccountName(&v, "name", &name)
		validator.CheckEmail(&v, "notificationEmail", &email)
		got = append(got, v...)
		var fields []string
		for _, e := range got {
			fields = append(fields, e.Field)
			if !strings.Contains(e.Detail, "control") && !strings.Contains(e.Detail, "UTF-8") {
				t.Errorf("%q: %s: %s does not say why", bad, e.Field, e.Detail)
			}
		}
		if want := "name,url,token,name,notificationEmail"; strings.Join(fields, ",") != want {
			t.Errorf("%q: fields %v; want %s", bad, fields, want)
		}
	}
	for _, good := range []string{"Zoë 日本 🚀", "a b", "a\u00a0b"} {
		if d := validator.SingleLine(good); d != "" {
			t.Errorf("%q refused: %s", good, d)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	for _, tc := range []struct {
		password string
		ok       bool
	}{
		{"", false},
		{"elevenchars", false},
		{"twelve chars", true},
		{"Zoë's 🚀 pass", true}, // 13 characters, more bytes
		{strings.Repeat("x", validator.MaxPasswordLength), true},
		{strings.Repeat("x", validator.MaxPasswordLength+1), false},
		{"twelve chars\xff", false},
	} {
		var v validator.Errors
		validator.CheckPassword(&v, "password", tc.password)
		if ok := len(v) == 0; ok != tc.ok {
			t.Errorf("%q: accepted %v; want %v (%v)", tc.password, ok, tc.ok, v)
		}
	}
}
