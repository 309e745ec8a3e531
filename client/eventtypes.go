package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// EventTypeSchema returns the JSON Schema (2020-12) of a delivery of kind:
// the whole payload, standing alone, as herald serves it at
// GET /v3/event-types/{kind}/schema. An unknown kind is a 404 *Error.
func (c *Client) EventTypeSchema(ctx context.Context, kind string) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/v3/event-types/"+url.PathEscape(kind)+"/schema", nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// EventType is one event kind as GET /v3/event-types lists it.
type EventType struct {
	Kind string `json:"kind"`
	// Group is specification, licensing or operational.
	Group       string `json:"group"`
	Description string `json:"description"` // what fires it
	// Resource is the reference's schema of the payload's data, e.g.
	// "License".
	Resource string `json:"resource"`
	Schema   string `json:"schema"` // the path of its payload's JSON Schema
}

// EventTypes lists every event kind a webhook may subscribe to, in the
// event catalog's order. It needs no token.
func (c *Client) EventTypes(ctx context.Context) ([]EventType, error) {
	var out struct {
		Data []EventType `json:"data"`
	}
	err := c.do(ctx, http.MethodGet, "/v3/event-types", nil, nil, &out)
	return out.Data, err
}
