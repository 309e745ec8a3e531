package server

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/admission"
)

// limitConns bounds the API listener's connections as Config.Conns says,
// deriving what it leaves zero from the descriptor limit, which it raises
// to the hard limit first and logs. Refusals are logged at most once a
// minute, with how many there were.
func (s *Server) limitConns(ln net.Listener) (net.Listener, admission.Conns) {
	c := s.cfg.Conns
	limit, hard, err := admission.RaiseDescriptors()
	switch {
	case err != nil:
		s.log.Warn("descriptor limit unknown; inbound connections bounded only as configured", "err", err)
	default:
		s.log.Info("descriptor limit", "open_files", limit, "hard_limit", hard)
		d := admission.ConnsFor(limit)
		if c.Total == 0 {
			c.Total = d.Total
		}
		if c.PerAddress == 0 {
			c.PerAddress = d.PerAddress
		}
	}
	if c.Exempt == nil && len(s.cfg.TrustedProxies) > 0 {
		c.Exempt = s.cfg.TrustedProxies.Trusts
	}
	var mu sync.Mutex
	var last time.Time
	refused := map[bool]int{}
	c.Refused = func(addr netip.Addr, total bool) {
		mu.Lock()
		defer mu.Unlock()
		refused[total]++
		if time.Since(last) < time.Minute {
			return
		}
		last = time.Now()
		s.log.Warn("inbound connections refused: past the bound, closed at once",
			"over_total", refused[true], "over_per_address", refused[false], "last_address", addr.String(),
			"connections", c.Total, "connections_per_address", c.PerAddress)
		clear(refused)
	}
	return c.Limit(ln), c
}
