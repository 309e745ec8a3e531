package store_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/store/storetest"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestStore runs the store behaviour suite on every engine.
func TestStore(t *testing.T) {
	for _, s := range testdb.Stores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, s.URL)
		})
	}
}

func TestSQLiteFileCanBeReopenedAfterClose(t *testing.T) {
	key := make([]byte, 32)
	url := testdb.SQLiteURL(t)
	for i := range 2 {
		st, err := store.Open(context.Background(), url, store.Options{Key: key})
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		st.Close()
	}
}
