package listen_test

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
	"github.com/heraldhq/herald/internal/listen"
	"github.com/heraldhq/herald/webhook"
)

// A body nested deeper than herald's bodies, or one that indenting would
// make many times larger, is printed as sent rather than indented.
func TestDeepOrBloatingBodyIsPrintedAsSent(t *testing.T) {
	t.Parallel()
	deep := []byte(`{"id":"e","event":"x","data":` + strings.Repeat("[", jsonlimit.MaxDepth) + strings.Repeat("]", jsonlimit.MaxDepth) + `}`)
	// At the limit with some text: indenting adds 8 KB to 10 KB.
	atLimit := []byte(`{"id":"e","event":"x","data":` + strings.Repeat("[", jsonlimit.MaxDepth-1) + strings.Repeat("]", jsonlimit.MaxDepth-1) +
		`,"text":"` + strings.Repeat("x", 10_000) + `"}`)
	// 20 levels down, each "0," would become a line of 42 bytes.
	bloating := []byte(`{"id":"e","event":"x","data":` + strings.Repeat("[", 20) + strings.Repeat("0,", 1000) + "0" + strings.Repeat("]", 20) + `}`)
	shallow := []byte(`{"id":"e","event":"x","data":[` + strings.Repeat("0,", 1000) + "0]}")
	for _, tc := range []struct {
		name   string
		body   []byte
		asSent bool
	}{
		{"deeper than the limit", deep, true},
		{"bloating when indented", bloating, true},
		{"at the limit", atLimit, false},
		{"many values near the top", shallow, false},
	} {
		out := serve(t, io.Discard, tc.body)
		if got := bytes.Contains([]byte(out), tc.body); got != tc.asSent {
			t.Errorf("%s: printed as sent %v; want %v:\n%.300s", tc.name, got, tc.asSent, out)
		}
	}
}

// serve hands body, signed, to the handler in this process and returns
// what it printed (nothing when out is given).
func serve(t *testing.T, out io.Writer, body []byte) string {
	t.Helper()
	var printed strings.Builder
	if out == io.Discard {
		out = &printed
	}
	h := listen.Handler(listen.Config{Token: token, Out: out})
	req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	req.Header = heraldHeaders(webhook.Sign(token, body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("answer %d %s; want 200", rec.Code, rec.Body)
	}
	return printed.String()
}

// TestHandlerAllocatesLinearly receives the worst shapes at the largest
// body listen reads, and at a size more likely to be indented, and holds
// what it allocates to a fixed multiple of the body: an indented copy is
// at most maxIndentGrowth times the body, built in a buffer that grows by
// doubling. Not parallel: the count is the whole process's.
func TestHandlerAllocatesLinearly(t *testing.T) {
	const maxPerByte = 40
	for _, size := range []int{webhook.MaxBodyBytes, 64 << 10} {
		for _, s := range jsonlimittest.Shapes(size) {
			limit := uint64(maxPerByte * len(s.Body))
			got := jsonlimittest.Allocated(limit, func() { serve(t, discard{}, s.Body) })
			t.Logf("%d bytes of %s: %d bytes allocated (%.1f per byte)", len(s.Body), s.Name, got, float64(got)/float64(len(s.Body)))
			if got > limit {
				t.Errorf("%s: %d bytes allocated for %d bytes of body; want at most %d per byte", s.Name, got, len(s.Body), maxPerByte)
			}
		}
	}
}

// discard drops what is printed, and is not io.Discard, which serve reads
// as "return it".
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
