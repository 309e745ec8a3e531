package listen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzIndentedSize checks that indentedSize, which decides whether a body
// is printed indented, never counts less than json.Indent writes: the
// bound on what printing a body can cost rests on it.
func FuzzIndentedSize(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":{}}],"c":"x\"[,:"}`, `[[[]]]`, ` { "a" : [ ] , "b" : { "c" : 1 } } `, `"\\"`,
		strings.Repeat("[", 64) + strings.Repeat("0,", 100) + "0" + strings.Repeat("]", 64),
		`{` + strings.Repeat(`"k":0,`, 1000) + `"k":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") != nil {
			return
		}
		if out.Len() > indentedSize(b) {
			t.Fatalf("%q indents to %d bytes; indentedSize says at most %d", b, out.Len(), indentedSize(b))
		}
	})
}
