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
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
