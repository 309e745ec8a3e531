package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/testdb"
)

// A database that drops herald's connections mid-stream (its backends
// terminated, as a failover or an operator's pg_terminate_backend does)
// refuses the calls it interrupts with 503 and Retry-After, never 500: a
// client retries a 503, and a 500 reads as a bug. Four clients create and
// read licenses for six seconds while, every 200 ms, every backend of the
// test's own PostgreSQL server but the test's is terminated.
func TestCallsTheDatabaseDroppedAnswer503(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "a PostgreSQL server of the test's own")
	pg := heraldtest.StartPostgres(t)
	// No request rate limit: four clients on a fast machine pass the
	// default, and a 429 is not what this test is about.
	h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: heraldtest.NewSchema(t, pg.URL()), RateLimit: -1, RateLimitAnonymous: -1})
	var product struct{ ID string }
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
	killer := testdb.OpenPostgres(t, pg.URL())

	ctx, stop := context.WithTimeout(context.Background(), 6*time.Second)
	defer stop()
	var mu sync.Mutex
	codes := map[int]int{}
	var bad []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				for _, call := range []struct{ method, path, body string }{
					{"POST", "/v3/licenses", `{"productId":"` + product.ID + `"}`},
					{"GET", "/v3/licenses?limit=5", ""},
				} {
					req, _ := http.NewRequest(call.method, h.URL+call.path, strings.NewReader(call.body))
					req.Header.Set("Authorization", "Bearer "+h.Token)
					req.Header.Set("Content-Type", "application/json")
					resp, err := h.Client.Do(req)
					if err != nil {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("%s %s: %v", call.method, call.path, err))
						mu.Unlock()
						continue
					}
					resp.Body.Close()
					mu.Lock()
					codes[resp.StatusCode]++
					if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
						bad = append(bad, call.method+" "+call.path+": 503 without Retry-After")
					}
					mu.Unlock()
				}
			}
		}()
	}
	terminated := 0
	for tick := time.NewTicker(200 * time.Millisecond); ctx.Err() == nil; <-tick.C {
		var n int
		if err := killer.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n); err == nil {
			terminated += n
		}
	}
	wg.Wait()
	t.Logf("answers %v after %d backends terminated", codes, terminated)
	for _, b := range bad {
		t.Error(b)
	}
	for code, n := range codes {
		if code != 200 && code != 201 && code != 503 {
			t.Errorf("%d calls answered %d; want only 200, 201 and 503", n, code)
		}
	}
	if codes[503] == 0 {
		t.Errorf("no call answered 503 while %d backends were terminated; want the calls they interrupted refused", terminated)
	}
}
