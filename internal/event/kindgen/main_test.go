package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent fails while a file kindgen writes is not
// what kinds.yaml generates: run go generate ./internal/event.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := generate("..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile("../" + path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./internal/event", path)
		}
	}
}

// TestParseRefuses: a declaration that would generate something broken is
// refused with the kind and what is wrong.
func TestParseRefuses(t *testing.T) {
	const example = "  example: |\n    {\"id\": \"x\", \"event\": \"a.b\", \"data\": {}, \"triggeredAt\": \"t\", \"sequence\": 1}\n"
	ok := "- kind: a.b\n  const: AB\n  group: licensing\n  resource: License\n  data: License\n  fires: x\n" + example
	if _, err := parse([]byte(ok)); err != nil {
		t.Fatalf("a good declaration: %v", err)
	}
	for _, tc := range []struct{ name, decl, want string }{
		{"bad kind", strings.Replace(ok, "kind: a.b", "kind: AB", 1), "not a kind's name"},
		{"bad const", strings.Replace(ok, "const: AB", "const: ab", 1), "exported Go name"},
		{"bad group", strings.Replace(ok, "group: licensing", "group: other", 1), "group"},
		{"no fires", strings.Replace(ok, "fires: x", "fires: \"\"", 1), "fires"},
		{"unknown field", ok + "  colour: red\n", "colour"},
		{"twice", ok + ok, "declared twice"},
		{"example of another kind", strings.Replace(ok, `"event": "a.b"`, `"event": "a.c"`, 1), "example's event"},
		{"license example without sequence", strings.Replace(ok, `, "sequence": 1`, ``, 1), "sequence"},
		{"product example with sequence", strings.Replace(ok, "resource: License", "resource: Product", 1), "sequence"},
		{"example not JSON", strings.Replace(ok, `{"id"`, `{id`, 1), "example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.decl))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want one saying %q", err, tc.want)
			}
		})
	}
}

// TestReplaceTable: the reference's kinds table is rewritten whole, a row
// edited by hand or a kind missing alike, and the Markdown around it kept;
// a reference without the table is refused.
func TestReplaceTable(t *testing.T) {
	kinds := []decl{{Kind: "a.b", Fires: "A b: `POST /v3/a|b`.", Data: "A"}, {Kind: "a.c", Fires: "A c.", Data: "A, as it was"}}
	doc := "info:\n  description: |\n    Before.\n\n    | Event kind | Fired by | `data` |\n    |---|---|---|\n    | `a.b` | edited by hand | A |\n\n    After.\npaths: {}\n"
	want := "info:\n  description: |\n    Before.\n\n    | Event kind | Fires when | `data` |\n    |---|---|---|\n" +
		"    | `a.b` | A b: `POST /v3/a\\|b`. | A |\n    | `a.c` | A c. | A, as it was |\n\n    After.\npaths: {}\n"
	got, err := replaceTable([]byte(doc), kindsTable(kinds))
	if err != nil || string(got) != want {
		t.Errorf("replaceTable = %v\n%s\nwant\n%s", err, got, want)
	}
	if _, err := replaceTable([]byte("info:\n  description: no table\n"), kindsTable(kinds)); err == nil || !strings.Contains(err.Error(), "no kinds table") {
		t.Errorf("a reference without the table: err = %v; want one saying so", err)
	}
}
