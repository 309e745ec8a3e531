package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/webhook"
)

// The pull scenario, p (decision 0140): events read through the pull
// channel. License events, fired as fast as the API allows for
// Options.Duration, wait for pull webhooks; then consumers read and
// acknowledge them, each its own webhook's with its own pull token, 100 a
// read, checking every signature as a receiver would: p1 one consumer, p10
// ten at once (each event then read ten times). Its deliveries per second
// are events read and acknowledged per second, beside the run's ceiling.
const pullBatch = 100

func pulled(ctx context.Context, o Options, _ *receiver) ([]Result, error) {
	var out []Result
	for _, consumers := range []int{1, 10} {
		r, err := pullRun(ctx, o, consumers)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// pullConsumer is one pull webhook and what its consumer read of it.
type pullConsumer struct {
	id, token string
	api       *client.Client
	read      map[string]bool // event ids
	dup, bad  int
}

func pullRun(ctx context.Context, o Options, consumers int) (Result, error) {
	name := fmt.Sprintf("p%d", consumers)
	c, err := startChild(ctx, o.Binary, o.Database)
	if err != nil {
		return Result{}, err
	}
	defer c.stop()
	hooks := make([]*pullConsumer, consumers)
	for i := range hooks {
		var w struct{ ID, Token string }
		if _, err := c.call(ctx, "POST", "/v3/webhooks", map[string]any{"name": fmt.Sprintf("pull %d", i), "type": "pull",
			"events": []string{"license.created"}, "signatureScheme": "standard-webhooks"}, &w); err != nil {
			return Result{}, err
		}
		var tok struct{ Token string }
		if _, err := c.call(ctx, "POST", "/v3/webhooks/"+w.ID+"/pull-tokens", nil, &tok); err != nil {
			return Result{}, err
		}
		hooks[i] = &pullConsumer{id: w.ID, token: w.Token, read: map[string]bool{},
			api: client.New(c.url, tok.Token, &http.Client{Timeout: time.Minute})}
	}
	fmt.Fprintf(o.Log, "bench: %s: license events for %s, then read and acknowledged by %d consumer(s), each of its own pull webhook\n", name, o.Duration, consumers)
	events, refused, reasons, err := fireLicenses(ctx, c, o)
	if err != nil {
		return Result{}, err
	}

	cpu0, _ := c.usage()
	machine0 := readCPUTimes()
	start := time.Now()
	var wg sync.WaitGroup
	for _, h := range hooks {
		wg.Go(func() { h.consume(ctx, events) })
	}
	wg.Wait()
	took := time.Since(start)
	cpu, rss := c.usage()
	r := Result{Scenario: name, Webhooks: consumers, Events: events, EventsPerSec: float64(events) / o.Duration.Seconds(), Refused: refused, RefusedFor: reasons,
		Title:     fmt.Sprintf("%d events read through the pull channel by %d consumer(s), %d a read", events, consumers, pullBatch),
		PeakRSSMB: float64(rss) / (1 << 20)}
	for _, h := range hooks {
		r.Deliveries += len(h.read)
		r.Duplicated += h.dup
		r.BadSignatures += h.bad
		r.Lost += events - len(h.read)
	}
	r.DeliveriesPerSec = float64(r.Deliveries) / took.Seconds()
	if r.Deliveries > 0 {
		r.CPUPer1000 = (cpu - cpu0) / float64(r.Deliveries) * 1000
	}
	r.Machine = readCPUTimes().since(machine0, r.Deliveries)
	r.Note = fmt.Sprintf("events/s read and acknowledged; %.1f s to read the backlog", took.Seconds())
	return r, nil
}

// consume reads the webhook's events until it has read want of them, or
// none came for 30 s, acknowledging each read's last.
func (h *pullConsumer) consume(ctx context.Context, want int) {
	after, idle := "", time.Now()
	for ctx.Err() == nil && len(h.read) < want && time.Since(idle) < 30*time.Second {
		got, err := h.api.ReadEvents(ctx, h.id, client.ReadOptions{After: after, Limit: pullBatch, Wait: time.Second})
		if err != nil || len(got.Data) == 0 {
			continue
		}
		idle = time.Now()
		for _, e := range got.Data {
			if webhook.VerifyRequest([]string{h.token}, e.Header(), []byte(e.Body), time.Now()) != nil {
				h.bad++
			}
			if h.read[e.ID] {
				h.dup++
			}
			h.read[e.ID] = true
		}
		last := got.Data[len(got.Data)-1].Cursor
		if _, err := h.api.AckEvents(ctx, h.id, last); err == nil {
			after = last
		}
	}
}

// fireLicenses creates licenses, each firing license.created, with
// Options.Clients clients for Options.Duration, and returns how many the
// API took, and how many calls it refused and why.
func fireLicenses(ctx context.Context, c *child, o Options) (events, refused int, reasons []string, err error) {
	var product struct{ ID string }
	if _, err := c.call(ctx, "POST", "/v3/products", map[string]any{"name": "bench"}, &product); err != nil {
		return 0, 0, nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(o.Duration)
	for range o.Clients {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				_, err := c.call(ctx, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
				mu.Lock()
				if err != nil {
					refused++
					if len(reasons) < maxReasons {
						reasons = append(reasons, err.Error())
					}
				} else {
					events++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return events, refused, reasons, nil
}
