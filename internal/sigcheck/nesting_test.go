package sigcheck_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
	"github.com/heraldhq/herald/internal/sigcheck"
)

// A body nested deeper than any herald body is said to be so, and is not
// parsed: no re-serialisation is tried, while the byte-level causes still
// are.
func TestDeepBodyIsNotParsed(t *testing.T) {
	t.Parallel()
	tok := auth.NewWebhookToken()
	deep := []byte(`{"data":` + strings.Repeat("[", jsonlimit.MaxDepth) + strings.Repeat("]", jsonlimit.MaxDepth) + `}`)
	r := sigcheck.Check(sigcheck.Input{Body: deep, Signature: hmacB64([]byte(tok), append(slices.Clone(deep), '\n')), Token: tok})
	if !slices.ContainsFunc(r.Notes, func(n sigcheck.Note) bool { return strings.Contains(n.Text, "nests deeper than 64 levels") }) {
		t.Errorf("notes %v; want one saying the body nests deeper than 64 levels", r.Notes)
	}
	if len(r.Causes) != 1 || r.Causes[0].Categories[0] != sigcheck.Whitespace {
		t.Errorf("causes %v; want the added line break found", r.Causes)
	}
	var v any
	json.Unmarshal(deep, &v)
	sorted, _ := json.Marshal(v)
	r = sigcheck.Check(sigcheck.Input{Body: deep, Signature: hmacB64([]byte(tok), sorted), Token: tok})
	for _, c := range r.Causes {
		if slices.Contains(c.Categories, sigcheck.Reserialised) {
			t.Errorf("cause %q: want no re-serialisation of a body too deep to parse", c.Summary)
		}
	}
	// At the limit, it is parsed and re-serialised as before.
	atLimit := []byte(`{"data":` + strings.Repeat("[", jsonlimit.MaxDepth-1) + strings.Repeat("]", jsonlimit.MaxDepth-1) + `}`)
	json.Unmarshal(atLimit, &v)
	indented, _ := json.MarshalIndent(v, "", "  ")
	r = sigcheck.Check(sigcheck.Input{Body: atLimit, Signature: hmacB64([]byte(tok), indented), Token: tok})
	if len(r.Causes) == 0 || r.Causes[0].Categories[0] != sigcheck.Reserialised {
		t.Errorf("causes %v; want the indented re-serialisation found", r.Causes)
	}
}

// maxCheckAllocPerByte bounds what a whole check allocates per byte of the
// body, a wrong signature given so that every variant is tried. The parsed
// tree costs some 50 bytes a value, and the smallest values take two bytes
// ("0,"); the variants are hashed as they are written, never held, so the
// indented ones, up to 130 times the body at the deepest accepted nesting,
// cost no memory. Before, a 16 KiB body 8,192 brackets deep cost 2.4 GB.
const maxCheckAllocPerByte = 80

// TestCheckAllocatesLinearly checks the worst shapes at the largest body
// the portal's form carries. Not parallel: the count is the whole
// process's.
func TestCheckAllocatesLinearly(t *testing.T) {
	tok := auth.NewWebhookToken()
	for _, s := range jsonlimittest.Shapes(512 << 10) {
		var r sigcheck.Report
		limit := uint64(maxCheckAllocPerByte * len(s.Body))
		got := jsonlimittest.Allocated(limit, func() { r = sigcheck.Check(sigcheck.Input{Body: s.Body, Signature: "AAAA", Token: tok}) })
		t.Logf("%s: %d bytes allocated for %d bytes (%.1f per byte)", s.Name, got, len(s.Body), float64(got)/float64(len(s.Body)))
		if got > limit {
			t.Errorf("%s: %d bytes allocated for %d bytes of body; want at most %d per byte", s.Name, got, len(s.Body), maxCheckAllocPerByte)
		}
		deepNote := slices.ContainsFunc(r.Notes, func(n sigcheck.Note) bool { return strings.Contains(n.Text, "nests deeper") })
		if deepNote != s.Deep {
			t.Errorf("%s: notes %v; want the nesting noted: %v", s.Name, r.Notes, s.Deep)
		}
	}
}
