package sigcheck

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// member is one key of a parsed object, in the order it came.
type member struct {
	key   string
	value any
}

// object keeps its keys' order, which encoding/json's maps lose: the
// serialisers below differ precisely in whether they keep it.
type object []member

// parseJSON reads one JSON value keeping key order and numbers as written
// (as json.Number), strings, booleans and null as encoding/json reads them.
// A value nested deeper than jsonlimit.MaxDepth is refused before it is
// read: herald sends none, and the recursion below and the indented
// serialisers would otherwise pay for every level at every value.
//
// encoding/json checks the syntax; the tree is built here, by hand,
// because json.Decoder.Token costs some 120 bytes a token, 60 times the
// smallest ones, where this costs what the tree holds.
func parseJSON(b []byte) (any, error) {
	if err := jsonlimit.Check(b); err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, errors.New("not one well-formed JSON value")
	}
	p := parser{b: b}
	return p.value(), nil
}

// parser reads a document json.Valid has accepted, so it meets no error.
type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips space and returns the byte that follows.
func (p *parser) next() byte {
	p.space()
	return p.b[p.i]
}

func (p *parser) value() any {
	switch c := p.next(); c {
	case '{':
		p.i++
		var o object
		if p.next() == '}' {
			p.i++
			return o
		}
		for {
			p.next()
			k := p.str()
			p.next()
			p.i++ // the colon
			o = append(o, member{key: k, value: p.value()})
			if p.next() == ',' {
				p.i++
				continue
			}
			p.i++ // the closing brace
			return o
		}
	case '[':
		p.i++
		a := []any{}
		if p.next() == ']' {
			p.i++
			return a
		}
		for {
			a = append(a, p.value())
			if p.next() == ',' {
				p.i++
				continue
			}
			p.i++ // the closing bracket
			return a
		}
	case '"':
		return p.str()
	case 't':
		p.i += len("true")
		return true
	case 'f':
		p.i += len("false")
		return false
	case 'n':
		p.i += len("null")
		return nil
	}
	start := p.i
	for p.i < len(p.b) && strings.IndexByte("+-0123456789.eE", p.b[p.i]) >= 0 {
		p.i++
	}
	return json.Number(p.b[start:p.i])
}

// str reads the string at p.i. One without escapes, in valid UTF-8, is its
// bytes; any other is decoded by encoding/json, which writes invalid UTF-8
// and lone surrogates as U+FFFD.
func (p *parser) str() string {
	start := p.i
	p.i++
	escaped := false
	for p.b[p.i] != '"' {
		if p.b[p.i] == '\\' {
			escaped = true
			p.i++
		}
		p.i++
	}
	p.i++
	lit := p.b[start:p.i]
	if !escaped && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	json.Unmarshal(lit, &s) // a string json.Valid accepted
	return s
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

// write writes v as the style does.
func (s style) write(b *bufio.Writer, v any) { s.value(b, v, 0) }

func (s style) value(b *bufio.Writer, v any, depth int) {
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
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
}

func (s style) container(b *bufio.Writer, open, close byte, n, depth int, item func(int)) {
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
		s.newline(b, depth+1)
		item(i)
	}
	s.newline(b, depth)
	b.WriteByte(close)
}

// newline starts a line indented depth times, when the style indents.
func (s style) newline(b *bufio.Writer, depth int) {
	if s.indent == "" {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(s.indent)
	}
}

func (s style) str(b *bufio.Writer, v string) {
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
			escape(b, r)
		case r == '/' && s.escapeSlash:
			b.WriteString(`\/`)
		case r >= 0x80 && s.asciiEscape:
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				escape(b, hi)
				escape(b, lo)
			} else {
				escape(b, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// escape writes r, a character of the Basic Multilingual Plane or half of
// a surrogate pair, as \uXXXX with lower-case hex digits, as the libraries
// write it.
func escape(b *bufio.Writer, r rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[r>>shift&0xF])
	}
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
