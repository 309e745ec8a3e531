package client

import (
	"context"
	"time"
)

// APIToken is one of the account's API tokens. Secret is set only in the
// answer of CreateAPIToken: herald keeps only its hash.
type APIToken struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scope      string     `json:"scope"` // write or read (GET calls only)
	ExpiresAt  *time.Time `json:"expiresAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	CreatedAt  time.Time  `json:"createdAt"`
	// CreatedBy is the person who made the token; nil when not recorded.
	// Removing the person from the account revokes it.
	CreatedBy *Person `json:"createdBy"`
	Secret    string  `json:"token,omitempty"`
}

// Person is a person who signs in to the account's portal.
type Person struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// APITokenCreate is a new token; ExpiresAt nil lasts until revoked.
type APITokenCreate struct {
	Name      string     `json:"name"`
	Scope     string     `json:"scope"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// ListAPITokens lists the account's tokens, without their secrets.
func (c *Client) ListAPITokens(ctx context.Context, o ListOptions) (Page[APIToken], error) {
	var p Page[APIToken]
	err := c.do(ctx, "GET", "/v3/api-tokens", o.values(), nil, &p)
	return p, err
}

// CreateAPIToken creates a token; the answer's Secret is the only time it
// is shown.
func (c *Client) CreateAPIToken(ctx context.Context, t APITokenCreate) (APIToken, error) {
	var out APIToken
	err := c.do(ctx, "POST", "/v3/api-tokens", nil, t, &out)
	return out, err
}

// RevokeAPIToken revokes a token: it answers 401 from then on, on every
// process.
func (c *Client) RevokeAPIToken(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v3/api-tokens/"+esc(id), nil, nil, nil)
}
