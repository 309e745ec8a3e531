// Package event owns herald's event kinds, declared once in kinds.yaml,
// and the exact bytes of a delivery payload. A payload is built once, when its
// event fires, and those bytes are what every attempt and every resend sends
// and signs; nothing downstream re-encodes them.
package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// Kind names what happened, e.g. "license.created".
type Kind string

// The Kind constants and Kinds, the list of every kind a webhook may
// subscribe to, are generated from kinds.yaml (kinds_gen.go).

// Operational reports whether k is about herald's own webhooks rather than
// a licensing resource: no API call fires it; a change of health does.
func (k Kind) Operational() bool {
	d, ok := Declared(k)
	return ok && d.Group == GroupOperational
}

// Valid reports whether k is a documented kind.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// TimeFormat is the payload's triggeredAt format: UTC, exactly three
// fractional digits (trailing zeros kept), and Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// payload fixes the field order receivers see: id, event, data,
// triggeredAt, and sequence last, where it was added (decision 0122).
type payload struct {
	ID          string          `json:"id"`
	Event       Kind            `json:"event"`
	Data        json.RawMessage `json:"data"`
	TriggeredAt string          `json:"triggeredAt"`
	Sequence    int64           `json:"sequence,omitempty"`
}

// Build returns the exact body of a delivery. data is encoded without HTML
// escaping and with non-ASCII characters as raw UTF-8, so what a receiver
// hashes is what a person reads. A body nested deeper than
// jsonlimit.MaxDepth is an error wrapping jsonlimit.ErrTooDeep.
func Build(id string, kind Kind, data any, triggeredAt time.Time) ([]byte, error) {
	return BuildSequenced(id, kind, data, triggeredAt, 0)
}

// BuildSequenced is Build with the event's number among its license's
// events (from 1); 0 leaves sequence out, for an event that concerns no
// license.
func BuildSequenced(id string, kind Kind, data any, triggeredAt time.Time, sequence int64) ([]byte, error) {
	raw, err := Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("build %s payload: %w", kind, err)
	}
	body, err := Marshal(payload{
		ID: id, Event: kind, Data: raw,
		TriggeredAt: triggeredAt.UTC().Format(TimeFormat), Sequence: sequence,
	})
	if err != nil {
		return nil, fmt.Errorf("build %s payload: %w", kind, err)
	}
	// A body is read by herald listen, the portal's signature check and
	// receivers' parsers (the webhook package's Parse among them), all of
	// which refuse nesting past jsonlimit.MaxDepth: never make one.
	if err := jsonlimit.Check(body); err != nil {
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
	return validUTF8(rawUTF8(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))), nil
}

// validUTF8 writes each byte of invalid UTF-8 as U+FFFD. encoding/json does
// so for strings but copies a json.RawMessage (such as metadata) as it came,
// and a body promises UTF-8. In valid JSON such bytes can only sit inside
// strings, so the JSON keeps its shape, and it means what any parser reading
// the original bytes would have read.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// rawUTF8 rewrites every \uXXXX escape of a non-ASCII character as raw
// UTF-8, surrogate pairs included. encoding/json escapes U+2028 and U+2029
// even without HTML escaping, and passes json.RawMessage (such as metadata a
// client sent as "Zo\u00eb") through untouched; a herald body promises raw
// UTF-8 for every non-ASCII character. ASCII escapes (quotes, backslashes,
// control characters) and lone surrogates stay escaped, so the JSON means
// exactly what it meant. Escapes are read in order, so an escaped backslash
// followed by "u00eb" stays as it is.
func rawUTF8(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] != 'u' {
			out = append(out, b[i], b[i+1])
			i++
			continue
		}
		r, n := decodeEscape(b[i:])
		if r < 0x80 {
			out = append(out, b[i:i+n]...)
		} else {
			out = utf8.AppendRune(out, r)
		}
		i += n - 1
	}
	return out
}

// decodeEscape reads the \uXXXX escape (and a low surrogate's escape after a
// high one) at the start of b. It returns the character and the bytes read,
// or a character below 0x80 when the escape must stay as written.
func decodeEscape(b []byte) (rune, int) {
	r := hex4(b)
	if r < 0 {
		return 0, 2
	}
	if utf16.IsSurrogate(r) {
		if r >= 0xDC00 || len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
			return 0, 6 // a lone surrogate: keep it escaped
		}
		lo := hex4(b[6:])
		dec := utf16.DecodeRune(r, lo)
		if lo < 0 || dec == utf8.RuneError {
			return 0, 6
		}
		return dec, 12
	}
	return r, 6
}

// hex4 parses the four hex digits of \uXXXX at the start of b, or -1.
func hex4(b []byte) rune {
	if len(b) < 6 {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}
