package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// strictBase names the converted document for the JSON Schema compiler; it
// is never fetched.
const strictBase = "urn:herald:openapi"

// strictSchemas holds every schema of an OpenAPI document compiled as JSON
// Schema 2020-12: an OpenAPI 3.1 document's schemas as they are (they are
// JSON Schema 2020-12), an OpenAPI 3.0.3 document's under its own rules,
// read strictly:
//
//   - nullable admits null only beside a type in the same schema object
//     (3.0.3 says so; kin-openapi admits null wherever nullable appears);
//   - an enum must list null for null to pass, nullable or not;
//   - siblings of $ref are ignored, as OpenAPI 3.0 says;
//   - additionalProperties, allOf and the rest mean what JSON Schema says,
//     and standard formats (uuid, date-time, uri) are asserted.
//
// It is built from the JSON that herald serves, independently of the
// kin-openapi model the rest of this package checks against, so a schema
// that only a lenient reading accepts fails here.
type strictSchemas struct {
	doc     map[string]any
	schemas map[string]*jsonschema.Schema // by the JSON pointer of the schema in doc
}

// newStrictSchemas converts and compiles every schema in the document:
// components/schemas, and the schema of each media type of each request
// body and response, under paths and components.
func newStrictSchemas(document []byte) (*strictSchemas, error) {
	var doc map[string]any
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("strict: parse document: %w", err)
	}
	version, _ := doc["openapi"].(string)
	convert := convert30
	switch {
	case strings.HasPrefix(version, "3.0."):
	case strings.HasPrefix(version, "3.1."):
		// An OpenAPI 3.1 schema is JSON Schema 2020-12 already; only its
		// references move.
		convert = convert31
	default:
		return nil, fmt.Errorf("strict: openapi %q; want 3.0.x or 3.1.x, whose schema rules this knows", version)
	}
	var locations []string
	collectSchemas(doc, "", &locations)
	// Each schema goes under $defs by a plain name, so that no path
	// template or media type has to be written into a URL.
	names := map[string]string{}
	for i, ptr := range locations {
		names[ptr] = "s" + strconv.Itoa(i)
	}
	defs := map[string]any{}
	for _, ptr := range locations {
		s, err := resolve(doc, ptr)
		if err != nil {
			return nil, err
		}
		defs[names[ptr]] = convert(s, names)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(strictBase, map[string]any{"$defs": defs}); err != nil {
		return nil, fmt.Errorf("strict: add converted document: %w", err)
	}
	st := &strictSchemas{doc: doc, schemas: map[string]*jsonschema.Schema{}}
	for _, ptr := range locations {
		sch, err := c.Compile(strictBase + "#/$defs/" + names[ptr])
		if err != nil {
			return nil, fmt.Errorf("strict: compile %s: %w", ptr, err)
		}
		st.schemas[ptr] = sch
	}
	return st, nil
}

// collectSchemas appends the JSON pointer of every schema that a request
// or answer may be checked against: each named component schema, and each
// media type's schema wherever one appears (not following $ref: the target
// is collected where it is defined).
func collectSchemas(v any, ptr string, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if ptr == "/components/schemas" {
			for name := range v {
				*out = append(*out, ptr+"/"+escape(name))
			}
			return
		}
		for k, child := range v {
			p := ptr + "/" + escape(k)
			if k == "schema" && strings.Contains(ptr, "/content/") {
				*out = append(*out, p)
				continue
			}
			collectSchemas(child, p, out)
		}
	case []any:
		for i, child := range v {
			collectSchemas(child, ptr+"/"+strconv.Itoa(i), out)
		}
	}
}

// convert31 copies one OpenAPI 3.1 schema object (JSON Schema 2020-12),
// pointing references at the converted copies named in names.
func convert31(v any, names map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range v {
			if ref, ok := val.(string); ok && k == "$ref" {
				out[k] = convertRef(ref, names)
				continue
			}
			out[k] = convert31(val, names)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, val := range v {
			out[i] = convert31(val, names)
		}
		return out
	}
	return v
}

// convert30 rewrites one OpenAPI 3.0.3 schema object as JSON Schema 2020-12,
// pointing references at the converted copies named in names.
func convert30(v any, names map[string]string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if ref, ok := m["$ref"].(string); ok {
		// OpenAPI 3.0: "This object cannot be extended with additional
		// properties and any properties added SHALL be ignored."
		return map[string]any{"$ref": convertRef(ref, names)}
	}
	out := map[string]any{}
	for k, val := range m {
		switch {
		case strings.HasPrefix(k, "x-"), k == "nullable", k == "example", k == "discriminator",
			k == "xml", k == "externalDocs", k == "exclusiveMinimum", k == "exclusiveMaximum":
			// Annotations JSON Schema does not know, or keywords handled below.
		case k == "properties" || k == "patternProperties":
			props := map[string]any{}
			for name, p := range val.(map[string]any) {
				props[name] = convert30(p, names)
			}
			out[k] = props
		case k == "items" || k == "not" || k == "additionalProperties":
			out[k] = convert30(val, names)
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			var list []any
			for _, s := range val.([]any) {
				list = append(list, convert30(s, names))
			}
			out[k] = list
		default:
			out[k] = val
		}
	}
	if t, ok := m["type"].(string); ok && m["nullable"] == true {
		out["type"] = []any{t, "null"}
	}
	// OpenAPI 3.0's exclusive bounds are booleans beside minimum/maximum;
	// JSON Schema 2020-12's are the bounds themselves.
	for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		if m[b[0]] == true {
			out[b[0]] = m[b[1]]
			delete(out, b[1])
		}
	}
	return out
}

// convertRef points a reference into the document at its converted copy.
// A reference to anything else is kept, and the compiler reports it.
func convertRef(ref string, names map[string]string) string {
	if name, ok := names[strings.TrimPrefix(ref, "#")]; ok && strings.HasPrefix(ref, "#") {
		return "#/$defs/" + name
	}
	return ref
}

// check validates body, a JSON value, against the schema at ptr.
func (st *strictSchemas) check(ptr string, body []byte) error {
	sch, ok := st.schemas[ptr]
	if !ok {
		return fmt.Errorf("no schema at %s", ptr)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		// The first line names the converted copy, which says nothing to
		// the reader; the lines below say where and why.
		msg := err.Error()
		if _, rest, ok := strings.Cut(msg, "\n"); ok {
			msg = rest
		}
		return fmt.Errorf("breaks the schema at %s:\n%s", ptr, msg)
	}
	return nil
}

// responseSchema finds the schema location of the answer status of the
// operation method path (a path template of the document) in contentType,
// following a $ref to a shared response. ok is false when the document
// gives that answer no JSON schema.
func (st *strictSchemas) responseSchema(method, path string, status int, contentType string) (ptr string, ok bool) {
	op := "/paths/" + escape(path) + "/" + strings.ToLower(method)
	base := ""
	for _, code := range []string{strconv.Itoa(status), strconv.Itoa(status/100) + "XX", "default"} {
		if _, err := resolve(st.doc, op+"/responses/"+escape(code)); err == nil {
			base = op + "/responses/" + escape(code)
			break
		}
	}
	if base == "" {
		return "", false
	}
	return st.mediaSchema(base, contentType)
}

// requestSchema finds the schema location of the request body of the
// operation method path in contentType.
func (st *strictSchemas) requestSchema(method, path, contentType string) (ptr string, ok bool) {
	return st.mediaSchema("/paths/"+escape(path)+"/"+strings.ToLower(method)+"/requestBody", contentType)
}

// mediaSchema follows base (a response or request body, or a $ref to one)
// to the schema of its contentType.
func (st *strictSchemas) mediaSchema(base, contentType string) (string, bool) {
	for range 8 { // a shared response may itself be a $ref; not a loop
		obj, err := resolve(st.doc, base)
		if err != nil {
			return "", false
		}
		m, _ := obj.(map[string]any)
		ref, isRef := m["$ref"].(string)
		if !isRef {
			break
		}
		base = strings.TrimPrefix(ref, "#")
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	ptr := base + "/content/" + escape(mt) + "/schema"
	if _, err := resolve(st.doc, ptr); err != nil {
		return "", false
	}
	return ptr, true
}

// resolve returns the value at a JSON pointer in doc.
func resolve(doc any, ptr string) (any, error) {
	v := doc
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no %s in the document", ptr)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no %s in the document", ptr)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("no %s in the document", ptr)
		}
	}
	return v, nil
}

// escape makes s one JSON pointer token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// isJSON reports whether contentType is JSON (application/json or a +json
// type such as application/problem+json).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
