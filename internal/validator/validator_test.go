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
