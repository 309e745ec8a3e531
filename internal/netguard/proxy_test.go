package netguard_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/netguard"
	"github.com/heraldhq/herald/internal/proxytest"
)

// client is what the dispatcher's transport is, in short: no proxy of
// Go's own, every connection through dial.
func client(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: dial}}
}

// Deliveries through an egress proxy reach the receiver through a tunnel
// the proxy made, with the proxy's credentials when it asks for them; a
// receiver address the policy refuses is refused before anything is sent
// to the proxy, whatever the name it is reached by.
func TestEgressProxy(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "got it") }))
	t.Cleanup(rcv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rcv.URL, "http://"))

	for _, tt := range []struct {
		name       string
		user, pass string // the proxy's; "" for none
		creds      string // the credentials herald is given, "" for the proxy's own
	}{
		{"open proxy", "", "", ""},
		{"proxy with credentials", "herald", "s3cret-pass", ""},
		{"wrong credentials", "herald", "s3cret-pass", "herald:wrong"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			px := proxytest.Start(t, tt.user, tt.pass)
			u, err := netguard.ParseProxy(px.URL)
			if err != nil {
				t.Fatal(err)
			}
			if tt.creds != "" {
				u, _ = netguard.ParseProxy(strings.Replace(px.URL, tt.user+":"+tt.pass, tt.creds, 1))
			}
			// Loopback receivers need private addresses allowed.
			open := netguard.Policy{AllowPrivate: true}
			resp, err := client(open.ProxyDialContext(nil, u)).Get(rcv.URL)
			if tt.creds != "" {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("wrong credentials: %s; want refused", resp.Status)
				}
				// tinyproxy answers 401 where the standard says 407.
				if !strings.Contains(err.Error(), "answered 40") || strings.Contains(err.Error(), "wrong") {
					t.Errorf("error %q; want the proxy's refusal named, and no password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("through the proxy: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "got it" {
				t.Fatalf("receiver answered %q", body)
			}
			if n := px.Tunnels(t); n != 1 {
				t.Errorf("the proxy made %d tunnels; want the delivery's one", n)
			}

			// The guard on: loopback, private and metadata receivers are
			// refused by address, by name (localhost resolves to loopback)
			// and by metadata name, and the proxy hears of none of them.
			guarded := netguard.Policy{Resolver: net.DefaultResolver}
			for _, target := range []string{rcv.URL, "http://localhost:" + port, "http://10.1.2.3:" + port, "http://169.254.169.254/latest", "http://metadata.google.internal/"} {
				resp, err := client(guarded.ProxyDialContext(nil, u)).Get(target)
				if err == nil {
					resp.Body.Close()
					t.Errorf("%s: %s through the proxy; want refused by the guard", target, resp.Status)
					continue
				}
				if !errors.Is(err, netguard.ErrBlocked) {
					t.Errorf("%s: %v; want the guard's refusal", target, err)
				}
			}
			if n := px.Tunnels(t); n != 1 {
				t.Errorf("the proxy made %d tunnels after the refusals; want still 1", n)
			}
		})
	}
}

func TestParseProxy(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want string // "" for accepted
	}{
		{"http://proxy.internal:3128", ""},
		{"http://user:pa%40ss@10.0.0.5:8888", ""},
		{"https://proxy.internal:3128", "http://"},
		{"socks5://proxy.internal:1080", "http://"},
		{"http://proxy.internal", "host and port"},
		{"http://:3128", "host and port"},
		{"http://proxy.internal:3128/path", "no path"},
		{"proxy.internal:3128", "http://"},
	} {
		_, err := netguard.ParseProxy(tt.raw)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v; want accepted", tt.raw, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v; want an error saying %q", tt.raw, err, tt.want)
		}
	}
}
