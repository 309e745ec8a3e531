package notify_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/notify/smtptest"
)

const from = "Herald Zoë <herald@example.com>"

// newSender returns a Sender for srv that trusts srv's certificate.
func newSender(t *testing.T, srv *smtptest.Server) *notify.Sender {
	t.Helper()
	s, err := notify.NewSender(srv.URL(), from)
	if err != nil {
		t.Fatalf("NewSender(%q): %v", srv.URL(), err)
	}
	s.TrustRoots(srv.RootCAs())
	return s
}

func sendCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSendDecodesExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  notify.Message
	}{
		{"ascii", notify.Message{To: "ops@example.com", Subject: "Webhook suspended", Text: "Hello.\nBye."}},
		{"non-ascii", notify.Message{
			To:      "Zoë <zoe@example.com>",
			Subject: `Webhook "Zoë 🚀" suspended`,
			Text:    "Your webhook Zoë 🚀 failed 50 times in a row — ünïcödé, 日本語.",
		}},
		{"long lines and quoted-printable specials", notify.Message{
			To:      "zoe@example.com",
			Subject: strings.Repeat("Zoë 🚀 ", 20),
			Text: strings.Repeat("a=b ", 40) + "\n" + strings.Repeat("ü", 100) +
				"\ntrailing spaces   \n\ttab\n=3D is not decoded twice",
		}},
		{"SMTP specials", notify.Message{
			To:      "zoe@example.com",
			Subject: "dots",
			Text:    ".\n..leading dots\n.\nFrom the start of a line\r\nCRLF too",
		}},
		{"empty", notify.Message{To: "zoe@example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.Start(t)
			if err := newSender(t, srv).Send(sendCtx(t), tt.msg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitFor(t, 1, 5*time.Second)[0]
			wantTo := tt.msg.To
			if i := strings.IndexByte(wantTo, '<'); i >= 0 {
				wantTo = strings.Trim(wantTo[i:], "<>")
			}
			if got.From != "herald@example.com" {
				t.Errorf("From = %q; want %q", got.From, "herald@example.com")
			}
			if !slices.Equal(got.To, []string{wantTo}) {
				t.Errorf("To = %q; want [%q]", got.To, wantTo)
			}
			if got.Subject != tt.msg.Subject {
				t.Errorf("Subject = %q; want %q", got.Subject, tt.msg.Subject)
			}
			wantText := strings.ReplaceAll(tt.msg.Text, "\r\n", "\n")
			if got.Text != wantText {
				t.Errorf("Text = %q; want %q", got.Text, wantText)
			}
		})
	}
}

// TestSendSubjectOneLine keeps a user-chosen name from adding header lines.
func TestSendSubjectOneLine(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t)
	msg := notify.Message{To: "zoe@example.com", Subject: "Hook\r\nBcc: evil@example.com\nX", Text: "x"}
	if err := newSender(t, srv).Send(sendCtx(t), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.WaitFor(t, 1, 5*time.Second)[0]
	if want := "Hook Bcc: evil@example.com X"; got.Subject != want {
		t.Errorf("Subject = %q; want %q", got.Subject, want)
	}
	if !slices.Equal(got.To, []string{"zoe@example.com"}) {
		t.Errorf("To = %q; want only zoe@example.com", got.To)
	}
}

func TestSendTLSAndAuth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    smtptest.Options
		url     string // Overrides the server's own URL; %s is its address.
		wantTLS bool
	}{
		{"plain with auth to localhost", smtptest.Options{User: "herald", Password: "p@ss/wörd"}, "", false},
		{"STARTTLS required", smtptest.Options{STARTTLS: true}, "", true},
		{"STARTTLS opportunistic, offered", smtptest.Options{STARTTLS: true}, "smtp://%s", true},
		{"STARTTLS opportunistic, not offered", smtptest.Options{}, "smtp://%s", false},
		{"STARTTLS with auth", smtptest.Options{STARTTLS: true, User: "herald", Password: "s3cret"}, "", true},
		{"smtps", smtptest.Options{ImplicitTLS: true}, "", true},
		{"smtps with auth", smtptest.Options{ImplicitTLS: true, User: "herald", Password: "s3cret"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.StartWith(t, tt.opts)
			url := srv.URL()
			if tt.url != "" {
				url = fmt.Sprintf(tt.url, srv.Addr())
			}
			s, err := notify.NewSender(url, from)
			if err != nil {
				t.Fatalf("NewSender(%q): %v", url, err)
			}
			s.TrustRoots(srv.RootCAs())
			msg := notify.Message{To: "zoe@example.com", Subject: "Zoë", Text: "🚀"}
			if err := s.Send(sendCtx(t), msg); err != nil {
				t.Fatalf("Send via %s: %v", url, err)
			}
			got := srv.WaitFor(t, 1, 5*time.Second)[0]
			if got.TLS != tt.wantTLS {
				t.Errorf("arrived over TLS = %v; want %v", got.TLS, tt.wantTLS)
			}
			if got.Text != "🚀" {
				t.Errorf("Text = %q; want %q", got.Text, "🚀")
			}
		})
	}
}

func TestSendRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    smtptest.Options
		url     func(srv *smtptest.Server) string
		wantErr string
	}{
		{
			name:    "STARTTLS required but not offered",
			url:     func(srv *smtptest.Server) string { return "smtp://" + srv.Addr() + "?starttls=required" },
			wantErr: "STARTTLS",
		},
		{
			name:    "wrong password",
			opts:    smtptest.Options{User: "herald", Password: "right"},
			url:     func(srv *smtptest.Server) string { return "smtp://herald:wrong@" + srv.Addr() + "?starttls=none" },
			wantErr: "535",
		},
		{
			name:    "untrusted certificate",
			opts:    smtptest.Options{ImplicitTLS: true},
			url:     func(srv *smtptest.Server) string { return srv.URL() },
			wantErr: "certificate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.StartWith(t, tt.opts)
			s, err := notify.NewSender(tt.url(srv), from)
			if err != nil {
				t.Fatalf("NewSender: %v", err)
			}
			err = s.Send(sendCtx(t), notify.Message{To: "zoe@example.com", Subject: "x", Text: "x"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Send: got %v; want an error containing %q", err, tt.wantErr)
			}
			if n := len(srv.Messages()); n != 0 {
				t.Errorf("server got %d messages; want 0", n)
			}
		})
	}
}

func TestSendBadTo(t *testing.T) {
	t.Parallel()
	s, err := notify.NewSender("smtp://127.0.0.1:1", from)
	if err != nil {
		t.Fatalf("NewSender: %v", err)
	}
	for _, to := range []string{"", "not an address", "a@b.example, c@d.example"} {
		err := s.Send(t.Context(), notify.Message{To: to, Subject: "x", Text: "x"})
		if err == nil || !strings.Contains(err.Error(), "To address") {
			t.Errorf("Send(To: %q): got %v; want a To address error", to, err)
		}
	}
}

func TestSendServerDown(t *testing.T) {
	t.Parallel()
	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // The port is now free and refuses connections.
		s, err := notify.NewSender("smtp://"+addr, from)
		if err != nil {
			t.Fatalf("NewSender: %v", err)
		}
		err = s.Send(sendCtx(t), notify.Message{To: "zoe@example.com"})
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Errorf("Send: got %v; want an error naming %s", err, addr)
		}
	})
	t.Run("accepts but never answers", func(t *testing.T) {
		t.Parallel()
		addr := startSilentServer(t)
		s, err := notify.NewSender("smtp://"+addr, from)
		if err != nil {
			t.Fatalf("NewSender: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = s.Send(ctx, notify.Message{To: "zoe@example.com"})
		// go-mail's own time-out per command is 15 s; returning well
		// before it shows the context bounds the whole exchange.
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("Send returned after %v; want soon after the 200ms deadline", elapsed)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send: got %v; want context.DeadlineExceeded", err)
		}
	})
}

// startSilentServer listens on 127.0.0.1 and accepts connections without ever
// sending the SMTP greeting, like a server that hangs. It closes everything
// when the test ends.
func startSilentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// TestSendClosesRefusedConnection checks that a connection go-mail gives up on
// mid-handshake is closed, not left open until the server times it out.
func TestSendClosesRefusedConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	closed := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			closed <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		// Greet and answer EHLO without offering STARTTLS, then wait for
		// the client to hang up.
		r := bufio.NewReader(c)
		fmt.Fprint(c, "220 test\r\n")
		r.ReadString('\n')
		fmt.Fprint(c, "250 test\r\n")
		_, err = io.Copy(io.Discard, r)
		closed <- err
	}()

	s, err := notify.NewSender("smtp://"+ln.Addr().String()+"?starttls=required", from)
	if err != nil {
		t.Fatalf("NewSender: %v", err)
	}
	if err := s.Send(sendCtx(t), notify.Message{To: "zoe@example.com"}); err == nil {
		t.Fatalf("Send: got nil; want an error, as STARTTLS is not offered")
	}
	if err := <-closed; err != nil {
		t.Errorf("server side: got %v; want the client to close the connection", err)
	}
}
