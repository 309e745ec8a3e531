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
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	NotificationEmail string    `json:"notificationEmail"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}
