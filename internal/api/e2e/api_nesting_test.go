package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/jsonlimit/jsonlimittest"
	"github.com/heraldhq/herald/internal/openapitest"
)

// maxRequestAllocPerByte bounds what the whole process allocates for one
// refused request, per byte of its body: reading it, the scan that stops
// at the 65th level, and the answer. A refused body costs about 3 bytes
// per byte; before the walk built paths only for errors, a body 20,000
// brackets deep (40 KB) cost 640 MB, and 100,000 deep more than 2 GiB.
const maxRequestAllocPerByte = 40

// maxWideAllocPerByte is the same bound for a body within the nesting
// limit but as wide as it can be (100,000 keys, 500,000 zeros…), which the
// body check reads whole before the decoder refuses it. The check was a
// json.Decoder.Token walk, about 120 bytes per token; the byte scan that
// replaced it allocates only for object keys, and the widest body now
// costs about 20 bytes per byte.
const maxWideAllocPerByte = 150

// TestDeepBodiesAreRefusedCheaply posts bodies nested far past
// jsonlimit.MaxDepth, the bracket bombs among them, to every POST
// and PATCH of the reference that takes a body, on a running herald of
// each engine, and wants each refused with 400 naming the limit, for a
// fixed multiple of the body in memory; and the widest bodies within the
// limit, refused (4xx) for a fixed multiple too.
//
// Not parallel, and the engines one after the other: the allocation
// counted is the whole process's, herald's and this test's.
func TestDeepBodiesAreRefusedCheaply(t *testing.T) {
	doc, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if (method == "POST" || method == "PATCH") && op.RequestBody != nil {
				routes = append(routes, method+" "+path)
			}
		}
	}
	slices.Sort(routes)
	if !slices.Contains(routes, "POST /v3/products") || !slices.Contains(routes, "PATCH /v3/licenses/{id}") {
		t.Fatalf("routes with a body: %v; want POST /v3/products and PATCH /v3/licenses/{id} among them", routes)
	}
	brackets := func(n int) []byte { return []byte(strings.Repeat("[", n/2) + strings.Repeat("]", n/2)) }
	objects := func(n int) []byte {
		levels := (n - len(`{"metadata":}`) - 1) / len(`{"a":}`)
		return []byte(`{"metadata":` + strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels) + "}")
	}
	type body struct {
		name string
		body []byte
		deep bool
	}
	bodies := []body{
		{"40000 bytes of brackets", brackets(40_000), true},
		{"200000 bytes of brackets", brackets(200_000), true},
		{"200000 bytes of objects in metadata", objects(200_000), true},
	}
	// Every deep shape, and the wide ones that cost the most per byte (the
	// others are read alike, more cheaply; tokens_test.go runs them all
	// through the walk): a request of each to every route on both engines
	// is most of this package's time.
	wide := map[string]bool{"one object of many keys": true, "deepest accepted objects, wide at the bottom": true, "an array of zeros": true}
	for _, s := range jsonlimittest.Shapes(1 << 20) {
		if s.Deep || wide[s.Name] {
			bodies = append(bodies, body{"1 MiB of " + s.Name, s.Body, s.Deep})
		}
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, engine := range heraldtest.Stores() {
		t.Run(engine.Name, func(t *testing.T) {
			h := heraldtest.Start(t, heraldtest.Options{DatabaseURL: engine.URL(t), OperatorToken: operatorToken})
			var p, l struct{ ID string }
			h.Must(201, "POST", "/v3/products", map[string]any{"name": "P"}, &p)
			h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": p.ID}, &l)
			for _, b := range bodies {
				t.Run(b.name, func(t *testing.T) {
					var most uint64
					defer func() {
						t.Logf("%d routes; at most %d bytes allocated for %d bytes of body (%.1f per byte)",
							len(routes), most, len(b.body), float64(most)/float64(len(b.body)))
					}()
					for _, route := range routes {
						method, path, _ := strings.Cut(route, " ")
						// Every id is the license's: real for the license
						// calls, and the body is refused before any other
						// is looked up.
						path = param.ReplaceAllString(path, l.ID)
						token := h.Token
						if strings.HasPrefix(path, "/v3/operator/") {
							token = operatorToken
						}
						perByte := maxRequestAllocPerByte
						if !b.deep {
							perByte = maxWideAllocPerByte
						}
						var status int
						var answer []byte
						allocated := jsonlimittest.Allocated(uint64(perByte*len(b.body)), func() {
							status, answer = post(t, h, token, method, path, b.body)
						})
						most = max(most, allocated)
						var prob struct{ Type, Detail string }
						json.Unmarshal(answer, &prob)
						switch {
						case !b.deep:
							if status < 400 || status >= 500 {
								t.Errorf("%s %s: %d %.200s; want it refused, 4xx", method, path, status, answer)
							}
						case status != 400 || prob.Type != "https://herald.dev/problems/too-deep" || prob.Detail != jsonlimit.ErrTooDeep.Error():
							t.Errorf("%s %s: %d %s; want 400 too-deep: %q", method, path, status, answer, jsonlimit.ErrTooDeep.Error())
						}
						if limit := uint64(perByte * len(b.body)); allocated > limit {
							t.Errorf("%s %s: %d bytes allocated for %d bytes of body (%.0f per byte); want at most %d per byte",
								method, path, allocated, len(b.body), float64(allocated)/float64(len(b.body)), perByte)
						}
					}
				})
			}
		})
	}
}

// post sends body as JSON with token and returns the status and answer.
func post(t *testing.T, h *heraldtest.Herald, token, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(fmt.Errorf("read the answer to %s %s: %w", method, path, err))
	}
	return resp.StatusCode, answer
}
