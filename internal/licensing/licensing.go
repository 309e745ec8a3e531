// Package licensing owns the licensing resources whose changes fire herald's
// events: products, users, licenses, activations, releases with their files,
// and trial activations. Each change and the events it fires are written in
// one store transaction, so an event is never lost and never sent for a
// change that rolled back. Children deleted with their parent (a license's
// activations, a product's licenses, releases and trial activations, a
// release's files) go by foreign-key cascade and fire nothing.
//
// It writes its own SQL for its tables (their schema is in the store's
// migrations), through store.Tx and Store.Query: the store owns the
// transaction, the engines and the events; this package owns what a license
// is.
//
// The package validates its input and returns errors the API maps to
// answers: InvalidError (422, naming each field), ErrNotFound (404) and
// ConflictError (409). The resource types marshal to exactly the JSON the
// API answers, and that same value is the data of the events they fire.
package licensing

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/store"
)

// Service changes an account's licensing resources. Every method takes the
// account id and reads or writes that account's rows only.
type Service struct {
	store *store.Store
	pacer Pacer
}

// New returns a Service over st.
func New(st *store.Store) *Service { return &Service{store: st} }

// Pacer holds back an account's next change while the deliveries its
// changes fired wait in the queue of a process short of CPU
// (delivery.Dispatcher.Pace, decision 0115).
type Pacer interface {
	Pace(ctx context.Context, accountID string) error
}

// PacedBy returns a copy of s whose changes that fire events first wait for
// p. The API's are paced; the expiry workers' are not: they fire what the
// clock makes due, a batch at a time, and no client waits on them.
func (s *Service) PacedBy(p Pacer) *Service {
	c := *s
	c.pacer = p
	return &c
}

// pace waits for the pacer, if any, before a change of the account.
func (s *Service) pace(ctx context.Context, accountID string) error {
	if s.pacer == nil {
		return nil
	}
	if err := s.pacer.Pace(ctx, accountID); err != nil {
		return fmt.Errorf("wait for deliveries to catch up: %w", err)
	}
	return nil
}

// change runs fn in a transaction once the pacer lets the account's change
// go ahead.
func (s *Service) change(ctx context.Context, accountID string, fn func(*store.Tx) error) error {
	if err := s.pace(ctx, accountID); err != nil {
		return err
	}
	return s.store.InTx(ctx, fn)
}

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

func invalid(field, detail string) error { return InvalidError{{field, detail}} }

// ConflictError is a change that clashes with existing data, such as a
// duplicate key; its text says how, for the client.
type ConflictError struct{ Detail string }

func (e ConflictError) Error() string { return e.Detail }

// Unwrap lets errors.Is(err, store.ErrConflict) see it.
func (e ConflictError) Unwrap() error { return store.ErrConflict }

// ErrNotFound is a resource missing from the account.
var ErrNotFound = store.ErrNotFound

func notFound(what string) error { return fmt.Errorf("%s: %w", what, ErrNotFound) }

// IsNotFound reports a missing resource.
func IsNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// Optional is a request field that tells apart absent (Set false), null (Set
// true, Value nil) and a value. PATCH bodies need the difference: absent
// keeps a field, null clears it.
type Optional[T any] struct {
	Set   bool
	Value *T
}

// UnmarshalJSON records that the field was present. A value of the wrong
// JSON type fails with a *json.UnmarshalTypeError that the decoder names
// after the field.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// Time is a time as the API writes it: UTC, exactly three fractional
// digits, Z (2026-11-21T08:07:13.120Z).
type Time struct{ time.Time }

// MarshalJSON writes t in event.TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(event.TimeFormat) + `"`), nil
}

func fromMS(v int64) Time { return Time{store.FromMS(v)} }

func optFromMS(v *int64) *Time {
	if v == nil {
		return nil
	}
	t := fromMS(*v)
	return &t
}

func optMS(t *Time) any {
	if t == nil {
		return nil
	}
	return store.MS(t.Time)
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

// keyAlphabet is Crockford's base32: no I, L, O or U, so a key read aloud or
// typed from paper is not mistaken. 32 symbols divide 256, so taking a byte
// modulo 32 is unbiased.
const keyAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewKey returns a license key of five groups of five characters, 125
// random bits from crypto/rand, e.g. "K7Q2M-9XJ4T-HP3WZ-8RB6N-C5DVH".
func NewKey() string {
	b := make([]byte, 25)
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

// Limits of the API reference.
const (
	maxName        = 200
	maxEmail       = 254
	maxFingerprint = 255
	maxVersion     = 100
	// maxValidity is 100 years of 365.25 days: renewals stay far inside
	// the years RFC 3339 can write.
	maxValidity = 3155760000
)

// minTime and maxTime bound an expiry: from the Unix epoch (an expiry in the
// past is a license that has expired, but year 0001 is a mistake) to the
// end of 2199 (a license that never expires has none: null). Both ends are
// far inside what RFC 3339, the engines and a receiver's date type hold.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2199, 12, 31, 23, 59, 59, 999e6, time.UTC)
)

// timeRule says what an expiry may be, in every refusal's words.
const timeRule = "must be from 1970-01-01T00:00:00Z to 2199-12-31T23:59:59.999Z (null for a license that never expires)"

// text checks a string's length in characters (what JSON Schema counts).
func (e *InvalidError) text(field, s string, min, max int) bool {
	n := utf8.RuneCountInString(s)
	switch {
	case min > 0 && strings.TrimSpace(s) == "":
		e.add(field, "must not be empty")
	case n < min || n > max:
		e.add(field, fmt.Sprintf("must be %d to %d characters", min, max))
	default:
		return true
	}
	return false
}

// present reports whether a field that may not be null has a value to
// check: it adds "is required" when a required field is absent, and "must
// not be null" when the field is null.
func (e *InvalidError) present(field string, set, notNull, required bool) bool {
	switch {
	case set && !notNull:
		e.add(field, "must not be null")
	case !set && required:
		e.add(field, "is required")
	}
	return set && notNull
}

// id checks that s is a UUID and returns it as herald writes ids: lowercase.
func (e *InvalidError) id(field, s string) string {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		e.add(field, "must be a UUID such as 01937a4f-2b3c-7d4e-9f5a-6b7c8d9e0f1a")
		return ""
	}
	return u.String()
}

// when parses an RFC 3339 time, keeping milliseconds.
func (e *InvalidError) when(field, s string) *Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		e.add(field, "must be an RFC 3339 time such as 2027-11-21T08:07:13.120Z")
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		e.add(field, timeRule)
		return nil
	}
	return &Time{store.FromMS(store.MS(t))}
}

// metadata checks a metadata field and returns it compacted, as stored; an
// absent field is {}.
func (e *InvalidError) metadata(o Optional[json.RawMessage]) json.RawMessage {
	if !o.Set {
		return json.RawMessage(`{}`)
	}
	if o.Value == nil || !bytes.HasPrefix(bytes.TrimSpace(*o.Value), []byte("{")) {
		e.add("metadata", "must be a JSON object")
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, *o.Value); err != nil {
		e.add("metadata", "must be a JSON object")
		return nil
	}
	if buf.Len() > MaxMetadata {
		e.add("metadata", fmt.Sprintf("must be at most %d bytes of compact JSON", MaxMetadata))
		return nil
	}
	if jsonlimit.Depth(buf.Bytes(), MaxMetadataDepth) > MaxMetadataDepth {
		e.add("metadata", fmt.Sprintf("must nest at most %d levels deep", MaxMetadataDepth))
		return nil
	}
	return buf.Bytes()
}

// MaxMetadataDepth caps how deeply metadata nests ({"a":[1]} nests 2). An
// event's body holds a resource's metadata two levels in (the body, then
// its data), and every body must nest within jsonlimit.MaxDepth, the limit
// herald's own readers and the webhook package's Parse hold to; an API
// body holds it one level in, so the API's own check lets one level more
// through, which this refuses by name.
const MaxMetadataDepth = jsonlimit.MaxDepth - 2

// MaxMetadata caps a resource's metadata. A license event's body carries its
// metadata, and receivers (herald's examples and the webhook package among
// them) commonly refuse bodies over 1 MiB; at 16 KiB per resource every body
// herald sends stays far below that.
const MaxMetadata = 16 << 10

// email checks a bare address such as ada@example.com.
func (e *InvalidError) email(field, s string) bool {
	a, err := mail.ParseAddress(s)
	switch {
	case utf8.RuneCountInString(s) > maxEmail:
		e.add(field, fmt.Sprintf("must be at most %d characters", maxEmail))
	case err != nil || a.Address != s || !strings.Contains(s, "@"):
		e.add(field, "must be an email address such as ada@example.com")
	default:
		return true
	}
	return false
}

// exists reports whether the account has a row with id in table, and keeps
// it from being deleted until the transaction ends, so that a parent cannot go
// between this check and the insert of its child. The lock is a shared one:
// children of one parent are created concurrently. table is one of this
// package's table names, never input.
func exists(ctx context.Context, tx *store.Tx, table, accountID, id string) (bool, error) {
	return existsIn(ctx, tx, tx.ForKeyShare(), table, accountID, id)
}

// existsIn is exists through q, the row locked by lock ("" for none).
func existsIn(ctx context.Context, q querier, lock, table, accountID, id string) (bool, error) {
	var got string
	err := q.QueryRow(ctx, `SELECT id FROM `+table+` WHERE account_id = ? AND id = ?`+lock, accountID, id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up %s: %w", table, err)
	}
	return true, nil
}

// uniqueOr turns a unique violation that slipped past the explicit check
// (two transactions racing on PostgreSQL) into the same conflict.
func uniqueOr(err error, c error) error {
	if store.IsUniqueViolation(err) {
		return c
	}
	return err
}

// list runs a keyset-paged query and scans its rows.
func list[T any](ctx context.Context, s *Service, q string, args []any, p store.Page, scan func(scanner) (T, error), id func(T) string) ([]T, string, error) {
	q, args = p.Apply(q, args)
	rows, err := s.store.Query(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := store.Cut(out, p.Limit, id)
	return out, next, nil
}
