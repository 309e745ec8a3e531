package catalog

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
)

// Regions of docs/events.md written from the catalog; the prose around
// them is the page's own.
const (
	RegionKinds    = "kinds"
	RegionFields   = "fields"
	RegionExamples = "examples"
	RegionReach    = "reach"
)

// UpdateDoc returns page with each generated region rewritten from the
// catalog. A region runs from the line "<!-- generated: NAME …-->" to the
// line "<!-- end generated: NAME -->"; every region must be there.
func UpdateDoc(page []byte) ([]byte, error) {
	for _, r := range []struct {
		name string
		text func() string
	}{{RegionReach, reachText}, {RegionKinds, kindsTable}, {RegionFields, fieldTables}, {RegionExamples, examplesText}} {
		begin := []byte("<!-- generated: " + r.name)
		end := []byte("<!-- end generated: " + r.name + " -->")
		i := bytes.Index(page, begin)
		j := bytes.Index(page, end)
		if i < 0 || j < i {
			return nil, fmt.Errorf("the page has no region %q (%s … %s)", r.name, begin, end)
		}
		nl := bytes.IndexByte(page[i:], '\n')
		if nl < 0 || i+nl > j {
			return nil, fmt.Errorf("region %q: its first line is not a line of its own", r.name)
		}
		start := i + nl + 1
		page = bytes.Join([][]byte{page[:start], []byte("\n" + r.text() + "\n"), page[j:]}, nil)
	}
	return page, nil
}

// Anchor is the id GitHub gives the heading "### `kind`" (and the portal
// its section), e.g. "licenseexpiresatupdated".
func Anchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// reachText is Reach, with where the destinations are described.
func reachText() string {
	return Reach() + " [destinations.md](destinations.md) describes each destination type."
}

func kindsTable() string {
	var b strings.Builder
	b.WriteString("| Kind | Fires when | `data` |\n|---|---|---|\n")
	for _, k := range Kinds() {
		data := "[" + k.Resource + "](#" + Anchor(k.Resource) + ")" + strings.TrimPrefix(k.Data, k.Resource)
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", k.Kind, Anchor(string(k.Kind)), k.Fires, data)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Resources lists each resource once, in the order the catalog first
// names it, with the fields of its kind whose example shows the most
// (a release with files shows its files' fields too).
func Resources() []Resource {
	var out []Resource
	at := map[string]int{}
	for _, k := range Kinds() {
		i, ok := at[k.Resource]
		if !ok {
			at[k.Resource] = len(out)
			out = append(out, Resource{Name: k.Resource, Fields: k.Fields})
			continue
		}
		if len(k.Fields) > len(out[i].Fields) {
			out[i].Fields = k.Fields
		}
	}
	return out
}

// Resource is the data of a group of kinds.
type Resource struct {
	Name   string
	Fields []Field
}

func fieldTables() string {
	var parts []string
	for _, r := range Resources() {
		var b strings.Builder
		fmt.Fprintf(&b, "### %s\n\n| Field | Type | Meaning |\n|---|---|---|\n", r.Name)
		for _, f := range r.Fields {
			typ := f.Type
			if f.Nullable {
				typ += ", or null"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Name, typ, strings.ReplaceAll(f.Description, "|", `\|`))
		}
		parts = append(parts, strings.TrimSuffix(b.String(), "\n"))
	}
	return strings.Join(parts, "\n\n")
}

func examplesText() string {
	var parts []string
	for _, k := range Kinds() {
		var b strings.Builder
		fmt.Fprintf(&b, "### `%s`\n\n", k.Kind)
		b.WriteString(wrap(k.Fires+" Its `data` is the "+k.Data+".", 78))
		for _, n := range k.Notes {
			b.WriteString("\n\n" + wrap(n, 78))
		}
		b.WriteString("\n\n```json\n" + k.Example + "```")
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "\n\n")
}

// wrap breaks text into lines of at most width characters where it can.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		l := len([]rune(w))
		switch {
		case i == 0:
		case n+1+l > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += l
	}
	return b.String()
}
