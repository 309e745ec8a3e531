package catalog

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestFieldsOfNestedAndEnumerated: a field written out in place as an
// object lists its own fields after it; a referenced enumeration shows its
// values; fields come in the data's order, not the schema's.
func TestFieldsOfNestedAndEnumerated(t *testing.T) {
	t.Parallel()
	var schemas map[string]*schema
	if err := json.Unmarshal([]byte(`{
		"Status": {"type": "string", "enum": ["Healthy", "Suspended"]},
		"Hook": {"type": "object", "properties": {
			"status": {"$ref": "#/components/schemas/Status"},
			"id": {"type": "string", "format": "uuid"},
			"failure": {"type": ["object", "null"], "description": "The last one.", "properties": {
				"code": {"type": ["integer", "null"]},
				"reason": {"type": "string", "description": "Why."}}}}}}`), &schemas); err != nil {
		t.Fatal(err)
	}
	got, err := fieldsOf(schemas, "Hook", json.RawMessage(`{"id":"x","status":"Healthy","failure":{"reason":"down","code":null}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Name: "id", Type: "string (uuid)", Description: "Its id (a UUID)."},
		{Name: "status", Type: "string: Healthy, Suspended"},
		{Name: "failure", Type: "object", Nullable: true, Description: "The last one."},
		{Name: "failure.reason", Type: "string", Description: "Why."},
		{Name: "failure.code", Type: "integer", Nullable: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields\n%+v\nwant\n%+v", got, want)
	}
	if _, err := fieldsOf(schemas, "Hook", json.RawMessage(`{"id":"x","extra":1}`), ""); err == nil {
		t.Errorf("a field the reference lacks was accepted")
	}
	if got := clean("The state:\n- `A`: first.\n- `B`: second.\n"); got != "The state: `A`: first; `B`: second." {
		t.Errorf("clean(list) = %q", got)
	}
	if got, _ := fieldsOf(schemas, "Hook", json.RawMessage(`{"failure":null}`), ""); len(got) != 1 {
		t.Errorf("a null object lists %d fields; want itself only", len(got))
	}
}
