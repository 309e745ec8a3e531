package client

import "context"

// AccountUpdate changes the account of the client's token; nil fields stay
// as they are.
type AccountUpdate struct {
	Name                    *string `json:"name,omitempty"`
	NotificationEmail       *string `json:"notificationEmail,omitempty"`
	ExpiringSoonLeadSeconds *int64  `json:"expiringSoonLeadSeconds,omitempty"`
}

// Account returns the account of the client's token.
func (c *Client) Account(ctx context.Context) (Account, error) {
	var out Account
	err := c.do(ctx, "GET", "/v3/account", nil, nil, &out)
	return out, err
}

// UpdateAccount changes the account of the client's token: its name, where
// suspension emails go, and the lead time of license.expiring-soon.
func (c *Client) UpdateAccount(ctx context.Context, u AccountUpdate) (Account, error) {
	var out Account
	err := c.do(ctx, "PATCH", "/v3/account", nil, u, &out)
	return out, err
}
