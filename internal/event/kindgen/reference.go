package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The API reference's generated regions. Each runs from the line
// "# generated: NAME …" to the line "# end generated: NAME", both at the
// region's indentation; the rest of the document is written by hand, but
// for the kinds table of its introduction (kindsTable), which sits inside
// a block of Markdown, where a comment line would be text.
const (
	regionSchemas  = "kinds"      // in components/schemas: EventKind and a payload schema per kind
	regionWebhooks = "webhooks"   // top level: the webhooks, one per kind
	regionBodies   = "deliveries" // in components/requestBodies: a delivery's body per kind
)

// reference returns the YAML reference with its generated regions
// rewritten from kinds.
func reference(doc []byte, kinds []decl) ([]byte, error) {
	schemas, err := schemasRegion(kinds)
	if err != nil {
		return nil, err
	}
	doc, err = replaceRegion(doc, regionSchemas, schemas)
	if err != nil {
		return nil, err
	}
	doc, err = replaceRegion(doc, regionBodies, requestBodiesRegion(kinds))
	if err != nil {
		return nil, err
	}
	doc, err = replaceRegion(doc, regionWebhooks, webhooksRegion(kinds))
	if err != nil {
		return nil, err
	}
	return replaceTable(doc, kindsTable(kinds))
}

// tableHeader begins the kinds table in the reference's introduction.
const tableHeader = "| Event kind | Fires when | `data` |"

// kindsTable is the introduction's table: a row per kind, what fires it and
// its data, as the catalog's (docs/events.md) says them.
func kindsTable(kinds []decl) []string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	rows := []string{tableHeader, "|---|---|---|"}
	for _, k := range kinds {
		rows = append(rows, "| `"+k.Kind+"` | "+cell(k.Fires)+" | "+cell(k.Data)+" |")
	}
	return rows
}

// replaceTable rewrites the table that starts with a line beginning as
// tableHeader does, through its last row, at the header's indentation.
func replaceTable(doc []byte, rows []string) ([]byte, error) {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	begin := slices.IndexFunc(lines, func(l []byte) bool {
		return strings.HasPrefix(strings.TrimSpace(string(l)), "| Event kind |")
	})
	if begin < 0 {
		return nil, fmt.Errorf("no kinds table (a line beginning %q)", "| Event kind |")
	}
	end := begin + 1
	for end < len(lines) && strings.HasPrefix(strings.TrimSpace(string(lines[end])), "|") {
		end++
	}
	indent := string(lines[begin][:len(lines[begin])-len(bytes.TrimLeft(lines[begin], " "))])
	var b bytes.Buffer
	for _, l := range lines[:begin] {
		b.Write(l)
	}
	for _, r := range rows {
		b.WriteString(indent + r + "\n")
	}
	for _, l := range lines[end:] {
		b.Write(l)
	}
	return b.Bytes(), nil
}

func replaceRegion(doc []byte, name string, text func(indent string) string) ([]byte, error) {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	begin, end := -1, -1
	var indent string
	for i, l := range lines {
		t := strings.TrimSpace(string(l))
		switch {
		case strings.HasPrefix(t, "# generated: "+name+" ") || t == "# generated: "+name:
			begin = i
			indent = string(l[:len(l)-len(bytes.TrimLeft(l, " "))])
		case t == "# end generated: "+name:
			end = i
		}
	}
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no region %q (# generated: %[1]s … # end generated: %[1]s)", name)
	}
	var b bytes.Buffer
	for _, l := range lines[:begin+1] {
		b.Write(l)
	}
	b.WriteString(text(indent))
	for _, l := range lines[end:] {
		b.Write(l)
	}
	return b.Bytes(), nil
}

// triggeredAtPattern is event.TimeFormat as a pattern: UTC, exactly three
// fractional digits, Z.
const triggeredAtPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$`

func schemasRegion(kinds []decl) (func(string) string, error) {
	examples := make([]string, len(kinds))
	for i, k := range kinds {
		// Compact, in the declared field order: JSON is YAML's flow style.
		var c bytes.Buffer
		if err := json.Compact(&c, []byte(k.Example)); err != nil {
			return nil, fmt.Errorf("%s: example: %w", k.Kind, err)
		}
		examples[i] = c.String()
	}
	return func(in string) string {
		w := &yamlWriter{indent: in}
		w.line(0, "EventKind:")
		w.line(1, "type: string")
		w.block(1, "description", `The kind of an event. See "Events" above for what fires each kind and its `+"`data`"+`. More kinds may be added.`)
		w.line(1, "enum:")
		for _, k := range kinds {
			w.line(2, "- "+k.Kind)
		}
		w.line(1, "example: "+kinds[0].Kind)
		for i, k := range kinds {
			w.line(0, k.Const+"Event:")
			w.line(1, "type: object")
			w.line(1, "title: "+quote(k.Kind))
			w.block(1, "description", "The payload of a `"+k.Kind+"` delivery. "+k.Fires+" Its `data` is the "+k.Data+".")
			w.line(1, "additionalProperties: false")
			w.line(1, "required: [id, event, data, triggeredAt]")
			w.line(1, "properties:")
			w.line(2, "id:")
			w.line(3, "type: string")
			w.line(3, "format: uuid")
			w.line(3, "description: The event id; the same for every webhook and every attempt, for de-duplication.")
			w.line(2, "event:")
			w.line(3, "type: string")
			w.line(3, "const: "+quote(k.Kind))
			w.line(2, "data:")
			w.line(3, "$ref: '#/components/schemas/"+k.Resource+"'")
			w.line(2, "triggeredAt:")
			w.line(3, "type: string")
			w.line(3, "format: date-time")
			w.line(3, "pattern: '"+triggeredAtPattern+"'")
			w.line(3, "description: When the event fired, UTC with exactly three fractional digits.")
			if k.sequenced() {
				w.line(2, "sequence:")
				w.line(3, "type: integer")
				w.line(3, "minimum: 1")
				w.block(3, "description", "The event's number among its license's events (the license's own and its activations'), from 1 for `license.created`, "+
					"counted across kinds and the same for every webhook. Present on every delivery of this kind but a Test delivery, which concerns no real license. "+
					"A receiver keeps the highest it applied per license: a lower one is stale, a gap means an event not yet received.")
			}
			w.line(1, "examples:")
			w.line(2, "- "+examples[i])
		}
		return w.String()
	}, nil
}

func webhooksRegion(kinds []decl) func(string) string {
	return func(in string) string {
		w := &yamlWriter{indent: in}
		w.line(0, "webhooks:")
		for _, k := range kinds {
			w.line(1, quote(k.Kind)+":")
			w.line(2, "post:")
			w.line(3, "tags: [Events]")
			w.line(3, "summary: "+quote(k.Kind))
			w.line(3, "operationId: deliver"+k.Const)
			text := k.Fires + " Its `data` is the " + k.Data + "."
			for _, n := range k.Notes {
				text += "\n\n" + n
			}
			text += "\n\nherald POSTs this to every webhook that subscribes to `" + k.Kind + "`. " +
				"The payload's JSON Schema (2020-12) is served at `GET /v3/event-types/" + k.Kind + "/schema`."
			w.block(3, "description", text)
			w.line(3, "security: []")
			w.line(3, "parameters:")
			for _, p := range []string{"DeliverySignature", "DeliverySignatureNext", "DeliveryTimestamp", "DeliveryID", "DeliveryUserAgent"} {
				w.line(4, "- $ref: '#/components/parameters/"+p+"'")
			}
			w.line(3, "requestBody:")
			w.line(4, "$ref: '#/components/requestBodies/"+k.Const+"Delivery'")
			w.line(3, "responses:")
			w.line(4, "2XX:")
			w.line(5, "$ref: '#/components/responses/DeliveryAcknowledged'")
			w.line(4, "default:")
			w.line(5, "$ref: '#/components/responses/DeliveryFailed'")
		}
		return w.String()
	}
}

// requestBodiesRegion is in components/requestBodies: a request body per
// kind, so that each webhook names its schema once.
func requestBodiesRegion(kinds []decl) func(string) string {
	return func(in string) string {
		w := &yamlWriter{indent: in}
		for _, k := range kinds {
			w.line(0, k.Const+"Delivery:")
			w.line(1, "required: true")
			w.line(1, "description: "+quote("A `"+k.Kind+"` payload. `Content-Type: application/json; charset=utf-8`; raw UTF-8, no `\\uXXXX` escapes; verify the signature over these bytes as received."))
			w.line(1, "content:")
			w.line(2, "application/json:")
			w.line(3, "schema:")
			w.line(4, "$ref: '#/components/schemas/"+k.Const+"Event'")
		}
		return w.String()
	}
}

// yamlWriter writes YAML lines two spaces per level below a region's
// indentation.
type yamlWriter struct {
	strings.Builder
	indent string
}

func (w *yamlWriter) line(level int, s string) {
	w.WriteString(w.indent + strings.Repeat("  ", level) + s + "\n")
}

// block writes key as a literal block, wrapped at 76 columns, paragraphs
// kept.
func (w *yamlWriter) block(level int, key, text string) {
	w.line(level, key+": |")
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			w.WriteString("\n")
		}
		for _, l := range strings.Split(wrap(para, 76-len(w.indent)-2*level-2), "\n") {
			w.line(level+1, l)
		}
	}
}

// quote writes s as a YAML double-quoted scalar (JSON's syntax).
func quote(s string) string {
	b, _ := marshal(s)
	return string(b)
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// wrap breaks text into lines of at most width characters where it can.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		l := len([]rune(word))
		switch {
		case i == 0:
		case n+1+l > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += l
	}
	return b.String()
}
