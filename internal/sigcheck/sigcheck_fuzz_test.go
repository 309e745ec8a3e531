package sigcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// FuzzParseJSON checks the order-keeping parse on any bytes: it takes
// exactly the JSON encoding/json takes that nests within the limit, and
// the tree, written compactly, means what the bytes mean. Then the whole
// check runs on the bytes, in both schemes, with a signature that matches
// nothing.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"e","event":"license.created","data":{"key":"Zoë","n":[1,2.5e3,-0,true,false,null]}}`,
		`{"a":1,"a":2}`, `[]`, `{}`, `"\ud800\u00e9\n\/"`, "\"\xff\xc3\"", ` { "a" : [ ] } `, `1 2`, `{"a":1}}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		`{"s":"` + strings.Repeat(`[{\"`, 100) + `"}`,
		`{` + strings.Repeat(`"k":0,`, 1000) + `"k":0}`,
		`["` + strings.Repeat(`\u0000`, 500) + `",1` + strings.Repeat("0", 500) + `]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, err := parseJSON(b)
		if want := json.Valid(b) && jsonlimit.Check(b) == nil; (err == nil) != want {
			t.Fatalf("parseJSON(%q): %v; want accepted: %v", b, err, want)
		}
		if err == nil {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			style{}.write(w, tree)
			w.Flush()
			if got, want := decode(t, out.Bytes()), decode(t, b); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q written back as %q: %#v; want %#v", b, out.Bytes(), got, want)
			}
		}
		Check(Input{Body: b, Signature: "AAAA", Token: "whsec_fuzz"})
		Check(Input{Body: b, Signature: "v1,AAAA v1,BBBB", Token: "whsec_fuzz", Next: "whsec_next", Sent: b[:len(b)/2],
			Standard: &Standard{ID: "msg", Timestamp: "1795000000", SentTimestamps: []string{"1795000001"}}})
	})
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}
