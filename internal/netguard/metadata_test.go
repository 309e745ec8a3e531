package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMetadataAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip       string
		metadata bool
	}{
		{"169.254.169.254", true},
		{"169.254.170.2", true},
		{"169.254.170.23", true},
		{"169.254.0.23", true},
		{"100.100.100.200", true},
		{"192.0.0.192", true},
		{"168.63.129.16", true},
		{"fd00:ec2::254", true},
		{"fd00:ec2::23", true},
		{"fd20:ce::254", true},
		{"fe80::1%eth0", false},
		// IPv6 forms that carry a metadata IPv4 address.
		{"::ffff:169.254.169.254", true},
		{"::169.254.169.254", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::100.100.100.200", true},
		{"2002:a9fe:a9fe::", true},
		{"2002:c000:00c0:1::1", true},
		{"2001:0:4136:e378:8000:63bf:5601:5601", true}, // Teredo, client ^0xff.. = 169.254.169.254
		{"64:ff9b:1:a9fe:a9:fea9:fe00::", true},        // local-use NAT64, /48 placement
		{"64:ff9b:1::a9fe:a9fe", true},                 // local-use NAT64, /96 placement
		// Neighbours that are not metadata.
		{"169.254.169.253", false},
		{"169.254.170.3", false},
		{"100.100.100.201", false},
		{"192.0.0.193", false},
		{"fd00:ec2::253", false},
		{"64:ff9b::a9fe:a9fd", false},
		{"10.0.0.1", false},
		{"8.8.8.8", false},
		{"2606:4700:4700::1111", false},
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.ip)
		if got := metadataReason(ip) != ""; got != tt.metadata {
			t.Errorf("metadataReason(%s) = %q; want metadata %v", tt.ip, metadataReason(ip), tt.metadata)
		}
	}
}

// The dialer refuses metadata addresses with private networks allowed. The
// check runs before connect, so no packet leaves; and should the policy let
// one through, the dialer's own hook stops it before connect all the same.
func TestDialContextRefusesMetadataWithPrivateAllowed(t *testing.T) {
	t.Parallel()
	never := func(network, address string, c syscall.RawConn) error {
		return errors.New("test: the policy let " + address + " through")
	}
	dial := Policy{AllowPrivate: true}.DialContext(&net.Dialer{Timeout: time.Second, Control: never})
	for _, addr := range []string{"169.254.169.254:80", "[::ffff:169.254.169.254]:80", "[64:ff9b::a9fe:a9fe]:80",
		"100.100.100.200:80", "192.0.0.192:80", "169.254.170.2:80", "[fd00:ec2::254]:80"} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		conn, err := dial(ctx, "tcp", addr)
		cancel()
		if err == nil {
			conn.Close()
			t.Fatalf("dial %s: connected; want it refused", addr)
		}
		var blocked *BlockedError
		if !errors.As(err, &blocked) || !strings.HasPrefix(blocked.Reason, "cloud metadata") {
			t.Errorf("dial %s: %v; want a BlockedError naming cloud metadata", addr, err)
		}
	}
}
