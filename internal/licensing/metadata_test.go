package licensing

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
)

// Metadata may nest MaxMetadataDepth levels, so that an event's body,
// which holds it two levels in, stays within jsonlimit.MaxDepth; one level
// more is refused by name.
func TestMetadataNestsWithinTheLimit(t *testing.T) {
	t.Parallel()
	if MaxMetadataDepth+2 != jsonlimit.MaxDepth {
		t.Fatalf("MaxMetadataDepth %d; want jsonlimit.MaxDepth less the body's two levels", MaxMetadataDepth)
	}
	nested := func(depth int) *json.RawMessage {
		raw := json.RawMessage(strings.Repeat(`{"a":[`, depth/2) + strings.Repeat("]}", depth/2))
		if depth%2 == 1 {
			raw = json.RawMessage(`{"b":` + string(raw) + `}`)
		}
		return &raw
	}
	var v InvalidError
	if got := v.metadata(Optional[json.RawMessage]{Set: true, Value: nested(MaxMetadataDepth)}); got == nil || len(v) != 0 {
		t.Errorf("metadata %d deep: %v; want it kept", MaxMetadataDepth, v)
	}
	want := fmt.Sprintf("must nest at most %d levels deep", MaxMetadataDepth)
	if got := v.metadata(Optional[json.RawMessage]{Set: true, Value: nested(MaxMetadataDepth + 1)}); got != nil || len(v) != 1 ||
		v[0].Field != "metadata" || v[0].Detail != want {
		t.Errorf("metadata %d deep: %v; want metadata refused: %s", MaxMetadataDepth+1, v, want)
	}
}

// TestMetadataCheckAllocatesLinearly hands the metadata rule the worst
// shapes at the largest body the API reads (the rule sees metadata before
// its size is known). Not parallel: the count is the whole process's.
func TestMetadataCheckAllocatesLinearly(t *testing.T) {
	const maxPerByte = 10 // compacting copies it once, into a growing buffer
	for _, s := range jsonlimittest.Shapes(1 << 20) {
		raw := json.RawMessage(s.Body)
		var v InvalidError
		limit := uint64(maxPerByte * len(s.Body))
		got := jsonlimittest.Allocated(limit, func() { v = nil; v.metadata(Optional[json.RawMessage]{Set: true, Value: &raw}) })
		t.Logf("%s: %d bytes allocated for %d bytes (%.1f per byte)", s.Name, got, len(s.Body), float64(got)/float64(len(s.Body)))
		if got > limit {
			t.Errorf("%s: %d bytes allocated for %d bytes of metadata; want at most %d per byte", s.Name, got, len(s.Body), maxPerByte)
		}
		if len(v) != 1 {
			t.Errorf("%s: %v; want it refused (too large, or too deep)", s.Name, v)
		}
	}
}
