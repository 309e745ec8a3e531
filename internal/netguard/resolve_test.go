package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// zone answers lookups from a fixed table, standing in for DNS so that no
// test sends a query out; it records what it was asked.
type zone struct {
	mu    sync.Mutex
	names map[string][]string
	asked []string
}

func (z *zone) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	z.mu.Lock()
	z.asked = append(z.asked, host)
	z.mu.Unlock()
	if host == "slow.internal" {
		<-ctx.Done() // a resolver that never answers
		return nil, ctx.Err()
	}
	ips, ok := z.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, ip := range ips {
		out = append(out, netip.MustParseAddr(ip))
	}
	return out, nil
}

func TestValidateURLLooksNamesUp(t *testing.T) {
	t.Parallel()
	z := &zone{names: map[string][]string{
		"public.herald.dev":   {"93.184.215.14"},
		"private.herald.dev":  {"10.0.0.7"},
		"mixed.herald.dev":    {"93.184.215.14", "192.168.1.1"},
		"metadata.herald.dev": {"169.254.169.254"},
		"mapped.herald.dev":   {"::ffff:169.254.169.254"},
		"loopback.herald.dev": {"::1"},
	}}
	const private, metadata = "resolves to a private or loopback address, refused unless herald runs with --allow-private-networks", "resolves to a cloud metadata address"
	tests := []struct {
		url                          string
		deny, allowPrivate, allowAll string
	}{
		{"https://public.herald.dev/hook", "", "", ""},
		{"https://private.herald.dev/hook", private, "", ""},
		{"https://MIXED.herald.dev./hook", private, "", ""},
		{"https://metadata.herald.dev/hook", metadata, metadata, ""},
		{"https://mapped.herald.dev/hook", metadata, metadata, ""},
		{"https://loopback.herald.dev:8443/hook", private, "", ""},
		// Not resolving (yet) is no reason to refuse: the dialer checks
		// every connection.
		{"https://unknown.herald.dev/hook", "", "", ""},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			p    Policy
			want string
		}{
			{Policy{Resolver: z}, tt.deny},
			{Policy{AllowPrivate: true, Resolver: z}, tt.allowPrivate},
			{Policy{AllowPrivate: true, AllowMetadata: true, Resolver: z}, tt.allowAll},
		} {
			got := ""
			if err := c.p.ValidateURL(tt.url); err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("AllowPrivate=%v AllowMetadata=%v: ValidateURL(%q) = %q; want %q", c.p.AllowPrivate, c.p.AllowMetadata, tt.url, got, c.want)
			}
		}
	}
}

// A resolver that does not answer holds a save up for LookupTimeout at most,
// and the name is accepted.
func TestValidateURLLookupIsBounded(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	go func() { done <- (Policy{Resolver: &zone{}}).ValidateURL("https://slow.internal/hook") }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ValidateURL with a resolver that does not answer: %v; want it accepted", err)
		}
	case <-time.After(LookupTimeout + 30*time.Second): // a generous bound: the machine may be loaded
		t.Fatal("ValidateURL still waits for a resolver that does not answer")
	}
}

// Reserved names, IP literals and a policy that allows everything send no
// lookup; nor does a policy without a resolver.
func TestValidateURLLooksUpOnlyWhatCanBeRefused(t *testing.T) {
	t.Parallel()
	z := &zone{}
	for _, u := range []string{"https://example.com/h", "https://hooks.example.org/h", "https://a.example/h",
		"https://receiver.test/h", "https://x.invalid/h", "https://93.184.215.14/h", "https://[2606:4700::1111]/h"} {
		if err := (Policy{Resolver: z}).ValidateURL(u); err != nil {
			t.Errorf("ValidateURL(%q): %v", u, err)
		}
	}
	if err := (Policy{AllowPrivate: true, AllowMetadata: true, Resolver: z}).ValidateURL("https://hooks.herald.dev/"); err != nil {
		t.Error(err)
	}
	if len(z.asked) != 0 {
		t.Errorf("looked up %v; want no lookup", z.asked)
	}
	(Policy{Resolver: z}).ValidateURL("https://hooks.herald.dev/")
	if len(z.asked) != 1 {
		t.Errorf("looked up %v; want hooks.herald.dev", z.asked)
	}
}

// The system resolver, as herald uses it, refuses a name that resolves to
// loopback through the hosts file. (localhost itself is refused by name, so
// the test asks for it with a resolver that adds nothing: the hosts file
// answers, and no query leaves the machine.)
func TestValidateURLWithTheSystemResolver(t *testing.T) {
	t.Parallel()
	addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", "localhost")
	if err != nil || len(addrs) == 0 {
		t.Fatalf("localhost does not resolve here: %v", err)
	}
	p := Policy{Resolver: net.DefaultResolver}
	if err := p.checkName("localhost"); !errors.Is(err, errPrivate) {
		t.Errorf("checkName(localhost) with the system resolver: %v; want %v", err, errPrivate)
	}
}

// A cloud metadata name, and a host that IDNA maps to an IP address, are
// decided by name, in every mode that refuses them, without a lookup: the
// answer is the same on every host, on its cloud or not.
func TestValidateURLDecidesMetadataNamesAndMappedAddressesWithoutALookup(t *testing.T) {
	t.Parallel()
	z := &zone{names: map[string][]string{"metadata.google.internal": {"93.184.215.14"}}} // a lookup would let it through
	for _, tc := range []struct {
		url  string
		p    Policy
		want error
	}{
		{"http://metadata.google.internal./", Policy{Resolver: z}, errMetadata},
		{"http://metadata.google.internal./", Policy{AllowPrivate: true, Resolver: z}, errMetadata},
		{"http://Metadata.Google.Internal/", Policy{AllowMetadata: true, Resolver: z}, errPrivate},
		{"http://instance-data./", Policy{AllowPrivate: true, Resolver: z}, errMetadata},
		{"http://①②⑦.⓪.⓪.①/", Policy{Resolver: z}, errPrivate},
		{"http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/", Policy{AllowPrivate: true, Resolver: z}, errMetadata},
	} {
		if err := tc.p.ValidateURL(tc.url); err != tc.want {
			t.Errorf("AllowPrivate=%v AllowMetadata=%v: ValidateURL(%q) = %v; want %v", tc.p.AllowPrivate, tc.p.AllowMetadata, tc.url, err, tc.want)
		}
	}
	if len(z.asked) != 0 {
		t.Errorf("looked up %v; want no lookup", z.asked)
	}
	// With both allowed, it is accepted, as every name is.
	if err := (Policy{AllowPrivate: true, AllowMetadata: true, Resolver: z}).ValidateURL("http://metadata.google.internal/"); err != nil {
		t.Errorf("ValidateURL with everything allowed: %v", err)
	}
}
