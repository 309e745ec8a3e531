package admission_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/admission"
)

// dialFrom opens a connection to addr from the loopback address from.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// served says whether the listener handed c to the server (which then
// answers a byte) rather than closing it unserved.
func served(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	_, err := c.Read(b)
	return err == nil
}

func TestConnsBoundTotalAndPerAddress(t *testing.T) {
	t.Parallel()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refused []string
	ln := admission.Conns{Total: 4, PerAddress: 2,
		Exempt: func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.9") },
		Refused: func(a netip.Addr, total bool) {
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, a.String()+map[bool]string{true: " total", false: " address"}[total])
		},
	}.Limit(raw)
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte{1}) // served: the client reads a byte
			accepted <- c
		}
	}()
	addr := raw.Addr().String()

	a1, a2 := dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)
	if !served(t, a1) || !served(t, a2) {
		t.Fatal("the first two connections of an address were not served")
	}
	if served(t, dialFrom(t, "127.0.0.2", addr)) {
		t.Error("a third connection from one address was served; want it closed at once (2 per address)")
	}
	if !served(t, dialFrom(t, "127.0.0.3", addr)) {
		t.Error("another address's connection was refused while the total had room")
	}
	if !served(t, dialFrom(t, "127.0.0.9", addr)) {
		t.Error("an exempt address was refused")
	}
	if served(t, dialFrom(t, "127.0.0.4", addr)) {
		t.Error("a fifth connection was served; want it closed at once (4 in all)")
	}
	// Closing a served connection gives its place back.
	(<-accepted).Close()
	if !served(t, dialFrom(t, "127.0.0.4", addr)) {
		t.Error("a place given back by a closed connection was not taken")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(refused, ", "); got != "127.0.0.2 address, 127.0.0.4 total" {
		t.Errorf("refused: %s; want 127.0.0.2 address, 127.0.0.4 total", got)
	}
}

func TestConnsForKeepsHalfTheDescriptors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit             uint64
		total, perAddress int
	}{{256, 128, 32}, {1024, 512, 128}, {20000, 10000, 2500}, {10, 8, 2}} {
		c := admission.ConnsFor(tc.limit)
		if c.Total != tc.total || c.PerAddress != tc.perAddress {
			t.Errorf("ConnsFor(%d) = %d in all, %d per address; want %d, %d", tc.limit, c.Total, c.PerAddress, tc.total, tc.perAddress)
		}
	}
}

// TestBodiesBoundWhatRequestsHold: bytes count as they arrive and are given
// back when the handler returns; a read past the bound fails with ErrBusy
// and the answer carries Retry-After.
func TestBodiesBoundWhatRequestsHold(t *testing.T) {
	t.Parallel()
	bodies := admission.NewBodies(100)
	holding := make(chan struct{})
	release := make(chan struct{})
	h := bodies.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if admission.IsBusy(err) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/hold" {
			close(holding)
			<-release
		}
		w.Write([]byte(http.StatusText(len(b))))
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(path string, n int) *http.Response {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "text/plain", strings.NewReader(strings.Repeat("x", n)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	done := make(chan *http.Response)
	go func() { done <- post("/hold", 70) }()
	<-holding
	if got := bodies.InFlight(); got != 70 {
		t.Errorf("in flight while a 70-byte body is held: %d", got)
	}
	resp := post("/", 40)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a body past the bound: %d, Retry-After %q; want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post("/", 30); resp.StatusCode != http.StatusOK {
		t.Errorf("a body within the bound: %d", resp.StatusCode)
	}
	close(release)
	if resp := <-done; resp.StatusCode != http.StatusOK {
		t.Errorf("the held request: %d", resp.StatusCode)
	}
	if got := bodies.InFlight(); got != 0 {
		t.Errorf("in flight after every request ended: %d; want 0", got)
	}
	if resp := post("/", 100); resp.StatusCode != http.StatusOK {
		t.Errorf("a body of the whole bound, alone: %d", resp.StatusCode)
	}
}
