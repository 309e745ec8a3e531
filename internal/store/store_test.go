package store_test

import (
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/store/storetest"
)

// TestStore runs the store behaviour suite on every engine.
func TestStore(t *testing.T) {
	for _, s := range heraldtest.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, s.URL)
		})
	}
}
