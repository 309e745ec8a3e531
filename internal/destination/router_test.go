package destination_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/destination"
)

// counted is a destination type for the router's own tests (the types'
// packages test each against its real broker): it counts the clients it
// opens and closes, and a publish waits while hold is set.
type counted struct {
	mu             sync.Mutex
	opened, closed map[string]int // by the config's "name"
	hold           chan struct{}
}

func (c *counted) Name() string                                   { return "counted" }
func (c *counted) Fields() []destination.Field                    { return nil }
func (c *counted) Check(destination.Config, func(string, string)) {}
func (c *counted) Where(destination.Config) string                { return "counted://" }

func (c *counted) Open(_ context.Context, cfg destination.Config, _ destination.Env) (destination.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opened[cfg.String("name")]++
	return &countedClient{t: c, name: cfg.String("name"), hold: c.hold}, nil
}

func (c *counted) count(m map[string]int, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m[name]
}

type countedClient struct {
	t    *counted
	name string
	hold chan struct{}
}

func (cl *countedClient) Publish(ctx context.Context, _ destination.Message) destination.Result {
	if cl.hold != nil {
		<-cl.hold
	}
	return destination.Result{Answer: "taken"}
}

func (cl *countedClient) Close() error {
	cl.t.mu.Lock()
	defer cl.t.mu.Unlock()
	cl.t.closed[cl.name]++
	return nil
}

// TestAnIdleClientIsClosed: a webhook's client unused for IdleAfter is
// closed by a later attempt's sweep (its webhook may be gone) and opened
// again if it is used again; one in use is never closed, however long
// its attempt takes.
func TestAnIdleClientIsClosed(t *testing.T) {
	typ := &counted{opened: map[string]int{}, closed: map[string]int{}}
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	lookup := func(_ context.Context, id string) (string, json.RawMessage, error) {
		return "counted", json.RawMessage(`{"name":"` + id + `"}`), nil
	}
	r := destination.NewRouter([]destination.Type{typ}, lookup, destination.Env{Timeout: time.Minute}, clock)
	t.Cleanup(r.Close)
	publish := func(id string) {
		t.Helper()
		if res := r.Publish(context.Background(), id, destination.Message{}); !res.OK() {
			t.Fatalf("publish to %s: %+v", id, res)
		}
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}

	publish("gone")
	publish("busy")
	advance(destination.IdleAfter - time.Minute)
	publish("busy") // used lately: kept
	advance(2 * time.Minute)
	publish("other") // sweeps: gone is idle, busy is not
	eventually("the idle client was not closed", func() bool { return typ.count(typ.closed, "gone") == 1 })
	if typ.count(typ.closed, "busy") != 0 || typ.count(typ.opened, "busy") != 1 {
		t.Errorf("busy: opened %d, closed %d; want kept open", typ.count(typ.opened, "busy"), typ.count(typ.closed, "busy"))
	}
	publish("gone")
	if got := typ.count(typ.opened, "gone"); got != 2 {
		t.Errorf("gone opened %d times; want again after its close", got)
	}

	// An attempt in flight past IdleAfter keeps its client.
	typ.mu.Lock()
	typ.hold = make(chan struct{})
	typ.mu.Unlock()
	done := make(chan struct{})
	go func() { defer close(done); r.Publish(context.Background(), "slow", destination.Message{}) }()
	eventually("the slow attempt did not start", func() bool { return typ.count(typ.opened, "slow") == 1 })
	advance(2 * destination.IdleAfter)
	go r.Publish(context.Background(), "sweeper", destination.Message{})
	eventually("the sweeper did not open", func() bool { return typ.count(typ.opened, "sweeper") == 1 })
	if got := typ.count(typ.closed, "slow"); got != 0 {
		t.Errorf("the client of an attempt in flight was closed %d times", got)
	}
	close(typ.hold)
	<-done
}
