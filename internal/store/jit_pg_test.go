package store_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// TestConnectionsCompileNoQueries: herald's PostgreSQL connections, the
// dispatcher's and everyone else's, run with JIT compilation off (a count of
// failed logs spent 90 ms compiling, 10 ms running), unless the URL sets it.
func TestConnectionsCompileNoQueries(t *testing.T) {
	testdb.PostgresHandles(t, 2)
	ctx := context.Background()
	for _, tt := range []struct {
		name, query, setting, want string
	}{
		{"by default", "", "jit", "off"},
		{"as the URL says", "jit=on", "jit", "on"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := testdb.PostgresURL(t)
			if tt.query != "" {
				url += "&" + tt.query
			}
			st, err := store.Open(ctx, url, store.Options{Key: make([]byte, 32)})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, pool := range []struct {
				name string
				ctx  context.Context
			}{{"main", ctx}, {"delivery", store.OnDelivery(ctx)}} {
				var got string
				if err := st.QueryRow(pool.ctx, `SELECT current_setting($1)`, tt.setting).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Errorf("the %s pool's %s is %s; want %s", pool.name, tt.setting, got, tt.want)
				}
			}
		})
	}
}
