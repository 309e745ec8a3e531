// Package admission bounds what clients can make a herald process hold
// before any handler has judged their requests: inbound connections, in
// total and per client address (conns.go), and the bytes of request bodies
// in flight (this file). Connections that send nothing and bodies that are
// never used still cost descriptors and memory; past these bounds a client
// is refused (its connection closed at once, its request answered 503), so
// that the descriptors and memory the process needs for its deliveries, its
// database and its other clients stay free.
package admission

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
)

// ErrBusy is what reading a request body returns once the bodies in flight
// reach their bound: the request is answered 503 with Retry-After, and
// nothing it asked for is done.
var ErrBusy = errors.New("request bodies in flight are at their bound; retry shortly")

// RetryAfter is the Retry-After, in seconds, of a request refused for
// ErrBusy: bodies in flight are read within the server's read time-out, and
// most within milliseconds, so room comes back quickly.
const RetryAfter = 1

// Bodies bounds the bytes of request bodies held by requests in progress.
// Bytes count as they arrive, so a client that announces a large body and
// trickles it holds only what it sent; they are given back when the
// request's handler returns.
type Bodies struct {
	limit int64
	used  atomic.Int64
}

// NewBodies bounds request bodies in flight to limit bytes in all.
func NewBodies(limit int64) *Bodies { return &Bodies{limit: limit} }

// Limit is the bound, in bytes.
func (b *Bodies) Limit() int64 { return b.limit }

// InFlight is how many body bytes requests in progress hold now.
func (b *Bodies) InFlight() int64 { return b.used.Load() }

func (b *Bodies) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Handler counts the body of every request next serves against the bound.
// A read past it fails with ErrBusy and sets Retry-After on the answer;
// handlers answer such a request 503 (see IsBusy).
func (b *Bodies) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &countedBody{body: r.Body, bodies: b, header: w.Header()}
		defer func() { b.used.Add(-body.held) }()
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// IsBusy reports whether err comes from a body refused for the bound.
func IsBusy(err error) bool { return errors.Is(err, ErrBusy) }

// countedBody takes from the bound what each read brings in. A request's
// body is read by one goroutine at a time, so held needs no lock.
type countedBody struct {
	body   io.ReadCloser
	bodies *Bodies
	header http.Header
	held   int64
	busy   bool
}

func (c *countedBody) Read(p []byte) (int, error) {
	if c.busy {
		return 0, ErrBusy
	}
	n, err := c.body.Read(p)
	if n > 0 {
		if !c.bodies.take(int64(n)) {
			c.busy = true
			c.header.Set("Retry-After", strconv.Itoa(RetryAfter))
			return 0, ErrBusy
		}
		c.held += int64(n)
	}
	return n, err
}

func (c *countedBody) Close() error { return c.body.Close() }
