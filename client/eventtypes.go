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
