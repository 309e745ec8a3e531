package sigcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
}

func (s style) write(v any) []byte {
	var b bytes.Buffer
	s.value(&b, v, 0)
	return b.Bytes()
}

func (s style) value(b *bytes.Buffer, v any, depth int) {
	switch v := v.(type) {
	case object:
		if s.sortKeys {
			v = slices.Clone(v)
			slices.SortStableFunc(v, func(x, y member) int { return strings.Compare(x.key, y.key) })
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
		b.WriteString(string(v))
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
