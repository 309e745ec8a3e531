package netguard

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

// FuzzValidateURL checks, for any string, that ValidateURL does not panic,
// that what it accepts is an http or https URL with a host, and that with the
// guard on no accepted host is an address the guard blocks or that the
// standard library calls loopback, private, link-local or unspecified, however
// the address is spelled.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hooks/herald",
		"HTTPS://Example.COM:8443/x?y=1",
		"https://8.8.8.8/hook",
		"https://[2606:4700:4700::1111]/hook",
		"https://bücher.example/hook",
		"http://127.0.0.1/", "http://127.1/", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/",
		"http://127.0.0.1./", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
		"http://[64:ff9b::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::]/", "http://[fe80::1%25eth0]/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://100.100.100.200/",
		"http://%31%32%37.0.0.1/", "http://localhost/", "http://LOCALHOST./", "http://a.localhost/",
		"http://0/", "http://0.0.0.0/", "http://[::]/", "http://10.0.0.1:8080/",
		"http://user:pass@example.com/", "http://example.com/#frag", "http://example.com:0/", "http://example.com:65536/",
		"ftp://example.com/", "javascript:alert(1)", "http:example.com", "//example.com/", "", " ", "\x00",
		"http://exa\x00mple.com/", "http://[::1/", "http://\xff/", "https://" + strings.Repeat("a", 3000),
		"http://①②⑦.⓪.⓪.①/", "http://１２７.０.０.１/", "http://ｌｏｃａｌｈｏｓｔ/", "http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/", "http://①②⑦.①/",
		"http://metadata.google.internal./", "http://METADATA.GOOG/", "http://instance-data./",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, p := range []Policy{{}, {AllowPrivate: true}} {
			if p.ValidateURL(raw) != nil {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("%+v accepted %q, which does not parse: %v", p, raw, err)
			}
			if u.Scheme != "http" && u.Scheme != "https" {
				t.Fatalf("%+v accepted %q with scheme %q", p, raw, u.Scheme)
			}
			host := u.Hostname()
			if host == "" || u.User != nil || u.Fragment != "" {
				t.Fatalf("%+v accepted %q: host %q, user %v, fragment %q", p, raw, host, u.User, u.Fragment)
			}
			// What net/http dials: a host that is not ASCII mapped through
			// IDNA's lookup profile.
			if a, err := idna.Lookup.ToASCII(host); err == nil && a != host {
				host = a
			}
			if m := strings.TrimSuffix(strings.ToLower(host), "."); metadataNames[m] {
				t.Fatalf("%+v accepted %q, whose host is a cloud metadata name", p, raw)
			}
			h := strings.TrimSuffix(host, ".")
			if ip, ok := inetAton(h); ok && ip.String() != h {
				t.Fatalf("%+v accepted %q, whose host a C resolver reads as %s", p, raw, ip)
			}
			if p.AllowPrivate {
				continue
			}
			if why := forbidden(host); why != "" {
				t.Fatalf("the guard accepted %q, whose host is %s", raw, why)
			}
		}
	})
}

// forbidden says why host, read as an address by the parsers a dialer may
// use, must not be reached with the guard on, or "".
func forbidden(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "localhost"
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(h); err == nil {
		addrs = append(addrs, ip)
	}
	if ip := net.ParseIP(h); ip != nil {
		a, _ := netip.AddrFromSlice(ip)
		addrs = append(addrs, a)
	}
	for _, ip := range addrs {
		if Blocked(ip) {
			return "blocked: " + blockReason(ip)
		}
		u := ip.WithZone("").Unmap()
		switch {
		case u.IsLoopback(), u.IsPrivate(), u.IsLinkLocalUnicast(), u.IsLinkLocalMulticast(),
			u.IsInterfaceLocalMulticast(), u.IsUnspecified(), u.IsMulticast():
			return "special-purpose " + u.String()
		case u == netip.MustParseAddr("169.254.169.254"), u == netip.MustParseAddr("fd00:ec2::254"):
			return "a metadata address"
		}
	}
	return ""
}

// inetAton reads s as the C library's inet_aton does: one to four parts,
// each decimal, octal (leading 0) or hex (0x), the last filling the bytes
// left.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0" // "0x" alone is 0 to glibc
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" || strings.ContainsAny(digits, "+-_") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals {
		if i < len(vals)-1 {
			if v > 255 {
				return netip.Addr{}, false
			}
			n |= v << (8 * (3 - i))
			continue
		}
		if v >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		n |= v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
