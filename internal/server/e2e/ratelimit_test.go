package e2e_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/heraldtest"
	"github.com/heraldhq/herald/internal/ratelimit"
)

// get makes a GET with the given token ("" for none) and headers, and
// returns the answer with its body read and closed.
func get(t *testing.T, h *heraldtest.Herald, path, token string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// An API token over its limit gets 429 with Retry-After and the RateLimit
// headers, and is served again once Retry-After has passed.
func TestAPITokenOverItsLimitGets429(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{RateLimit: 2}) // bursts of 4
	start := time.Now()
	var ok int
	var refused *http.Response
	for range 20 {
		resp := get(t, h, "/v3/account", h.Token)
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
			if resp.Header.Get("RateLimit-Limit") != "4" || resp.Header.Get("RateLimit-Remaining") == "" {
				t.Errorf("200 without RateLimit headers: %v", resp.Header)
			}
		case http.StatusTooManyRequests:
			if refused == nil {
				refused = resp
			}
		default:
			t.Fatalf("answered %d", resp.StatusCode)
		}
	}
	elapsed := time.Since(start)
	if refused == nil {
		t.Fatalf("20 requests in %s at 2/s with bursts of 4 were all served", elapsed)
	}
	if most := 4 + int(2*elapsed.Seconds()) + 1; ok > most {
		t.Errorf("%d served in %s; the limit allows at most %d", ok, elapsed, most)
	}
	retry, err := strconv.Atoi(refused.Header.Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Fatalf("429 with Retry-After %q", refused.Header.Get("Retry-After"))
	}
	if ct := refused.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("429 as %q", ct)
	}
	time.Sleep(time.Duration(retry) * time.Second)
	if resp := get(t, h, "/v3/account", h.Token); resp.StatusCode != http.StatusOK {
		t.Errorf("after Retry-After (%ds): %d", retry, resp.StatusCode)
	}
}

// Requests without a valid token are limited per client address, apart from
// the token's own limit; a forwarded address counts only from a trusted
// proxy.
func TestAnonymousRequestsAreLimitedPerClientAddress(t *testing.T) {
	t.Parallel()
	loopback := ratelimit.Proxies{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name    string
		proxies ratelimit.Proxies
		// whether a second forwarded client has a budget of its own
		separate bool
	}{
		{"forwarded addresses ignored from an untrusted peer", nil, false},
		{"forwarded addresses believed from a trusted proxy", loopback, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A rate too slow to refill within the test: bursts of 2.
			h := heraldtest.Start(t, heraldtest.Options{RateLimitAnonymous: 0.01, RateLimit: -1, TrustedProxies: tt.proxies})
			codes := func(client string, n int) []int {
				var out []int
				for range n {
					out = append(out, get(t, h, "/v3/account", "hrld_not-a-token", "X-Forwarded-For", client).StatusCode)
				}
				return out
			}
			if got := codes("203.0.113.1", 3); got[0] != 401 || got[1] != 401 || got[2] != 429 {
				t.Fatalf("a client's bad tokens answered %v; want 401, 401, 429", got)
			}
			second := codes("203.0.113.2", 1)[0]
			if want := map[bool]int{true: 401, false: 429}[tt.separate]; second != want {
				t.Errorf("another forwarded client: %d; want %d", second, want)
			}
			if resp := get(t, h, "/v3/account", h.Token, "X-Forwarded-For", "203.0.113.1"); resp.StatusCode != http.StatusOK {
				t.Errorf("a valid token from a refused address: %d; its own limit applies", resp.StatusCode)
			}
		})
	}
}

// Two processes on one PostgreSQL share one token's budget: together they
// serve about what one would, not twice as much.
func TestTwoProcessesShareOneTokensLimit(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "two heralds on one PostgreSQL, paced over 4 s")
	heraldtest.PostgresHandles(t, 2)
	db := heraldtest.PostgresURL(t)
	a := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, RateLimit: 2}) // bursts of 4
	b := heraldtest.Start(t, heraldtest.Options{DatabaseURL: db, Key: a.Options.Key, Token: a.Token, RateLimit: 2})
	start := time.Now()
	ok := 0
	for i := range 40 {
		h := []*heraldtest.Herald{a, b}[i%2]
		if get(t, h, "/v3/account", a.Token).StatusCode == http.StatusOK {
			ok++
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start).Seconds()
	// One process would serve the burst and the rate; sharing lags by a
	// sync interval (200 ms, two requests here), so the processes may
	// serve a little more between them. Two processes counting alone would
	// serve twice the lot.
	shared, alone := 4+2*elapsed+4, 2*(4+2*elapsed)
	t.Logf("%d served in %.1fs by two processes; shared limit allows up to %.0f, two separate ones %.0f", ok, elapsed, shared, alone)
	if float64(ok) > shared {
		t.Errorf("%d served; the shared limit allows at most %.0f", ok, shared)
	}
	if !strings.HasPrefix(db, "postgres") {
		t.Fatal("not on PostgreSQL")
	}
}
