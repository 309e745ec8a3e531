package event_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
	"github.com/heraldhq/herald/webhook"
)

type withMetadata struct {
	Metadata json.RawMessage `json:"metadata"`
}

// nested is a JSON object nested depth levels.
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1))
}

// A body holds data's metadata two levels in: Build makes a body nested
// exactly jsonlimit.MaxDepth levels, which receivers' Parse takes, and
// refuses one level more rather than send what a reader refuses.
func TestBuildRefusesNestingPastTheLimit(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 8, 7, 13, 0, time.UTC)
	body, err := event.Build("id", event.LicenseUpdated, withMetadata{nested(jsonlimit.MaxDepth - 2)}, at)
	if err != nil {
		t.Fatalf("Build at the limit: %v", err)
	}
	if _, err := webhook.Parse(body); err != nil {
		t.Errorf("Parse of a body at the limit: %v", err)
	}
	_, err = event.Build("id", event.LicenseUpdated, withMetadata{nested(jsonlimit.MaxDepth - 1)}, at)
	if !errors.Is(err, jsonlimit.ErrTooDeep) || !strings.Contains(err.Error(), "build license.updated payload") {
		t.Errorf("Build past the limit: %v; want ErrTooDeep, saying what was built", err)
	}
}

// maxBuildAllocPerByte bounds what Build allocates per byte of its data:
// the data is encoded (and copied) a few times over, the envelope around
// it once more.
const maxBuildAllocPerByte = 10

// TestBuildAllocatesLinearly builds bodies around the worst shapes of
// metadata, at the largest the API reads. Not parallel: the count is the
// whole process's.
func TestBuildAllocatesLinearly(t *testing.T) {
	for _, s := range jsonlimittest.Shapes(1 << 20) {
		var err error
		// Allocated counts every goroutine's allocations, and this
		// package's parallel tests allocate too: it takes the least of
		// its runs.
		limit := uint64(maxBuildAllocPerByte * len(s.Body))
		got := jsonlimittest.Allocated(limit, func() {
			_, err = event.Build("id", event.LicenseUpdated, withMetadata{s.Body}, time.Unix(0, 0))
		})
		t.Logf("%s: %d bytes allocated for %d bytes (%.1f per byte)", s.Name, got, len(s.Body), float64(got)/float64(len(s.Body)))
		if got > limit {
			t.Errorf("%s: %d bytes allocated for %d bytes of metadata; want at most %d per byte", s.Name, got, len(s.Body), maxBuildAllocPerByte)
		}
		// Metadata is one level in from the shapes' top; the body wraps it
		// in two more.
		tooDeep := s.Deep || jsonlimit.Depth(s.Body, jsonlimit.MaxDepth) > jsonlimit.MaxDepth-2
		if (err != nil) != tooDeep {
			t.Errorf("%s: Build: %v; want refused: %v", s.Name, err, tooDeep)
		}
	}
}
