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
	// Sequence is the event's number among its license's events, counted
	// from 1 (license.created) across the license's kinds and its
	// activations' events; 0 for an event that concerns no license and
	// for a Test delivery. Deliveries can arrive out of order (a failed
	// attempt is retried later while newer events go through), so a
	// receiver that mirrors licenses keeps, for each resource it stores,
	// the Sequence of the event it last applied, and applies an event only
	// when its Sequence is higher ([Payload.Newer]): a stale or repeated
	// one then changes nothing.
	Sequence int64 `json:"sequence,omitempty"`
}

// Newer reports whether p should be applied over a resource whose last
// applied event had the sequence applied (0: none yet): true for an event
// that concerns no license, and for one numbered higher than applied. A
// gap (p.Sequence > applied+1) is fine to apply: data holds the whole
// resource as it is after the change, and the events in between, when
// they arrive, are older and change nothing.
func (p Payload) Newer(applied int64) bool {
	return p.Sequence == 0 || p.Sequence > applied
}

// maxDepth is how deeply a payload may nest ({"a":[1]} nests 2). Herald
// builds no body deeper: it holds every JSON document it reads or writes
// to this many levels (herald's own limit is its internal/jsonlimit's
// MaxDepth; this module imports nothing of herald's, so it keeps the number
// itself, and a test in herald holds the two equal).
const maxDepth = 64

// Parse decodes a delivery's body. It trusts what it reads, so call it only on
// a body that [Verify] (or [Middleware]) has accepted, and pass it the same
// bytes. It fails when the body is not a JSON object, nests deeper than 64
// levels (no herald body does), or lacks the id or the event, the two fields
// a receiver routes and de-duplicates on.
func Parse(body []byte) (Payload, error) {
	if tooDeep(body) {
		return Payload{}, fmt.Errorf("webhook: parse payload: JSON nesting deeper than %d levels", maxDepth)
	}
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

// tooDeep reports whether b nests deeper than maxDepth, counting the
// brackets outside strings, in one pass that allocates nothing. It says
// nothing else about b: json.Unmarshal reports syntax errors.
func tooDeep(b []byte) bool {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > maxDepth {
				return true
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
