package netguard

import (
	"net/netip"
	"testing"
)

func TestBlocked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip   string
		want bool
	}{
		// IPv4 public.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.215.14", false},
		{"100.63.255.255", false}, // Just below CGNAT.
		{"100.128.0.0", false},    // Just above CGNAT.
		{"172.15.255.255", false}, // Just below 172.16/12.
		{"172.32.0.0", false},     // Just above 172.16/12.
		{"198.17.255.255", false}, // Just below benchmarking.
		{"198.20.0.0", false},     // Just above benchmarking.
		{"192.31.196.1", false},   // AS112: special, but globally reachable.
		{"223.255.255.255", false},

		// IPv4 refused.
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"100.64.0.1", true},
		{"100.100.100.200", true}, // Alibaba metadata.
		{"100.127.255.255", true},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"169.254.0.1", true},
		{"169.254.169.254", true}, // AWS, GCP, Azure metadata.
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.0.0.1", true},
		{"192.0.0.192", true}, // Oracle Cloud metadata.
		{"192.0.2.1", true},
		{"192.88.99.1", true},
		{"192.168.1.1", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		{"168.63.129.16", true}, // Azure WireServer.

		// IPv4-mapped IPv6 takes the IPv4 answer.
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.1.2.3", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:0.0.0.0", true},
		{"::ffff:8.8.8.8", false},

		// IPv4-compatible IPv6 (deprecated) is refused whatever it holds.
		{"::127.0.0.1", true},
		{"::8.8.8.8", true},

		// NAT64 takes the embedded IPv4 answer.
		{"64:ff9b::7f00:1", true},       // 127.0.0.1
		{"64:ff9b::a9fe:a9fe", true},    // 169.254.169.254
		{"64:ff9b::192.168.0.1", true},  // 192.168.0.1
		{"64:ff9b::808:808", false},     // 8.8.8.8
		{"64:ff9b:1::808:808", true},    // Local-use NAT64: never decoded.
		{"2002:7f00:1::", true},         // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", true},     // 6to4 of 169.254.169.254
		{"2002:808:808::1", false},      // 6to4 of 8.8.8.8
		{"2001:0:4136:e378::1", true},   // Teredo.
		{"2001:2::1", true},             // Benchmarking.
		{"2001:db8::1", true},           // Documentation.
		{"3fff::1", true},               // Documentation (RFC 9637).
		{"2001:4860:4860::8888", false}, // Google public DNS.
		{"2606:4700:4700::1111", false}, // Cloudflare public DNS.
		{"2a00:1450:4001:81a::200e", false},

		// IPv6 refused.
		{"::", true},
		{"::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"febf:ffff::1", true},
		{"fec0::1", true}, // Site-local (deprecated).
		{"fc00::1", true},
		{"fd00:ec2::254", true}, // AWS metadata over IPv6.
		{"fdff:ffff::1", true},
		{"ff02::1", true},
		{"ff05::1:3", true},
		{"100::1", true},       // Discard-only.
		{"5f00::1", true},      // SRv6 SIDs.
		{"4000::1", true},      // Unallocated.
		{"::2", true},          // Inside ::/96.
		{"1234::1%eth0", true}, // Zone stripped; still outside 2000::/3.
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			t.Parallel()
			ip := netip.MustParseAddr(tt.ip)
			if got := Blocked(ip); got != tt.want {
				t.Errorf("Blocked(%s) = %v (reason %q); want %v", tt.ip, got, blockReason(ip), tt.want)
			}
		})
	}
}

func TestBlockedInvalid(t *testing.T) {
	t.Parallel()
	if got := Blocked(netip.Addr{}); !got {
		t.Errorf("Blocked(zero Addr) = false; want true")
	}
}

// TestBlockedReason keeps refusals of IPv6 forms
// readable: the reason says which IPv4 range the address really reaches.
func TestBlockedReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip   string
		want string
	}{
		{"127.0.0.1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"64:ff9b::a9fe:a9fe", "link-local (via NAT64)"},
		{"2002:0a00:0001::", "private (via 6to4)"},
		{"fd00::1", "private"},
		{"8.8.8.8", ""},
	}
	for _, tt := range tests {
		if got := blockReason(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("blockReason(%s) = %q; want %q", tt.ip, got, tt.want)
		}
	}
}
