// Package licensing owns the licensing resources that fire herald's events:
// products and licenses (with users, activations, releases and trial
// activations to come). Each change and the event it fires are written in one
// store transaction. The package validates its input and returns errors that
// name the field at fault.
package licensing

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/internal/store"
)

// Service changes an account's licensing resources.
type Service struct{ store *store.Store }

// New returns a Service over st.
func New(st *store.Store) *Service { return &Service{store: st} }

// FieldError is bad input in one field.
type FieldError struct{ Field, Detail string }

// InvalidError lists the fields at fault.
type InvalidError []FieldError

func (e InvalidError) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Field + ": " + f.Detail
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

func (e *InvalidError) add(field, detail string) { *e = append(*e, FieldError{field, detail}) }

func (e InvalidError) err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// ErrNotFound is a resource missing from the account.
var ErrNotFound = store.ErrNotFound

// keyAlphabet is Crockford's base32: no I, L, O or U, so a key read aloud or
// typed from paper is not mistaken.
const keyAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewKey returns a license key of 4 groups of 5 characters: 100 random bits,
// readable, e.g. "7KQ2M-0X9TZ-HC4PR-W1VNB".
func NewKey() string {
	b := make([]byte, 20)
	rand.Read(b)
	var s strings.Builder
	for i, c := range b {
		if i > 0 && i%5 == 0 {
			s.WriteByte('-')
		}
		s.WriteByte(keyAlphabet[int(c)%len(keyAlphabet)])
	}
	return s.String()
}

func notFound(what string) error { return fmt.Errorf("%s: %w", what, ErrNotFound) }

// IsNotFound reports a missing resource.
func IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
