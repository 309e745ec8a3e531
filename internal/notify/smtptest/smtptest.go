// Package smtptest runs a real SMTP server in-process, on 127.0.0.1, for
// tests that send email. It owns only test support: it keeps every message it
// accepts, decoded, until the test ends, and delivers nothing.
//
// It is a normal package, not a _test file, so that any package's tests can
// start one and point a notify.Sender at [Server.URL].
package smtptest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Mail is one message the server accepted.
type Mail struct {
	From    string   // The envelope sender (MAIL FROM), a bare address.
	To      []string // The envelope recipients (RCPT TO), bare addresses.
	Subject string   // The Subject header, with encoded words decoded.
	// Text is the first text/plain part, decoded from its transfer encoding,
	// with line breaks as "\n". The line break that SMTP requires at the end
	// of every message is removed, so a body sent as "hi" reads back as "hi".
	Text string
	Raw  []byte // The message exactly as received.
	TLS  bool   // It arrived over TLS: smtps, or after STARTTLS.
}

// Options configures a server started with [StartWith].
type Options struct {
	// ImplicitTLS makes the server speak TLS from the first byte (smtps),
	// with a self-signed certificate that [Server.RootCAs] trusts.
	ImplicitTLS bool
	// STARTTLS makes a plain server offer STARTTLS with the same certificate.
	STARTTLS bool
	// User and Password, when User is set, are the only credentials the
	// server accepts (AUTH PLAIN), and it refuses mail until a client has
	// authenticated with them.
	User, Password string
}

// Server is a running SMTP server. Its methods are safe for concurrent use.
type Server struct {
	opts    Options
	addr    string
	rootCAs *x509.CertPool

	mu      sync.Mutex
	mails   []Mail
	changed chan struct{} // Closed and replaced whenever mails grows.
}

// Start starts a server with no TLS and no authentication, and closes it when
// the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a server configured by opts, and closes it when the test
// ends.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts, changed: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	s.addr = ln.Addr().String()

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true // Plain connections to 127.0.0.1 are the point.
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.MaxMessageBytes = 10 << 20
	srv.ErrorLog = newTestLogger(t)
	if opts.ImplicitTLS || opts.STARTTLS {
		cfg, pool, err := selfSignedTLS()
		if err != nil {
			ln.Close()
			t.Fatalf("smtptest: %v", err)
		}
		s.rootCAs = pool
		if opts.ImplicitTLS {
			ln = tls.NewListener(ln, cfg)
		} else {
			srv.TLSConfig = cfg // go-smtp offers STARTTLS when this is set.
		}
	}

	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln) // Returns nil once Close is called.
	}()
	t.Cleanup(func() {
		srv.Close()
		// Close only closes listeners Serve has registered; when the test
		// ends at once, Serve may not have started yet.
		ln.Close()
		<-served
	})
	return s
}

// URL returns the URL notify.NewSender takes to reach this server, with the
// credentials when the server requires them. A plain server's URL says
// starttls=none, or starttls=required when it offers STARTTLS.
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.addr, Path: "/", RawQuery: "starttls=none"}
	switch {
	case s.opts.ImplicitTLS:
		u.Scheme, u.Path, u.RawQuery = "smtps", "", ""
	case s.opts.STARTTLS:
		u.RawQuery = "starttls=required"
	}
	if s.opts.User != "" {
		u.User = url.UserPassword(s.opts.User, s.opts.Password)
	}
	return u.String()
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// RootCAs returns a pool that trusts the server's certificate, or nil when
// the server has no TLS.
func (s *Server) RootCAs() *x509.CertPool { return s.rootCAs }

// Messages returns the messages accepted so far, oldest first.
func (s *Server) Messages() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

// WaitFor waits until the server has accepted at least n messages and returns
// them all, oldest first. It fails the test if that takes longer than timeout.
func (s *Server) WaitFor(t testing.TB, n int, timeout time.Duration) []Mail {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		mails, changed := append([]Mail(nil), s.mails...), s.changed
		s.mu.Unlock()
		if len(mails) >= n {
			return mails
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("smtptest: got %d messages after %v; want at least %d", len(mails), timeout, n)
			return nil
		}
	}
}

func (s *Server) add(m Mail) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mails = append(s.mails, m)
	close(s.changed)
	s.changed = make(chan struct{})
}

// testLogger sends the SMTP server's internal errors to the test log, and
// drops them once the test is over, when logging would panic.
type testLogger struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func newTestLogger(t testing.TB) *testLogger {
	l := &testLogger{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *testLogger) Printf(format string, v ...any) { l.log(fmt.Sprintf(format, v...)) }
func (l *testLogger) Println(v ...any)               { l.log(fmt.Sprintln(v...)) }

func (l *testLogger) log(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf("smtptest: %s", msg)
	}
}

var _ smtp.Logger = (*testLogger)(nil)
