package api

import (
	"encoding/json"
	"testing"
)

// An unknown field is named by its whole path, as the client wrote it.
func TestUnknownFieldPath(t *testing.T) {
	type limits struct {
		Webhooks json.RawMessage `json:"webhooks"`
	}
	type inner struct {
		Name string `json:"name"`
	}
	type in struct {
		Name     *string           `json:"name"`
		Limits   *limits           `json:"limits"`
		Items    []inner           `json:"items"`
		Headers  map[string]string `json:"headers"`
		Metadata json.RawMessage   `json:"metadata"`
	}
	for _, tt := range []struct{ body, want string }{
		{`{"limits":{"bogus":1}}`, "limits.bogus"},
		{`{"limits":{"webhooks":{"anything":1}},"bogus":2}`, "bogus"},
		{`{"items":[{"name":"a"},{"name":"b","x":1}]}`, "items[1].x"},
		{`{"headers":{"X-Any":"v"},"metadata":{"free":{"deep":1}},"NAME":"case-insensitive"}`, ""},
		{`{"name":"a"}`, ""},
	} {
		var v in
		if got := unknownFieldPath([]byte(tt.body), &v); got != tt.want {
			t.Errorf("%s: %q; want %q", tt.body, got, tt.want)
		}
	}
}
