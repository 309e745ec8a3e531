package netguard

import "net/netip"

// A blockedRange is a prefix herald never delivers to, with the reason shown
// in the refusal.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedV4 follows the IANA IPv4 Special-Purpose Address Registry: every
// range there that is not globally reachable, plus the few that are reachable
// only from inside a cloud host. Globally reachable special ranges (AS112,
// AMT) are left alone: a receiver may legitimately live there.
var blockedV4 = []blockedRange{
	{mustPrefix("0.0.0.0/8"), "this-network"}, // 0.0.0.0 reaches the local host on Linux.
	{mustPrefix("10.0.0.0/8"), "private"},
	{mustPrefix("100.64.0.0/10"), "shared address space (CGNAT)"}, // Also Alibaba's metadata at 100.100.100.200.
	{mustPrefix("127.0.0.0/8"), "loopback"},
	{mustPrefix("169.254.0.0/16"), "link-local"}, // Cloud metadata at 169.254.169.254.
	{mustPrefix("172.16.0.0/12"), "private"},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignment"}, // Oracle Cloud metadata at 192.0.0.192.
	{mustPrefix("192.0.2.0/24"), "documentation"},
	{mustPrefix("192.88.99.0/24"), "deprecated 6to4 relay"},
	{mustPrefix("192.168.0.0/16"), "private"},
	{mustPrefix("198.18.0.0/15"), "benchmarking"},
	{mustPrefix("198.51.100.0/24"), "documentation"},
	{mustPrefix("203.0.113.0/24"), "documentation"},
	{mustPrefix("224.0.0.0/4"), "multicast"},
	{mustPrefix("240.0.0.0/4"), "reserved"}, // Includes the broadcast address 255.255.255.255.
	// Azure's WireServer: a public address that answers only from inside an
	// Azure VM, where it hands out VM configuration. No receiver lives there.
	{mustPrefix("168.63.129.16/32"), "cloud host endpoint"},
}

// blockedV6 lists ranges inside 2000::/3, the only block IANA allocates for
// global unicast; everything outside it is refused before this list is read.
var blockedV6 = []blockedRange{
	// Teredo embeds an obfuscated client address that could be anything;
	// the protocol is obsolete, so refuse it rather than decode it.
	{mustPrefix("2001::/32"), "Teredo"},
	{mustPrefix("2001:2::/48"), "benchmarking"},
	{mustPrefix("2001:10::/28"), "ORCHID"},
	{mustPrefix("2001:20::/28"), "ORCHIDv2"},
	{mustPrefix("2001:db8::/32"), "documentation"},
	{mustPrefix("3fff::/20"), "documentation"},
}

var (
	globalUnicastV6 = mustPrefix("2000::/3")
	nat64           = mustPrefix("64:ff9b::/96")
	sixToFour       = mustPrefix("2002::/16")
	// The IPv4-compatible form (::a.b.c.d) is deprecated; its /96 also holds
	// :: and ::1, which are named separately for clearer refusals.
	v4Compatible = mustPrefix("::/96")
)

// Blocked reports whether ip is refused when private networks are not allowed.
// It refuses loopback, private, link-local (cloud metadata included),
// unspecified, multicast, shared (CGNAT), documentation, benchmarking and
// reserved addresses, in both families, and looks inside IPv6 forms that carry
// an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4) so that a blocked
// IPv4 address cannot be reached by writing it as IPv6. An invalid ip is
// blocked: the guard fails closed.
func Blocked(ip netip.Addr) bool {
	return blockReason(ip) != ""
}

// blockReason returns why ip is refused, or "" when it is allowed.
func blockReason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	// Prefix.Contains is false for any address with a zone, so a zoned
	// fe80::1%eth0 would slip past every range below if the zone stayed.
	ip = ip.WithZone("")
	if ip.Is4In6() {
		return blockReason(ip.Unmap())
	}
	if ip.Is4() {
		return reasonV4(ip)
	}
	return reasonV6(ip)
}

func reasonV4(ip netip.Addr) string {
	for _, r := range blockedV4 {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

func reasonV6(ip netip.Addr) string {
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case v4Compatible.Contains(ip):
		return "IPv4-compatible"
	case nat64.Contains(ip):
		// The translator forwards to the embedded IPv4 address, so that
		// address decides. NAT64 of a public address stays allowed, which
		// IPv6-only hosts behind DNS64 need.
		b := ip.As16()
		if r := reasonV4(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return r + " (via NAT64)"
		}
		return ""
	case sixToFour.Contains(ip):
		b := ip.As16()
		if r := reasonV4(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return r + " (via 6to4)"
		}
		return ""
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	case ip.IsPrivate():
		return "private" // fc00::/7, unique local; AWS metadata is fd00:ec2::254.
	case !globalUnicastV6.Contains(ip):
		// Outside 2000::/3: discard-only 100::/64, local-use NAT64
		// 64:ff9b:1::/48 (whose embedded address sits at an operator-chosen
		// offset), SRv6 5f00::/16, deprecated site-local fec0::/10 and
		// unallocated space.
		return "not global unicast"
	}
	for _, r := range blockedV6 {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

func mustPrefix(s string) netip.Prefix {
	return netip.MustParsePrefix(s)
}
