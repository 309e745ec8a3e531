package client

import (
	"context"
	"time"
)

// Webhook is a receiver of events.
type Webhook struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
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
	// Token is the signing token: only in the answer of CreateWebhook.
	Token string `json:"token,omitempty"`
}

// WebhookCreate is a new webhook. Enabled nil means enabled; Token "" has
// herald generate one.
type WebhookCreate struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Enabled *bool    `json:"enabled,omitempty"`
	Token   string   `json:"token,omitempty"`
}

// WebhookUpdate changes the fields that are set.
type WebhookUpdate struct {
	Name    *string   `json:"name,omitempty"`
	URL     *string   `json:"url,omitempty"`
	Events  *[]string `json:"events,omitempty"`
	Enabled *bool     `json:"enabled,omitempty"`
	Token   *string   `json:"token,omitempty"`
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

// TestRequest asks for a test delivery: Event "" tests the webhook's first
// subscribed kind; CheckVerification also sends the sample with a wrong
// signature and reports whether the receiver refused it.
type TestRequest struct {
	Event             string `json:"event,omitempty"`
	CheckVerification bool   `json:"checkVerification,omitempty"`
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
	Error             string `json:"error"`
	Succeeded         bool   `json:"succeeded"`
	VerificationCheck *struct {
		Sent       bool   `json:"sent"`
		StatusCode *int   `json:"statusCode"`
		Rejected   bool   `json:"rejected"`
		Error      string `json:"error"`
	} `json:"verificationCheck"`
}

// TestWebhook sends a test delivery and waits for the receiver's answer.
func (c *Client) TestWebhook(ctx context.Context, id string, r TestRequest) (TestResult, error) {
	var out TestResult
	err := c.do(ctx, "POST", "/v3/webhooks/"+esc(id)+"/test", nil, r, &out)
	return out, err
}
