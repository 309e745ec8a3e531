// Package catalog owns the event catalog as people read it: for every
// event kind (as internal/event/kinds.yaml declares it), what fires it, its
// data's fields, an example payload and the payload's JSON Schema. It
// is the one source of the generated parts of docs/events.md (go generate
// ./internal/catalog; a test fails while the page is stale) and of the
// portal's Event catalog page, so the two cannot drift. Data fields come
// from the API reference's schema of the resource, in the order a real
// payload has them, so they cannot drift from the API either. It also says
// that every kind can go to every webhook type (Reach), named from the
// list of destination types.
package catalog

//go:generate go run ./docgen -doc ../../docs/events.md

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/heraldhq/herald/internal/destination/types"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/openapi"
)

// Kind is one event kind as the catalog shows it.
type Kind struct {
	Kind     event.Kind
	Fires    string   // what fires it: one or two sentences
	Resource string   // the API reference's schema of data, e.g. "License"
	Data     string   // what data is, e.g. "License, as it was just before the deletion"
	Notes    []string // further paragraphs
	Example  string   // an example payload, indented for reading
	Fields   []Field  // data's fields, in payload order
	// Schema is the JSON Schema (2020-12) of the whole payload, indented
	// (see Schema).
	Schema string
}

// Field is one field of an event's data.
type Field struct {
	Name        string // "files[].size" for a field of each item of a list
	Type        string // e.g. "string (date-time)", "array of ReleaseFile"
	Nullable    bool
	Description string
}

// Reach says where every kind can go: to a webhook of any type, http and
// each destination type, named from destination/types so that a type
// added there is named here without an edit.
func Reach() string {
	names := types.Names() // http first
	dests := make([]string, 0, len(names)-1)
	for _, n := range names[1:] {
		dests = append(dests, "`"+n+"`")
	}
	list := strings.Join(dests[:len(dests)-1], ", ") + " and " + dests[len(dests)-1]
	return "Every kind can go to a webhook of every type: `" + names[0] + "` (a signed POST to a URL) and each destination, " +
		list + " (the same signed body, published to a broker)."
}

// Kinds returns the catalog in reading order. It panics when the embedded
// examples or the API reference do not fit the catalog: that is a broken
// build, which the package's tests catch first.
func Kinds() []Kind { return load() }

var load = sync.OnceValue(func() []Kind {
	out, err := build()
	if err != nil {
		panic("catalog: " + err.Error())
	}
	return out
})

func build() ([]Kind, error) {
	schemas, err := referenceSchemas()
	if err != nil {
		return nil, err
	}
	payloadSchemas, err := buildSchemas()
	if err != nil {
		return nil, err
	}
	decls := event.Declarations()
	out := make([]Kind, 0, len(decls))
	for _, e := range decls {
		ex := []byte(e.Example + "\n")
		var p struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(ex, &p); err != nil {
			return nil, fmt.Errorf("%s example: %w", e.Kind, err)
		}
		fields, err := fieldsOf(schemas, e.Resource, p.Data, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Kind, err)
		}
		out = append(out, Kind{Kind: e.Kind, Fires: e.Fires, Resource: e.Resource, Data: e.Data, Notes: e.Notes,
			Example: string(ex), Fields: fields, Schema: string(payloadSchemas[e.Kind])})
	}
	return out, nil
}

// schema is the part of an OpenAPI 3.1 schema the catalog reads.
type schema struct {
	Ref         string             `json:"$ref"`
	Type        string             `json:"-"` // the type besides "null"
	Nullable    bool               `json:"-"` // whether "null" is among the types
	Format      string             `json:"format"`
	Description string             `json:"description"`
	Enum        []any              `json:"enum"`
	Items       *schema            `json:"items"`
	Properties  map[string]*schema `json:"properties"`
}

// UnmarshalJSON reads the type, which JSON Schema writes as a name or a
// list of names (["string", "null"] for a string that may be null).
func (s *schema) UnmarshalJSON(b []byte) error {
	type plain schema
	var v struct {
		*plain
		Type json.RawMessage `json:"type"`
	}
	v.plain = (*plain)(s)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var types []string
	if len(v.Type) > 0 && v.Type[0] == '[' {
		if err := json.Unmarshal(v.Type, &types); err != nil {
			return err
		}
	} else if len(v.Type) > 0 {
		var t string
		if err := json.Unmarshal(v.Type, &t); err != nil {
			return err
		}
		types = []string{t}
	}
	for _, t := range types {
		if t == "null" {
			s.Nullable = true
		} else {
			s.Type = t
		}
	}
	return nil
}

func referenceSchemas() (map[string]*schema, error) {
	var doc struct {
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.JSON(), &doc); err != nil {
		return nil, fmt.Errorf("read the API reference: %w", err)
	}
	return doc.Components.Schemas, nil
}

// generic describes the fields the reference leaves undescribed because
// their names say it.
var generic = map[string]string{
	"id":        "Its id (a UUID).",
	"productId": "The id of its product.",
	"licenseId": "The id of its license.",
	"releaseId": "The id of its release.",
	"createdAt": "When it was created.",
	"updatedAt": "When it last changed.",
	"name":      "Its name.",
	"filename":  "The file's name.",
	"hostname":  "The machine's host name, as the activation gave it.",
	"os":        "The machine's operating system, as the activation gave it.",
	"url":       "Its URL.",
	"eventId":   "The id of the event.",
	"failedAt":  "When it failed.",
}

// fieldsOf lists the fields of data (a JSON object of the reference's
// schema name) in the order they come, each with its reference entry, and
// after each field holding objects (a list of them, or one written out in
// place) the fields of those objects, as "files[].size" or "failure.reason".
func fieldsOf(schemas map[string]*schema, name string, data json.RawMessage, prefix string) ([]Field, error) {
	s := schemas[name]
	if s == nil {
		return nil, fmt.Errorf("no schema %s in the API reference", name)
	}
	return fieldsOfSchema(schemas, name, s, data, prefix)
}

func fieldsOfSchema(schemas map[string]*schema, name string, s *schema, data json.RawMessage, prefix string) ([]Field, error) {
	keys, values, err := objectKeys(data)
	if err != nil {
		return nil, err
	}
	var out []Field
	for i, k := range keys {
		p := s.Properties[k]
		if p == nil {
			return nil, fmt.Errorf("field %s%s is not in the reference's %s", prefix, k, name)
		}
		f := Field{Name: prefix + k, Nullable: p.Nullable, Description: clean(p.Description)}
		var sub []Field
		switch {
		case p.Ref != "":
			ref := schemas[refName(p.Ref)]
			if ref == nil {
				return nil, fmt.Errorf("field %s: no schema %s", k, p.Ref)
			}
			f.Type, f.Nullable = typeOf(ref), ref.Nullable
			if len(ref.Enum) > maxEnum {
				f.Type = ref.Type + " (" + refName(p.Ref) + ")"
			}
			if f.Description == "" {
				f.Description = clean(ref.Description)
			}
		case p.Type == "array" && p.Items != nil && p.Items.Ref != "":
			itemRef := refName(p.Items.Ref)
			f.Type = "array of " + itemRef
			var items []json.RawMessage
			if json.Unmarshal(values[i], &items) == nil && len(items) > 0 {
				if sub, err = fieldsOf(schemas, itemRef, items[0], prefix+k+"[]."); err != nil {
					return nil, err
				}
			}
		case p.Type == "object" && len(p.Properties) > 0:
			f.Type = "object"
			if bytes.HasPrefix(bytes.TrimSpace(values[i]), []byte("{")) {
				if sub, err = fieldsOfSchema(schemas, name, p, values[i], prefix+k+"."); err != nil {
					return nil, err
				}
			}
		default:
			f.Type = typeOf(p)
		}
		if f.Description == "" {
			f.Description = generic[k]
		}
		out = append(append(out, f), sub...)
	}
	return out, nil
}

func refName(ref string) string { return strings.TrimPrefix(ref, "#/components/schemas/") }

// maxEnum is the most values a field's type lists; a longer enumeration
// is named by its schema instead.
const maxEnum = 6

func typeOf(s *schema) string {
	switch {
	case len(s.Enum) > 0:
		var names []string
		for _, v := range s.Enum {
			names = append(names, fmt.Sprint(v))
		}
		return s.Type + ": " + strings.Join(names, ", ")
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	}
	return s.Type
}

// clean puts a description on one line, as a table cell needs: the
// reference folds its lines, and a list's items ("- `Healthy`: …") become
// clauses joined by semicolons.
func clean(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		item, isItem := strings.CutPrefix(line, "- ")
		sofar := strings.TrimSuffix(b.String(), ".")
		switch {
		case b.Len() == 0:
			b.WriteString(item)
		case isItem && !strings.HasSuffix(sofar, ":"):
			b.Reset()
			b.WriteString(sofar + "; " + item)
		default:
			b.WriteString(" " + item)
		}
	}
	return b.String()
}

// objectKeys reads an object's keys in order, with their raw values.
func objectKeys(data json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("data is not a JSON object")
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, t.(string)), append(values, v)
	}
	return keys, values, nil
}
