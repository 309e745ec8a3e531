package portal

import (
	"strings"
	"sync"
	"time"
)

// Sign-in limits: after this many failures within limitWindow, sign-ins for
// the same email, or from the same address, wait until the window ends. An
// address gets more room than an email, since people share addresses.
const (
	limitWindow = 15 * time.Minute
	maxPerEmail = 10
	maxPerIP    = 50
	// maxTracked bounds the memory kept: past it, finished windows are dropped.
	maxTracked = 10000
)

// limiter counts failed sign-ins per email and per client address, in this
// process's memory.
type limiter struct {
	now   func() time.Time
	mu    sync.Mutex
	fails map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newLimiter(now func() time.Time) *limiter {
	return &limiter{now: now, fails: map[string]*window{}}
}

func emailKey(email string) string { return "email:" + strings.ToLower(email) }
func ipKey(ip string) string       { return "ip:" + ip }

// take counts a sign-in attempt for email from ip and returns 0, or, when
// either has used its attempts in the current window, counts nothing and
// returns how long to wait. Counting before the password is checked, in one
// step under the lock, is what makes the limit hold for concurrent requests:
// each of sixty parallel attempts takes its own place or is refused.
func (l *limiter) take(email, ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	keys := map[string]int{emailKey(email): maxPerEmail, ipKey(ip): maxPerIP}
	var d time.Duration
	for key, limit := range keys {
		if w := l.fails[key]; w != nil && now.Sub(w.start) < limitWindow && w.n >= limit {
			d = max(d, w.start.Add(limitWindow).Sub(now))
		}
	}
	if d > 0 {
		return d
	}
	if len(l.fails) >= maxTracked {
		for k, w := range l.fails {
			if now.Sub(w.start) >= limitWindow {
				delete(l.fails, k)
			}
		}
	}
	for key := range keys {
		w := l.fails[key]
		if w == nil || now.Sub(w.start) >= limitWindow {
			w = &window{start: now}
			l.fails[key] = w
		}
		w.n++
	}
	return 0
}

// succeeded gives back the attempt a successful sign-in took: the email's
// count starts afresh, and the address's attempt is returned.
func (l *limiter) succeeded(email, ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, emailKey(email))
	if w := l.fails[ipKey(ip)]; w != nil && w.n > 0 {
		w.n--
	}
}
