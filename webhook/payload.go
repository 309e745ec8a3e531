package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Payload is the JSON body of a delivery.
type Payload struct {
	// ID is the event's id, a UUID. It is the same for every attempt and
	// every resend of the event, and for every webhook the event goes to:
	// receivers de-duplicate on it.
	ID string `json:"id"`
	// Event is the event kind, for example "license.created".
	Event string `json:"event"`
	// Data is the event's content exactly as sent; for a license event it is
	// the license. Decode it into a type chosen by Event.
	Data json.RawMessage `json:"data"`
	// TriggeredAt is when the event happened (UTC, millisecond precision).
	TriggeredAt time.Time `json:"triggeredAt"`
}

// Parse decodes a delivery's body. It trusts what it reads, so call it only on
// a body that [Verify] (or [Middleware]) has accepted, and pass it the same
// bytes. It fails when the body is not a JSON object or lacks the id or the
// event, the two fields a receiver routes and de-duplicates on.
func Parse(body []byte) (Payload, error) {
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		return Payload{}, fmt.Errorf("webhook: parse payload: %w", err)
	}
	switch {
	case p.ID == "":
		return Payload{}, errors.New("webhook: parse payload: no id")
	case p.Event == "":
		return Payload{}, errors.New("webhook: parse payload: no event")
	}
	return p, nil
}
