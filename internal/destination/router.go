package destination

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lookup reads a destination webhook's type and its config, opened.
type Lookup func(ctx context.Context, webhookID string) (typ string, config json.RawMessage, err error)

// Router publishes the attempts of destination webhooks: it reads each
// webhook's config at each attempt (so a change applies to the next one),
// and keeps one open client per webhook while its config stays the same
// and it is used: one idle for IdleAfter is closed (the webhook may be
// gone; its next attempt, if any, opens it again).
type Router struct {
	types  map[string]Type
	lookup Lookup
	env    Env
	now    func() time.Time

	mu        sync.Mutex
	clients   map[string]*open // by webhook id
	closed    bool
	lastSweep time.Time
}

// IdleAfter is how long a webhook's client stays open with no attempt.
const IdleAfter = 10 * time.Minute

type open struct {
	sum    [32]byte // of the config it was opened with
	client Client
	ready  chan struct{} // closed once client (or err) is set
	err    error
	// used and inflight, under the router's mu, keep a client in use or
	// used lately from being closed as idle.
	used     time.Time
	inflight int
}

// NewRouter returns a router over the given types; now stamps durations
// (time.Now when nil).
func NewRouter(types []Type, lookup Lookup, env Env, now func() time.Time) *Router {
	if now == nil {
		now = time.Now
	}
	r := &Router{types: map[string]Type{}, lookup: lookup, env: env, now: now, clients: map[string]*open{}}
	for _, t := range types {
		r.types[t.Name()] = t
	}
	return r
}

// Publish publishes m to webhookID's destination, within env.Timeout.
func (r *Router) Publish(ctx context.Context, webhookID string, m Message) Result {
	start := r.now()
	res := r.publish(ctx, webhookID, m)
	res.Duration = r.now().Sub(start)
	return res
}

func (r *Router) publish(ctx context.Context, webhookID string, m Message) Result {
	if r.env.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.env.Timeout)
		defer cancel()
	}
	typ, raw, err := r.lookup(ctx, webhookID)
	if err != nil {
		return Failed("config", "the destination's config could not be read: "+err.Error())
	}
	t, ok := r.types[typ]
	if !ok {
		return Failed("config", fmt.Sprintf("this herald cannot publish to a destination of type %q", typ))
	}
	c, err := Parse(raw)
	if err != nil {
		return Failed("config", err.Error())
	}
	client, o, err := r.client(ctx, webhookID, t, c, sha256.Sum256(raw))
	if o != nil {
		defer r.release(o)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failed("timeout", fmt.Sprintf("timed out after %s connecting to the broker", r.env.Timeout))
		}
		return Failed("connection", "could not connect to the broker: "+err.Error())
	}
	res := client.Publish(ctx, m)
	if res.Failure == "connection" || res.Failure == "timeout" {
		// The next attempt connects afresh.
		r.drop(webhookID, client)
	}
	return res
}

// client returns the open client of a webhook's config, opening it (once,
// however many attempts ask at once) when there is none or its config
// changed. The open it returns is in use until released.
func (r *Router) client(ctx context.Context, webhookID string, t Type, c Config, sum [32]byte) (Client, *open, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, nil, errors.New("herald is stopping")
	}
	now := r.now()
	r.sweep(now)
	o := r.clients[webhookID]
	if o != nil && o.sum == sum {
		o.inflight++
		o.used = now
		r.mu.Unlock()
		select {
		case <-o.ready:
		case <-ctx.Done():
			return nil, o, ctx.Err()
		}
		if o.err != nil {
			r.forget(webhookID, o)
			return nil, o, o.err
		}
		return o.client, o, nil
	}
	stale := o
	o = &open{sum: sum, ready: make(chan struct{}), used: now, inflight: 1}
	r.clients[webhookID] = o
	r.mu.Unlock()
	if stale != nil {
		go closeWhenReady(stale)
	}
	o.client, o.err = t.Open(ctx, c, r.env)
	close(o.ready)
	if o.err != nil {
		r.forget(webhookID, o)
		return nil, o, o.err
	}
	return o.client, o, nil
}

// release ends an attempt's use of o.
func (r *Router) release(o *open) {
	r.mu.Lock()
	o.inflight--
	r.mu.Unlock()
}

// sweep closes, at most once a minute, the clients no attempt has used for
// IdleAfter and none is using. Its caller holds mu.
func (r *Router) sweep(now time.Time) {
	if now.Sub(r.lastSweep) < time.Minute {
		return
	}
	r.lastSweep = now
	for id, o := range r.clients {
		if o.inflight == 0 && now.Sub(o.used) >= IdleAfter {
			delete(r.clients, id)
			go closeWhenReady(o)
		}
	}
}

// forget removes o if it is still webhookID's.
func (r *Router) forget(webhookID string, o *open) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clients[webhookID] == o {
		delete(r.clients, webhookID)
	}
}

// drop closes a webhook's client after a failure of its connection.
func (r *Router) drop(webhookID string, c Client) {
	r.mu.Lock()
	o := r.clients[webhookID]
	if o == nil || o.client != c {
		r.mu.Unlock()
		return
	}
	delete(r.clients, webhookID)
	r.mu.Unlock()
	go closeWhenReady(o)
}

func closeWhenReady(o *open) {
	<-o.ready
	if o.client != nil {
		o.client.Close()
	}
}

// Close closes every open client; a publish after it fails.
func (r *Router) Close() {
	r.mu.Lock()
	all := r.clients
	r.clients, r.closed = map[string]*open{}, true
	r.mu.Unlock()
	for _, o := range all {
		closeWhenReady(o)
	}
}
