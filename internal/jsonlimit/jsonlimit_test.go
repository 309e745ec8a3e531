package jsonlimit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
	"github.com/heraldhq/herald/webhook"
)

func TestDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json string
		want int
	}{
		{``, 0},
		{`1`, 0},
		{`"[[["`, 0},
		{`[]`, 1},
		{`{"a":[1]}`, 2},
		{`[[],[[]],[]]`, 3},
		{`{"a":"]]]","b":{"c":"{{{"}}`, 2},
		{`["\"[[", ["x"]]`, 2},
		{`["\\", ["x"]]`, 2},    // an escaped backslash ends the escape
		{`["\\\"[", ["x"]]`, 2}, // …and an escaped quote does not end the string
		{`]]][[`, 2},            // unbalanced: extra closers count as none
		{strings.Repeat("[", 100), 65},
	} {
		if got := jsonlimit.Depth([]byte(tc.json), 64); got != tc.want {
			t.Errorf("Depth(%.40q, 64) = %d; want %d", tc.json, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	at := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	if err := jsonlimit.Check(at(jsonlimit.MaxDepth)); err != nil {
		t.Errorf("Check at the limit: %v; want nil", err)
	}
	err := jsonlimit.Check(at(jsonlimit.MaxDepth + 1))
	if !errors.Is(err, jsonlimit.ErrTooDeep) || err.Error() != "JSON nesting deeper than 64 levels is refused" {
		t.Errorf("Check past the limit: %v; want ErrTooDeep naming 64 levels", err)
	}
	var v any
	if err := jsonlimit.Unmarshal(at(jsonlimit.MaxDepth+1), &v); !errors.Is(err, jsonlimit.ErrTooDeep) || v != nil {
		t.Errorf("Unmarshal past the limit: %v, %v; want ErrTooDeep and nothing decoded", err, v)
	}
	if err := jsonlimit.Unmarshal(at(jsonlimit.MaxDepth), &v); err != nil {
		t.Errorf("Unmarshal at the limit: %v", err)
	}
}

// Check reads any input once and allocates nothing, so it costs no more
// than the bytes it is given.
func TestCheckAllocatesNothing(t *testing.T) {
	for _, s := range jsonlimittest.Shapes(1 << 20) {
		if n := testing.AllocsPerRun(3, func() { jsonlimit.Check(s.Body) }); n != 0 {
			t.Errorf("%s: %v allocations; want none", s.Name, n)
		}
		if got := jsonlimit.Check(s.Body) != nil; got != s.Deep {
			t.Errorf("%s: refused %v; want %v", s.Name, got, s.Deep)
		}
	}
}

// The webhook module keeps its own copy of the limit (it imports nothing
// of herald's): its Parse takes a body nested exactly MaxDepth levels and
// refuses one level more, as herald's readers do.
func TestWebhookParseHoldsTheSameLimit(t *testing.T) {
	t.Parallel()
	body := func(depth int) []byte {
		// The body is one level, data the rest.
		return []byte(`{"id":"e","event":"license.created","data":` +
			strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
	}
	if _, err := webhook.Parse(body(jsonlimit.MaxDepth)); err != nil {
		t.Errorf("Parse of a body %d deep: %v; want it accepted", jsonlimit.MaxDepth, err)
	}
	if _, err := webhook.Parse(body(jsonlimit.MaxDepth + 1)); err == nil || !strings.Contains(err.Error(), "nesting deeper than 64 levels") {
		t.Errorf("Parse of a body %d deep: %v; want it refused for its nesting", jsonlimit.MaxDepth+1, err)
	}
}
