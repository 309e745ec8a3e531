package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
)

// TestCheckTokens: the body walk names a duplicate key or a control
// character by its path, exempts metadata's strings, and refuses nesting
// past jsonlimit.MaxDepth, taking a body nested exactly that deep.
func TestCheckTokens(t *testing.T) {
	t.Parallel()
	// deep nests inner in n objects.
	deep := func(n int, inner string) string {
		return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
	}
	for _, tc := range []struct {
		body   string
		status int    // 0: accepted
		field  string // the field the problem names
		detail string
	}{
		{`{"name":"a"}`, 0, "", ""},
		{`{"name":"a","name":"b"}`, 400, "name", "name appears more than once in its object"},
		{`{"name":"a","metadata":{"plan":"x","n":{"a":1},"plan":"y"}}`, 400, "metadata.plan", "metadata.plan appears more than once in its object"},
		{`{"metadata":{"list":[{"a":1},{"a":1,"a":2}]}}`, 400, "metadata.list[1].a", "metadata.list[1].a appears more than once in its object"},
		{`{"metadata":{"a":{"k":1},"b":{"k":1}}}`, 0, "", ""},
		{`[{"a":1},[[1],{"b":1,"b":2}]]`, 400, "[1][1].b", "[1][1].b appears more than once in its object"},
		{`{"events":["license.created","a\u0000b"]}`, 422, "events[1]", "events[1]: must not hold control characters such as U+0000"},
		{`{"a":[1,{"b":"\n"}]}`, 422, "a[1].b", "a[1].b: must not hold control characters such as U+000A"},
		{`{"metadata":{"note":"line\nbreak \u0000"}}`, 0, "", ""},
		{`{"metadata":["\u0001",{"k":"\t"}]}`, 0, "", ""},
		// The exemption is by the path's first name, as the path reads.
		{`{"metadata.x":"\n"}`, 0, "", ""},
		{`{"metadata[0]":"\n"}`, 0, "", ""},
		{`{"":{"metadata":"\n"}}`, 0, "", ""},
		{`{"":{"a":{"metadata":"\n"}}}`, 422, "a.metadata", "a.metadata: must not hold control characters such as U+000A"},
		{`[{"metadata":"\n"}]`, 422, "[0].metadata", "[0].metadata: must not hold control characters such as U+000A"},
		{`"\n"`, 422, "", ": must not hold control characters such as U+000A"},
		// A syntax error ends the walk; the decoder describes it.
		{`{"a":1 "a":2}`, 0, "", ""},
		{`{"a":"\n"`, 422, "a", "a: must not hold control characters such as U+000A"},
		// Nesting: exactly MaxDepth levels pass, one more is refused,
		// whatever comes after it.
		{deep(jsonlimit.MaxDepth, "1"), 0, "", ""},
		{deep(jsonlimit.MaxDepth, "[]"), 400, "", "JSON nesting deeper than 64 levels is refused"},
		{deep(jsonlimit.MaxDepth, `{"x":1,"x":2}`), 400, "", "JSON nesting deeper than 64 levels is refused"},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), 400, "", "JSON nesting deeper than 64 levels is refused"},
		{`{"a":1,"a":` + strings.Repeat("[", 100), 400, "a", "a appears more than once in its object"},
	} {
		err := checkTokens([]byte(tc.body))
		var p *Problem
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%.80s: %v; want it accepted", tc.body, err)
		case tc.status == 0:
		case !errors.As(err, &p):
			t.Errorf("%.80s: %v; want a %d problem", tc.body, err, tc.status)
		case p.Status != tc.status || p.Detail != tc.detail || fieldOf(p) != tc.field:
			t.Errorf("%.80s: %d %q naming %q; want %d %q naming %q", tc.body, p.Status, p.Detail, fieldOf(p), tc.status, tc.detail, tc.field)
		}
	}
	var p *Problem
	if err := checkTokens([]byte(deep(jsonlimit.MaxDepth+1, "1"))); !errors.As(err, &p) ||
		p.Type != "https://herald.dev/problems/too-deep" || p.Title != "Nesting too deep" {
		t.Errorf("too deep: %v; want the too-deep problem", err)
	}
}

func fieldOf(p *Problem) string {
	if len(p.Errors) == 0 {
		return ""
	}
	return p.Errors[0].Field
}

// maxAllocPerByte bounds what the walk allocates per byte of body. Each
// token costs what json.Decoder.Token allocates for it, about 120 bytes for
// a number, and the smallest tokens take two bytes ("0,"), so about 60 is
// the floor; the walk itself adds nothing per level. Before paths were
// built only for errors, a body 20,000 brackets deep (40 KB) allocated
// 16,000 bytes per byte, 640 MB.
const maxAllocPerByte = 100

// TestCheckTokensAllocatesLinearly feeds the walk the worst shapes at the
// largest body the API reads, and the bracket bombs, and holds
// what it allocates to a fixed multiple of the body. Not parallel: the
// count is the whole process's.
func TestCheckTokensAllocatesLinearly(t *testing.T) {
	shapes := jsonlimittest.Shapes(MaxBody)
	for _, n := range []int{40_000, 200_000} {
		shapes = append(shapes, jsonlimittest.Shape{Name: fmt.Sprintf("%d brackets", n),
			Body: []byte(strings.Repeat("[", n/2) + strings.Repeat("]", n/2)), Deep: true})
	}
	for _, s := range shapes {
		t.Run(s.Name, func(t *testing.T) {
			var err error
			limit := uint64(maxAllocPerByte * len(s.Body))
			got := jsonlimittest.Allocated(limit, func() { err = checkTokens(s.Body) })
			t.Logf("%d bytes: %d allocated (%.1f per byte)", len(s.Body), got, float64(got)/float64(len(s.Body)))
			if got > limit {
				t.Errorf("%d bytes allocated for %d bytes of body; want at most %d (%d per byte)", got, len(s.Body), limit, maxAllocPerByte)
			}
			var p *Problem
			switch {
			case s.Deep && (!errors.As(err, &p) || p.Detail != jsonlimit.ErrTooDeep.Error()):
				t.Errorf("checkTokens: %v; want the nesting refused", err)
			case !s.Deep && err != nil:
				t.Errorf("checkTokens: %v; want it accepted", err)
			}
		})
	}
}
