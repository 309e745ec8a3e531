// Package validator owns the rules for what account owners may save: a
// webhook's name, URL, events, token and filter, an account's name and
// notification email, an API token's name and scope; and SingleLine, the
// rule every single-line text input of the API and the portal passes. The
// API and the portal both apply these rules, so a value one refuses the
// other refuses too, in the same words.
//
// Each rule adds its problems to an Errors list, each a FieldError whose
// Detail is a short fragment meant to follow the field's name ("must not be
// empty"), and trims surrounding space from the values it checks, in place.
package validator

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/filter"
	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/webhook"
)

// FieldError names a field and what is wrong with it. Field is the API's
// name for it; an element of a list is named like "events[2]".
type FieldError struct {
	Field  string
	Detail string
}

// Errors collects field errors; an empty Errors means the input is valid.
type Errors []FieldError

// Add records that field is wrong.
func (e *Errors) Add(field, detail string) { *e = append(*e, FieldError{field, detail}) }

// Webhook holds the webhook fields being saved; nil means "not given".
type Webhook struct {
	Name   *string
	URL    *string
	Events *[]event.Kind
	Token  *string
	// Filter is the JSON filter as sent; JSON null and {} (no filter) are
	// made nil in place, and any other filter compacted.
	Filter *json.RawMessage
	// SignatureScheme is "herald" or "standard-webhooks"; CurrentScheme is
	// the webhook's scheme before this change ("" for a new one: herald's),
	// which a token given without a scheme is checked for.
	SignatureScheme *string
	CurrentScheme   string
	// RateLimit is deliveries per second, 1 to store.MaxRateLimit; nil
	// when not given, or given as none.
	RateLimit *int
	// Type is the webhook's type, "" for http: a destination has no url of
	// its own to give (destination.go).
	Type string
}

// Token lengths accepted for a webhook's signing token: characters for the
// herald scheme; bytes of the key a standard-webhooks secret encodes.
const (
	MinTokenLength    = 16
	MaxTokenLength    = 256
	MinStandardKeyLen = 24
	MaxStandardKeyLen = 64
)

// TokenRule and StandardTokenRule say what a webhook's token may be, in the
// words every surface uses (the API's 422, the portal, the CLI's help, the
// reference).
var (
	TokenRule         = fmt.Sprintf("%d to %d characters", MinTokenLength, MaxTokenLength)
	StandardTokenRule = fmt.Sprintf("whsec_ followed by the standard base64 of %d to %d bytes, as the Standard Webhooks libraries read it", MinStandardKeyLen, MaxStandardKeyLen)
)

// StandardForm returns a token in the Standard Webhooks form with the key
// it signs with: a token in that form already is returned as it is; any
// other (a herald token from before herald showed the standard form)
// becomes "whsec_" and the base64 of its own bytes, the key it signed with
// (webhook.StandardSecret). A webhook moved to the standard-webhooks
// scheme keeps its key and shows the secret its receivers' libraries take.
func StandardForm(token string) string {
	if _, ok := webhook.StandardKey(token); ok {
		return token
	}
	return webhook.StandardSecret(token)
}

// PrivateKeyRule says what an ed25519 webhook's token, its private key,
// may be.
const PrivateKeyRule = "whsk_ followed by the standard base64 of an ed25519 private key (its 32-byte seed, or the 64 bytes of seed and public key)"

// KnownScheme reports whether scheme is a webhook signature scheme.
func KnownScheme(scheme string) bool {
	switch scheme {
	case store.SchemeHerald, store.SchemeStandardWebhooks, store.SchemeStandardEd25519:
		return true
	}
	return false
}

// NewToken returns a new signing token for a webhook of scheme: a random
// secret for the HMAC schemes, a new private key ("whsk_") for
// SchemeStandardEd25519.
func NewToken(scheme string) string {
	if scheme == store.SchemeStandardEd25519 {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(fmt.Sprintf("ed25519 key: %v", err)) // crypto/rand does not fail
		}
		return webhook.PrivateKeyString(priv)
	}
	return auth.NewWebhookToken()
}

// CheckToken checks a webhook's token for its signature scheme: any
// TokenRule text for herald's; the Standard Webhooks form for
// standard-webhooks, so that the libraries take the secret herald shows
// as it is; an ed25519 private key for standard-webhooks-ed25519.
func CheckToken(v *Errors, field, token, scheme string) {
	if !CheckText(v, field, token) {
		return
	}
	if scheme == store.SchemeStandardEd25519 {
		if _, ok := webhook.ParsePrivateKey(token); !ok {
			v.Add(field, "for signatureScheme "+store.SchemeStandardEd25519+", must be "+PrivateKeyRule)
		}
		return
	}
	if scheme == store.SchemeStandardWebhooks {
		if key, ok := webhook.StandardKey(token); !ok || len(key) < MinStandardKeyLen || len(key) > MaxStandardKeyLen {
			v.Add(field, "for signatureScheme standard-webhooks, must be "+StandardTokenRule)
		}
		return
	}
	if n := len(token); n < MinTokenLength || n > MaxTokenLength {
		v.Add(field, "must be "+TokenRule)
	}
}

// MaxNameLength is the longest webhook or account name, in characters.
const MaxNameLength = 200

// CheckWebhook checks the fields present in w against the URL policy. When
// create is true, name, url and events are required.
func CheckWebhook(policy netguard.Policy, w Webhook, create bool) Errors {
	var v Errors
	if w.Name != nil {
		*w.Name = strings.TrimSpace(*w.Name)
		switch n := utf8.RuneCountInString(*w.Name); {
		case SingleLine(*w.Name) != "":
			v.Add("name", SingleLine(*w.Name))
		case n == 0:
			v.Add("name", "must not be empty")
		case n > MaxNameLength:
			v.Add("name", fmt.Sprintf("must be at most %d characters", MaxNameLength))
		}
	} else if create {
		v.Add("name", "is required")
	}
	if !IsHTTP(w.Type) {
		checkNoURL(&v, w)
	} else if w.URL != nil {
		*w.URL = strings.TrimSpace(*w.URL)
		if CheckText(&v, "url", *w.URL) {
			if err := policy.ValidateURL(*w.URL); err != nil {
				v.Add("url", err.Error())
			}
		}
	} else if create {
		v.Add("url", "is required")
	}
	if w.Events != nil {
		seen := map[event.Kind]bool{}
		if len(*w.Events) == 0 {
			v.Add("events", "must name at least one event kind")
		}
		for i, k := range *w.Events {
			switch {
			case !k.Valid():
				v.Add(fmt.Sprintf("events[%d]", i), fmt.Sprintf("%q is not a known event kind", k))
			case seen[k]:
				v.Add(fmt.Sprintf("events[%d]", i), fmt.Sprintf("%q is listed twice", k))
			}
			seen[k] = true
		}
	} else if create {
		v.Add("events", "is required")
	}
	if w.Filter != nil {
		CheckFilter(&v, "filter", w.Filter)
	}
	if w.SignatureScheme != nil && !KnownScheme(*w.SignatureScheme) {
		v.Add("signatureScheme", fmt.Sprintf("%q: must be %q, %q or %q", *w.SignatureScheme, store.SchemeHerald, store.SchemeStandardWebhooks, store.SchemeStandardEd25519))
	}
	if w.RateLimit != nil {
		CheckRateLimit(&v, "rateLimit", *w.RateLimit)
	}
	if w.Token != nil {
		scheme := w.CurrentScheme
		if w.SignatureScheme != nil {
			scheme = *w.SignatureScheme
		}
		CheckToken(&v, "token", *w.Token, scheme)
	}
	return v
}

// RateLimitRule says what a webhook's rate limit may be, for errors and
// forms alike.
var RateLimitRule = fmt.Sprintf("must be a whole number of deliveries per second from 1 to %d, or none", store.MaxRateLimit)

// CheckRateLimit checks a webhook's rate limit, in deliveries per second.
func CheckRateLimit(v *Errors, field string, n int) {
	if n < 1 || n > store.MaxRateLimit {
		v.Add(field, RateLimitRule)
	}
}

// CheckFilter checks a webhook's filter (see internal/filter), naming the
// path and the operator at fault. JSON null and {} mean no filter and are
// made nil in place; any other filter is compacted.
func CheckFilter(v *Errors, field string, f *json.RawMessage) {
	trimmed := bytes.TrimSpace(*f)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		*f = nil
		return
	}
	if _, err := filter.Parse(trimmed); err != nil {
		v.Add(field, err.Error())
		return
	}
	var b bytes.Buffer
	if err := json.Compact(&b, trimmed); err != nil {
		v.Add(field, "must be a JSON object")
		return
	}
	if b.String() == "{}" {
		*f = nil
		return
	}
	*f = b.Bytes()
}

// CheckAccountName checks an account's name, trimming it in place.
func CheckAccountName(v *Errors, field string, name *string) {
	if *name = strings.TrimSpace(*name); CheckText(v, field, *name) && (*name == "" || utf8.RuneCountInString(*name) > MaxNameLength) {
		v.Add(field, fmt.Sprintf("must be 1 to %d characters", MaxNameLength))
	}
}

// CheckEmail checks a notification email address, trimming it in place.
func CheckEmail(v *Errors, field string, email *string) {
	if *email = strings.TrimSpace(*email); CheckText(v, field, *email) && !Email(*email) {
		v.Add(field, "must be an email address such as ops@example.com")
	}
}

// CheckExpiringSoonLead checks an account's lead time for
// license.expiring-soon: 1 hour to 90 days, in seconds.
func CheckExpiringSoonLead(v *Errors, field string, seconds int64) {
	if seconds < store.MinExpiringSoonLead || seconds > store.MaxExpiringSoonLead {
		v.Add(field, fmt.Sprintf("must be a number of seconds from %d (1 hour) to %d (90 days)",
			store.MinExpiringSoonLead, store.MaxExpiringSoonLead))
	}
}

// Email reports whether s is a bare address (no display name).
func Email(s string) bool {
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Address == s && strings.Contains(s, "@")
}

// SingleLine reports what is wrong with s as a single-line text value (a
// name, key, email, URL, version), or "" when nothing is: it must be UTF-8
// and hold no control character (C0, DEL or C1). PostgreSQL cannot store a
// NUL in text at all, and the other controls have no place in such a value,
// so both engines refuse them alike, before anything is stored.
func SingleLine(s string) string {
	if !utf8.ValidString(s) {
		return "must be UTF-8 text"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("must not hold control characters such as %U", r)
		}
	}
	return ""
}

// CheckText records field as wrong when its value is not SingleLine text.
func CheckText(v *Errors, field, s string) bool {
	if d := SingleLine(s); d != "" {
		v.Add(field, d)
		return false
	}
	return true
}

// CheckTokenName checks an API token's name, trimming it in place: the
// same rule as a webhook's name.
func CheckTokenName(v *Errors, field string, name *string) {
	if *name = strings.TrimSpace(*name); CheckText(v, field, *name) && (*name == "" || utf8.RuneCountInString(*name) > MaxNameLength) {
		v.Add(field, fmt.Sprintf("must be 1 to %d characters", MaxNameLength))
	}
}

// CheckScope checks an API token's scope: write (every call) or read (GET
// calls only).
func CheckScope(v *Errors, field, scope string) {
	if !store.Scope(scope).Valid() {
		v.Add(field, fmt.Sprintf("must be %q or %q", store.ScopeWrite, store.ScopeRead))
	}
}

// Portal password lengths, in characters: long enough that a guess costs
// more than herald's sign-in limits allow, short enough that hashing one
// stays cheap.
const (
	MinPasswordLength = 12
	MaxPasswordLength = 1024
)

// CheckPassword checks a new portal password; it is not trimmed, since
// every character a person typed counts.
func CheckPassword(v *Errors, field, password string) {
	if n := utf8.RuneCountInString(password); !utf8.ValidString(password) || n < MinPasswordLength || n > MaxPasswordLength {
		v.Add(field, fmt.Sprintf("must be %d to %d characters", MinPasswordLength, MaxPasswordLength))
	}
}
