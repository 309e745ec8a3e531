package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// A pull webhook (type "pull") has no URL: its consumer reads its events
// with ReadEvents and acknowledges them with AckEvents, with a client made
// with a pull token (CreatePullToken), which may read that one webhook's
// events and nothing else, or with an API token.

// CreatePullToken makes a pull token for a pull webhook and returns it:
// herald shows it this once.
func (c *Client) CreatePullToken(ctx context.Context, webhookID string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	err := c.do(ctx, http.MethodPost, "/v3/webhooks/"+esc(webhookID)+"/pull-tokens", nil, nil, &out)
	return out.Token, err
}

// PullEvent is one event read from a pull webhook: its exact body and the
// headers a POST of it would carry, signed as it was read, so that the
// libraries that verify a POST verify it (webhook.Verify over Body and
// Headers).
type PullEvent struct {
	// Cursor, acknowledged, completes this event and every one before it.
	Cursor  string            `json:"cursor"`
	ID      string            `json:"id"`
	LogID   string            `json:"logId"`
	Event   string            `json:"event"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// Header returns the event's headers as an http.Header, as a POST would
// carry them.
func (e PullEvent) Header() http.Header {
	h := make(http.Header, len(e.Headers))
	for name, value := range e.Headers {
		h.Set(name, value)
	}
	return h
}

// PullEvents is what a read answered: the events, oldest first, and the
// cursor to read after next (the last event's, or the one given when none
// came).
type PullEvents struct {
	Data   []PullEvent `json:"data"`
	Cursor string      `json:"cursor"`
}

// ReadOptions bound a read. Zero values are herald's defaults.
type ReadOptions struct {
	// After is the cursor of the last event handled; "" reads every event
	// not yet acknowledged.
	After string
	// Limit is how many events at most (herald's default 100, at most 1000).
	Limit int
	// Wait is how long herald waits for an event when none is ready (whole
	// seconds, at most 50 s); 0 answers at once.
	Wait time.Duration
}

// ReadEvents reads a pull webhook's events after opt.After, waiting up to
// opt.Wait for one. The client's http.Client must allow longer than the
// wait.
func (c *Client) ReadEvents(ctx context.Context, webhookID string, opt ReadOptions) (PullEvents, error) {
	q := url.Values{}
	if opt.After != "" {
		q.Set("after", opt.After)
	}
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	if opt.Wait > 0 {
		q.Set("waitSeconds", strconv.Itoa(int(opt.Wait/time.Second)))
	}
	var out PullEvents
	err := c.do(ctx, http.MethodGet, "/v3/webhooks/"+esc(webhookID)+"/events", q, nil, &out)
	return out, err
}

// AckEvents completes every event of a pull webhook read up to cursor, and
// returns how many it completed (0 when they were already).
func (c *Client) AckEvents(ctx context.Context, webhookID, cursor string) (int, error) {
	var out struct {
		Acknowledged int `json:"acknowledged"`
	}
	err := c.do(ctx, http.MethodPost, "/v3/webhooks/"+esc(webhookID)+"/events/ack", nil, pullAck{Cursor: cursor}, &out)
	return out.Acknowledged, err
}

// pullAck is AckEvents' body.
type pullAck struct {
	Cursor string `json:"cursor"`
}
