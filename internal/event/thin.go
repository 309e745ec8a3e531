package event

import (
	"encoding/json"
	"fmt"
)

// ThinData is the data of a thin body (a webhook's payload "thin"): the
// event's object named, not carried. A receiver reads the object, as it is
// when it reads it, at Path with a read API token.
type ThinData struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// resourcePaths maps the resource each kind declares to the API's
// collection of it.
var resourcePaths = map[string]string{
	"License":            "/v3/licenses/",
	"Activation":         "/v3/activations/",
	"Product":            "/v3/products/",
	"User":               "/v3/users/",
	"Release":            "/v3/releases/",
	"TrialActivation":    "/v3/trial-activations/",
	"WebhookHealthEvent": "/v3/webhooks/",
}

// Thin returns the thin form of a delivery's body: the same id, event,
// triggeredAt and sequence, and as data only the object's id and the API
// path to read it.
func Thin(body []byte) ([]byte, error) {
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("thin body: %w", err)
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(p.Data, &obj); err != nil || obj.ID == "" {
		return nil, fmt.Errorf("thin body: %s event %s has no object id", p.Event, p.ID)
	}
	d, ok := Declared(p.Event)
	if !ok {
		return nil, fmt.Errorf("thin body: unknown event kind %q", p.Event)
	}
	prefix, ok := resourcePaths[d.Resource]
	if !ok {
		return nil, fmt.Errorf("thin body: no API path for %s", d.Resource)
	}
	data, err := Marshal(ThinData{ID: obj.ID, Path: prefix + obj.ID})
	if err != nil {
		return nil, fmt.Errorf("thin body: %w", err)
	}
	p.Data = data
	out, err := Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("thin body: %w", err)
	}
	return out, nil
}
