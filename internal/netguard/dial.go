package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrBlocked matches, with errors.Is, every connection the policy refuses.
var ErrBlocked = errors.New("address refused by policy")

// BlockedError is the error a refused connection carries. Retrieve it with
// errors.As to show which address was refused and why.
type BlockedError struct {
	Addr   string // The address the dial was about to connect to.
	Reason string // Why it is refused, such as "loopback" or "private".
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("address %s refused by policy (%s)", e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrBlocked) true for a *BlockedError.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// DialContext returns a dial function for http.Transport.DialContext that
// refuses every connection to an address [Blocked] reports, unless
// p.AllowPrivate, and to a cloud metadata address, unless p.AllowMetadata.
//
// The check runs in the dialer's ControlContext hook, after resolution and
// just before connect, on the very IP address being connected to. A cloud
// metadata name (metadata.google.internal and the others in metadata.go)
// is refused before it is looked up. Checking a
// name's addresses before dialing would leave a gap: the resolver may answer
// differently the second time (DNS rebinding). When a name resolves to several
// addresses, the dialer tries each, so a blocked one is skipped rather than
// aborting the dial; the error is returned only when none is allowed.
//
// d is copied and not changed; nil means a zero net.Dialer. A Control or
// ControlContext hook already set on d still runs, after the policy check.
// The guard only sees connections this dialer makes: a transport that sends
// requests through a proxy lets the proxy connect anywhere, so use
// [Policy.Transport] or set Proxy to nil.
func (p Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var guarded net.Dialer
	if d != nil {
		guarded = *d
	}
	if p.open() {
		return guarded.DialContext
	}
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		// A cloud metadata name is refused before it is looked up, as when
		// its URL was saved (its addresses are metadata and private ones);
		// net/http hands over the host already mapped to ASCII.
		if host, _, err := net.SplitHostPort(address); err == nil {
			if h, ok := dialHost(host); ok && metadataName(h) {
				return nil, &BlockedError{Addr: address, Reason: "cloud metadata name"}
			}
		}
		return guarded.DialContext(ctx, network, address)
	}
	control, controlContext := guarded.Control, guarded.ControlContext
	guarded.Control = nil // Ignored anyway once ControlContext is set.
	guarded.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if err := p.checkDialAddr(address); err != nil {
			return err
		}
		switch {
		case controlContext != nil:
			return controlContext(ctx, network, address, c)
		case control != nil:
			return control(network, address, c)
		}
		return nil
	}
	return dial
}

// checkDialAddr applies the policy to the "ip:port" a dialer connects to. An
// address that is not an IP and port (a Unix socket path, say) is refused:
// deliveries only ever go over TCP to IP addresses.
func (p Policy) checkDialAddr(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Addr: address, Reason: "not an IP address"}
	}
	if reason, _ := p.refusal(ap.Addr()); reason != "" {
		return &BlockedError{Addr: ap.Addr().String(), Reason: reason}
	}
	return nil
}
