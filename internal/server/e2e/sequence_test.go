package e2e_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// TestEachLicenseCountsItsEvents: every delivery about a license carries
// its number among that license's events, from license.created's 1,
// across kinds and its activations' events, and none other does; two
// licenses count apart; changes made to one license at once each get
// their own number.
func TestEachLicenseCountsItsEvents(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		rcv, _ := watch(t, h, allKinds()...)
		var product, a, b, activation resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "validity": 315360000}, &a)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product), "validity": 315360000}, &b)
		h.Must(200, "PATCH", "/v3/licenses/"+idOf(a), map[string]any{"allowedActivations": 2}, nil)
		h.Must(201, "POST", "/v3/activations", map[string]any{"licenseKey": a["key"], "fingerprint": "fp-1"}, &activation)
		h.Must(200, "POST", "/v3/licenses/"+idOf(b)+"/renew", nil, nil)
		h.Must(204, "DELETE", "/v3/activations/"+idOf(activation), nil, nil)
		const each = 6
		var wg sync.WaitGroup
		codes := make([]int, 2*each)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = h.Do("PATCH", "/v3/licenses/"+idOf(a), map[string]any{"metadata": map[string]any{"n": i}}, nil)
			}()
		}
		wg.Wait()
		for i, c := range codes {
			if c != 200 {
				t.Fatalf("concurrent change %d answered %d", i, c)
			}
		}
		h.Must(204, "DELETE", "/v3/licenses/"+idOf(a), nil, nil)

		// product.created, a's created, updated, activation.created,
		// first-activated, activation.deleted, the concurrent updates and
		// deleted; b's created and renewed.
		ds := receive(t, rcv, 1+6+2*each+2)
		numbers := map[string][]int64{}
		kinds := map[string][]string{}
		for _, d := range ds {
			var p struct {
				Sequence *int64 `json:"sequence"`
				Data     struct {
					ID        string `json:"id"`
					LicenseID string `json:"licenseId"`
				} `json:"data"`
			}
			if err := json.Unmarshal(d.Body, &p); err != nil {
				t.Fatal(err)
			}
			license := p.Data.LicenseID
			if license == "" && d.Event != "product.created" {
				license = p.Data.ID
			}
			switch {
			case license == "" && p.Sequence != nil:
				t.Errorf("%s, about no license, carries sequence %d", d.Event, *p.Sequence)
			case license != "" && p.Sequence == nil:
				t.Errorf("%s about license %s carries no sequence: %s", d.Event, license, d.Body)
			case license != "":
				numbers[license] = append(numbers[license], *p.Sequence)
				kinds[license] = append(kinds[license], fmt.Sprintf("%s:%d", d.Event, *p.Sequence))
			}
		}
		for license, want := range map[string]int{idOf(a): 6 + 2*each, idOf(b): 2} {
			got := numbers[license]
			slices.Sort(got)
			for i, n := range got {
				if n != int64(i+1) {
					t.Errorf("license %s: numbers %v (%v); want each of 1..%d once", license, got, kinds[license], want)
					break
				}
			}
			if len(got) != want {
				t.Errorf("license %s: %d numbered events; want %d", license, len(got), want)
			}
		}
		for _, k := range kinds[idOf(a)] {
			if k == "license.created:1" {
				return
			}
		}
		t.Errorf("license.created is not number 1: %v", kinds[idOf(a)])
	})
}
