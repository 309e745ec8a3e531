package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/openapi"
)

// SchemaDialect is the JSON Schema version of every kind's schema.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Schema returns the JSON Schema (2020-12) of kind's whole delivery
// payload, standing alone: the reference's schema of the kind (generated
// from internal/event/kinds.yaml) with every schema it refers to under
// $defs, so a validator or a type generator needs nothing else. False for
// an unknown kind.
func Schema(kind event.Kind) ([]byte, bool) {
	for _, k := range Kinds() {
		if k.Kind == kind {
			return []byte(k.Schema), true
		}
	}
	return nil, false
}

const componentPrefix = "#/components/schemas/"

func buildSchemas() (map[event.Kind][]byte, error) {
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.JSON(), &doc); err != nil {
		return nil, fmt.Errorf("read the API reference: %w", err)
	}
	all := doc.Components.Schemas
	out := map[event.Kind][]byte{}
	for _, d := range event.Declarations() {
		root, ok := all[d.SchemaName()].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: no schema %s in the API reference", d.Kind, d.SchemaName())
		}
		defs := map[string]any{}
		// Copy the schemas root refers to, and those they refer to, with
		// their references pointed at $defs.
		pending := refsOf(root)
		for len(pending) > 0 {
			name := pending[0]
			pending = pending[1:]
			if _, done := defs[name]; done {
				continue
			}
			s, ok := all[name]
			if !ok {
				return nil, fmt.Errorf("%s: no schema %s in the API reference", d.Kind, name)
			}
			defs[name] = rewriteRefs(s)
			pending = append(pending, refsOf(s)...)
		}
		s := rewriteRefs(root).(map[string]any)
		s["$schema"] = SchemaDialect
		if len(defs) > 0 {
			s["$defs"] = defs
		}
		b, err := marshalIndent(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Kind, err)
		}
		out[d.Kind] = b
	}
	return out, nil
}

// refsOf lists the component schemas v refers to directly, in a fixed
// order.
func refsOf(v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, val := range v {
				if ref, ok := val.(string); ok && k == "$ref" && strings.HasPrefix(ref, componentPrefix) {
					out = append(out, strings.TrimPrefix(ref, componentPrefix))
					continue
				}
				walk(val)
			}
		case []any:
			for _, val := range v {
				walk(val)
			}
		}
	}
	walk(v)
	slices.Sort(out)
	return slices.Compact(out)
}

// rewriteRefs copies v with each reference to a component schema pointed
// at the same name under $defs.
func rewriteRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			if ref, ok := val.(string); ok && k == "$ref" && strings.HasPrefix(ref, componentPrefix) {
				out[k] = "#/$defs/" + strings.TrimPrefix(ref, componentPrefix)
				continue
			}
			out[k] = rewriteRefs(val)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, val := range v {
			out[i] = rewriteRefs(val)
		}
		return out
	}
	return v
}

// marshalIndent writes v as indented JSON with raw UTF-8, as a person and
// a type generator read it; object keys sorted.
func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
