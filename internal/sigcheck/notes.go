package sigcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// Note is something the body shows by itself that no herald body has:
// it tells a receiver that what it pasted is not what herald sent.
type Note struct {
	Category Category // "" when it is not one of the mistakes
	Text     string
}

// herald's bodies are compact JSON objects with these keys, in this order,
// in raw UTF-8, on one line.
var payloadKeys = []string{"id", "event", "data", "triggeredAt"}

var nonASCIIEscape = regexp.MustCompile(`\\u00[89a-fA-F][0-9a-fA-F]|\\u0[1-9a-fA-F][0-9a-fA-F]{2}|\\u[1-9a-fA-F][0-9a-fA-F]{3}`)

// notes reads what the body shows by itself; tree is the parsed body when
// parsed.
func notes(body []byte, tree any, parsed bool) []Note {
	var out []Note
	add := func(c Category, text string) { out = append(out, Note{Category: c, Text: text}) }
	if len(body) == 0 {
		return []Note{{Text: "The body is empty; herald never sends an empty body."}}
	}
	if bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}) {
		add(Encoding, "The body starts with a UTF-8 byte order mark; herald's bodies have none.")
	}
	if !utf8.Valid(body) {
		add(Encoding, "The body is not valid UTF-8; herald's bodies always are. It went through another encoding (Latin-1?).")
	} else if doubleEncoded(body) {
		add(Encoding, "The body looks encoded twice (such as ZoÃ« for Zoë): UTF-8 bytes were read as Latin-1 and written out as UTF-8.")
	}
	if t := bytes.TrimSpace(body); len(t) != len(body) {
		add(Whitespace, "The body starts or ends with whitespace; herald's bodies begin with { and end with }.")
	}
	if bytes.ContainsAny(body, "\r\n") {
		add(Whitespace, "The body holds line breaks; herald's bodies are on one line (line breaks inside values are written \\n).")
	}
	if nonASCIIEscape.Match(body) {
		add(Reserialised, "The body escapes non-ASCII characters as \\uXXXX; herald sends them as raw UTF-8.")
	}
	if jsonlimit.Check(body) != nil {
		add("", fmt.Sprintf("The body nests deeper than %d levels; herald's bodies never do, so it is not a whole herald body.", jsonlimit.MaxDepth))
		return out
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		add("", "The body is not valid JSON, so it is not a whole herald body: it may be cut short or edited.")
		return out
	}
	if !bytes.Equal(compact.Bytes(), bytes.TrimSpace(body)) {
		add(Reserialised, "The body has spaces or line breaks between its JSON tokens; herald's bodies are compact.")
	}
	if parsed {
		if o, ok := tree.(object); ok {
			var keys []string
			for _, m := range o {
				keys = append(keys, m.key)
			}
			if !slices.Equal(keys, payloadKeys) && slices.Equal(sorted(keys), sorted(payloadKeys)) {
				add(Reserialised, "The body's keys are in another order than herald's (id, event, data, triggeredAt): it was re-serialised.")
			}
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// doubleEncoded reports whether valid UTF-8 text, written back as Latin-1
// bytes, is itself valid UTF-8 with multi-byte characters: the mark of
// text encoded twice.
func doubleEncoded(body []byte) bool {
	back := make([]byte, 0, len(body))
	multi := false
	for _, r := range string(body) {
		if r > 0xFF {
			return false
		}
		if r >= 0x80 {
			multi = true
		}
		back = append(back, byte(r))
	}
	return multi && utf8.Valid(back)
}
