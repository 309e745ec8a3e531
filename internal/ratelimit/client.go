package ratelimit

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the proxies whose X-Forwarded-For herald believes. A request
// that does not come from one of them is from its connection's address,
// whatever it says; one that does is from the right-most forwarded address
// that is not itself a trusted proxy (the left part of the header is the
// client's to write, so only what trusted proxies appended is believed).
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of addresses and CIDR prefixes.
func ParseProxies(list string) (Proxies, error) {
	var out Proxies
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Trusts says whether a is one of the proxies.
func (p Proxies) Trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr is the address a request comes from, as a string.
func (p Proxies) ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !p.Trusts(peer) {
		return peer.String()
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // not written by a proxy we trust: stop believing here
		}
		client = a.Unmap()
		if !p.Trusts(client) {
			break
		}
	}
	return client.String()
}

// Limits are the rate limits of herald's HTTP surface. The zero value, and
// nil limiters in it, limit nothing.
type Limits struct {
	Token     *Limiter  // per API token, and per portal session
	Anonymous *Limiter  // per client address, for requests without valid credentials
	Accounts  *Accounts // per account, at the rate an operator set for it
	Proxies   Proxies
}

// ByAddress counts a request without valid credentials against its client
// address's limit.
func (l Limits) ByAddress(r *http.Request) Decision {
	return l.Anonymous.Allow("a:" + l.Proxies.ClientAddr(r))
}

// ByCredential counts a request against the limit of the credential (an API
// token's or a session's hash, or another stable secret-free key) it carries.
func (l Limits) ByCredential(key string) Decision {
	return l.Token.Allow("t:" + key[:min(len(key), 32)])
}

// SetHeaders writes the RateLimit headers of the IETF draft (limit,
// remaining, seconds to reset) and, when the request is refused,
// Retry-After in whole seconds.
func (d Decision) SetHeaders(h http.Header) {
	if d.Limit == 0 {
		return // no limit applies
	}
	h.Set("RateLimit-Limit", fmt.Sprint(d.Limit))
	h.Set("RateLimit-Remaining", fmt.Sprint(d.Remaining))
	h.Set("RateLimit-Reset", fmt.Sprint(ceilSeconds(d.Reset)))
	if !d.Allowed {
		h.Set("Retry-After", fmt.Sprint(ceilSeconds(d.RetryAfter)))
	}
}

func ceilSeconds(d interface{ Seconds() float64 }) int64 {
	s := int64(d.Seconds())
	if float64(s) < d.Seconds() {
		s++
	}
	return max(1, s)
}
