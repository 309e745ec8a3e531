package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// The ordering scenario, i (decision 0131): what delivering each license's
// events in order costs. Licenses × 10 events (license.created, then nine
// license.updated) go to two webhooks at once, one ordered by license and
// one not, whose receivers fail 10% of first attempts at random (retried
// a second later). Each receiver checks that each license's events were
// accepted in sequence; on the ordered webhook one inversion fails the run.
const (
	orderedEvents    = 10
	orderedFailShare = 0.10
	orderedPath      = 0 // the ordered webhook's receiver path; the other's is 1
)

// orderCheck is one webhook's receiver's view of the order: it fails first
// attempts at random and keeps each license's latest sequence accepted.
type orderCheck struct {
	mu         sync.Mutex
	tried      map[string]bool  // event ids attempted
	accepted   map[string]bool  // event ids accepted
	last       map[string]int64 // license id → the latest sequence accepted
	inversions int              // events accepted after a later one of their license
	first      string           // the first inversion, described
	lastAt     time.Time        // when the latest event was first accepted
}

func newOrderCheck() *orderCheck {
	return &orderCheck{tried: map[string]bool{}, accepted: map[string]bool{}, last: map[string]int64{}}
}

// accept decides a verified delivery: false fails it (a first attempt, at
// random). An event accepted before is accepted again, unchecked.
func (o *orderCheck) accept(id string, body []byte) bool {
	var p struct {
		Sequence int64 `json:"sequence"`
		Data     struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.Unmarshal(body, &p)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.accepted[id] {
		return true
	}
	if !o.tried[id] {
		o.tried[id] = true
		if rand.Float64() < orderedFailShare {
			return false
		}
	}
	o.accepted[id], o.lastAt = true, time.Now()
	if last := o.last[p.Data.ID]; p.Sequence < last {
		o.inversions++
		if o.first == "" {
			o.first = fmt.Sprintf("license %s: %d accepted after %d", p.Data.ID, p.Sequence, last)
		}
		return true
	}
	o.last[p.Data.ID] = p.Sequence
	return true
}

// took is the time from start to the latest first acceptance.
func (o *orderCheck) took(start time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lastAt.IsZero() {
		return 0
	}
	return o.lastAt.Sub(start)
}

func (o *orderCheck) count() (accepted, inversions int, first string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.accepted), o.inversions, o.first
}

func ordered(ctx context.Context, o Options, rcv *receiver) ([]Result, error) {
	licenses := o.OrderedLicenses
	if licenses <= 0 {
		licenses = 1000
	}
	c, err := startChild(ctx, o.Binary, o.Database)
	if err != nil {
		return nil, err
	}
	defer func() { rcv.release(); c.stop() }()
	fmt.Fprintf(o.Log, "bench: i: %d licenses × %d events to an ordered and an unordered webhook, 10%% of first attempts failing\n", licenses, orderedEvents)
	var product struct {
		ID string `json:"id"`
	}
	if _, err := c.call(ctx, "POST", "/v3/products", map[string]any{"name": "bench"}, &product); err != nil {
		return nil, err
	}
	checks := []*orderCheck{newOrderCheck(), newOrderCheck()}
	for i, ordering := range []string{"license", "none"} {
		url := rcv.add(i, "", false)
		rcv.mu.Lock()
		rcv.hooks[i].accept = checks[i].accept
		rcv.mu.Unlock()
		var w struct {
			Token string `json:"token"`
		}
		if _, err := c.call(ctx, "POST", "/v3/webhooks", map[string]any{"name": "bench " + ordering, "url": url,
			"events": []string{"license.created", "license.updated"}, "ordering": ordering,
			"retryPolicy": map[string]any{"maxAttempts": 10, "backoff": "fixed", "intervalSeconds": 1, "maxIntervalSeconds": 1}}, &w); err != nil {
			return nil, err
		}
		rcv.setToken(i, w.Token)
	}

	cpu0, _ := c.usage()
	machine0 := readCPUTimes()
	start := time.Now()
	// Each client takes its share of the licenses and fires their events
	// round by round, so a license's events are fired in order and the
	// licenses' interleave.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var refused int
	var reasons []string
	fail := func(err error) {
		mu.Lock()
		refused++
		if len(reasons) < 3 {
			reasons = append(reasons, err.Error())
		}
		mu.Unlock()
	}
	events := 0
	for k := range o.Clients {
		wg.Go(func() {
			var ids []string
			for n := k; n < licenses; n += o.Clients {
				var l struct {
					ID string `json:"id"`
				}
				if _, err := c.call(ctx, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, &l); err != nil {
					fail(err)
					continue
				}
				ids = append(ids, l.ID)
			}
			for round := 1; round < orderedEvents; round++ {
				for _, id := range ids {
					if _, err := c.call(ctx, "PATCH", "/v3/licenses/"+id, map[string]any{"metadata": map[string]any{"round": round}}, nil); err != nil {
						fail(err)
					}
				}
			}
			mu.Lock()
			events += len(ids) * orderedEvents
			mu.Unlock()
		})
	}
	wg.Wait()
	fired := time.Since(start)
	// Until both webhooks got every event, or nothing came for 30 s.
	want := events - refused
	idle := time.Now()
	for ctx.Err() == nil {
		a, _, _ := checks[0].count()
		b, _, _ := checks[1].count()
		if a >= want && b >= want {
			break
		}
		if last := rcv.lastReceipt(); last.After(idle) {
			idle = last
		}
		if time.Since(idle) > 30*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cpu, rss := c.usage()
	var out []Result
	var inverted error
	for i, name := range []string{"i-ordered", "i-unordered"} {
		accepted, inversions, first := checks[i].count()
		unique, dup, bad := rcv.counts(func(n int) bool { return n == i })
		took := checks[i].took(start)
		r := Result{Scenario: name, Webhooks: 1, Events: events, Deliveries: unique,
			Title:        fmt.Sprintf("%d licenses × %d events, %s, 10%% of first attempts failing", licenses, orderedEvents, map[int]string{0: "ordered by license", 1: "unordered"}[i]),
			EventsPerSec: float64(events) / fired.Seconds(), Lost: max(0, want-accepted), Duplicated: dup, BadSignatures: bad,
			Refused: refused, RefusedFor: reasons, PeakRSSMB: float64(rss) / (1 << 20),
			Machine: readCPUTimes().since(machine0, unique)}
		if took > 0 {
			r.DeliveriesPerSec = float64(unique) / took.Seconds()
		}
		if unique > 0 {
			r.CPUPer1000 = (cpu - cpu0) / float64(2*unique) * 1000 // both webhooks' deliveries share the CPU
		}
		r.Note = fmt.Sprintf("%d inversions", inversions)
		if first != "" {
			r.Note += " (first: " + first + ")"
		}
		if i == 0 && inversions > 0 {
			inverted = fmt.Errorf("the ordered webhook got %d events out of their license's order; first: %s", inversions, first)
		}
		out = append(out, r)
	}
	if out[1].DeliveriesPerSec > 0 {
		out[0].Note += fmt.Sprintf("; %.0f%% of the unordered webhook's throughput", 100*out[0].DeliveriesPerSec/out[1].DeliveriesPerSec)
	}
	return out, inverted
}
