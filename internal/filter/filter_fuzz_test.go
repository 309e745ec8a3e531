package filter_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/filter"
)

// FuzzFilter parses any filter and evaluates it against any payload: never
// a panic, and a parsed filter always within its bounds.
func FuzzFilter(f *testing.F) {
	f.Add([]byte(`{"data.productId": {"$in": ["p1"]}, "data.metadata.plan": "pro"}`), []byte(payload))
	f.Add([]byte(`{"$or": [{"data.items.sku": "x"}, {"$not": {"event": {"$prefix": "lic"}}}]}`), []byte(payload))
	f.Add([]byte(`{"data.grid.0.1": {"$gte": 1e400}}`), []byte(`{"data":{"grid":[[1e308,-1e400]]}}`))
	f.Add([]byte(`{"data.a.b.c": {"$exists": true}}`), []byte(`{"data":{"a":[[{"b":[{"c":1}]}]]}}`))
	f.Fuzz(func(t *testing.T, filterJSON, payloadJSON []byte) {
		flt, err := filter.Parse(filterJSON)
		if err != nil {
			if len(filterJSON) > filter.MaxBytes && !strings.Contains(err.Error(), "bytes") {
				t.Fatalf("oversized filter refused for %v", err)
			}
			return
		}
		if len(filterJSON) > filter.MaxBytes {
			t.Fatalf("filter of %d bytes accepted", len(filterJSON))
		}
		first := flt.Match(payloadJSON)
		if v, err := filter.Decode(payloadJSON); err == nil {
			ok, _ := flt.Explain(v)
			if ok != first {
				t.Fatalf("Explain = %v, Match = %v", ok, first)
			}
		}
	})
}
