package store

import (
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/internal/attempt"
)

// MaskedHeaderValue is attempt.MaskedHeaderValue.
const MaskedHeaderValue = attempt.MaskedHeaderValue

// A webhook's custom headers are sealed as one JSON object, under a context
// of their own: the webhook's id and the column, so that neither a sealed
// token nor another webhook's headers open as these.
func headersContext(webhookID string) []byte { return []byte(webhookID + "\x00headers") }

// sealHeaders seals h for webhookID; none is stored as NULL.
func (s *Store) sealHeaders(webhookID string, h map[string]string) []byte {
	if len(h) == 0 {
		return nil
	}
	b, _ := json.Marshal(h) // a map of strings always marshals
	return s.box.Seal(b, headersContext(webhookID))
}

// openHeaders opens what sealHeaders sealed; NULL is none.
func (s *Store) openHeaders(webhookID string, sealed []byte) (map[string]string, error) {
	if sealed == nil {
		return nil, nil
	}
	b, err := s.box.Open(sealed, headersContext(webhookID))
	if err != nil {
		return nil, fmt.Errorf("webhook %s headers: %w", webhookID, err)
	}
	var h map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("webhook %s headers: %w", webhookID, err)
	}
	return h, nil
}
