package sigcheck

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// member is one key of a parsed object, in the order it came.
type member struct {
	key   string
	value any
}

// object keeps its keys' order, which encoding/json's maps lose: the
// serialisers below differ precisely in whether they keep it.
type object []member

// parseJSON reads one JSON value keeping key order and numbers as written.
func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		var o object
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, member{key: k.(string), value: v})
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// style is how a library writes JSON.
type style struct {
	sortKeys    bool
	indent      string // "": on one line
	itemSep     string // between items on one line; "" means ","
	keySep      string // between a key and its value; "" means ":"
	htmlEscape  bool   // <, > and & as \u003c…
	asciiEscape bool   // every non-ASCII character as \uXXXX
	escapeSlash bool   // / as \/
	// js writes what JavaScript's JSON.stringify(JSON.parse(body)) does:
	// keys that are array indices ("2", "10") first, in numeric order, and
	// numbers as JavaScript prints them (1.50 becomes 1.5).
	js bool
}

func (s style) write(v any) []byte {
	var b bytes.Buffer
	s.value(&b, v, 0)
	return b.Bytes()
}

func (s style) value(b *bytes.Buffer, v any, depth int) {
	switch v := v.(type) {
	case object:
		switch {
		case s.sortKeys:
			v = slices.Clone(v)
			slices.SortStableFunc(v, func(x, y member) int { return strings.Compare(x.key, y.key) })
		case s.js:
			v = jsOrder(v)
		}
		s.container(b, '{', '}', len(v), depth, func(i int) {
			s.str(b, v[i].key)
			b.WriteString(or(s.keySep, ":"))
			s.value(b, v[i].value, depth+1)
		})
	case []any:
		s.container(b, '[', ']', len(v), depth, func(i int) { s.value(b, v[i], depth+1) })
	case string:
		s.str(b, v)
	case json.Number:
		if s.js {
			b.WriteString(jsNumber(v))
		} else {
			b.WriteString(string(v))
		}
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	}
}

func (s style) container(b *bytes.Buffer, open, close byte, n, depth int, item func(int)) {
	b.WriteByte(open)
	if n == 0 {
		b.WriteByte(close)
		return
	}
	for i := range n {
		if i > 0 {
			if s.indent != "" {
				b.WriteByte(',')
			} else {
				b.WriteString(or(s.itemSep, ","))
			}
		}
		if s.indent != "" {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(s.indent, depth+1))
		}
		item(i)
	}
	if s.indent != "" {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(s.indent, depth))
	}
	b.WriteByte(close)
}

func (s style) str(b *bytes.Buffer, v string) {
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20, s.htmlEscape && (r == '<' || r == '>' || r == '&'), s.htmlEscape && (r == 0x2028 || r == 0x2029):
			fmt.Fprintf(b, `\u%04x`, r)
		case r == '/' && s.escapeSlash:
			b.WriteString(`\/`)
		case r >= 0x80 && s.asciiEscape:
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// jsOrder orders an object's members as a JavaScript object keeps them:
// integer-like keys first, ascending, then the others as they came.
func jsOrder(o object) object {
	var idx, rest object
	for _, m := range o {
		if _, ok := arrayIndex(m.key); ok {
			idx = append(idx, m)
		} else {
			rest = append(rest, m)
		}
	}
	slices.SortStableFunc(idx, func(x, y member) int {
		a, _ := arrayIndex(x.key)
		b, _ := arrayIndex(y.key)
		return cmp.Compare(a, b)
	})
	return append(idx, rest...)
}

// arrayIndex reads a canonical array index: digits without a leading
// zero, below 2³²−1.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return n, err == nil && n < 1<<32-1
}

// jsNumber writes a number as JavaScript prints it: the shortest form that
// reads back, plain digits from 1e-6 to 1e21, an exponent outside.
func jsNumber(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return string(n)
	}
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // 1e+21, 1.5e-08
	mant, exp, _ := strings.Cut(e, "e")
	sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + digits
}
