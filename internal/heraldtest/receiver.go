package heraldtest

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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, Request{Header: req.Header.Clone(), Body: body, At: time.Now()})
		respond := r.respond
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body)) // respond may read it too, e.g. to verify the signature
		respond(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
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
