package netguard

import (
	"context"
	"strings"
	"time"
)

// LookupTimeout bounds the lookup of a URL's host name when it is saved.
const LookupTimeout = 2 * time.Second

// checkName looks host up with p.Resolver and refuses it when any address it
// resolves to is refused: a name that resolves to 10.0.0.7 would fail every
// delivery, so saying so at once is kinder. A name that does not resolve (yet),
// or not within LookupTimeout, is accepted: its DNS record may be created after
// the webhook, and the dialer checks every connection anyway.
//
// Names under the domains reserved for documentation and testing
// (example.com, .net and .org, .example, .test and .invalid; RFC 2606 and
// 6761) are not looked up: they name no receiver, and looking them up would
// only send queries out.
func (p Policy) checkName(host string) error {
	if p.Resolver == nil || reserved(host) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), LookupTimeout)
	defer cancel()
	addrs, err := p.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	var refused error
	for _, ip := range addrs {
		switch err := p.checkAddr(ip); err {
		case errMetadata:
			return err
		case nil:
		default:
			refused = err
		}
	}
	return refused
}

func reserved(host string) bool {
	for _, d := range []string{"example.com", "example.net", "example.org", "example", "test", "invalid"} {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
