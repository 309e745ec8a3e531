package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Webhook is a receiver of events.
type Webhook struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// URL is where an http webhook's events are POSTed; "" for a pull
	// webhook.
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Enabled bool     `json:"enabled"`
	Status  string   `json:"status"` // Healthy, Unhealthy or Suspended
	// UndeliveredCount is how many of its logs failed or were cancelled
	// while it was suspended, since it last left Healthy: what Recover
	// would resend.
	UndeliveredCount int       `json:"undeliveredCount"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	// TokenRotation is the token rotation under way; nil when none is.
	TokenRotation *TokenRotation `json:"tokenRotation"`
	// Filter is the JSON filter an event's payload must pass to be
	// delivered; the JSON null when it has none (see HasFilter).
	Filter json.RawMessage `json:"filter"`
	// Headers are the custom headers sent with every request, their values
	// masked ("********") except from RevealHeaders.
	Headers map[string]string `json:"headers"`
	// SignatureScheme is how deliveries are signed: "herald",
	// "standard-webhooks" or "standard-webhooks-ed25519".
	SignatureScheme string `json:"signatureScheme"`
	// PublicKey, for "standard-webhooks-ed25519", is the "whpk_" key its
	// "v1a," signatures verify with (see SigningKeys); "" otherwise.
	PublicKey string `json:"publicKey,omitempty"`
	// RateLimit is the most deliveries per second it is sent; nil for no
	// limit.
	RateLimit *int `json:"rateLimit"`
	// RetryPolicy is how its failed deliveries are retried: its own, or
	// the default it follows.
	RetryPolicy RetryPolicy `json:"retryPolicy"`
	// DisabledReason is why herald disabled it (its receiver answered 410
	// Gone); "" otherwise.
	DisabledReason string `json:"disabledReason,omitempty"`
	// Ordering is "none" or "license": a license's events in the order
	// they fired. OrderingOnFailure is "hold" or "continue": what a failed
	// one does to the later ones.
	Ordering          string `json:"ordering"`
	OrderingOnFailure string `json:"orderingOnFailure"`
	// Type is "http" (POSTs to URL), "pull" (no URL: its consumer reads
	// its events, ReadEvents) or a destination's: "rabbitmq", "kafka",
	// "pubsub", "nats", "sqs" or "eventbridge", which publishes to the
	// broker Config describes (its URL then says where, written by
	// herald). Config's secrets come masked ("********").
	Type   string         `json:"type"`
	Config map[string]any `json:"config,omitempty"`
	// Payload is "full" or "thin" (the object's id and API path only).
	Payload string `json:"payload"`
	// TLS is the client certificate deliveries present; nil for none.
	TLS *WebhookTLS `json:"tls"`
	// OAuth2 is the OAuth2 client whose token deliveries carry; nil for
	// none. Its ClientSecret is masked.
	OAuth2 *OAuth2Client `json:"oauth2"`
	// Token is the signing token: only in the answer of CreateWebhook.
	Token string `json:"token,omitempty"`
}

// WebhookCreate is a new webhook. Enabled nil means enabled; Token "" has
// herald generate one.
type WebhookCreate struct {
	Name string `json:"name"`
	// URL is an http webhook's; a destination or a pull webhook has none
	// to give.
	URL     string   `json:"url,omitempty"`
	Events  []string `json:"events"`
	Enabled *bool    `json:"enabled,omitempty"`
	Token   string   `json:"token,omitempty"`
	// Filter is a JSON filter on the payload; nil for none.
	Filter json.RawMessage `json:"filter,omitempty"`
	// Headers are custom headers to send with every request; nil for none.
	Headers map[string]string `json:"headers,omitempty"`
	// SignatureScheme is "herald" (when ""), "standard-webhooks" or
	// "standard-webhooks-ed25519" (Token then is the "whsk_" private key).
	SignatureScheme string `json:"signatureScheme,omitempty"`
	// RateLimit is the most deliveries per second to send it, 1 to 10000;
	// 0 for no limit.
	RateLimit int `json:"rateLimit,omitempty"`
	// RetryPolicy is its own retry policy; nil follows the default. Its
	// fields left zero take their defaults.
	RetryPolicy *RetryPolicy `json:"retryPolicy,omitempty"`
	// Ordering is "none" (when "") or "license"; OrderingOnFailure "hold"
	// (when "") or "continue".
	Ordering          string `json:"ordering,omitempty"`
	OrderingOnFailure string `json:"orderingOnFailure,omitempty"`
	// Type is "http" (when "") or "pull", or a destination's, whose
	// broker Config describes (docs/destinations.md).
	Type   string         `json:"type,omitempty"`
	Config map[string]any `json:"config,omitempty"`
	// Payload is "full" (when "") or "thin".
	Payload string `json:"payload,omitempty"`
	// TLS is a client certificate for mutual TLS; nil for none.
	TLS *ClientCertificate `json:"tls,omitempty"`
	// OAuth2 is an OAuth2 client (client credentials); nil for none.
	OAuth2 *OAuth2Client `json:"oauth2,omitempty"`
}

// RetryPolicy is how a webhook's failed deliveries are retried:
// MaxAttempts attempts in all (1 to 30, the first included), a wait of
// IntervalSeconds between two ("fixed") or doubling from IntervalSeconds
// up to MaxIntervalSeconds, with jitter ("exponential"); at most 3 days
// from the first attempt to the last. Sent, a field left zero takes its
// default (5, "fixed", 300, the interval or 3600 for "exponential").
type RetryPolicy struct {
	MaxAttempts        int    `json:"maxAttempts,omitempty"`
	Backoff            string `json:"backoff,omitempty"`
	IntervalSeconds    int    `json:"intervalSeconds,omitempty"`
	MaxIntervalSeconds int    `json:"maxIntervalSeconds,omitempty"`
}

// Backoffs of a RetryPolicy.
const (
	BackoffFixed       = "fixed"
	BackoffExponential = "exponential"
)

// HasFilter reports whether w has a filter.
func (w Webhook) HasFilter() bool {
	return len(w.Filter) > 0 && string(w.Filter) != "null"
}

// NoFilter, as WebhookUpdate.Filter, removes a webhook's filter.
var NoFilter = json.RawMessage("null")

// WebhookUpdate changes the fields that are set.
type WebhookUpdate struct {
	Name    *string   `json:"name,omitempty"`
	URL     *string   `json:"url,omitempty"`
	Events  *[]string `json:"events,omitempty"`
	Enabled *bool     `json:"enabled,omitempty"`
	Token   *string   `json:"token,omitempty"`
	// Filter replaces the filter; &NoFilter removes it.
	Filter *json.RawMessage `json:"filter,omitempty"`
	// Headers replaces the custom headers; a pointer to an empty map
	// removes them. A value of "********" keeps that header's stored value.
	Headers *map[string]string `json:"headers,omitempty"`
	// SignatureScheme changes how deliveries are signed.
	SignatureScheme *string `json:"signatureScheme,omitempty"`
	// RateLimit changes the most deliveries per second to send it; a
	// pointer to 0 removes the limit (sent as null).
	RateLimit *int `json:"-"`
	// RetryPolicy replaces the retry policy; a pointer to RetryPolicy{}
	// goes back to the default (sent as null).
	RetryPolicy *RetryPolicy `json:"-"`
	// Ordering and OrderingOnFailure change the ordering.
	Ordering          *string `json:"ordering,omitempty"`
	OrderingOnFailure *string `json:"orderingOnFailure,omitempty"`
	// Type, sent, must be the webhook's own: a type stays what it was made.
	Type *string `json:"type,omitempty"`
	// Config replaces a destination's config; a secret sent as "********"
	// keeps its stored value.
	Config map[string]any `json:"config,omitempty"`
	// Payload changes the body's form: "full" or "thin".
	Payload *string `json:"payload,omitempty"`
	// TLS replaces the client certificate; a pointer to ClientCertificate{}
	// removes it (sent as null). A ClientKey of "********" keeps the
	// stored key.
	TLS *ClientCertificate `json:"-"`
	// OAuth2 replaces the OAuth2 client; a pointer to OAuth2Client{}
	// removes it (sent as null). A ClientSecret of "********" keeps the
	// stored secret.
	OAuth2 *OAuth2Client `json:"-"`
}

// MarshalJSON writes the fields that are set, a RateLimit of 0 as null.
func (u WebhookUpdate) MarshalJSON() ([]byte, error) {
	type fields WebhookUpdate // without this method
	out := struct {
		fields
		RateLimit   *json.RawMessage `json:"rateLimit,omitempty"`
		RetryPolicy any              `json:"retryPolicy,omitempty"`
		TLS         any              `json:"tls,omitempty"`
		OAuth2      any              `json:"oauth2,omitempty"`
	}{fields: fields(u)}
	if u.TLS != nil {
		out.TLS = u.TLS
		if *u.TLS == (ClientCertificate{}) {
			out.TLS = json.RawMessage("null")
		}
	}
	if u.OAuth2 != nil {
		out.OAuth2 = u.OAuth2
		if u.OAuth2.TokenURL == "" && u.OAuth2.ClientID == "" && u.OAuth2.ClientSecret == "" && len(u.OAuth2.Scopes) == 0 {
			out.OAuth2 = json.RawMessage("null")
		}
	}
	if u.RetryPolicy != nil {
		out.RetryPolicy = u.RetryPolicy
		if *u.RetryPolicy == (RetryPolicy{}) {
			out.RetryPolicy = json.RawMessage("null")
		}
	}
	if u.RateLimit != nil {
		v := json.RawMessage("null")
		if *u.RateLimit != 0 {
			v = json.RawMessage(strconv.Itoa(*u.RateLimit))
		}
		out.RateLimit = &v
	}
	return json.Marshal(out)
}

// WebhookFilter narrows ListWebhooks.
type WebhookFilter struct {
	Status string // Healthy, Unhealthy or Suspended; "" for all
	ListOptions
}

// ListWebhooks lists the account's webhooks, newest first.
func (c *Client) ListWebhooks(ctx context.Context, f WebhookFilter) (Page[Webhook], error) {
	q := f.values()
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	var p Page[Webhook]
	err := c.do(ctx, "GET", "/v3/webhooks", q, nil, &p)
	return p, err
}

// CreateWebhook creates a webhook; the answer carries its signing token.
func (c *Client) CreateWebhook(ctx context.Context, w WebhookCreate) (Webhook, error) {
	var out Webhook
	err := c.do(ctx, "POST", "/v3/webhooks", nil, w, &out)
	return out, err
}

// Webhook reads one webhook.
func (c *Client) Webhook(ctx context.Context, id string) (Webhook, error) {
	var out Webhook
	err := c.do(ctx, "GET", "/v3/webhooks/"+esc(id), nil, nil, &out)
	return out, err
}

// UpdateWebhook changes a webhook.
func (c *Client) UpdateWebhook(ctx context.Context, id string, u WebhookUpdate) (Webhook, error) {
	var out Webhook
	err := c.do(ctx, "PATCH", "/v3/webhooks/"+esc(id), nil, u, &out)
	return out, err
}

// RevealHeaders reads one webhook with its custom headers' values shown;
// it takes a write token.
func (c *Client) RevealHeaders(ctx context.Context, id string) (Webhook, error) {
	var out Webhook
	err := c.do(ctx, "GET", "/v3/webhooks/"+esc(id), url.Values{"reveal": {"headers"}}, nil, &out)
	return out, err
}

// DeleteWebhook deletes a webhook and its logs.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/webhooks/"+esc(id), nil, nil, nil)
}

// WebhookToken reads a webhook's signing token.
func (c *Client) WebhookToken(ctx context.Context, id string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	err := c.do(ctx, "GET", "/v3/webhooks/"+esc(id)+"/token", nil, nil, &out)
	return out.Token, err
}

// WebhookTokens reads the token that signs webhook-signature now and,
// during a rotation, the next token ("" when none is under way).
func (c *Client) WebhookTokens(ctx context.Context, id string) (token, next string, err error) {
	var out struct {
		Token     string  `json:"token"`
		NextToken *string `json:"nextToken"`
	}
	if err := c.do(ctx, "GET", "/v3/webhooks/"+esc(id)+"/token", nil, nil, &out); err != nil {
		return "", "", err
	}
	if out.NextToken != nil {
		next = *out.NextToken
	}
	return out.Token, next, nil
}

// TokenRotation is a webhook's token rotation under way: until EndsAt
// deliveries carry webhook-signature under the old token and
// webhook-signature-next under the next one; from EndsAt the next token
// signs webhook-signature alone.
type TokenRotation struct {
	StartedAt time.Time `json:"startedAt"`
	EndsAt    time.Time `json:"endsAt"`
	// NextPublicKey, for an ed25519 webhook, is the next private key's
	// public key, which signs beside PublicKey until EndsAt.
	NextPublicKey string `json:"nextPublicKey,omitempty"`
}

// RotateWebhookToken starts a token rotation that lasts overlap (0: herald's
// default, 24 hours; else whole seconds from a minute to 30 days). Read the
// next token with WebhookTokens. A rotation already under way is a 409.
func (c *Client) RotateWebhookToken(ctx context.Context, id string, overlap time.Duration) (Webhook, error) {
	var in struct {
		OverlapSeconds *int64 `json:"overlapSeconds,omitempty"`
	}
	if overlap != 0 {
		s := int64(overlap / time.Second)
		in.OverlapSeconds = &s
	}
	var out Webhook
	err := c.do(ctx, "POST", "/v3/webhooks/"+esc(id)+"/token/rotate", nil, in, &out)
	return out, err
}

// FinishWebhookTokenRotation ends the rotation under way now: the next
// token signs webhook-signature from then on and the old one is erased.
func (c *Client) FinishWebhookTokenRotation(ctx context.Context, id string) (Webhook, error) {
	var out Webhook
	err := c.do(ctx, "POST", "/v3/webhooks/"+esc(id)+"/token/rotate/finish", nil, struct{}{}, &out)
	return out, err
}

// TestRequest asks for a test delivery: Event "" tests the webhook's first
// subscribed kind; CheckVerification also sends the sample with a wrong
// signature and reports whether the receiver refused it; SignWith "next"
// signs with the next token of the rotation under way, "" or "current" with
// the token that signs deliveries now.
type TestRequest struct {
	Event             string `json:"event,omitempty"`
	CheckVerification bool   `json:"checkVerification,omitempty"`
	SignWith          string `json:"signWith,omitempty"`
}

// TestResult is what a test delivery sent and what came back.
type TestResult struct {
	Event   string `json:"event"`
	Request struct {
		URL       string            `json:"url"`
		Headers   map[string]string `json:"headers"`
		Body      string            `json:"body"`
		Signature string            `json:"signature"`
	} `json:"request"`
	Response *struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
		DurationMS int               `json:"durationMs"`
	} `json:"response"` // nil when no answer came
	// Published is a destination's confirmation by its broker; nil for an
	// http webhook.
	Published *struct {
		Answer     string `json:"answer"`
		DurationMS int    `json:"durationMs"`
	} `json:"published"`
	Error             string `json:"error"`
	Succeeded         bool   `json:"succeeded"`
	VerificationCheck *struct {
		Sent       bool   `json:"sent"`
		StatusCode *int   `json:"statusCode"`
		Rejected   bool   `json:"rejected"`
		Error      string `json:"error"`
	} `json:"verificationCheck"`
	// SignedWith names the token that signed webhook-signature: "current"
	// or "next".
	SignedWith string `json:"signedWith"`
}

// TestWebhook sends a test delivery and waits for the receiver's answer.
func (c *Client) TestWebhook(ctx context.Context, id string, r TestRequest) (TestResult, error) {
	var out TestResult
	err := c.do(ctx, "POST", "/v3/webhooks/"+esc(id)+"/test", nil, r, &out)
	return out, err
}

// FilterTest is whether a payload passes a filter, and why: one line per
// condition tested.
type FilterTest struct {
	Matches     bool   `json:"matches"`
	Explanation string `json:"explanation"`
}

// TestFilter asks whether payload (an event's payload, as JSON) passes
// filter, saving nothing.
func (c *Client) TestFilter(ctx context.Context, filter, payload json.RawMessage) (FilterTest, error) {
	var out FilterTest
	err := c.do(ctx, "POST", "/v3/webhooks/filter-test", nil, map[string]json.RawMessage{"filter": filter, "payload": payload}, &out)
	return out, err
}
