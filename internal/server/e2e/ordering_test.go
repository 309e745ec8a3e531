package e2e_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// orderReceiver accepts deliveries about licenses, failing a share of
// first attempts at random, and keeps what each license's attempts and
// acceptances were, in the order they came.
type orderReceiver struct {
	rcv      *heraldtest.Receiver
	mu       sync.Mutex
	tried    map[string]bool    // event ids attempted at least once
	accepted map[string][]int64 // each license's sequences, as accepted
	wrong    []string           // attempts made out of order
	// refuseFirst refuses the first license.created to come, every time.
	refuseFirst bool
	refused     string // its event id
}

func newOrderReceiver(t *testing.T, failShare float64) *orderReceiver {
	o := &orderReceiver{rcv: heraldtest.NewReceiver(t), tried: map[string]bool{}, accepted: map[string][]int64{}}
	o.rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			ID       string `json:"id"`
			Sequence *int64 `json:"sequence"`
			Data     struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Sequence == nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		lic := p.Data.ID
		if n := int64(len(o.accepted[lic])); *p.Sequence != n+1 {
			// Any attempt, failed or not, of an event whose earlier one
			// was not accepted yet is out of order.
			o.wrong = append(o.wrong, fmt.Sprintf("license %s: %d attempted after %d accepted", lic, *p.Sequence, n))
		}
		first := !o.tried[p.ID]
		o.tried[p.ID] = true
		if o.refuseFirst && *p.Sequence == 1 && (o.refused == "" || o.refused == p.ID) {
			o.refused = p.ID
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if first && rand.Float64() < failShare {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		o.accepted[lic] = append(o.accepted[lic], *p.Sequence)
		w.WriteHeader(http.StatusNoContent)
	})
	return o
}

// total is how many events were accepted.
func (o *orderReceiver) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, s := range o.accepted {
		n += len(s)
	}
	return n
}

// fireInterleaved creates licenses and changes each of them each-1 times,
// one change of every license in turn, through the processes given in
// turn, several requests at once; it returns the licenses' ids.
func fireInterleaved(t *testing.T, fleet []*heraldtest.Herald, licenses, each int) []string {
	t.Helper()
	h := fleet[0]
	var product resource
	h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
	ids := make([]string, licenses)
	var wg sync.WaitGroup
	for i := range licenses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l resource
			fleet[i%len(fleet)].Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product)}, &l)
			ids[i] = idOf(l)
		}()
	}
	wg.Wait()
	for round := 1; round < each; round++ {
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fleet[(i+round)%len(fleet)].Must(200, "PATCH", "/v3/licenses/"+id, map[string]any{"metadata": map[string]any{"round": round}}, nil)
			}()
		}
		wg.Wait()
	}
	return ids
}

// checkOrder fails the test if a license's events were attempted or
// accepted out of order, or one is missing.
func (o *orderReceiver) checkOrder(t *testing.T, ids []string, each int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range o.wrong {
		t.Error(w)
	}
	for _, id := range ids {
		got := o.accepted[id]
		ok := len(got) == each
		for i, s := range got {
			ok = ok && s == int64(i+1)
		}
		if !ok {
			t.Errorf("license %s: accepted %v; want 1..%d in order", id, got, each)
		}
	}
}

// createOrdered creates a webhook ordered by license for license.created
// and license.updated.
func createOrdered(h *heraldtest.Herald, url string) resource {
	var hook resource
	h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "mirror", "url": url,
		"events": []string{"license.created", "license.updated"}, "ordering": "license"}, &hook)
	return hook
}

// TestOrderedWebhookGetsEachLicenseInOrder: with a receiver failing a
// third of first attempts at random, a webhook ordered by license gets
// each license's events in the order they fired, none attempted before
// the one before it was accepted, while licenses go on apart.
func TestOrderedWebhookGetsEachLicenseInOrder(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		const licenses, each = 30, 5
		o := newOrderReceiver(t, 0.3)
		hook := createOrdered(h, o.rcv.URL)
		if hook["ordering"] != "license" || hook["orderingOnFailure"] != "hold" {
			t.Fatalf("webhook ordering %v on failure %v; want license, hold", hook["ordering"], hook["orderingOnFailure"])
		}
		ids := fireInterleaved(t, []*heraldtest.Herald{h}, licenses, each)
		heraldtest.Eventually(t, 60*time.Second, "every event accepted", func() bool { return o.total() >= licenses*each })
		o.checkOrder(t, ids, each)
	})
}

// TestOrderedDeliveryAcrossProcesses: three processes on one PostgreSQL
// database, each firing and delivering, keep each license's order.
func TestOrderedDeliveryAcrossProcesses(t *testing.T) {
	t.Parallel()
	fleet := startFleet(t, 3, heraldtest.Options{})
	const licenses, each = 30, 5
	o := newOrderReceiver(t, 0.3)
	createOrdered(fleet[0], o.rcv.URL)
	ids := fireInterleaved(t, fleet, licenses, each)
	heraldtest.Eventually(t, 60*time.Second, "every event accepted", func() bool { return o.total() >= licenses*each })
	o.checkOrder(t, ids, each)
}

// TestAHeldLicenseWaitsForASkip: on "hold", an event that ends failed
// holds its license's later events, and only its license's, until it is
// skipped; then they come in order. Its log reads holding, and is listed
// by ?holding=true, until the skip.
func TestAHeldLicenseWaitsForASkip(t *testing.T) {
	t.Parallel()
	onEachEngine(t, func(t *testing.T, h *heraldtest.Herald) {
		o := newOrderReceiver(t, 0)
		o.mu.Lock()
		o.refuseFirst = true
		o.mu.Unlock()
		var hook resource
		h.Must(201, "POST", "/v3/webhooks", map[string]any{"name": "mirror", "url": o.rcv.URL,
			"events": []string{"license.created", "license.updated"}, "ordering": "license",
			"retryPolicy": map[string]any{"maxAttempts": 1, "backoff": "fixed", "intervalSeconds": 60, "maxIntervalSeconds": 60}}, &hook)
		var product, stuck, free resource
		h.Must(201, "POST", "/v3/products", map[string]any{"name": "App"}, &product)
		// The receiver refuses the stuck license's first event.
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product)}, &stuck)
		heraldtest.Eventually(t, 30*time.Second, "the first event failed", func() bool {
			return len(h.Logs("webhookId="+idOf(hook)+"&status=failed")) == 1
		})
		failed := h.Logs("webhookId=" + idOf(hook) + "&status=failed")[0]
		h.Must(200, "PATCH", "/v3/licenses/"+idOf(stuck), map[string]any{"metadata": map[string]any{"n": 1}}, nil)
		h.Must(201, "POST", "/v3/licenses", map[string]any{"productId": idOf(product)}, &free)
		h.Must(200, "PATCH", "/v3/licenses/"+idOf(free), map[string]any{"metadata": map[string]any{"n": 1}}, nil)
		heraldtest.Eventually(t, 30*time.Second, "the free license's events", func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			return len(o.accepted[idOf(free)]) == 2
		})
		h.Settled()
		o.mu.Lock()
		held := len(o.accepted[idOf(stuck)])
		o.mu.Unlock()
		if held != 0 {
			t.Fatalf("the stuck license got %d events while its first was held", held)
		}
		// The API says which log holds, and lists the ones that do.
		if !h.Log(failed.ID).Holding {
			t.Errorf("the failed first event reads holding false; want true")
		}
		if got := h.Logs("webhookId=" + idOf(hook) + "&holding=true"); len(got) != 1 || got[0].ID != failed.ID || !got[0].Holding {
			t.Errorf("holding logs %+v; want the failed first event %s alone", got, failed.ID)
		}
		h.Must(422, "GET", "/v3/webhook-event-logs?holding=maybe", nil, nil)
		h.Must(200, "POST", "/v3/webhook-event-logs/"+failed.ID+"/skip", nil, nil)
		h.Must(409, "POST", "/v3/webhook-event-logs/"+failed.ID+"/skip", nil, nil)
		if h.Log(failed.ID).Holding {
			t.Errorf("the skipped event reads holding true; want false")
		}
		if got := h.Logs("webhookId=" + idOf(hook) + "&holding=true"); len(got) != 0 {
			t.Errorf("%d logs hold after the skip; want none", len(got))
		}
		heraldtest.Eventually(t, 30*time.Second, "the held event after the skip", func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			return len(o.accepted[idOf(stuck)]) == 1
		})
		o.mu.Lock()
		defer o.mu.Unlock()
		if got := o.accepted[idOf(stuck)]; got[0] != 2 {
			t.Errorf("after the skip the stuck license got %v; want its second event", got)
		}
	})
}
