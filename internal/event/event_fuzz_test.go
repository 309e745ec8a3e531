package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// FuzzBuildRoundTrip builds a body from any id, kind, text and metadata and
// checks what a body promises: valid JSON in valid UTF-8, no non-ASCII
// character \u-escaped, and the same values back when parsed.
func FuzzBuildRoundTrip(f *testing.F) {
	for _, s := range []struct{ id, kind, text, meta string }{
		{"0193a1b2-0000-7000-8000-000000000000", "license.created", "Zoë", `{"customer":"Zoë","seats":3}`},
		{"", "", "", `{}`},
		{"id", "license.updated", "\u2028\u2029", `{"a":"\u2028","b":"\u2029"}`},
		{"id", "x", "<&>\"\\/", `{"html":"<script>&amp;</script>","esc":"\"\\\/\b\f\n\r\t"}`},
		{"id", "x", "日本 🚀", `{"k":"Zo\u00eb \ud83d\ude80 \u65e5\u672c","e":"\u00E9"}`},
		{"id", "x", "x", `{"lone":"\ud800","low":"\udc00","pairless":"\ud800\u0041","reversed":"\udc00\ud800"}`},
		{"id", "x", "x", `{"escaped backslash":"\\u00eb","twice":"\\\u00eb"}`},
		{"id", "x", "\x00\x01\x1f\x7f", `{"nul":"\u0000","ctl":"\u001f"}`},
		{"id", "x", "\xff\xfe", "{\"bad\":\"\xff\xc3\"}"},          // invalid UTF-8
		{"id", "x", "\xed\xa0\x80", "{\"cesu\":\"\xed\xa0\x80\"}"}, // a surrogate encoded as UTF-8
		{"id", "x", "x", `{"big":1e999,"neg":-0,"long":123456789012345678901234567890}`},
		{"id", "x", "x", `{"a":1,"a":2}`},
		{"id", "x", "x", `{"deep":[[[[[[[[[[[[[[[[[[[[{"x":null}]]]]]]]]]]]]]]]]]]]]}`},
		{"id", "x", "x", `[1,2,3]`},
		{"id", "x", "x", `null`},
		{"id", "x", "x", `{"unterminated":`},
		{"id", "x", "x", " \t\n{ \"spaced\" : [ 1 , 2 ] } \n"},
		{"id", "x", "x", strings.Repeat(`{"a":`, 61) + "{}" + strings.Repeat("}", 61)}, // 62 levels: the body nests 64
		{"id", "x", "x", strings.Repeat(`{"a":`, 62) + "{}" + strings.Repeat("}", 62)}, // one too many
		{"id", "x", "x", `{"s":"` + strings.Repeat(`[{\"`, 50) + `"}`},
		{"id", "x", "x", `{` + strings.Repeat(`"k":0,`, 500) + `"k":0}`},
	} {
		f.Add(s.id, s.kind, s.text, []byte(s.meta))
	}
	at := time.Date(2026, 11, 21, 8, 7, 13, 120_000_000, time.UTC)
	f.Fuzz(func(t *testing.T, id, kind, text string, meta []byte) {
		type data struct {
			Text     string          `json:"text"`
			Metadata json.RawMessage `json:"metadata"`
		}
		d := data{Text: text}
		if json.Valid(meta) {
			d.Metadata = meta
		}
		body, err := Build(id, Kind(kind), d, at)
		// The body holds metadata two levels in.
		tooDeep := d.Metadata != nil && jsonlimit.Depth(meta, jsonlimit.MaxDepth) > jsonlimit.MaxDepth-2
		switch {
		case tooDeep && errors.Is(err, jsonlimit.ErrTooDeep):
			return
		case tooDeep:
			t.Fatalf("Build of metadata nested past the limit: %v; want ErrTooDeep", err)
		case err != nil:
			t.Fatalf("Build: %v", err)
		}
		if !utf8.Valid(body) {
			t.Fatalf("body is not valid UTF-8: %q", body)
		}
		if !json.Valid(body) {
			t.Fatalf("body is not valid JSON: %q", body)
		}
		if esc, ok := nonASCIIEscape(body); ok {
			t.Fatalf("body escapes a non-ASCII character as %s: %q", esc, body)
		}

		var got struct {
			ID          string `json:"id"`
			Event       string `json:"event"`
			Data        any    `json:"data"`
			TriggeredAt string `json:"triggeredAt"`
		}
		if err := unmarshal(body, &got); err != nil {
			t.Fatalf("parse the body: %v", err)
		}
		var wantMeta any
		if d.Metadata != nil {
			if err := unmarshal(meta, &wantMeta); err != nil {
				t.Fatalf("parse the metadata: %v", err)
			}
		}
		// encoding/json writes each byte of invalid UTF-8 in a string as
		// U+FFFD, and so does any JSON parser reading such bytes.
		want := map[string]any{"text": coerce(text), "metadata": wantMeta}
		if got.ID != coerce(id) || got.Event != coerce(kind) || got.TriggeredAt != "2026-11-21T08:07:13.120Z" {
			t.Errorf("envelope: got %q %q %q", got.ID, got.Event, got.TriggeredAt)
		}
		if !reflect.DeepEqual(got.Data, any(want)) {
			t.Errorf("data: got %#v; want %#v", got.Data, want)
		}
	})
}

// unmarshal parses JSON keeping numbers as written, so that a number too
// large for a float64 compares as the text it is.
func unmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// coerce replaces each byte of invalid UTF-8 in s with U+FFFD.
func coerce(s string) string {
	var out []rune
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, r) // RuneError for an invalid byte, n == 1
		i += n
	}
	return string(out)
}

// nonASCIIEscape finds a \uXXXX escape in b that stands for a non-ASCII
// character, or for a surrogate pair, which should have been written as raw
// UTF-8. Escapes are read in order, so "\\u00e9" is a backslash and text.
func nonASCIIEscape(b []byte) (string, bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' || i+6 > len(b) {
			i++
			continue
		}
		r := unhex(b[i+2 : i+6])
		switch {
		case r < 0x80:
		case !utf16.IsSurrogate(r):
			return string(b[i : i+6]), true
		case r < 0xDC00 && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u':
			if lo := unhex(b[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
				return string(b[i : i+12]), true
			}
		}
		i += 5
	}
	return "", false
}

// unhex reads four hex digits, or -1.
func unhex(b []byte) rune {
	n, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil {
		return -1
	}
	return rune(n)
}
