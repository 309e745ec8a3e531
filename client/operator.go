package client

import (
	"context"
	"time"
)

// The operator calls take the operator token (herald's --operator-token):
// make their Client with New(baseURL, operatorToken, hc).

// AccountCreate is a new account. NotificationEmail "" means OwnerEmail.
type AccountCreate struct {
	Name              string `json:"name"`
	OwnerEmail        string `json:"ownerEmail"`
	NotificationEmail string `json:"notificationEmail,omitempty"`
}

// CreatedAccount is a new account with its first credentials, shown only
// in this answer.
type CreatedAccount struct {
	Account       Account `json:"account"`
	APIToken      string  `json:"apiToken"`
	OwnerPassword string  `json:"ownerPassword"`
}

// PortalLink is a single-use link into an account's portal.
type PortalLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// CreateAccount creates an account, its owner and a write API token.
func (c *Client) CreateAccount(ctx context.Context, a AccountCreate) (CreatedAccount, error) {
	var out CreatedAccount
	err := c.do(ctx, "POST", "/v3/operator/accounts", nil, a, &out)
	return out, err
}

// ListAccounts lists every account, newest first.
func (c *Client) ListAccounts(ctx context.Context, o ListOptions) (Page[Account], error) {
	var p Page[Account]
	err := c.do(ctx, "GET", "/v3/operator/accounts", o.values(), nil, &p)
	return p, err
}

// DeleteAccount removes an account and everything in it; its deliveries
// stop.
func (c *Client) DeleteAccount(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/operator/accounts/"+esc(id), nil, nil, nil)
}

// CreatePortalLink makes a single-use sign-in link into an account's
// portal, valid for ttl (0: herald's default, 5 minutes; else 10 s to 1 h,
// whole seconds).
func (c *Client) CreatePortalLink(ctx context.Context, accountID string, ttl time.Duration) (PortalLink, error) {
	var in struct {
		TTLSeconds *int64 `json:"ttlSeconds,omitempty"`
	}
	if ttl != 0 {
		s := int64(ttl / time.Second)
		in.TTLSeconds = &s
	}
	var out PortalLink
	err := c.do(ctx, "POST", "/v3/operator/accounts/"+esc(accountID)+"/portal-link", nil, in, &out)
	return out, err
}

// Account is one account of a herald.
type Account struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	NotificationEmail string `json:"notificationEmail"`
	// ExpiringSoonLeadSeconds is how long before a license's expiresAt
	// license.expiring-soon fires.
	ExpiringSoonLeadSeconds int64     `json:"expiringSoonLeadSeconds"`
	CreatedAt               time.Time `json:"createdAt"`
	UpdatedAt               time.Time `json:"updatedAt"`
	Limits                  Limits    `json:"limits"`
}

// Limits are the limits an operator set on an account; nil is the
// server-wide default (no cap on webhooks; no rate beyond each API token's
// own).
type Limits struct {
	Webhooks             *int64 `json:"webhooks"`
	APIRequestsPerSecond *int64 `json:"apiRequestsPerSecond"`
}

// LimitsChange is what SetAccountLimits changes: a nil field stays as it
// is; a Limit changes it.
type LimitsChange struct {
	Webhooks             *Limit
	APIRequestsPerSecond *Limit
}

// Limit is one limit's new value: To(n), or Default() for the server-wide
// default.
type Limit struct{ n *int64 }

// To is the limit n.
func To(n int64) *Limit { return &Limit{&n} }

// Default puts a limit back to the server-wide default.
func Default() *Limit { return &Limit{} }

// SetAccountLimits changes an account's limits and returns the account. An
// invalid limit is a 422 *Error naming it (limits.webhooks), and changes
// nothing.
func (c *Client) SetAccountLimits(ctx context.Context, id string, ch LimitsChange) (Account, error) {
	limits := map[string]any{}
	if ch.Webhooks != nil {
		limits["webhooks"] = ch.Webhooks.n
	}
	if ch.APIRequestsPerSecond != nil {
		limits["apiRequestsPerSecond"] = ch.APIRequestsPerSecond.n
	}
	var out Account
	err := c.do(ctx, "PATCH", "/v3/operator/accounts/"+esc(id), nil, map[string]any{"limits": limits}, &out)
	return out, err
}
