package sigcheck

import (
	"bufio"
	"bytes"
	"unicode/utf8"
)

// variant is the body as a receiver may have turned it before hashing. It
// is written out on demand, straight into the hashes that test it, so that
// no variant is held in memory: the indented ones are many times the size
// of the body.
type variant struct {
	write func(w *bufio.Writer)
	cause *Cause // nil: the exact bytes
}

// variants lists the body and what common receiver code makes of it:
// whitespace trimmed or added, line endings changed, the text put through
// another encoding, and, when tree is the parsed body, the JSON
// re-serialised the ways common libraries write it. Variants equal to the
// body itself or to an earlier one are left out by causes.
func variants(body []byte, tree any, parsed bool) []variant {
	out := []variant{{write: bytesOf(body)}}
	add := func(write func(w *bufio.Writer), cat Category, summary, fix string) {
		out = append(out, variant{write: write, cause: &Cause{Categories: []Category{cat}, Summary: summary, Fix: fix}})
	}
	const rawFix = "Hash the raw request body exactly as received, before any parsing or decoding."

	add(bytesOf(bytes.TrimSpace(body)), Whitespace, "The receiver trims whitespace from the body before hashing it.", rawFix)
	add(bytesOf(body, '\n'), Whitespace, "The receiver hashes the body with a line break added at its end.", rawFix)
	add(bytesOf(body, '\r', '\n'), Whitespace, "The receiver hashes the body with a CRLF added at its end.", rawFix)
	add(func(w *bufio.Writer) { w.Write(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))) }, Whitespace,
		"The receiver's copy has LF line endings where this body has CRLF.", "Hash the bytes as received; do not convert line endings.")
	add(func(w *bufio.Writer) {
		w.Write(bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n")))
	}, Whitespace,
		"The receiver's copy has CRLF line endings where this body has LF.", "Hash the bytes as received; do not convert line endings.")

	if utf8.Valid(body) {
		add(func(w *bufio.Writer) { writeLatin1(w, body) }, Encoding, "The receiver re-encodes the body as Latin-1 (ISO-8859-1) before hashing it: accented letters change bytes, and characters Latin-1 lacks become ?.",
			"Hash the UTF-8 bytes as received; do not decode and re-encode the text.")
	}
	add(func(w *bufio.Writer) { writeLatin1AsUTF8(w, body) }, Encoding, "The receiver reads the UTF-8 body as Latin-1 (or Windows-1252) and hashes it re-encoded as UTF-8, so each accented letter is encoded twice (Zoë becomes ZoÃ«).",
		"Hash the raw bytes; if the framework decodes the body, read it as UTF-8 or, better, as bytes.")
	add(func(w *bufio.Writer) { w.Write([]byte{0xEF, 0xBB, 0xBF}); w.Write(body) }, Encoding, "The receiver hashes the body with a UTF-8 byte order mark in front.", rawFix)
	if b, ok := bytes.CutPrefix(body, []byte{0xEF, 0xBB, 0xBF}); ok {
		add(bytesOf(b), Encoding, "The receiver drops the body's byte order mark before hashing.", rawFix)
	}

	if !parsed {
		return out
	}
	for _, s := range serialisers {
		add(func(w *bufio.Writer) { s.style.write(w, tree) }, Reserialised, "The receiver parses the JSON and hashes it written out again: "+s.name+".",
			"Hash the raw request body before parsing it; re-serialising does not reproduce herald's bytes (key order, spaces and escapes differ).")
	}
	return out
}

// bytesOf writes b, then more.
func bytesOf(b []byte, more ...byte) func(w *bufio.Writer) {
	return func(w *bufio.Writer) {
		w.Write(b)
		w.Write(more)
	}
}

// serialisers are the ways common libraries write parsed JSON back out.
var serialisers = []struct {
	name  string
	style style
}{
	{"compact with keys sorted (Go's json.Marshal of a map, Jackson's ORDER_MAP_ENTRIES_BY_KEYS)", style{sortKeys: true, htmlEscape: true}},
	{"compact with keys sorted, no HTML escaping", style{sortKeys: true}},
	{"compact with <, > and & escaped (Go's json.Marshal of a struct)", style{htmlEscape: true}},
	{"compact with non-ASCII characters escaped as \\uXXXX", style{asciiEscape: true}},
	{"compact with non-ASCII characters and slashes escaped (PHP's json_encode)", style{asciiEscape: true, escapeSlash: true}},
	{"with spaces after commas and colons, non-ASCII escaped (Python's json.dumps)", style{itemSep: ", ", keySep: ": ", asciiEscape: true}},
	{"with spaces after commas and colons, non-ASCII escaped, keys sorted (Python's json.dumps with sort_keys)", style{itemSep: ", ", keySep: ": ", asciiEscape: true, sortKeys: true}},
	{"with spaces after commas and colons (Python's json.dumps with ensure_ascii=False)", style{itemSep: ", ", keySep: ": "}},
	{"compact, non-ASCII escaped (Python's json.dumps with separators=(',', ':'))", style{asciiEscape: true}},
	{"indented by 2 spaces (JSON.stringify(body, null, 2))", style{indent: "  ", keySep: ": "}},
	{"indented by 2 spaces, keys sorted", style{indent: "  ", keySep: ": ", sortKeys: true}},
	{"indented by 4 spaces, non-ASCII escaped (Python's json.dumps with indent=4)", style{indent: "    ", keySep: ": ", asciiEscape: true}},
	{"indented by 4 spaces", style{indent: "    ", keySep: ": "}},
	{"compact, with integer-like keys moved first and numbers rewritten (JavaScript's JSON.stringify(JSON.parse(body)))", style{js: true}},
	{"compact (json_encode with JSON_UNESCAPED_UNICODE, Ruby's to_json)", style{}},
}

// writeLatin1 writes the UTF-8 text body encoded as ISO-8859-1, each
// character Latin-1 lacks written as ?, as Python's errors="replace" and
// Java's getBytes do.
func writeLatin1(w *bufio.Writer, body []byte) {
	for _, r := range string(body) {
		if r > 0xFF {
			r = '?'
		}
		w.WriteByte(byte(r))
	}
}

// writeLatin1AsUTF8 reads each byte as a Latin-1 character and writes it
// as UTF-8: what a receiver that decodes UTF-8 bytes as Latin-1 hashes.
func writeLatin1AsUTF8(w *bufio.Writer, body []byte) {
	for _, c := range body {
		w.WriteRune(rune(c))
	}
}
