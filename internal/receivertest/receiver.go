package receivertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Request is what a receiver got, byte for byte.
type Request struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// Receiver is a real HTTP server on loopback that records every request and
// answers with Respond (204 by default).
type Receiver struct {
	URL string
	mu  sync.Mutex
	got []Request
	// respond decides each answer; set with SetRespond.
	respond http.HandlerFunc
}

// NewReceiver starts a receiver; it closes at the end of the test.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{respond: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// serve records a request and answers it.
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, Request{Header: req.Header.Clone(), Body: body, At: time.Now()})
	respond := r.respond
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body)) // respond may read it too, e.g. to verify the signature
	respond(w, req)
}

// SetRespond changes how the receiver answers.
func (r *Receiver) SetRespond(f http.HandlerFunc) {
	r.mu.Lock()
	r.respond = f
	r.mu.Unlock()
}

// Status makes the receiver answer code with body.
func (r *Receiver) Status(code int, body string) {
	r.SetRespond(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		io.WriteString(w, body)
	})
}

// Requests returns what arrived so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.got...)
}

// Count is len(Requests()).
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// Held is a receiver's hold on the requests it gets: each waits unanswered
// until Release, then is answered 204. While a request is held, the sender
// is known to be waiting for its answer, so what it shows meanwhile can be
// read without racing the answer.
type Held struct {
	arrived     chan struct{}
	arrivedOnce sync.Once
	release     chan struct{}
	releaseOnce sync.Once
}

// Hold makes the receiver hold every request from now on. The hold is let
// go when the test ends, before the receiver closes (closing waits for the
// requests it holds).
func (r *Receiver) Hold(t testing.TB) *Held {
	h := &Held{arrived: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(h.Release)
	r.SetRespond(func(w http.ResponseWriter, _ *http.Request) {
		h.arrivedOnce.Do(func() { close(h.arrived) })
		<-h.release
		w.WriteHeader(http.StatusNoContent)
	})
	return h
}

// Wait returns once the first held request is in, and fails the test if
// none arrives within patience.
func (h *Held) Wait(t testing.TB, patience time.Duration, what string) {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(patience):
		t.Fatalf("%s: no request reached the receiver within %s", what, patience)
	}
}

// Release answers the held requests, and those that come after, at once.
func (h *Held) Release() { h.releaseOnce.Do(func() { close(h.release) }) }
