package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startReceiver starts a real HTTP server on 127.0.0.1 that answers 204, and
// closes it when the test ends.
func startReceiver(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// clientFor returns an http.Client that dials only through p's guard.
func clientFor(t *testing.T, p Policy) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil, DialContext: p.DialContext(&net.Dialer{Timeout: 5 * time.Second})}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func TestDialContextRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv := startReceiver(t)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// "localhost" goes through the resolver, showing that names are checked
	// after resolution, not only IP literals.
	for _, url := range []string{srv.URL, "http://localhost:" + port + "/"} {
		t.Run(url, func(t *testing.T) {
			t.Parallel()
			resp, err := clientFor(t, Policy{}).Get(url)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s: got status %d; want an error", url, resp.StatusCode)
			}
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("GET %s: got error %v; want errors.Is(err, ErrBlocked)", url, err)
			}
			var blocked *BlockedError
			if !errors.As(err, &blocked) || blocked.Reason != "loopback" {
				t.Errorf("GET %s: got %#v; want a *BlockedError with reason loopback", url, blocked)
			}
			if !strings.Contains(err.Error(), "refused by policy") {
				t.Errorf("GET %s: got message %q; want it to say refused by policy", url, err)
			}
		})
	}
}

func TestDialContextAllowPrivate(t *testing.T) {
	t.Parallel()
	srv := startReceiver(t)
	resp, err := clientFor(t, Policy{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s: %v", srv.URL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("GET %s: got status %d; want %d", srv.URL, resp.StatusCode, http.StatusNoContent)
	}
}

// TestDialContextKeepsControl checks that a hook already on the caller's
// dialer still runs for allowed addresses, and never for refused ones.
func TestDialContextKeepsControl(t *testing.T) {
	t.Parallel()
	srv := startReceiver(t)
	var called []string
	d := &net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		called = append(called, address)
		return errors.New("stopped by the caller's hook")
	}}
	dial := Policy{}.DialContext(d)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()

	_, err := dial(ctx, "tcp", srv.Listener.Addr().String())
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("dial loopback: got %v; want ErrBlocked", err)
	}
	if len(called) != 0 {
		t.Errorf("caller's hook ran for %v; want it not to run for a refused address", called)
	}
	if d.ControlContext != nil {
		t.Errorf("caller's dialer got a ControlContext; want it left unchanged")
	}

	_, err = Policy{AllowPrivate: true}.DialContext(d)(ctx, "tcp", srv.Listener.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "stopped by the caller's hook") {
		t.Errorf("dial with AllowPrivate: got %v; want the caller's hook error", err)
	}
}

func TestDialContextRefusesNonIP(t *testing.T) {
	t.Parallel()
	sock := t.TempDir() + "/herald.sock"
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix sockets unavailable: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	_, err = Policy{}.DialContext(nil)(t.Context(), "unix", sock)
	if !errors.Is(err, ErrBlocked) {
		t.Errorf("dial unix socket: got %v; want ErrBlocked", err)
	}
}

// The dialer refuses a cloud metadata name before looking it up, as
// ValidateURL refuses it when a URL is saved, whatever its case or
// trailing dot; with both allowed, it dials as any name does. The dialer's
// resolver here answers nothing and sends nothing, so no test lookup
// leaves the machine.
func TestDialContextRefusesMetadataNames(t *testing.T) {
	t.Parallel()
	var lookups atomic.Int32
	d := &net.Dialer{Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		lookups.Add(1)
		return nil, errors.New("no DNS in tests")
	}}}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for _, p := range []Policy{{}, {AllowPrivate: true}, {AllowMetadata: true}} {
		for _, addr := range []string{"metadata.google.internal:80", "metadata.google.internal.:80", "METADATA.GOOG:443", "instance-data:80"} {
			_, err := p.DialContext(d)(ctx, "tcp", addr)
			var blocked *BlockedError
			if !errors.As(err, &blocked) || blocked.Reason != "cloud metadata name" {
				t.Errorf("%+v dial %s: %v; want it refused as a cloud metadata name", p, addr, err)
			}
		}
	}
	if n := lookups.Load(); n != 0 {
		t.Errorf("%d lookups; want none", n)
	}
	_, err := Policy{AllowPrivate: true, AllowMetadata: true}.DialContext(d)(ctx, "tcp", "metadata.google.internal:80")
	if errors.Is(err, ErrBlocked) || lookups.Load() == 0 {
		t.Errorf("dial with everything allowed: %v after %d lookups; want a lookup (which fails here), not a refusal", err, lookups.Load())
	}
}
