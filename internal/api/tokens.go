package api

import (
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
// keep alike); a webhook's tls holds PEM, lines by definition, each of its
// strings parsed as PEM by validator.CheckTLS.
var freeText = map[string]bool{"metadata": true, "tls": true}

// tokState is where the body's reader stands in the innermost open
// container (or at the top): what may come next. They are
// json.Decoder.Token's states, one for one, so that the scan stops at the
// very byte where that decoder's Token would fail, and reports what it
// would have reported up to there and nothing after.
type tokState uint8

const (
	topValue    tokState = iota // a value, at the top (more may follow)
	arrayStart                  // a value or ]
	arrayValue                  // a value, after a comma
	arrayComma                  // , or ]
	objectStart                 // a key or }
	objectKey                   // a key, after a comma
	objectColon                 // :
	objectValue                 // a value, after the colon
	objectComma                 // , or }
)

// valueAllowed reports whether a value may start in state s.
func valueAllowed(s tokState) bool {
	return s == topValue || s == arrayStart || s == arrayValue || s == objectValue
}

// valueEnd is the state after a value read in state s.
func valueEnd(s tokState) tokState {
	switch s {
	case arrayStart, arrayValue:
		return arrayComma
	case objectValue:
		return objectComma
	}
	return s
}

// frame is one open object or array while checkTokens scans a body. It
// holds the segment that leads to its next value (a key or an index), not
// the path to it: a path is built from the stack only when an error names
// one, so the scan's memory stays linear in the body however deep it nests.
// (Building each value's path at every level cost a 40 KB body of 20,000
// brackets 640 MB.)
type frame struct {
	object    bool
	state     tokState
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

// checkTokens scans the body once, byte by byte, before it is decoded, and
// refuses nesting deeper than jsonlimit.MaxDepth, a key that appears twice
// in one object (at any depth: the last one would silently win) and a
// control character in any single-line text. The last two are named by
// their path, like "metadata.plan" or "events[1]". A syntax error ends the
// scan; the decoder describes it.
//
// It reports exactly what a walk of the body with json.Decoder.Token would
// (tokens_test.go keeps that walk and fuzzes the two against each other),
// including for the JSON values after the first and for the part of a body
// before its first syntax error, but costs a small fraction of it: the
// scan allocates only for the keys of objects (to find a duplicate) and
// for the stack of open containers, at most MaxDepth frames; it decodes a
// string only to name a control character it holds, or when it is a key
// with escapes. Its work and memory are linear in the body.
//
// body must be UTF-8 (decode checks it first): a key's bytes are its value
// unless it holds an escape.
func checkTokens(body []byte) error { return scanBody(body, false) }

// checkBody is checkTokens that also refuses, 422 naming the field, a
// string holding a lone surrogate escape (see scanStringLone): decode's
// check. checkTokens alone is the token walk's equal, which its fuzz test
// holds it to; the walk reads a lone surrogate as U+FFFD and cannot tell.
func checkBody(body []byte) error { return scanBody(body, true) }

// scanBody is checkTokens, refusing lone surrogates when lone is set.
func scanBody(body []byte, refuseLone bool) error {
	var stack []frame
	i := 0
	for {
		for i < len(body) && isSpace(body[i]) {
			i++
		}
		if i == len(body) {
			return nil
		}
		var top *frame
		state := topValue
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
			state = top.state
		}
		c := body[i]
		switch c {
		case '[', '{':
			if !valueAllowed(state) {
				return nil
			}
			i++
			root, rootDone := "", false
			if top != nil {
				root, rootDone = top.child()
			}
			if len(stack) == jsonlimit.MaxDepth {
				return tooDeep()
			}
			f := frame{object: c == '{', state: arrayStart, root: root, rootDone: rootDone}
			if f.object {
				f.state = objectStart
			}
			stack = append(stack, f)
		case ']', '}':
			if c == ']' && state != arrayStart && state != arrayComma ||
				c == '}' && state != objectStart && state != objectComma {
				return nil
			}
			i++
			// The container is a value of the one around it, which moves
			// on only now: while it was open, that one's key or index
			// led to it.
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				parent := &stack[len(stack)-1]
				advance(parent)
				parent.state = valueEnd(parent.state)
			}
		case ':':
			if state != objectColon {
				return nil
			}
			i++
			top.state = objectValue
		case ',':
			switch state {
			case arrayComma:
				top.state = arrayValue
			case objectComma:
				top.state = objectKey
			default:
				return nil
			}
			i++
		case '"':
			end, control, escaped, lone, ok := scanStringLone(body, i)
			if !ok {
				return nil
			}
			if lone && refuseLone {
				field := path(stack)
				if state == objectStart || state == objectKey {
					field = "body"
				}
				return Invalid{{field, "holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff without its pair), which is no character; send the text as UTF-8, or escape both halves of the pair"}}.Err()
			}
			if state == objectStart || state == objectKey {
				key := string(body[i+1 : end-1])
				if escaped {
					key = unquote(body[i:end])
				}
				if _, dup := top.keys[key]; dup {
					top.key = key
					return duplicateKey(path(stack))
				}
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.keys[key], top.key, top.wantValue = struct{}{}, key, true
				top.state = objectColon
				i = end
				continue
			}
			if !valueAllowed(state) {
				return nil
			}
			if control {
				root := ""
				if top != nil {
					root, _ = top.child()
				}
				if !freeText[root] {
					if d := validator.SingleLine(unquote(body[i:end])); d != "" {
						return Invalid{{path(stack), d}}.Err()
					}
				}
			}
			i = end
			advance(top)
			if top != nil {
				top.state = valueEnd(state)
			}
		default:
			if !valueAllowed(state) {
				return nil
			}
			end, ok := scanScalar(body, i)
			if !ok {
				return nil
			}
			i = end
			advance(top)
			if top != nil {
				top.state = valueEnd(state)
			}
		}
	}
}

// isSpace is JSON's whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scanStringLone reads the JSON string that starts at b[i] (a quote) and
// returns the index just past its closing quote, whether its value holds a
// control character (C0, DEL or C1, as validator.SingleLine sees them:
// raw, or escaped as \n or \u0085), whether it holds an escape, and
// whether it holds a lone surrogate escape (\ud800 to \udbff not followed
// at once by \udc00 to \udfff, or the latter alone: encoding/json reads
// one as U+FFFD, so the text stored would not be the text sent), and
// whether it is a valid string at all. A raw byte below 0x20, an escape
// JSON has not, or a missing closing quote make it invalid, as they do
// for encoding/json.
func scanStringLone(b []byte, i int) (end int, control, escaped, lone, ok bool) {
	high := false // the last escape was a high surrogate; a low one must follow
	for j := i + 1; j < len(b); j++ {
		if high && (b[j] != '\\' || j+1 >= len(b) || b[j+1] != 'u') {
			lone, high = true, false
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, control, escaped, lone, true
		case c < 0x20:
			return 0, false, false, false, false
		case c == 0x7f:
			control = true
		case c == 0xc2:
			// U+0080 to U+009F, C1, are C2 80 to C2 9F in UTF-8.
			if j+1 < len(b) && b[j+1] >= 0x80 && b[j+1] <= 0x9f {
				control = true
			}
		case c == '\\':
			escaped = true
			if j+1 == len(b) {
				return 0, false, false, false, false
			}
			j++
			switch b[j] {
			case '"', '\\', '/':
			case 'b', 'f', 'n', 'r', 't':
				control = true
			case 'u':
				if j+4 >= len(b) {
					return 0, false, false, false, false
				}
				r := rune(0)
				for _, h := range b[j+1 : j+5] {
					switch {
					case '0' <= h && h <= '9':
						h -= '0'
					case 'a' <= h && h <= 'f':
						h -= 'a' - 10
					case 'A' <= h && h <= 'F':
						h -= 'A' - 10
					default:
						return 0, false, false, false, false
					}
					r = r<<4 | rune(h)
				}
				// A surrogate decodes to a rune past U+FFFF, or to
				// U+FFFD alone: neither is a control.
				if r < 0x20 || 0x7f <= r && r <= 0x9f {
					control = true
				}
				switch {
				case 0xd800 <= r && r <= 0xdbff:
					if high {
						lone = true
					}
					high = true
				case 0xdc00 <= r && r <= 0xdfff:
					if !high {
						lone = true
					}
					high = false
				default:
					if high {
						lone = true
					}
					high = false
				}
				j += 4
			default:
				return 0, false, false, false, false
			}
		}
	}
	return 0, false, false, false, false
}

// scanScalar reads the number, true, false or null that starts at b[i]
// and returns the index just past it, and false when b[i:] starts with
// none of them (as encoding/json reads them: a number ends at the first
// byte that cannot continue it, so "01" is two numbers).
func scanScalar(b []byte, i int) (end int, ok bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if b[i] == lit[0] {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i + len(lit), true
			}
			return 0, false
		}
	}
	digits := func(j int) int {
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j
	}
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j == len(b):
		return 0, false
	case b[j] == '0':
		j++
	case '1' <= b[j] && b[j] <= '9':
		j = digits(j + 1)
	default:
		return 0, false
	}
	if j < len(b) && b[j] == '.' {
		k := digits(j + 1)
		if k == j+1 {
			return 0, false
		}
		j = k
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(j)
		if k == j {
			return 0, false
		}
		j = k
	}
	return j, true
}

// unquote returns the value of the JSON string q, quotes included, which
// scanString found valid. encoding/json reads it alike, so the error is
// never seen; were it, the raw bytes stand in, and the decoder that follows
// checkTokens reports the string.
func unquote(q []byte) string {
	var s string
	if json.Unmarshal(q, &s) != nil {
		return string(q[1 : len(q)-1])
	}
	return s
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
