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

// wait returns how long sign-ins for email from ip must wait; 0 means go.
func (l *limiter) wait(email, ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var d time.Duration
	for key, limit := range map[string]int{emailKey(email): maxPerEmail, ipKey(ip): maxPerIP} {
		if w := l.fails[key]; w != nil && now.Sub(w.start) < limitWindow && w.n >= limit {
			d = max(d, w.start.Add(limitWindow).Sub(now))
		}
	}
	return d
}

// fail records a failed sign-in.
func (l *limiter) fail(email, ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.fails) >= maxTracked {
		for k, w := range l.fails {
			if now.Sub(w.start) >= limitWindow {
				delete(l.fails, k)
			}
		}
	}
	for _, key := range []string{emailKey(email), ipKey(ip)} {
		w := l.fails[key]
		if w == nil || now.Sub(w.start) >= limitWindow {
			w = &window{start: now}
			l.fails[key] = w
		}
		w.n++
	}
}

// reset forgets an email's failures after it signs in.
func (l *limiter) reset(email string) {
	l.mu.Lock()
	delete(l.fails, emailKey(email))
	l.mu.Unlock()
}
