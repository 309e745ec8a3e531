package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
)

type webhookJSON struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	URL     string       `json:"url"`
	Events  []event.Kind `json:"events"`
	Enabled bool         `json:"enabled"`
	Status  store.Health `json:"status"`
	// UndeliveredCount: its failed and suspended-cancelled logs since it
	// last left Healthy, what a recovery would resend.
	UndeliveredCount int    `json:"undeliveredCount"`
	CreatedAt        string `json:"createdAt"`
	UpdatedAt        string `json:"updatedAt"`
	// TokenRotation is the token rotation under way, null when none is.
	TokenRotation *tokenRotationJSON `json:"tokenRotation"`
	// Filter is the JSON filter on the payload, null for none.
	Filter json.RawMessage `json:"filter"`
	// Headers are the custom headers, their values masked unless a write
	// token asked to see them (?reveal=headers); {} for none.
	Headers map[string]string `json:"headers"`
	// SignatureScheme is how deliveries are signed: herald,
	// standard-webhooks or standard-webhooks-ed25519.
	SignatureScheme string `json:"signatureScheme"`
	// PublicKey, for standard-webhooks-ed25519, is the "whpk_" key its
	// "v1a," signatures verify with; absent for the other schemes.
	PublicKey string `json:"publicKey,omitempty"`
	// RateLimit is deliveries per second to it, null for no limit.
	RateLimit *int `json:"rateLimit"`
	// RetryPolicy is how its failed deliveries are retried: its own, or
	// the default it follows.
	RetryPolicy store.RetryPolicy `json:"retryPolicy"`
	// DisabledReason is why herald disabled it (its receiver answered 410
	// Gone); absent otherwise.
	DisabledReason string `json:"disabledReason,omitempty"`
	Token          string `json:"token,omitempty"`
	// Ordering is none or license, and OrderingOnFailure hold or continue
	// (decision 0131).
	Ordering          string `json:"ordering"`
	OrderingOnFailure string `json:"orderingOnFailure"`
	// Type is http or a destination's (webhook_destination.go), and
	// Config a destination's config with its secrets masked; absent for
	// http.
	Type   string         `json:"type"`
	Config map[string]any `json:"config,omitempty"`
	// reachJSON: payload, tls and oauth2 (webhooks_reach.go).
	reachJSON
}

// toWebhookJSON is w as the API shows it, with the retry policy it
// follows.
func (a *API) toWebhookJSON(w store.Webhook) webhookJSON {
	out := toWebhookJSON(w)
	out.RetryPolicy, out.DisabledReason = a.retry, w.DisabledReason
	out.Ordering, out.OrderingOnFailure = w.Ordering, w.OrderingOnFailure
	out.Type, out.Config = w.Type, validator.MaskConfig(w.Type, w.Config)
	out.reachJSON = toReachJSON(w.WebhookReach)
	if w.RetryPolicy != nil {
		out.RetryPolicy = *w.RetryPolicy
	}
	return out
}

func toWebhookJSON(w store.Webhook) webhookJSON {
	if w.Headers == nil {
		w.Headers = map[string]string{}
	}
	out := webhookJSON{ID: w.ID, Name: w.Name, URL: w.URL, Events: w.Events, Enabled: w.Enabled,
		Status: w.Status, UndeliveredCount: w.UndeliveredCount, CreatedAt: ts(w.CreatedAt), UpdatedAt: ts(w.UpdatedAt),
		TokenRotation: toTokenRotationJSON(w.Rotation, w.SigningKey), Filter: w.Filter, Headers: validator.MaskHeaders(w.Headers), SignatureScheme: w.SignatureScheme}
	if w.RateLimit > 0 {
		out.RateLimit = &w.RateLimit
	}
	if w.SigningKey != nil {
		out.PublicKey = w.SigningKey.PublicKey
	}
	return out
}

// toWebhookJSONRevealed is toWebhookJSON with the headers' values shown.
func (a *API) toWebhookJSONRevealed(w store.Webhook) webhookJSON {
	out := a.toWebhookJSON(w)
	out.Headers = w.Headers
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	return out
}

type webhookInput struct {
	Name    *string       `json:"name"`
	URL     *string       `json:"url"`
	Events  *[]event.Kind `json:"events"`
	Enabled *bool         `json:"enabled"`
	Token   *string       `json:"token"`
	// Filter is nil when absent and the text null when sent as null
	// (json.RawMessage is handed a null rather than left alone).
	Filter json.RawMessage `json:"filter"`
	// Headers likewise: null or {} removes them.
	Headers json.RawMessage `json:"headers"`
	// SignatureScheme: herald (the default), standard-webhooks or
	// standard-webhooks-ed25519.
	SignatureScheme *string `json:"signatureScheme"`
	// RateLimit likewise: null removes it. Read here rather than by the
	// decoder, so that a wrong type is a 422 naming the field.
	RateLimit json.RawMessage `json:"rateLimit"`
	// RetryPolicy likewise: null goes back to the default.
	RetryPolicy json.RawMessage `json:"retryPolicy"`
	// Ordering: none (the default) or license; OrderingOnFailure: hold
	// (the default) or continue.
	Ordering          *string `json:"ordering"`
	OrderingOnFailure *string `json:"orderingOnFailure"`
	// Type: http (the default) or a destination's; Config, a destination's
	// (webhook_destination.go).
	Type   *string         `json:"type"`
	Config json.RawMessage `json:"config"`

	dest destinationInput // the type and config once read and checked
	// reachInput: payload, tls and oauth2 (webhooks_reach.go).
	reachInput

	oldReach   store.WebhookReach  // stored, for a masked key or secret
	oldHeaders map[string]string   // stored, for masked values
	checked    *map[string]string  // Headers once read and checked
	rate       *int                // RateLimit once read and checked: 0 for none
	retry      **store.RetryPolicy // RetryPolicy once read and checked: nil for the default
}

// empty reports whether no field was sent.
func (in *webhookInput) empty() bool {
	return in.Name == nil && in.URL == nil && in.Events == nil && in.Enabled == nil && in.Token == nil && in.Filter == nil && in.Headers == nil && in.SignatureScheme == nil && in.RateLimit == nil && in.RetryPolicy == nil &&
		in.Ordering == nil && in.OrderingOnFailure == nil && in.Type == nil && in.Config == nil && !in.reachInput.sent()
}

// rateLimit reads the rate limit sent: nil when none was sent, 0 when it
// was null (no limit), and the number otherwise, which must be a whole
// number; its range is the validator's.
func (in *webhookInput) rateLimit(v *Invalid) (rate *int, checked *int) {
	if in.RateLimit == nil {
		return nil, nil
	}
	none := 0
	if string(in.RateLimit) == "null" {
		return &none, nil
	}
	// A whole number as JSON writes it: no string, no fraction, no
	// exponent (json.Number would take "50" as well).
	n, err := strconv.Atoi(string(bytes.TrimSpace(in.RateLimit)))
	if err != nil {
		v.Add("rateLimit", validator.RateLimitRule)
		return &none, nil
	}
	return &n, &n
}

// headers reads and checks the headers sent (nil when none was), against
// the stored ones, whose values a masked value keeps.
func (in *webhookInput) headers(v *Invalid, old map[string]string) *map[string]string {
	if in.Headers == nil {
		return nil
	}
	h := map[string]string{}
	if string(in.Headers) != "null" {
		if err := json.Unmarshal(in.Headers, &h); err != nil {
			v.Add("headers", "must be an object of header names and string values")
			return nil
		}
	}
	var errs validator.Errors
	validator.CheckHeaders(&errs, "headers", h, old)
	for _, e := range errs {
		v.Add(e.Field, e.Detail)
	}
	return &h
}

// validate checks the fields present with the rules the portal shares;
// create requires name, url and events. scheme is the webhook's signature
// scheme before the change ("" for a new one).
func (a *API) validate(in *webhookInput, create bool, scheme string) error {
	var v Invalid
	var rate *int
	in.rate, rate = in.rateLimit(&v)
	w := validator.Webhook{Name: in.Name, URL: in.URL, Events: in.Events, Token: in.Token, SignatureScheme: in.SignatureScheme, CurrentScheme: scheme, RateLimit: rate}
	w.Type = in.checkDestination(&v, a.policy, create)
	if in.Filter != nil {
		w.Filter = &in.Filter
	}
	for _, e := range validator.CheckWebhook(a.policy, w, create) {
		v.Add(e.Field, e.Detail)
	}
	in.checked = in.headers(&v, in.oldHeaders)
	if in.RetryPolicy != nil {
		var p *store.RetryPolicy
		if string(in.RetryPolicy) != "null" {
			var errs validator.Errors
			p = validator.ReadRetryPolicy(&errs, "retryPolicy", in.RetryPolicy)
			for _, e := range errs {
				v.Add(e.Field, e.Detail)
			}
		}
		in.retry = &p
	}
	if in.Ordering != nil && *in.Ordering != store.OrderingNone && *in.Ordering != store.OrderingLicense {
		v.Add("ordering", `must be "none" or "license"`)
	}
	if in.OrderingOnFailure != nil && *in.OrderingOnFailure != store.OnFailureHold && *in.OrderingOnFailure != store.OnFailureContinue {
		v.Add("orderingOnFailure", `must be "hold" or "continue"`)
	}
	a.checkReach(&v, &in.reachInput, in.oldReach)
	given := func(raw json.RawMessage) bool { return raw != nil && string(raw) != "null" }
	validator.CheckReachOfType(v.Add, w.Type, given(in.TLS), given(in.OAuth2), "tls", "oauth2")
	return v.Err()
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var in webhookInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	if err := a.validate(&in, true, ""); err != nil {
		return err
	}
	n := store.NewWebhook{Events: *in.Events, Enabled: true, Filter: in.Filter}
	n.Name, n.URL, n.Type, n.Config = *in.Name, in.url(), in.dest.typ, in.dest.config
	if in.checked != nil {
		n.Headers = *in.checked
	}
	if in.SignatureScheme != nil {
		n.SignatureScheme = *in.SignatureScheme
	}
	n.Token = validator.NewToken(n.SignatureScheme)
	if in.rate != nil {
		n.RateLimit = *in.rate
	}
	if in.Enabled != nil {
		n.Enabled = *in.Enabled
	}
	if in.retry != nil {
		n.RetryPolicy = *in.retry
	}
	if in.Token != nil {
		n.Token = *in.Token
	}
	if in.Ordering != nil {
		n.Ordering = *in.Ordering
	}
	if in.OrderingOnFailure != nil {
		n.OrderingOnFailure = *in.OrderingOnFailure
	}
	n.Reach = in.reach.Set()
	hook, err := a.store.CreateWebhook(r.Context(), accountID(r), n)
	var le *store.WebhookLimitError
	if errors.As(err, &le) {
		return problem(http.StatusConflict, "webhook-limit", "Webhook limit reached",
			le.Error()+"; delete one, or ask whoever runs herald to raise the limit")
	}
	if err != nil {
		return err
	}
	out := a.toWebhookJSON(hook)
	out.Token = n.Token
	w.Header().Set("Location", "/v3/webhooks/"+hook.ID)
	return writeJSON(w, http.StatusCreated, out)
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	f := store.WebhookFilter{Page: p, Status: healthNamed(r.URL.Query().Get("status"))}
	if f.Status != "" && !f.Status.Valid() {
		return Invalid{{"status", "must be Healthy, Unhealthy or Suspended"}}.Err()
	}
	hooks, next, err := a.store.Webhooks(r.Context(), accountID(r), f)
	if err != nil {
		return err
	}
	out := make([]webhookJSON, len(hooks))
	for i, h := range hooks {
		out[i] = a.toWebhookJSON(h)
	}
	return writeJSON(w, http.StatusOK, newList(out, next))
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) error {
	reveal := r.URL.Query().Get("reveal")
	switch {
	case reveal != "" && reveal != "headers":
		return Invalid{{"reveal", fmt.Sprintf("%q: must be headers", reveal)}}.Err()
	case reveal != "" && !writeScope(r):
		return problem(http.StatusForbidden, "read-only-token", "Forbidden",
			"this API token's scope is read: header values are shown to write tokens only")
	}
	hook, err := a.store.Webhook(r.Context(), accountID(r), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("webhook")
	}
	if err != nil {
		return err
	}
	if reveal == "headers" {
		w.Header().Set("Cache-Control", "no-store")
		return writeJSON(w, http.StatusOK, a.toWebhookJSONRevealed(hook))
	}
	return writeJSON(w, http.StatusOK, a.toWebhookJSON(hook))
}

func (a *API) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	var in webhookInput
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	if in.empty() {
		return Invalid{{"body", "send at least one of name, url, events, enabled, token, filter, headers, signatureScheme, rateLimit, retryPolicy, ordering, orderingOnFailure, config, payload, tls, oauth2"}}.Err()
	}
	sentFilter := in.Filter != nil
	var scheme string
	// A token is checked for the scheme it will sign in, and headers
	// against the ones they replace: both need the webhook as it is.
	// So does a change of scheme to or from ed25519, whose token is a key.
	if in.Headers != nil || in.needsStored() || (in.Token != nil && in.SignatureScheme == nil) || (in.Token == nil && in.SignatureScheme != nil) ||
		in.Type != nil || in.Config != nil || in.URL != nil {
		hook, err := a.store.Webhook(r.Context(), accountID(r), pathID(r, "id"))
		if errors.Is(err, store.ErrNotFound) {
			return notFound("webhook")
		}
		if err != nil {
			return err
		}
		in.oldHeaders, in.oldReach, scheme = hook.Headers, hook.WebhookReach, hook.SignatureScheme
		in.dest.stored, in.dest.oldConfig = hook.Type, hook.Config
	}
	if err := a.validate(&in, false, scheme); err != nil {
		return err
	}
	p := store.WebhookPatch{Name: in.Name, URL: in.URL, Enabled: in.Enabled, Token: in.Token}
	in.patchDestination(&p)
	if sentFilter {
		p.Filter = &in.Filter
	}
	p.Headers = in.checked
	p.SignatureScheme = in.SignatureScheme
	if in.SignatureScheme != nil && in.Token == nil && (scheme == store.SchemeStandardEd25519) != (*in.SignatureScheme == store.SchemeStandardEd25519) {
		// A private key is no HMAC secret, nor the reverse: the new scheme
		// gets a new token, read from GET …/token like any (decision 0125).
		tok := validator.NewToken(*in.SignatureScheme)
		p.Token = &tok
	}
	if in.SignatureScheme != nil && *in.SignatureScheme == store.SchemeStandardWebhooks {
		// Its tokens shown in the Standard Webhooks form, with the same
		// key (decision 0118).
		p.RecodeTokens = validator.StandardForm
	}
	p.RateLimit = in.rate
	p.RetryPolicy = in.retry
	p.Ordering, p.OrderingOnFailure = in.Ordering, in.OrderingOnFailure
	p.Reach = in.reach
	if in.Events != nil {
		p.Events = *in.Events
	}
	hook, err := a.store.UpdateWebhook(r.Context(), accountID(r), pathID(r, "id"), p)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("webhook")
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, a.toWebhookJSON(hook))
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	err := a.store.DeleteWebhook(r.Context(), accountID(r), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("webhook")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) getWebhookToken(w http.ResponseWriter, r *http.Request) error {
	// With a webhook's token anyone can sign deliveries its receiver
	// accepts: a read token reads what herald did, never what lets one act
	// as herald.
	if !writeScope(r) {
		return problem(http.StatusForbidden, "read-only-token", "Forbidden",
			"this API token's scope is read: a webhook's signing tokens are shown to write tokens only")
	}
	tokens, err := a.store.WebhookTokens(r.Context(), accountID(r), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("webhook")
	}
	if err != nil {
		return err
	}
	out := struct {
		Token     string  `json:"token"`
		NextToken *string `json:"nextToken"` // during a rotation
	}{Token: tokens.Current}
	if tokens.Next != "" {
		out.NextToken = &tokens.Next
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) testWebhook(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Event             *event.Kind          `json:"event"`
		CheckVerification bool                 `json:"checkVerification"`
		SignWith          *delivery.SignedWith `json:"signWith"`
	}
	if err := decode(w, r, &in, true); err != nil {
		return err
	}
	hook, err := a.store.Webhook(r.Context(), accountID(r), pathID(r, "id"))
	if errors.Is(err, store.ErrNotFound) {
		return notFound("webhook")
	}
	if err != nil {
		return err
	}
	kind := hook.Events[0]
	if in.Event != nil {
		if !in.Event.Valid() {
			return Invalid{{"event", fmt.Sprintf("%q is not a known event kind", *in.Event)}}.Err()
		}
		kind = *in.Event
	}
	opt := delivery.TestOptions{CheckVerification: in.CheckVerification}
	if in.SignWith != nil {
		if !in.SignWith.Valid() {
			return Invalid{{"signWith", fmt.Sprintf("%q: must be current or next", *in.SignWith)}}.Err()
		}
		opt.SignWith = *in.SignWith
	}
	if hook.Type == store.TypePull {
		return problem(http.StatusConflict, "not-http", "Nothing to test",
			"a pull webhook has no receiver to POST a sample to; read its events with GET /v3/webhooks/{id}/events")
	}
	res, err := a.delivery.Test(r.Context(), accountID(r), hook.ID, kind, opt)
	if errors.Is(err, delivery.ErrNoRotation) {
		p := problem(http.StatusConflict, "no-rotation", "No token rotation under way", "signWith: "+delivery.ErrNoRotation.Error())
		p.Errors = Invalid{{"signWith", delivery.ErrNoRotation.Error()}}
		return p
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

// healthNamed reads a webhook status in any case (suspended, SUSPENDED),
// as people type it; an unknown name is left for Valid to refuse.
func healthNamed(s string) store.Health {
	for _, h := range []store.Health{store.Healthy, store.Unhealthy, store.Suspended} {
		if strings.EqualFold(s, string(h)) {
			return h
		}
	}
	return store.Health(s)
}
