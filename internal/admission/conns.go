package admission

import (
	"net"
	"net/netip"
	"sync"
)

// Conns bounds the inbound connections a listener hands out.
type Conns struct {
	// Total is how many connections may be open at once; PerAddress, how
	// many of them may come from one client address.
	Total, PerAddress int
	// Exempt names addresses the per-address bound does not apply to: the
	// trusted proxies every client comes through (nil: none).
	Exempt func(netip.Addr) bool
	// Refused is called, outside any lock, for each connection closed
	// unserved, with its address and whether the total bound (rather than
	// its address's) refused it.
	Refused func(addr netip.Addr, total bool)
}

// Limit wraps ln so that it hands out no more connections than c allows.
// A connection past a bound is accepted and closed at once: left in the
// listen queue it would keep the queue full for the clients within their
// bounds, and accepting costs its descriptor only for a moment.
func (c Conns) Limit(ln net.Listener) net.Listener {
	return &listener{Listener: ln, c: c, by: map[netip.Addr]int{}}
}

type listener struct {
	net.Listener
	c     Conns
	mu    sync.Mutex
	total int
	by    map[netip.Addr]int
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := remoteAddr(conn)
		if ok, total := l.take(addr); !ok {
			conn.Close()
			if l.c.Refused != nil {
				l.c.Refused(addr, total)
			}
			continue
		}
		return &counted{Conn: conn, release: func() { l.give(addr) }}, nil
	}
}

// take counts a new connection from addr, unless a bound refuses it; total
// says the total bound did.
func (l *listener) take(addr netip.Addr) (ok, total bool) {
	exempt := l.c.Exempt != nil && addr.IsValid() && l.c.Exempt(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c.Total > 0 && l.total >= l.c.Total {
		return false, true
	}
	if !exempt && l.c.PerAddress > 0 && l.by[addr] >= l.c.PerAddress {
		return false, false
	}
	l.total++
	l.by[addr]++
	return true, false
}

func (l *listener) give(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.by[addr]--; l.by[addr] <= 0 {
		delete(l.by, addr)
	}
}

// remoteAddr is a connection's client address; the zero Addr when it has
// none (a Unix socket), which then counts as one address.
func remoteAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// counted gives its place back when it closes, once however often it is
// closed.
type counted struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *counted) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ConnsFor is the default bound on inbound connections for a process that
// may open limit descriptors: half of them in all, so that the other half
// stays for deliveries (one connection each), the database pool, the
// metrics listener and files; and a quarter of those per client address,
// so that one address cannot take them all.
func ConnsFor(limit uint64) Conns {
	total := int(min(limit/2, 1<<20))
	return Conns{Total: max(total, 8), PerAddress: max(total/4, 2)}
}
