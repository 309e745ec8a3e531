package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// The destination scenario, m (decision 0144): herald's publishing path
// measured as scenario e measures a backlog's drain. License events are
// fired through the API for Options.Duration while the destination
// webhooks are held to heldRate deliveries a second, so their logs wait in
// the queue; then the limit is removed and herald drains the backlog: it
// claims the logs, publishes each to its broker and records the outcome.
// Each message is read back by a consumer of the broker, which verifies it
// as the receiver verifies a POST (its signature over the exact body, its
// webhook-id and webhook-event against the body, and every webhook's copy
// of an event the same bytes) and counts it by event id, so lost and
// duplicated mean what they mean for http. m-rabbitmq, m-kafka and m-nats
// publish to one webhook of each type; m-<type>-10 fans out to ten of one
// type (Brokers.FanOut). Deliveries per second are the messages published
// and consumed after the release, over the time from it to the last: the
// drain's pace, which the API's intake no longer bounds.
//
// Each result's ceiling is its broker's own, measured in the same scenario
// right after herald: a bare producer loop with the broker's client
// library and the confirm mode herald's type uses (RabbitMQ publisher
// confirms, Kafka acks=all, a JetStream acknowledgement), one producer per
// webhook with herald's concurrency (64 publishes in flight a webhook,
// 512 in all; RabbitMQ's through 16 confirm channels), messages of the
// size and headers herald sent, read by the same consumers. Its figure is
// published-and-consumed per second too.

// Herald's dispatcher's bounds (delivery.Config's defaults): in flight to
// one webhook, and in all.
const (
	perWebhookInFlight = 64
	inFlight           = 512
)

// fanOutWebhooks is how many webhooks m's fan-out publishes to.
const fanOutWebhooks = 10

// heldRate is the rate limit m's webhooks are held to while the backlog is
// queued: the lowest herald takes. A throttled webhook's logs wait in the
// queue, not in the dispatcher, and removing the limit releases them.
const heldRate = 1

func destinations(ctx context.Context, o Options, rcv *receiver) ([]Result, error) {
	fanOut := cmp.Or(o.Brokers.FanOut, "rabbitmq")
	if err := o.Brokers.CheckLoopback(); err != nil {
		return nil, err
	}
	var out []Result
	for _, c := range []struct {
		typ   string
		hooks int
	}{{"rabbitmq", 1}, {"kafka", 1}, {"nats", 1}, {fanOut, fanOutWebhooks}} {
		r, err := destRun(ctx, o, rcv, c.typ, c.hooks)
		rcv.reset()
		if err != nil {
			return out, fmt.Errorf("%s to %d webhook(s): %w", c.typ, c.hooks, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// destRun runs one of m's cases: a backlog queued for hooks webhooks of
// type typ and drained by herald, then the broker's ceiling.
func destRun(ctx context.Context, o Options, rcv *receiver, typ string, hooks int) (Result, error) {
	name, title := "m-"+typ, "one "+typ+" destination, a backlog drained"
	if hooks > 1 {
		name, title = fmt.Sprintf("m-%s-%d", typ, hooks), fmt.Sprintf("fan-out to %d %s destinations, a backlog drained", hooks, typ)
	}
	b, err := openBroker(ctx, typ, o.Brokers, randomHex(4))
	if err != nil {
		return Result{}, err
	}
	defer b.close()
	places := make([]string, hooks)
	for i := range places {
		places[i] = "h" + strconv.Itoa(i)
		if err := b.create(ctx, places[i]); err != nil {
			return Result{}, err
		}
	}
	s, err := start(ctx, o, rcv, setup{webhooks: hooks, rateLimit: heldRate,
		dest: func(i int) (string, map[string]any) { return typ, b.config(places[i]) }}, name)
	if err != nil {
		return Result{}, err
	}
	defer s.stop()
	chk := &destChecker{rcv: rcv, from: typ, bodies: map[string][32]byte{}}
	stop, err := consumeAll(ctx, b, places, chk.check)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(o.Log, "bench: %s: queueing for %s while the webhooks are held to %d delivery/s\n", name, o.Duration, heldRate)
	fired := s.fire(ctx, firing{duration: o.Duration}, o.Clients)
	queued, _, _ := rcv.counts(s.live)
	fmt.Fprintf(o.Log, "bench: %s: %s, the backlog released\n", name, title)
	// The CPU figures, herald's and the machine's, are the drain's; on
	// PostgreSQL they are the whole case's, as the database's cost is: its
	// statistics lag, so they cannot be read at the release.
	released := time.Now()
	cpuOf := "the drain's"
	if s.pg == nil {
		s.cpu0, _ = s.usage()
		s.machine0 = readCPUTimes()
	} else {
		cpuOf = "the whole case's, firing included"
	}
	for _, id := range s.hookIDs {
		if _, err := s.c.call(ctx, "PATCH", "/v3/webhooks/"+id, map[string]any{"rateLimit": nil}, nil); err != nil {
			stop()
			return Result{}, fmt.Errorf("release webhook %s: %w", id, err)
		}
	}
	// Lifting a rate limit wakes the dispatchers (Store.UpdateWebhook), so
	// the drain starts at the release.
	s.drain(ctx, 15*time.Second, 10*time.Minute)
	r := s.result(name, title, fired, released, 0) // the API's p99 is the firing's: after it, one call
	r.DeliveriesPerSec = 0
	if last := rcv.lastReceipt(); last.After(released) {
		r.DeliveriesPerSec = float64(r.Deliveries-queued) / last.Sub(released).Seconds()
	}
	r.Note = fmt.Sprintf("deliveriesPerSec: the %d messages published and consumed after the release, over the time from it to the last; events/s is the API's while the webhooks were held; CPU is %s; latency counts the time held", r.Deliveries-queued, cpuOf)
	s.finish(ctx, &r)
	stop()

	rcv.reset()
	fmt.Fprintf(o.Log, "bench: %s: the broker's ceiling, a bare producer loop\n", name)
	ceiling, note, err := brokerCeiling(ctx, b, hooks, chk.template(), min(o.Duration, 5*time.Second), rcv)
	if err != nil {
		return r, fmt.Errorf("the broker's ceiling: %w", err)
	}
	r.Ceiling, r.CeilingOf, r.Note = ceiling, "a bare "+typ+" producer loop", r.Note+"; "+note
	return r, nil
}

// consumeAll starts a consumer of each place, feeding got with the
// place's index; stop ends them all. Once stop has begun, got is not
// called again and no call is under way, whatever a client library's own
// stop waits for: the receiver is reset for the next case right after.
func consumeAll(ctx context.Context, b broker, places []string, got func(i int, h http.Header, body []byte)) (stop func(), err error) {
	var stops []func()
	var mu sync.RWMutex
	stopped := false
	stop = func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		for _, s := range stops {
			s()
		}
	}
	for i, p := range places {
		s, err := b.consume(ctx, p, func(h http.Header, body []byte) {
			mu.RLock()
			defer mu.RUnlock()
			if !stopped {
				got(i, h, body)
			}
		})
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, s)
	}
	return stop, nil
}

// destChecker checks what herald published before the receiver counts it.
type destChecker struct {
	rcv    *receiver
	from   string
	mu     sync.Mutex
	bodies map[string][32]byte // event id → its first copy's digest
	sample *brokerMessage      // the first message, the ceiling's template
}

// check counts a consumed message of webhook i: one whose webhook-id and
// webhook-event are not its body's, or whose bytes differ from another
// webhook's copy of the same event, is a bad one; the receiver verifies
// the signature.
func (c *destChecker) check(i int, h http.Header, body []byte) {
	var p struct{ ID, Event string }
	ok := json.Unmarshal(body, &p) == nil && p.ID != "" && p.ID == h.Get(webhook.IDHeader) && p.Event != "" && p.Event == h.Get("webhook-event")
	if ok {
		sum := sha256.Sum256(body)
		c.mu.Lock()
		if first, seen := c.bodies[p.ID]; seen {
			ok = first == sum
		} else {
			c.bodies[p.ID] = sum
		}
		if c.sample == nil {
			m := brokerMessage{id: p.ID, body: bytes.Clone(body)}
			for _, name := range []string{webhook.IDHeader, webhook.TimestampHeader, webhook.SignatureHeader, "webhook-event", "content-type"} {
				m.headers = append(m.headers, headerField{name, h.Get(name)})
			}
			c.sample = &m
		}
		c.mu.Unlock()
	}
	if !ok {
		c.rcv.badMessage(i)
		return
	}
	c.rcv.consumed(i, h, body, c.from)
}

// template is the first message herald published, or, when none came, one
// of the same shape around benchBody.
func (c *destChecker) template() brokerMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sample != nil {
		return *c.sample
	}
	var p struct{ ID string }
	json.Unmarshal(benchBody, &p)
	m := brokerMessage{id: p.ID, body: benchBody}
	for _, name := range []string{webhook.IDHeader, webhook.TimestampHeader, webhook.SignatureHeader, "webhook-event", "content-type"} {
		m.headers = append(m.headers, headerField{name, "x"})
	}
	return m
}

// ceilingMessage is template as event seq of the ceiling: a new id of the
// same length in its body and webhook-id, signed with token.
func ceilingMessage(template brokerMessage, seq int64, token string) brokerMessage {
	id := fmt.Sprintf("0193a0b1-0000-7000-8000-%012x", seq)
	body := bytes.Replace(template.body, []byte(`"id":"`+template.id+`"`), []byte(`"id":"`+id+`"`), 1)
	m := brokerMessage{id: id, key: id, body: body, headers: make([]headerField, len(template.headers))}
	for i, h := range template.headers {
		switch h.name {
		case webhook.IDHeader:
			h.value = id
		case webhook.TimestampHeader:
			h.value = strconv.FormatInt(time.Now().Unix(), 10)
		case webhook.SignatureHeader:
			h.value = webhook.Sign(token, body)
		case "webhook-event":
			h.value = "license.created"
		case "content-type":
			h.value = "application/json; charset=utf-8"
		}
		m.headers[i] = h
	}
	return m
}

// brokerCeiling runs the bare producer loop for d: one producer per
// webhook herald published to, each with herald's in-flight publishes,
// read by the same consumers as herald's messages. It returns the
// published-and-consumed per second and a note of what it measured.
func brokerCeiling(ctx context.Context, b broker, producers int, template brokerMessage, d time.Duration, rcv *receiver) (float64, string, error) {
	const token = "whsec_bench_ceiling_token_0123456789"
	places := make([]string, producers)
	for i := range places {
		places[i] = "c" + strconv.Itoa(i)
		if err := b.create(ctx, places[i]); err != nil {
			return 0, "", err
		}
		rcv.add(i, token, false)
	}
	stop, err := consumeAll(ctx, b, places, func(i int, h http.Header, body []byte) { rcv.consumed(i, h, body, "ceiling") })
	if err != nil {
		return 0, "", err
	}
	defer stop()
	var ps []producer
	defer func() {
		for _, p := range ps {
			p.close()
		}
	}()
	for _, place := range places {
		p, err := b.producer(ctx, place)
		if err != nil {
			return 0, "", err
		}
		ps = append(ps, p)
	}
	each := min(perWebhookInFlight, inFlight/producers)
	var seq, published, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	until := start.Add(d)
	var wg sync.WaitGroup
	for _, p := range ps {
		for range each {
			wg.Go(func() {
				for ctx.Err() == nil && time.Now().Before(until) {
					if err := p.publish(ctx, ceilingMessage(template, seq.Add(1), token)); err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					published.Add(1)
				}
			})
		}
	}
	wg.Wait()
	all := func(int) bool { return true }
	for idle := time.Now(); ctx.Err() == nil && time.Since(idle) < 15*time.Second; time.Sleep(20 * time.Millisecond) {
		if unique, _, _ := rcv.counts(all); unique >= int(published.Load()) {
			break
		}
		if last := rcv.lastReceipt(); last.After(idle) {
			idle = last
		}
	}
	unique, dup, bad := rcv.counts(all)
	rate := 0.0
	if last := rcv.lastReceipt(); last.After(start) {
		rate = float64(unique) / last.Sub(start).Seconds()
	}
	note := fmt.Sprintf("ceiling: %s; %d producer(s), %d in flight each, %d-byte bodies; %d published, %d consumed, lost %d, duplicated %d, bad %d",
		b.describe(), producers, each, len(template.body), published.Load(), unique, max(0, int(published.Load())-unique), dup, bad)
	if n := failed.Load(); n > 0 {
		note += fmt.Sprintf("; %d publishes failed (%v)", n, firstErr.Load())
	}
	return rate, note, nil
}
