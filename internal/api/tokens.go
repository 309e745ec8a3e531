package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/internal/validator"
)

// freeText names the top-level fields whose strings are the client's own
// JSON, kept as sent: metadata may hold any JSON string, newlines and
// escaped NULs included (it is stored as the JSON text, which both engines
// keep alike).
var freeText = map[string]bool{"metadata": true}

// frame is one open object or array while checkTokens walks a body.
type frame struct {
	path      string
	object    bool
	keys      map[string]bool
	key       string // the object's key whose value comes next
	wantValue bool   // the object's key was read, its value comes next
	index     int    // the array's next index
}

// checkTokens walks the body's JSON tokens once, before it is decoded, and
// refuses a key that appears twice in one object (at any depth: the last one
// would silently win) and a control character in any single-line text. Both
// are named by their path, like "metadata.plan" or "events[1]". A syntax
// error ends the walk; the decoder describes it.
func checkTokens(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && !top.wantValue {
			key := tok.(string) // the decoder returns only strings here
			if top.keys[key] {
				return duplicateKey(join(top.path, key))
			}
			top.keys[key], top.key, top.wantValue = true, key, true
			continue
		}
		path := ""
		switch {
		case top == nil:
		case top.object:
			path, top.wantValue = join(top.path, top.key), false
		default:
			path = fmt.Sprintf("%s[%d]", top.path, top.index)
			top.index++
		}
		switch t := tok.(type) {
		case json.Delim:
			stack = append(stack, &frame{path: path, object: t == '{', keys: map[string]bool{}})
		case string:
			root, _, _ := strings.Cut(path, ".")
			root, _, _ = strings.Cut(root, "[")
			if !freeText[root] {
				if d := validator.SingleLine(t); d != "" {
					return Invalid{{path, d}}.Err()
				}
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func duplicateKey(path string) error {
	p := problem(http.StatusBadRequest, "duplicate-key", "Duplicate key",
		fmt.Sprintf("%s appears more than once in its object", path))
	p.Errors = []FieldError{{path, "appears more than once in its object"}}
	return p
}
