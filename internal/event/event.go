// Package event owns herald's event kinds and the exact bytes of a delivery
// payload. A payload is built once, when its event fires, and those bytes are
// what every attempt and every resend sends and signs; nothing downstream
// re-encodes them.
package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Kind names what happened, e.g. "license.created".
type Kind string

// The kinds the specification names. Their meaning never changes.
const (
	LicenseCreated          Kind = "license.created"
	LicenseUpdated          Kind = "license.updated"
	LicenseRenewed          Kind = "license.renewed"
	LicenseExpiresAtUpdated Kind = "license.expiresAt.updated"
	LicenseDeleted          Kind = "license.deleted"
	LicenseFirstActivated   Kind = "license.first-activated"
	ActivationDeleted       Kind = "activation.deleted"
)

// Further kinds that users of licensing platforms expect.
const (
	ProductCreated         Kind = "product.created"
	ProductUpdated         Kind = "product.updated"
	ProductDeleted         Kind = "product.deleted"
	UserCreated            Kind = "user.created"
	UserUpdated            Kind = "user.updated"
	UserDeleted            Kind = "user.deleted"
	ActivationCreated      Kind = "activation.created"
	ReleaseCreated         Kind = "release.created"
	ReleaseDeleted         Kind = "release.deleted"
	TrialActivationCreated Kind = "trial-activation.created"
	TrialActivationDeleted Kind = "trial-activation.deleted"
)

// Kinds lists every kind a webhook may subscribe to, in documentation order.
var Kinds = []Kind{
	LicenseCreated, LicenseUpdated, LicenseRenewed, LicenseExpiresAtUpdated,
	LicenseDeleted, LicenseFirstActivated, ActivationDeleted,
	ProductCreated, ProductUpdated, ProductDeleted,
	UserCreated, UserUpdated, UserDeleted,
	ActivationCreated, ReleaseCreated, ReleaseDeleted,
	TrialActivationCreated, TrialActivationDeleted,
}

// Valid reports whether k is a documented kind.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// TimeFormat is the payload's triggeredAt format: UTC, exactly three
// fractional digits (trailing zeros kept), and Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// payload fixes the field order receivers see: id, event, data, triggeredAt.
type payload struct {
	ID          string          `json:"id"`
	Event       Kind            `json:"event"`
	Data        json.RawMessage `json:"data"`
	TriggeredAt string          `json:"triggeredAt"`
}

// Build returns the exact body of a delivery. data is encoded without HTML
// escaping and with non-ASCII characters as raw UTF-8, so what a receiver
// hashes is what a person reads.
func Build(id string, kind Kind, data any, triggeredAt time.Time) ([]byte, error) {
	raw, err := Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("build %s payload: %w", kind, err)
	}
	body, err := Marshal(payload{
		ID: id, Event: kind, Data: raw,
		TriggeredAt: triggeredAt.UTC().Format(TimeFormat),
	})
	if err != nil {
		return nil, fmt.Errorf("build %s payload: %w", kind, err)
	}
	return body, nil
}

// Marshal encodes v as compact JSON with raw UTF-8 and no HTML escaping, and
// without the trailing newline json.Encoder adds.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return unescapeSeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// unescapeSeparators writes U+2028 and U+2029 as raw UTF-8. encoding/json
// escapes them even without HTML escaping (for JavaScript embedding), but a
// herald body promises raw UTF-8 for every non-ASCII character. Escapes are
// read in order, so an escaped backslash followed by "u2028" stays as it is.
func unescapeSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && (string(b[i+2:i+6]) == "2028" || string(b[i+2:i+6]) == "2029") {
			if b[i+5] == '8' {
				out = append(out, "\u2028"...)
			} else {
				out = append(out, "\u2029"...)
			}
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}
