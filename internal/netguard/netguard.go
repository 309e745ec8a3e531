// Package netguard owns herald's outbound address policy: which webhook URLs
// may be saved and which IP addresses a delivery may connect to. It guards
// against server-side request forgery, where a user points a webhook at
// herald's own host, its private network or a cloud metadata endpoint and reads
// the answer back from the delivery log.
//
// The policy is enforced twice. [Policy.ValidateURL] gives a user a clear
// refusal when they save a URL (looking its name up when the policy has a
// Resolver). [Policy.DialContext] is the real guard: it checks the IP address
// each connection is actually made to, after resolution, so a name that
// resolves differently at delivery time (DNS rebinding) is still refused.
//
// netguard does not send anything itself and never reads configuration; the
// caller decides whether private networks are allowed.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxURLLength is the longest webhook URL [Policy.ValidateURL] accepts. It is
// far above any real endpoint and keeps stored URLs bounded.
const MaxURLLength = 2048

// Policy decides which addresses herald may deliver to. The zero value is the
// safe default: only public addresses.
type Policy struct {
	// AllowPrivate turns the address checks off, for self-hosted setups
	// whose receivers live on the same host or private network, except for
	// cloud metadata addresses. URL syntax rules still apply.
	AllowPrivate bool
	// AllowMetadata, together with AllowPrivate, allows the cloud metadata
	// and credential endpoints too (169.254.169.254 and the others listed in
	// metadata.go). Alone it allows nothing: those are private addresses.
	AllowMetadata bool
	// Resolver, when set, looks up a URL's host name when it is saved, so
	// that a name resolving to a refused address is refused at once rather
	// than at every delivery. nil: names are checked at connect time only.
	Resolver Resolver
}

// Resolver looks up a host name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// refusal returns why the policy refuses a connection to ip, or "".
func (p Policy) refusal(ip netip.Addr) (reason string, metadata bool) {
	if !p.AllowMetadata {
		if r := metadataReason(ip); r != "" {
			return r, true
		}
	}
	if !p.AllowPrivate {
		return blockReason(ip), false
	}
	return "", false
}

// open reports whether the policy lets every address through.
func (p Policy) open() bool { return p.AllowPrivate && p.AllowMetadata }

// ValidateURL checks a webhook URL when a user saves it. It returns nil or an
// error whose message is a short fragment meant to follow the field name, such
// as "must use http or https".
//
// The URL must be absolute, http or https, at most [MaxURLLength] bytes, with a
// host, a port (if any) in 1–65535, no user name or password, and no fragment.
// A fragment is refused rather than stripped because HTTP never sends it: a URL
// that has one would not deliver what the user wrote.
//
// The host is checked as the dialer will look it up: mapped through IDNA
// when it is not ASCII (a host IDNA refuses is refused), in lower case,
// without a trailing dot. A host that spells an IPv4 address in a
// non-standard way (2130706433, 0x7f.1, 127.1) is refused in every mode.
// Unless p.AllowPrivate, a host that is an IP address blocked by
// [Blocked], or that is localhost or a name under .localhost, is refused
// too; unless p.AllowMetadata, so is a cloud metadata address, however
// written, and a cloud metadata name such as metadata.google.internal.
// Other names are looked up with p.Resolver (see checkName); the answer
// could change before delivery, so [Policy.DialContext] checks them again
// at connect time.
func (p Policy) ValidateURL(raw string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("must be a valid URL")
	}
	if u.Scheme == "" {
		return errors.New("must be an absolute URL starting with http:// or https://")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must use http or https")
	}
	if u.User != nil {
		return errors.New("must not contain credentials")
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return errors.New("must have a host")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not contain a fragment (#)")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return errors.New("must have a port between 1 and 65535")
		}
	}
	return p.checkHost(u.Hostname())
}

// ValidateHost checks a broker's host (a destination's address, which is
// no http URL) as ValidateURL checks a URL's: the same names and addresses
// are refused, and the dialer checks it again at connect time.
func (p Policy) ValidateHost(host string) error {
	if host == "" {
		return errors.New("must have a host")
	}
	return p.checkHost(strings.Trim(host, "[]"))
}

var (
	errPrivate  = errors.New("resolves to a private or loopback address, refused unless herald runs with --allow-private-networks")
	errMetadata = errors.New("resolves to a cloud metadata address")
)

// checkHost applies the address policy to a URL's host, read as the
// dialer will read it (see dialHost).
func (p Policy) checkHost(host string) error {
	host, ok := dialHost(host)
	if !ok {
		return errors.New("must have a valid host name")
	}
	ip, err := netip.ParseAddr(host)
	if err != nil && looksNumeric(host) {
		// Forms like 2130706433, 0x7f.1 or 127.1 are not IP addresses to Go,
		// but the C resolver and many other tools read them as 127.0.0.1.
		// No real name ends in a numeric label, so refuse them outright.
		return errors.New("must use a standard IP address or host name")
	}
	if p.open() {
		return nil
	}
	if err == nil {
		return p.checkAddr(ip)
	}
	if !p.AllowPrivate && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		// RFC 6761 reserves these names for the loopback interface.
		return errPrivate
	}
	if metadataName(host) {
		// Its address is a metadata address, which is private too.
		if !p.AllowMetadata {
			return errMetadata
		}
		if !p.AllowPrivate {
			return errPrivate
		}
	}
	return p.checkName(host)
}

// dialHost returns a URL's host as a delivery's connection will look it
// up, so that what is checked when a URL is saved is what the dialer
// meets: net/http maps a host that is not ASCII through IDNA's lookup
// profile (UTS #46), under which "①②⑦.⓪.⓪.①" is 127.0.0.1 and
// "ｌｏｃａｌｈｏｓｔ" is localhost; DNS ignores case, and a trailing dot (a
// fully qualified name) names the same host. false: IDNA refuses the
// name, which no DNS name can then hold.
func dialHost(host string) (string, bool) {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			ascii, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return "", false
			}
			host = ascii
			break
		}
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), true
}

func (p Policy) checkAddr(ip netip.Addr) error {
	switch reason, metadata := p.refusal(ip); {
	case metadata:
		return errMetadata
	case reason != "":
		return errPrivate
	}
	return nil
}

// looksNumeric reports whether host's last label is a decimal, octal or hex
// number, which makes the whole host an IPv4 address in inet_aton's eyes.
func looksNumeric(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}
