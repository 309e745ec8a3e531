package netguard

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ParseProxy checks an egress proxy's URL: http://[user:password@]host:port,
// an HTTP proxy that takes CONNECT. Its address is the operator's choice and
// may be private; the policy never judges it.
func ParseProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("want an http:// URL of a proxy that takes CONNECT, not %q", u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, errors.New("want the proxy's host and port, as http://proxy.internal:3128")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("want no path, query or fragment: only the proxy's address and credentials")
	}
	return u, nil
}

// ProxyDialContext returns a dial function that reaches every address
// through the egress proxy at proxy, by HTTP CONNECT, so that a receiver
// sees one source address. The policy still judges the receiver: the
// dialed host is looked up here, its addresses checked as DialContext
// checks them, and the tunnel asked for the address that passed (an IP,
// never the name: the proxy does not look it up again, so a name cannot
// resolve to a refused address between the check and the connection).
// Nothing is sent to the proxy for an address the policy refuses. The
// proxy's own address is exempt: it is the only private address a guarded
// herald connects to.
//
// d dials the proxy; nil means a zero net.Dialer. The transport over the
// tunnel is the caller's: for https it speaks TLS to the receiver's name,
// end to end, so the proxy sees neither the request nor the token.
func (p Policy) ProxyDialContext(d *net.Dialer, proxy *url.URL) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var dialer net.Dialer
	if d != nil {
		dialer = *d
	}
	resolver := p.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	auth := ""
	if proxy.User != nil {
		pass, _ := proxy.User.Password()
		auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(proxy.User.Username()+":"+pass))
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		targets, err := p.proxyTargets(ctx, resolver, address)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, target := range targets {
			conn, err := connect(ctx, &dialer, proxy.Host, target.String(), auth)
			if err == nil {
				return conn, nil
			}
			errs = append(errs, fmt.Errorf("through the egress proxy %s: %w", proxy.Redacted(), err))
		}
		return nil, errors.Join(errs...)
	}
}

// proxyTargets is the addresses of address ("host:port") that the policy
// allows, in the resolver's order; a refusal when there is none.
func (p Policy) proxyTargets(ctx context.Context, resolver Resolver, address string) ([]netip.AddrPort, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &BlockedError{Addr: address, Reason: "not a host and port"}
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, &BlockedError{Addr: address, Reason: "not a port"}
	}
	h, _ := dialHost(host)
	if !p.open() && metadataName(h) {
		return nil, &BlockedError{Addr: address, Reason: "cloud metadata name"}
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("look up %s: %w", host, err)
	}
	var allowed []netip.AddrPort
	var refused error
	for _, ip := range ips {
		ip = ip.Unmap()
		if reason, _ := p.refusal(ip); reason != "" {
			refused = &BlockedError{Addr: ip.String(), Reason: reason}
			continue
		}
		allowed = append(allowed, netip.AddrPortFrom(ip, uint16(port)))
	}
	if len(allowed) == 0 {
		if refused == nil {
			refused = fmt.Errorf("look up %s: no addresses", host)
		}
		return nil, refused
	}
	return allowed, nil
}

// connectTimeout bounds the proxy's answer to CONNECT, beside the dialer's
// own time-out for reaching it.
const connectTimeout = 10 * time.Second

// connect opens a tunnel to target through the proxy at proxyAddr.
func connect(ctx context.Context, d *net.Dialer, proxyAddr, target, auth string) (net.Conn, error) {
	conn, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(connectTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	conn.SetDeadline(deadline)
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ask for a tunnel to %s: %w", target, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("read the answer to CONNECT %s: %w", target, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("CONNECT %s answered %s", target, resp.Status)
	}
	conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The receiver spoke first and the reader took some of it along.
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// bufferedConn is a tunnel whose first bytes were read with the proxy's
// answer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
