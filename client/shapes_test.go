package client

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// shapes pairs each type the client sends or reads as JSON with the API
// reference's schema of that JSON. The reference is the one source of the
// API's shapes (decision 0121): the API's answers and requests are held to it
// by internal/api's TestAPIMatchesItsReference, and the client's types by
// TestClientShapesMatchTheReference.
var shapes = []struct {
	v       any
	schema  string // a schema's name, or Name.property for a property's
	request bool   // sent: the client must carry every field the schema requires
}{
	{Webhook{}, "WebhookWithToken", false}, // Token comes only in the creation's answer
	{WebhookCreate{}, "WebhookCreate", true},
	{WebhookUpdate{}, "WebhookUpdate", true},
	{TokenRotation{}, "TokenRotation", false},
	{SigningKey{}, "SigningKey", false},
	{RetryPolicy{}, "RetryPolicy", false},
	{WebhookTLS{}, "WebhookTls", false},
	{ClientCertificate{}, "WebhookTlsInput", true},
	{OAuth2Client{}, "WebhookOauth2Input", true},
	{TestRequest{}, "WebhookTestRequest", true},
	{TestResult{}, "WebhookTestResult", false},
	{FilterTest{}, "FilterTestResult", false},
	{EventLog{}, "EventLogWithAttempts", false},
	{Attempt{}, "Attempt", false},
	{AttemptHeaders{}, "Attempt.headers", false},
	{Header{}, "HeaderLine", false},
	{APIToken{}, "ApiTokenCreated", false}, // Secret comes only in the creation's answer
	{Person{}, "Person", false},
	{APITokenCreate{}, "ApiTokenCreate", true},
	{AccountUpdate{}, "AccountUpdate", true},
	{AccountCreate{}, "AccountCreate", true},
	{CreatedAccount{}, "AccountCreated", false},
	{PortalLink{}, "PortalLink", false},
	{Account{}, "Account", false},
	{Limits{}, "AccountLimits", false},
	{Email{}, "Email", false},
	{Product{}, "Product", false},
	{User{}, "User", false},
	{License{}, "License", false},
	{LicenseCreate{}, "LicenseCreate", true},
	{Activation{}, "Activation", false},
	{Release{}, "Release", false},
	{TrialActivation{}, "TrialActivation", false},
	{recoverBody{}, "RecoverRequest", true},
	{Recovery{}, "Recovery", false},
	{EventType{}, "EventType", false},
	{Error{}, "Problem", false},
	{FieldError{}, "FieldError", false},
	{Page[Product]{}, "ProductList", false},
	{PullEvent{}, "PullEvent", false},
	{PullEvents{}, "PullEventList", false},
	{pullAck{}, "PullAck", true},
}

// TestClientShapesMatchTheReference walks each of the client's JSON types
// against its schema in the API reference: every field must be a property
// of the schema with the same JSON type, at every depth, and a request type
// must carry every property its schema requires. A field renamed or retyped
// on either side fails here, rather than decoding silently to its zero
// value. The client may leave out a property of an answer it has no use
// for.
func TestClientShapesMatchTheReference(t *testing.T) {
	// Read from the file, not through package openapitest: the client is a
	// leaf, and its tests import nothing of herald's above it.
	doc, err := openapi3.NewLoader().LoadFromFile("../internal/openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		name, prop, _ := strings.Cut(s.schema, ".")
		ref := doc.Components.Schemas[name]
		if ref != nil && ref.Value != nil && prop != "" {
			ref = ref.Value.Properties[prop]
		}
		if ref == nil || ref.Value == nil {
			t.Errorf("%T: the reference has no schema %s", s.v, s.schema)
			continue
		}
		typ := reflect.TypeOf(s.v)
		name = strings.ReplaceAll(typ.Name(), typ.PkgPath()+".", "")
		for _, p := range shapeProblems(name, typ, ref.Value, s.request) {
			t.Errorf("%s against the reference's %s: %s", name, s.schema, p)
		}
	}
}

// TestEveryClientShapeIsChecked: a type of the client that carries JSON
// field tags must be in shapes, so that a new one is held to the reference
// from the start.
func TestEveryClientShapeIsChecked(t *testing.T) {
	checked := map[string]bool{}
	for _, s := range shapes {
		name, _, _ := strings.Cut(reflect.TypeOf(s.v).Name(), "[")
		checked[name] = true
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok || checked[ts.Name.Name] {
				return true
			}
			for _, field := range st.Fields.List {
				if field.Tag == nil {
					continue
				}
				tag, _ := strconv.Unquote(field.Tag.Value)
				if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ","); name != "" && name != "-" {
					t.Errorf("%s: type %s has JSON fields but is not in shapes (shapes_test.go): pair it with its schema in the reference",
						fset.Position(ts.Pos()), ts.Name.Name)
					break
				}
			}
			return true
		})
	}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// shapeProblems lists where typ, at path, is not what schema s describes.
func shapeProblems(path string, typ reflect.Type, s *openapi3.Schema, request bool) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == rawType || typ.Kind() == reflect.Interface {
		return nil // any JSON
	}
	want := jsonType(typ)
	if allowed := schemaTypes(s); len(allowed) > 0 && !slices.Contains(allowed, want) &&
		!(want == "integer" && slices.Contains(allowed, "number")) {
		return []string{path + ": the client reads a JSON " + want + "; the reference says " + strings.Join(allowed, " or ")}
	}
	var out []string
	switch want {
	case "array":
		if items := schemaItems(s); items != nil {
			out = append(out, shapeProblems(path+"[]", typ.Elem(), items, request)...)
		}
	case "object":
		if typ.Kind() != reflect.Struct {
			return nil // a map: keys the user chooses
		}
		props, required := schemaProperties(s)
		has := map[string]bool{}
		for f := range jsonFields(typ) {
			has[f.name] = true
			p := props[f.name]
			if p == nil {
				out = append(out, path+"."+f.name+": not a property of the reference's schema (it has "+strings.Join(slices.Sorted(maps.Keys(props)), ", ")+")")
				continue
			}
			out = append(out, shapeProblems(path+"."+f.name, f.typ, p, request)...)
		}
		if request {
			for _, r := range required {
				if !has[r] {
					out = append(out, path+"."+r+": the reference requires it; the client does not send it")
				}
			}
		}
	}
	return out
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields yields the fields encoding/json writes for a struct type,
// through embedded structs.
func jsonFields(typ reflect.Type) func(func(jsonField) bool) {
	return func(yield func(jsonField) bool) {
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				for g := range jsonFields(f.Type) {
					if !yield(g) {
						return
					}
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			if !yield(jsonField{name, f.Type}) {
				return
			}
		}
	}
}

// jsonType is the JSON type encoding/json writes for typ.
func jsonType(typ reflect.Type) string {
	switch {
	case typ == timeType:
		return "string"
	case typ.Kind() == reflect.Bool:
		return "boolean"
	case typ.Kind() == reflect.String:
		return "string"
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		return "integer"
	case typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64:
		return "number"
	case typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array:
		return "array"
	case typ.Kind() == reflect.Map || typ.Kind() == reflect.Struct:
		return "object"
	}
	return typ.String()
}

// branches are s and the schemas it is made of (allOf, oneOf, anyOf), but
// for the branch that only says null.
func branches(s *openapi3.Schema) []*openapi3.Schema {
	out := []*openapi3.Schema{s}
	for _, refs := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, r := range refs {
			if r.Value != nil && !(r.Value.Type != nil && r.Value.Type.Is("null")) {
				out = append(out, branches(r.Value)...)
			}
		}
	}
	return out
}

// schemaTypes are the JSON types s allows, null aside; none when it does not
// say.
func schemaTypes(s *openapi3.Schema) []string {
	var out []string
	for _, b := range branches(s) {
		if b.Type == nil {
			continue
		}
		for _, t := range *b.Type {
			if t != "null" && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func schemaItems(s *openapi3.Schema) *openapi3.Schema {
	for _, b := range branches(s) {
		if b.Items != nil && b.Items.Value != nil {
			return b.Items.Value
		}
	}
	return nil
}

func schemaProperties(s *openapi3.Schema) (map[string]*openapi3.Schema, []string) {
	props := map[string]*openapi3.Schema{}
	var required []string
	for _, b := range branches(s) {
		for name, p := range b.Properties {
			if p.Value != nil {
				props[name] = p.Value
			}
		}
		required = append(required, b.Required...)
	}
	return props, required
}
