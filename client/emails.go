package client

import (
	"context"
	"time"
)

// Email is a notification email herald wrote to the account: Status sent,
// kept (not sent: no SMTP server, or every send failed; Note says which)
// or waiting in the outbox.
type Email struct {
	ID        string     `json:"id"`
	To        string     `json:"to"`
	Subject   string     `json:"subject"`
	Body      string     `json:"body"`
	Status    string     `json:"status"`
	Note      *string    `json:"note"`
	CreatedAt time.Time  `json:"createdAt"`
	SentAt    *time.Time `json:"sentAt"`
}

// ListEmails lists the account's notification emails, newest first.
func (c *Client) ListEmails(ctx context.Context, o ListOptions) (Page[Email], error) {
	var p Page[Email]
	err := c.do(ctx, "GET", "/v3/emails", o.values(), nil, &p)
	return p, err
}
