package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/filter"
)

// testFilter answers whether a payload passes a filter, and why, without
// saving anything: what an owner tries before putting a filter on a
// webhook.
func (a *API) testFilter(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Filter  json.RawMessage `json:"filter"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	var v Invalid
	var f *filter.Filter
	switch text := strings.TrimSpace(string(in.Filter)); text {
	case "", "null":
		v.Add("filter", "is required: a JSON object of paths and conditions")
	default:
		var err error
		if f, err = filter.Parse([]byte(text)); err != nil {
			v.Add("filter", err.Error())
		}
	}
	var payload any
	if len(in.Payload) == 0 {
		v.Add("payload", "is required: an event's payload, {id, event, data, triggeredAt}")
	} else {
		var err error
		if payload, err = filter.Decode(in.Payload); err != nil {
			v.Add("payload", "must be JSON: "+err.Error())
		} else if _, ok := payload.(map[string]any); !ok {
			v.Add("payload", "must be a JSON object, as an event's payload is")
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	matches, why := f.Explain(payload)
	if len(why) == 0 {
		why = []string{"the filter has no conditions: every event matches"}
	}
	return writeJSON(w, http.StatusOK, struct {
		Matches     bool   `json:"matches"`
		Explanation string `json:"explanation"`
	}{matches, strings.Join(why, "\n")})
}
