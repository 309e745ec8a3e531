package portal

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
	"github.com/heraldhq/herald/webhook"
)

// webhookForm is the spec's webhook form: name, URL, token, events,
// enabled; and the filter, as JSON text ("" for none).
type webhookForm struct {
	Name    string
	URL     string
	Token   string
	Events  []event.Kind
	Enabled bool
	Filter  string
	// Headers are the custom headers as typed, one "Name: value" a line;
	// stored values show masked, and a masked value keeps the stored one.
	Headers string
	// SignatureScheme is herald or standard-webhooks.
	SignatureScheme string
	// RateLimit is deliveries per second as typed, "" for no limit.
	RateLimit string
	// The retry policy as typed, all "" for the default: attempts,
	// backoff (fixed or exponential), and the waits in seconds.
	RetryAttempts, RetryBackoff, RetryInterval, RetryMaxInterval string
	// Ordering is none or license, OrderingOnFailure hold or continue
	// (decision 0131).
	Ordering, OrderingOnFailure string
	// Type is http or a destination's; Config its fields as typed, by
	// their names in the form (webhook_destination.go).
	Type   string
	Config map[string]string

	oldConfig json.RawMessage // the stored config, whose secrets masked values keep
	config    json.RawMessage // a destination's config once checked
	where     string          // and its url
	// reachForm: the payload, client certificate and OAuth2 client
	// (webhook_reach.go).
	reachForm
}

type webhookFormData struct {
	Editing bool
	ID      string
	Form    webhookForm
	Kinds   []kindOption
	Errors  fieldErrors
	Refusal string // why the webhook was not added, beyond its fields (the account's webhook limit)
	Types   []typeOption
}

type kindOption struct {
	Kind    event.Kind
	Fires   string // what fires it, as its declaration says, for the option's hint
	Checked bool
}

func (d *webhookFormData) fillKinds() {
	d.Types = typeOptions(d.Form, d.Errors)
	d.Kinds = make([]kindOption, len(event.Kinds))
	for i, k := range event.Kinds {
		decl, _ := event.Declared(k)
		d.Kinds[i] = kindOption{Kind: k, Fires: strings.ReplaceAll(decl.Fires, "`", ""),
			Checked: (store.Webhook{Events: d.Form.Events}).Subscribes(k)}
	}
}

// readWebhookForm reads the posted form as the person typed it, so a form
// that fails validation comes back with nothing lost.
func readWebhookForm(r *http.Request) webhookForm { return webhookFormFrom(r.PostForm) }

func webhookFormFrom(v url.Values) webhookForm {
	f := webhookForm{Name: v.Get("name"), URL: v.Get("url"), Token: v.Get("token"), Enabled: v.Get("enabled") == "on", Filter: v.Get("filter"), Headers: v.Get("headers"), SignatureScheme: cmp.Or(v.Get("signatureScheme"), store.SchemeHerald), RateLimit: v.Get("rateLimit"),
		RetryAttempts: v.Get("retryPolicy.maxAttempts"), RetryBackoff: v.Get("retryPolicy.backoff"),
		RetryInterval: v.Get("retryPolicy.intervalSeconds"), RetryMaxInterval: v.Get("retryPolicy.maxIntervalSeconds"),
		Ordering: cmp.Or(v.Get("ordering"), store.OrderingNone), OrderingOnFailure: cmp.Or(v.Get("orderingOnFailure"), store.OnFailureHold),
		Type: cmp.Or(v.Get("type"), store.TypeHTTP), Config: readConfigForm(v), reachForm: reachFormFrom(v)}
	for _, k := range v["events"] {
		f.Events = append(f.Events, event.Kind(k))
	}
	return f
}

// check applies the API's rules; an empty token is generated on create and
// left as it is on edit. It returns the filter (nil for none), the headers
// to save, against old, the stored headers, the rate limit (0 for
// none) and the retry policy (nil for the default).
func (h *handler) check(f *webhookForm, create bool, old map[string]string) (json.RawMessage, map[string]string, int, *store.RetryPolicy, fieldErrors) {
	filter := json.RawMessage(f.Filter)
	in := validator.Webhook{Name: &f.Name, URL: &f.URL, Events: &f.Events, Filter: &filter, SignatureScheme: &f.SignatureScheme, Type: f.Type}
	if f.isDestination() {
		in.URL = nil // herald writes it from the config
	}
	if f.Token != "" {
		in.Token = &f.Token
	}
	var errs validator.Errors
	rate := 0
	if f.RateLimit = strings.TrimSpace(f.RateLimit); f.RateLimit != "" {
		n, err := strconv.Atoi(f.RateLimit)
		if err != nil {
			errs.Add("rateLimit", validator.RateLimitRule)
		} else {
			rate, in.RateLimit = n, &n
		}
	}
	errs = append(errs, validator.CheckWebhook(h.policy, in, create)...)
	headers := map[string]string{}
	for _, line := range strings.Split(f.Headers, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			errs.Add("headers", fmt.Sprintf("line %q must read Name: value", line))
			continue
		}
		headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	validator.CheckHeaders(&errs, "headers", headers, old)
	retry := checkRetryForm(&errs, f)
	if f.Ordering != store.OrderingNone && f.Ordering != store.OrderingLicense {
		errs.Add("ordering", `must be "none" or "license"`)
	}
	if f.OrderingOnFailure != store.OnFailureHold && f.OrderingOnFailure != store.OnFailureContinue {
		errs.Add("orderingOnFailure", `must be "hold" or "continue"`)
	}
	fe := fromValidator(errs)
	if f.isDestination() {
		f.config, f.where, fe = h.checkDestinationForm(f, f.oldConfig, fe)
	}
	return filter, headers, rate, retry, fe
}

// checkRetryForm reads the retry policy's fields, nil when all are empty
// (the default), with the API's rules and the API's field names.
func checkRetryForm(errs *validator.Errors, f *webhookForm) *store.RetryPolicy {
	var p validator.RetryPolicyFields
	given, whole := false, true
	for _, n := range []struct {
		name string
		text *string
		to   **int
	}{{"maxAttempts", &f.RetryAttempts, &p.MaxAttempts}, {"intervalSeconds", &f.RetryInterval, &p.IntervalSeconds},
		{"maxIntervalSeconds", &f.RetryMaxInterval, &p.MaxIntervalSeconds}} {
		if *n.text = strings.TrimSpace(*n.text); *n.text == "" {
			continue
		}
		given = true
		v, err := strconv.Atoi(*n.text)
		if err != nil {
			errs.Add("retryPolicy."+n.name, "must be a whole number")
			whole = false
			continue
		}
		*n.to = &v
	}
	if f.RetryBackoff != "" {
		given, p.Backoff = true, &f.RetryBackoff
	}
	if !given || !whole {
		return nil
	}
	return validator.CheckRetryPolicy(errs, "retryPolicy", p)
}

// retryForm shows a webhook's own retry policy in the form; all empty for
// the default.
func retryForm(f *webhookForm, p *store.RetryPolicy) {
	if p == nil {
		return
	}
	f.RetryAttempts, f.RetryBackoff = strconv.Itoa(p.MaxAttempts), p.Backoff
	f.RetryInterval, f.RetryMaxInterval = strconv.Itoa(p.IntervalSeconds), strconv.Itoa(p.MaxIntervalSeconds)
}

// headersText shows stored headers in the form, one a line, masked.
func headersText(h map[string]string) string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s: %s\n", name, validator.MaskedHeaderValue)
	}
	return b.String()
}

// rateText shows a rate limit in the form, "" for none.
func rateText(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// filterText shows a saved filter in the form, indented for reading.
func filterText(f json.RawMessage) string {
	var b bytes.Buffer
	if len(f) == 0 || json.Indent(&b, f, "", "  ") != nil {
		return string(f)
	}
	return b.String()
}

// newWebhook shows an empty form with a generated token, or the form as it
// was sent when it was refused or its session ended (a token is kept only
// from a refusal: an ended session's form gets a new one).
func (h *handler) newWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := webhookFormData{Form: webhookForm{Token: auth.NewWebhookToken(), Enabled: true}}
	if f := flashFrom(r.Context()); f.Form != nil {
		d.Form, d.Errors, d.Refusal = webhookFormFrom(f.Form), f.Errors, f.Error
		if !f.Form.Has("token") {
			d.Form.Token = auth.NewWebhookToken()
		}
	}
	d.fillKinds()
	return h.render(w, r, http.StatusOK, "webhook_form", d)
}

// createWebhook adds a webhook and opens its page.
func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	d := webhookFormData{Form: readWebhookForm(r)}
	if d.Form.SignatureScheme == store.SchemeStandardEd25519 && !strings.HasPrefix(d.Form.Token, webhook.PrivateKeyPrefix) {
		// The form's generated secret is an HMAC one: herald makes the key
		// pair (a whsk_ key typed in is checked and kept).
		d.Form.Token = validator.NewToken(store.SchemeStandardEd25519)
	}
	filter, headers, rate, retry, errs := h.check(&d.Form, true, nil)
	var reachErrs validator.Errors
	reach := h.checkReach(&reachErrs, &d.Form.reachForm, d.Form.Type, store.WebhookReach{})
	if errs = mergeErrors(errs, fromValidator(reachErrs)); len(errs) > 0 {
		return h.redirectWith(w, r, "/webhooks/new", flash{Status: http.StatusUnprocessableEntity, Form: withoutSecrets(typed(r.PostForm)), Errors: errs})
	}
	if d.Form.Token == "" {
		d.Form.Token = auth.NewWebhookToken()
	}
	if d.Form.isDestination() {
		d.Form.URL = d.Form.where
	}
	hook, err := h.store.CreateWebhook(r.Context(), s.AccountID, store.NewWebhook{Type: d.Form.Type, Config: d.Form.config, Name: d.Form.Name, URL: d.Form.URL,
		Events: d.Form.Events, Enabled: d.Form.Enabled, Token: d.Form.Token, Filter: filter, Headers: headers, SignatureScheme: d.Form.SignatureScheme, RateLimit: rate, RetryPolicy: retry,
		Ordering: d.Form.Ordering, OrderingOnFailure: d.Form.OrderingOnFailure, Reach: reach})
	var le *store.WebhookLimitError
	if errors.As(err, &le) {
		// The same words as the API's 409: the limit and how many exist.
		return h.redirectWith(w, r, "/webhooks/new", flash{Status: http.StatusConflict, Form: withoutSecrets(typed(r.PostForm)),
			Error: "The webhook was not added: " + le.Error() + ". Delete one, or ask whoever runs herald to raise the limit."})
	}
	if err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks/"+hook.ID, flash{Notice: "Webhook added."})
}

// editWebhook shows a webhook's form; the token stays hidden and unchanged
// unless a new one is typed or generated.
func (h *handler) editWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	d := webhookFormData{Editing: true, ID: hook.ID,
		Form: webhookForm{Name: hook.Name, URL: hook.URL, Events: hook.Events, Enabled: hook.Enabled, Filter: filterText(hook.Filter), Headers: headersText(hook.Headers), SignatureScheme: hook.SignatureScheme,
			RateLimit: rateText(hook.RateLimit), Ordering: hook.Ordering, OrderingOnFailure: hook.OrderingOnFailure,
			Type: hook.Type, Config: configFormOf(hook.Type, hook.Config), reachForm: reachFormOf(hook.WebhookReach)}}
	retryForm(&d.Form, hook.RetryPolicy)
	if f := flashFrom(r.Context()); f.Form != nil {
		d.Form, d.Errors = webhookFormFrom(f.Form), f.Errors
	}
	d.fillKinds()
	return h.render(w, r, http.StatusOK, "webhook_form", d)
}

// updateWebhook saves the form over the webhook.
func (h *handler) updateWebhook(w http.ResponseWriter, r *http.Request, s store.Session) error {
	id := r.PathValue("id")
	hook, err := h.store.Webhook(r.Context(), s.AccountID, id)
	if err != nil {
		return err
	}
	d := webhookFormData{Editing: true, ID: id, Form: readWebhookForm(r)}
	// A webhook's type stays what it was made.
	d.Form.Type, d.Form.oldConfig = hook.Type, hook.Config
	filter, headers, rate, retry, errs := h.check(&d.Form, true, hook.Headers)
	var reachErrs validator.Errors
	reach := h.checkReach(&reachErrs, &d.Form.reachForm, hook.Type, hook.WebhookReach)
	if errs = mergeErrors(errs, fromValidator(reachErrs)); len(errs) > 0 {
		return h.redirectWith(w, r, "/webhooks/"+id+"/edit", flash{Status: http.StatusUnprocessableEntity, Form: withoutSecrets(typed(r.PostForm)), Errors: errs})
	}
	p := store.WebhookPatch{Name: &d.Form.Name, URL: &d.Form.URL, Events: d.Form.Events, Enabled: &d.Form.Enabled, Filter: &filter, Headers: &headers, SignatureScheme: &d.Form.SignatureScheme,
		RateLimit: &rate, RetryPolicy: &retry, Ordering: &d.Form.Ordering, OrderingOnFailure: &d.Form.OrderingOnFailure, Reach: reachPatch(reach)}
	if d.Form.isDestination() {
		p.URL, p.Config = &d.Form.where, &d.Form.config
	}
	if d.Form.Token != "" {
		p.Token = &d.Form.Token
	} else if (hook.SignatureScheme == store.SchemeStandardEd25519) != (d.Form.SignatureScheme == store.SchemeStandardEd25519) {
		// A private key is no HMAC secret, nor the reverse (decision 0125).
		tok := validator.NewToken(d.Form.SignatureScheme)
		p.Token = &tok
	}
	if d.Form.SignatureScheme == store.SchemeStandardWebhooks {
		p.RecodeTokens = validator.StandardForm // the same key, in that scheme's form
	}
	if _, err := h.store.UpdateWebhook(r.Context(), s.AccountID, id, p); err != nil {
		return err
	}
	return h.redirectWith(w, r, "/webhooks/"+id, flash{Notice: "Webhook saved."})
}
