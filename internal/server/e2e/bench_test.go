package e2e_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// BenchmarkAPICreateLicense measures firing license.created through the
// API: 16 clients in parallel, each call one HTTP request and one
// transaction writing the license, its event and one log for each of 5
// subscribed webhooks (disabled, so no delivery competes for the cores).
func BenchmarkAPICreateLicense(b *testing.B) {
	for _, s := range heraldtest.BenchStores() {
		b.Run(s.Name, func(b *testing.B) {
			h := heraldtest.Start(b, heraldtest.Options{DatabaseURL: s.URL(b)})
			for i := range 5 {
				h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": fmt.Sprint("w", i), "url": "https://example.com/h",
					"events": []string{"license.created"}, "enabled": false}, nil)
			}
			var p struct{ ID string }
			h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &p)
			body := []byte(`{"productId":"` + p.ID + `","metadata":{"customer":"Zoë"}}`)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ResetTimer()
			var wg sync.WaitGroup
			work := make(chan struct{})
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						req, _ := http.NewRequest("POST", h.URL+"/v3/licenses", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+h.Token)
						req.Header.Set("Content-Type", "application/json")
						resp, err := client.Do(req)
						if err != nil || resp.StatusCode != 201 {
							b.Errorf("create license: %v %v", err, resp)
							return
						}
						resp.Body.Close()
					}
				}()
			}
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
