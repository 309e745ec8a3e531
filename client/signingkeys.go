package client

import (
	"context"
	"net/http"
	"net/url"
)

// SigningKey is one ed25519 webhook's public keys ("whpk_"), as
// GET /v3/signing-keys lists them.
type SigningKey struct {
	WebhookID string `json:"webhookId"`
	PublicKey string `json:"publicKey"`
	// NextPublicKey, during a token rotation, signs beside PublicKey until
	// the rotation ends; "" otherwise.
	NextPublicKey string `json:"nextPublicKey,omitempty"`
}

// SigningKeys lists the public keys of every "standard-webhooks-ed25519"
// webhook of the account whose id is accountID (Account().ID). It needs
// no token: a receiver verifies v1a signatures with them.
func (c *Client) SigningKeys(ctx context.Context, accountID string) ([]SigningKey, error) {
	var out struct {
		Data []SigningKey `json:"data"`
	}
	err := c.do(ctx, http.MethodGet, "/v3/signing-keys", url.Values{"account": {accountID}}, nil, &out)
	return out.Data, err
}
