package client

import (
	"context"
	"time"
)

// RecoverRequest chooses what a recovery resends: a webhook's failed logs
// and those cancelled because it was suspended (never those cancelled
// because it was disabled), of events at or after Since and before Until
// (zero: up to now). Statuses narrows to "failed" or "cancelled"; empty
// means both.
type RecoverRequest struct {
	Since    time.Time
	Until    time.Time
	Statuses []string
}

type recoverBody struct {
	Since    time.Time  `json:"since"`
	Until    *time.Time `json:"until,omitempty"`
	Statuses []string   `json:"statuses,omitempty"`
	DryRun   bool       `json:"dryRun,omitempty"`
}

func (r RecoverRequest) body(dryRun bool) recoverBody {
	b := recoverBody{Since: r.Since.UTC(), Statuses: r.Statuses, DryRun: dryRun}
	if !r.Until.IsZero() {
		u := r.Until.UTC()
		b.Until = &u
	}
	return b
}

// Recovery is a bulk resend of a webhook's undelivered logs: Count logs,
// of which Sent were resent so far (Succeeded and Failed of those; Failed
// also counts a resend a crash interrupted, not repeated so that none goes
// out twice).
type Recovery struct {
	ID         string     `json:"id"`
	WebhookID  string     `json:"webhookId"`
	Status     string     `json:"status"` // running, done or cancelled
	Count      int        `json:"count"`
	Sent       int        `json:"sent"`
	Succeeded  int        `json:"succeeded"`
	Failed     int        `json:"failed"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// CountRecoverable answers how many logs Recover would resend now (a dry
// run: nothing is sent or recorded).
func (c *Client) CountRecoverable(ctx context.Context, webhookID string, r RecoverRequest) (int, error) {
	var out struct {
		Count int `json:"count"`
	}
	err := c.do(ctx, "POST", "/v3/webhooks/"+esc(webhookID)+"/recover", nil, r.body(true), &out)
	return out.Count, err
}

// Recover starts a recovery, which herald runs in the background: each
// chosen log is resent once, as a resend attempt on the same log with the
// same bytes. Follow it with Recovery.
func (c *Client) Recover(ctx context.Context, webhookID string, r RecoverRequest) (Recovery, error) {
	var out Recovery
	err := c.do(ctx, "POST", "/v3/webhooks/"+esc(webhookID)+"/recover", nil, r.body(false), &out)
	return out, err
}

// ListRecoveries lists a webhook's recoveries, newest first.
func (c *Client) ListRecoveries(ctx context.Context, webhookID string, o ListOptions) (Page[Recovery], error) {
	var p Page[Recovery]
	err := c.do(ctx, "GET", "/v3/webhooks/"+esc(webhookID)+"/recoveries", o.values(), nil, &p)
	return p, err
}

// Recovery reads one recovery.
func (c *Client) Recovery(ctx context.Context, webhookID, id string) (Recovery, error) {
	var out Recovery
	err := c.do(ctx, "GET", "/v3/webhooks/"+esc(webhookID)+"/recoveries/"+esc(id), nil, nil, &out)
	return out, err
}

// CancelRecovery stops a running recovery; resends in flight are still
// recorded. It answers the recovery as it stands.
func (c *Client) CancelRecovery(ctx context.Context, webhookID, id string) (Recovery, error) {
	var out Recovery
	err := c.do(ctx, "DELETE", "/v3/webhooks/"+esc(webhookID)+"/recoveries/"+esc(id), nil, nil, &out)
	return out, err
}
