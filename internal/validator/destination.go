package validator

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/destination"
	"github.com/heraldhq/herald/internal/destination/types"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/store"
)

// IsHTTP reports whether a webhook of type typ POSTs to a URL ("" is
// http).
func IsHTTP(typ string) bool { return typ == "" || typ == destination.HTTP }

// TypeRule says what a webhook's type may be.
var TypeRule = "must be one of " + strings.Join(types.Names(), ", ") + " or " + store.TypePull

// IsPull reports whether a webhook of type typ is read by its consumer
// (decision 0140): no url, no config.
func IsPull(typ string) bool { return typ == store.TypePull }

// CheckType checks a webhook's type.
func CheckType(v *Errors, field, typ string) {
	if IsHTTP(typ) || IsPull(typ) {
		return
	}
	if _, ok := types.Named(typ); !ok {
		v.Add(field, fmt.Sprintf("%q: %s", typ, TypeRule))
	}
}

// checkNoURL refuses a url given to a destination, whose url herald writes
// from its config.
func checkNoURL(v *Errors, w Webhook) {
	if w.URL != nil && IsPull(w.Type) {
		v.Add("url", "is not given for a pull webhook: its consumer reads its events (GET /v3/webhooks/{id}/events)")
	} else if w.URL != nil {
		v.Add("url", "is not given for a "+w.Type+" destination: herald shows where it publishes, from its config")
	}
}

// CheckConfig checks a destination's config as sent (raw), against the
// stored one (old, nil for a new webhook), whose secrets a masked value
// keeps. It returns the config to store, and its address, the webhook's
// url. A config given to an http webhook is refused.
func CheckConfig(v *Errors, policy netguard.Policy, typ string, raw, old json.RawMessage) (json.RawMessage, string) {
	if IsHTTP(typ) {
		if raw != nil && string(raw) != "null" {
			v.Add("config", "is given only to a webhook of another type than http")
		}
		return nil, ""
	}
	if IsPull(typ) {
		if raw != nil && string(raw) != "null" {
			v.Add("config", "is not given to a pull webhook, which has no destination")
		}
		return nil, ""
	}
	t, ok := types.Named(typ)
	if !ok {
		return nil, "" // CheckType says why
	}
	if raw == nil {
		v.Add("config", "is required for a "+typ+" destination")
		return nil, ""
	}
	prev, err := destination.Parse(old)
	if err != nil {
		prev = destination.Config{}
	}
	c, errs := destination.Read(t, raw, prev, policy)
	for _, e := range errs {
		v.Add(e.Field, e.Detail)
	}
	if len(errs) > 0 {
		return nil, ""
	}
	b, err := json.Marshal(c)
	if err != nil {
		v.Add("config", err.Error())
		return nil, ""
	}
	return b, t.Where(c)
}

// MaskConfig is a destination's stored config as every answer shows it:
// its secrets masked (nil for an http webhook).
func MaskConfig(typ string, stored json.RawMessage) map[string]any {
	t, ok := types.Named(typ)
	if !ok {
		return nil
	}
	c, err := destination.Parse(stored)
	if err != nil {
		return map[string]any{}
	}
	return destination.Mask(t, c)
}
