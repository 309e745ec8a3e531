package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/validator"
)

// freeText names the top-level fields whose strings are the client's own
// JSON, kept as sent: metadata may hold any JSON string, newlines and
// escaped NULs included (it is stored as the JSON text, which both engines
// keep alike).
var freeText = map[string]bool{"metadata": true}

// frame is one open object or array while checkTokens walks a body. It
// holds the segment that leads to its next value (a key or an index), not
// the path to it: a path is built from the stack only when an error names
// one, so the walk's memory stays linear in the body however deep it nests.
// (Building each value's path at every level cost a 40 KB body of 20,000
// brackets 640 MB.)
type frame struct {
	object    bool
	keys      map[string]struct{} // the object's keys so far; nil before the first
	key       string              // the object's key whose value comes next
	wantValue bool                // the object's key was read, its value comes next
	index     int                 // the array's next index
	// root is what the path of this container starts with, cut at its
	// first "." or "[", as the path itself would be: rootDone once the path
	// holds one of those, and the root can grow no more.
	root     string
	rootDone bool
}

// child returns the root of the path of the frame's next value.
func (f *frame) child() (root string, done bool) {
	switch {
	case f.rootDone:
		return f.root, true
	case !f.object: // path[i]
		return f.root, true
	case f.root != "": // path.key
		return f.root, true
	}
	// The path is the key alone; a key may itself hold "." or "[".
	if i := strings.IndexAny(f.key, ".["); i >= 0 {
		return f.key[:i], true
	}
	return f.key, false
}

// checkTokens walks the body's JSON tokens once, before it is decoded, and
// refuses nesting deeper than jsonlimit.MaxDepth, a key that appears twice
// in one object (at any depth: the last one would silently win) and a
// control character in any single-line text. The last two are named by
// their path, like "metadata.plan" or "events[1]". A syntax error ends the
// walk; the decoder describes it.
//
// Its work and memory are linear in the body: each token costs what the
// decoder allocates for it and a constant more.
func checkTokens(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			// The container is a value of the one around it, which moves
			// on only now: while it was open, that one's key or index
			// led to it.
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				advance(&stack[len(stack)-1])
			}
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && !top.wantValue {
			key := tok.(string) // the decoder returns only strings here
			if _, dup := top.keys[key]; dup {
				top.key = key
				return duplicateKey(path(stack))
			}
			if top.keys == nil {
				top.keys = map[string]struct{}{}
			}
			top.keys[key], top.key, top.wantValue = struct{}{}, key, true
			continue
		}
		root, rootDone := "", false
		if top != nil {
			root, rootDone = top.child()
		}
		switch t := tok.(type) {
		case json.Delim:
			if len(stack) == jsonlimit.MaxDepth {
				return tooDeep()
			}
			stack = append(stack, frame{object: t == '{', root: root, rootDone: rootDone})
			continue
		case string:
			if !freeText[root] {
				if d := validator.SingleLine(t); d != "" {
					return Invalid{{path(stack), d}}.Err()
				}
			}
		}
		advance(top)
	}
}

// advance moves an open container past the value just read: an object
// waits for its next key, an array counts the value.
func advance(f *frame) {
	switch {
	case f == nil:
	case f.object:
		f.wantValue = false
	default:
		f.index++
	}
}

// path names the next value of the innermost open container, as in
// "metadata.list[1].a": keys joined with ".", array indexes in brackets.
func path(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		if f.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func duplicateKey(path string) error {
	p := problem(http.StatusBadRequest, "duplicate-key", "Duplicate key",
		fmt.Sprintf("%s appears more than once in its object", path))
	p.Errors = []FieldError{{path, "appears more than once in its object"}}
	return p
}

// tooDeep answers a body nested deeper than any herald reads.
func tooDeep() error {
	return problem(http.StatusBadRequest, "too-deep", "Nesting too deep", jsonlimit.ErrTooDeep.Error())
}
