package webhook_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/heraldhq/herald/webhook"
)

// deliveryOf wraps data as a delivery's body.
func deliveryOf(data string) []byte {
	return []byte(`{"id":"e","event":"license.created","data":` + data + `,"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
}

// Parse takes a body nested 64 levels, the most herald sends, and refuses
// one level more before decoding it.
func TestParseRefusesDeepNesting(t *testing.T) {
	t.Parallel()
	data := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	if _, err := webhook.Parse(deliveryOf(data(63))); err != nil {
		t.Errorf("Parse of a body 64 levels deep: %v", err)
	}
	for _, b := range [][]byte{deliveryOf(data(64)), deliveryOf(`{"s":"]]]",` + `"a":` + data(64) + `}`), []byte(data(100_000))} {
		_, err := webhook.Parse(b)
		if err == nil || !strings.Contains(err.Error(), "nesting deeper than 64 levels") {
			t.Errorf("Parse of %.30q…: %v; want it refused for its nesting", b, err)
		}
	}
	// Brackets inside strings are text, not nesting.
	if _, err := webhook.Parse(deliveryOf(`"` + strings.Repeat(`[\"{`, 100) + `"`)); err != nil {
		t.Errorf("Parse of brackets in a string: %v", err)
	}
}

// TestParseAllocatesLinearly parses the worst shapes of data at the
// largest body Middleware reads, and holds what Parse allocates to a fixed
// multiple of the body. Not parallel: the count is the whole process's.
func TestParseAllocatesLinearly(t *testing.T) {
	const maxPerByte = 10 // data is copied once; the rest is read in place
	size := webhook.MaxBodyBytes - len(deliveryOf(""))
	half := size / 2
	keys := make([]string, 0, size/12)
	for i := 0; (len(keys)+1)*12 < size-2; i++ {
		keys = append(keys, fmt.Sprintf(`"%07d":0`, i))
	}
	for _, s := range []struct{ name, data string }{
		{"deep arrays", strings.Repeat("[", half) + strings.Repeat("]", half)},
		{"deep objects", strings.Repeat(`{"a":`, size/6-1) + "1" + strings.Repeat("}", size/6-1)},
		{"deepest accepted arrays, wide", strings.Repeat("[", 63) + strings.Repeat("0,", (size-128)/2) + "0" + strings.Repeat("]", 63)},
		{"one object of many keys", "{" + strings.Join(keys, ",") + "}"},
		{"an array of zeros", "[" + strings.Repeat("0,", (size-3)/2) + "0]"},
		{`a string of \u0000`, `"` + strings.Repeat(`\u0000`, (size-2)/6) + `"`},
		{`a string of \"`, `"` + strings.Repeat(`\"`, (size-2)/2) + `"`},
		{"a long number", "1" + strings.Repeat("0", size-1)},
	} {
		body := deliveryOf(s.data)
		if len(body) > webhook.MaxBodyBytes {
			t.Fatalf("%s: %d bytes; want at most %d", s.name, len(body), webhook.MaxBodyBytes)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		webhook.Parse(body)
		runtime.ReadMemStats(&after)
		got := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes allocated for %d bytes (%.1f per byte)", s.name, got, len(body), float64(got)/float64(len(body)))
		if limit := uint64(maxPerByte * len(body)); got > limit {
			t.Errorf("%s: %d bytes allocated for %d bytes of body; want at most %d per byte", s.name, got, len(body), maxPerByte)
		}
	}
}
