package e2e_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
)

// BenchmarkRefusedBody is what a request costs herald whose body it reads
// and refuses: the worst shapes at the largest body the API reads, posted
// to POST /v3/products on a running herald over SQLite (the answer is 400
// or 422 before the store is written). The allocations counted are the
// whole process's, the client's among them.
func BenchmarkRefusedBody(b *testing.B) {
	h := heraldtest.Start(b, heraldtest.Options{DatabaseURL: heraldtest.SQLiteURL(b)})
	for _, s := range jsonlimittest.Shapes(1 << 20) {
		switch s.Name {
		case "deep arrays", "one object of many keys", "deepest accepted objects, wide at the bottom", "an array of zeros", `a string of \"`:
		default:
			continue
		}
		b.Run(s.Name, func(b *testing.B) {
			b.SetBytes(int64(len(s.Body)))
			b.ReportAllocs()
			for b.Loop() {
				if status, answer := postB(b, h, s.Body); status < 400 || status >= 500 {
					b.Fatalf("%d %.200s; want it refused, 4xx", status, answer)
				}
			}
		})
	}
}

// postB posts body to POST /v3/products as JSON with h's token and returns
// the status and answer.
func postB(b *testing.B, h *heraldtest.Herald, body []byte) (int, []byte) {
	req, err := http.NewRequest("POST", h.URL+"/v3/products", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.Token)
	resp, err := h.Client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return resp.StatusCode, answer
}
