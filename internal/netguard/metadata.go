package netguard

import "net/netip"

// metadataAddrs are the cloud endpoints that hand out a host's configuration
// and credentials to anything that can reach them. They are refused even when
// private networks are allowed: a self-hosted receiver lives on a private
// network, never here, and a webhook pointed here would copy the host's
// credentials into its delivery log.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("169.254.169.254"): "cloud metadata", // AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack and more.
	netip.MustParseAddr("169.254.170.2"):   "cloud metadata (ECS task credentials)",
	netip.MustParseAddr("169.254.170.23"):  "cloud metadata (EKS pod identity)",
	netip.MustParseAddr("169.254.0.23"):    "cloud metadata (Tencent Cloud)",
	netip.MustParseAddr("100.100.100.200"): "cloud metadata (Alibaba Cloud)",
	netip.MustParseAddr("192.0.0.192"):     "cloud metadata (Oracle Cloud)",
	netip.MustParseAddr("168.63.129.16"):   "cloud metadata (Azure WireServer)",
	netip.MustParseAddr("fd00:ec2::254"):   "cloud metadata (AWS, IPv6)",
	netip.MustParseAddr("fd00:ec2::23"):    "cloud metadata (EKS pod identity, IPv6)",
	netip.MustParseAddr("fd20:ce::254"):    "cloud metadata (Google Cloud, IPv6)",
}

// metadataNames are the host names clouds give their metadata endpoints.
// Each resolves to one of metadataAddrs on its cloud, where the dialer
// refuses it by address; refusing the name as well makes the answer the
// same everywhere, when a URL is saved and when it is dialed, and sends no
// lookup for it. Names are as dialHost writes them: lower case, no
// trailing dot.
var metadataNames = map[string]bool{
	"metadata.google.internal":   true, // Google Cloud
	"metadata.goog":              true, // Google Cloud
	"metadata":                   true, // Google Cloud, through the VM's search domain
	"instance-data":              true, // AWS, through the VPC's search domain
	"instance-data.ec2.internal": true, // AWS
}

// metadataName reports whether host, as dialHost writes it, is a cloud
// metadata endpoint's name.
func metadataName(host string) bool { return metadataNames[host] }

var (
	teredo        = mustPrefix("2001::/32")
	localUseNAT64 = mustPrefix("64:ff9b:1::/48")
)

// metadataReason returns why ip is a cloud metadata address, or "". It sees
// through every IPv6 form that carries an IPv4 address (IPv4-mapped,
// IPv4-compatible, NAT64 in both its well-known and local-use prefixes, 6to4,
// Teredo), so the address cannot be reached by writing it another way. (The
// integer and octal spellings a URL host could use are refused by
// ValidateURL in every mode, and a dialer only ever sees parsed addresses.)
func metadataReason(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if r, ok := metadataAddrs[ip]; ok {
		return r
	}
	if !ip.Is6() {
		return ""
	}
	b := ip.As16()
	var embedded [][4]byte
	switch {
	case nat64.Contains(ip), v4Compatible.Contains(ip):
		embedded = append(embedded, [4]byte(b[12:16]))
	case sixToFour.Contains(ip):
		embedded = append(embedded, [4]byte(b[2:6]))
	case teredo.Contains(ip): // the client address, inverted
		embedded = append(embedded, [4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	case localUseNAT64.Contains(ip):
		// The operator picks the prefix length, so try each place RFC 6052
		// puts the IPv4 address for a prefix of /48 or longer.
		embedded = append(embedded, [4]byte{b[6], b[7], b[9], b[10]}, [4]byte{b[7], b[9], b[10], b[11]},
			[4]byte(b[9:13]), [4]byte(b[12:16]))
	}
	for _, v4 := range embedded {
		if r, ok := metadataAddrs[netip.AddrFrom4(v4)]; ok {
			return r + " (embedded in IPv6)"
		}
	}
	return ""
}
