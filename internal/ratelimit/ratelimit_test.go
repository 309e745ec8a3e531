package ratelimit

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// clock is a test's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newAt(c *clock, rate float64, burst int) *Limiter {
	l := New(rate, burst)
	l.now = c.now
	return l
}

func TestLimiterAllowsABurstThenTheRate(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)} // the start of a window
	l := newAt(c, 2, 4)                     // windows of 2 s
	for i := range 4 {
		if d := l.Allow("k"); !d.Allowed || d.Remaining != int64(3-i) || d.Limit != 4 {
			t.Fatalf("request %d of the burst: %+v", i+1, d)
		}
	}
	d := l.Allow("k")
	if d.Allowed {
		t.Fatal("a fifth request in the burst was allowed")
	}
	if d.RetryAfter <= 0 || d.RetryAfter > 4*time.Second {
		t.Fatalf("retry after %s", d.RetryAfter)
	}
	if l.Allow("other").Allowed != true {
		t.Fatal("another key shares the first key's count")
	}
	// Retry-After is right: refused just before it, allowed at it.
	c.t = c.t.Add(d.RetryAfter - 50*time.Millisecond)
	if l.Allow("k").Allowed {
		t.Fatalf("allowed before Retry-After (%s)", d.RetryAfter)
	}
	c.t = c.t.Add(50 * time.Millisecond)
	if !l.Allow("k").Allowed {
		t.Fatalf("refused at Retry-After (%s)", d.RetryAfter)
	}
	// Sustained: over the next 10 s, about rate × 10 more.
	allowed := 0
	for range 1000 {
		c.t = c.t.Add(10 * time.Millisecond)
		if l.Allow("k").Allowed {
			allowed++
		}
	}
	if allowed < 18 || allowed > 22 {
		t.Errorf("%d allowed over 10 s at 2/s", allowed)
	}
}

func TestNilLimiterAllowsEverything(t *testing.T) {
	var l *Limiter = New(0, 10)
	if d := l.Allow("k"); !d.Allowed {
		t.Fatal("a limit of 0 refused")
	}
}

// memShared is the shared counts of several processes, in memory, as the
// store keeps them (the store's own behaviour is in storetest).
type memShared struct {
	mu sync.Mutex
	n  map[string]map[int64]int64
}

func (m *memShared) AddRateCounts(_ context.Context, cs []Count) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		if m.n[c.Key] == nil {
			m.n[c.Key] = map[int64]int64{}
		}
		m.n[c.Key][c.Window] += c.N
	}
	return nil
}

func (m *memShared) RateCounts(_ context.Context, keys []string, since int64) ([]Count, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Count
	for _, k := range keys {
		for w, n := range m.n[k] {
			if w >= since {
				out = append(out, Count{k, w, n})
			}
		}
	}
	return out, nil
}

func (m *memShared) PruneRateCounts(context.Context, int64) error { return nil }

func TestLimitersShareTheirCounts(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	shared := &memShared{n: map[string]map[int64]int64{}}
	a, b := newAt(c, 1, 10), newAt(c, 1, 10) // windows of 10 s
	for range 6 {
		a.Allow("k")
	}
	ctx := context.Background()
	if err := a.sync(ctx, shared, "t"); err != nil {
		t.Fatal(err)
	}
	b.Allow("k") // b learns of the key
	if err := b.sync(ctx, shared, "t"); err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for range 10 {
		if b.Allow("k").Allowed {
			allowed++
		}
	}
	if allowed != 3 {
		t.Errorf("b allowed %d more after a's 6 and its own 1; want 3 (the burst is 10)", allowed)
	}
}

func TestClientAddrBelievesOnlyTrustedProxies(t *testing.T) {
	trusted, err := ParseProxies("127.0.0.1, 10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProxies("10.0.0.0/33"); err == nil {
		t.Error("a bad prefix parsed")
	}
	tests := []struct {
		name    string
		proxies Proxies
		remote  string
		xff     []string
		want    string
	}{
		{"no proxies: the connection", nil, "127.0.0.1:5000", []string{"203.0.113.9"}, "127.0.0.1"},
		{"untrusted peer: the connection", trusted, "198.51.100.1:5000", []string{"203.0.113.9"}, "198.51.100.1"},
		{"trusted peer: the forwarded client", trusted, "127.0.0.1:5000", []string{"203.0.113.9"}, "203.0.113.9"},
		{"chain of trusted proxies", trusted, "127.0.0.1:5000", []string{"203.0.113.9, 10.1.2.3"}, "203.0.113.9"},
		{"a client's own prefix is not believed", trusted, "127.0.0.1:5000", []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9"},
		{"several headers", trusted, "127.0.0.1:5000", []string{"1.2.3.4", "203.0.113.9"}, "203.0.113.9"},
		{"garbage stops belief", trusted, "127.0.0.1:5000", []string{"203.0.113.9, junk"}, "127.0.0.1"},
		{"IPv6", trusted, "[::1]:5000", []string{"203.0.113.9"}, "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.remote, Header: http.Header{"X-Forwarded-For": tt.xff}}
			if got := tt.proxies.ClientAddr(r); got != tt.want {
				t.Errorf("client %q; want %q", got, tt.want)
			}
		})
	}
}
