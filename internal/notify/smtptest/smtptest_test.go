package smtptest

import (
	"fmt"
	"net/smtp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		raw         string
		wantSubject string
		wantText    string
	}{
		{
			name:        "no MIME headers",
			raw:         "Subject: hello\r\n\r\nplain body\r\n",
			wantSubject: "hello",
			wantText:    "plain body",
		},
		{
			name: "quoted-printable with Q-encoded subject",
			raw: "Subject: =?UTF-8?q?Zo=C3=AB_=F0=9F=9A=80?=\r\n" +
				"Content-Type: text/plain; charset=UTF-8\r\n" +
				"Content-Transfer-Encoding: quoted-printable\r\n\r\n" +
				"Zo=C3=AB soft=\r\nbreak, a=3Db\r\nline two\r\n",
			wantSubject: "Zoë 🚀",
			wantText:    "Zoë softbreak, a=b\nline two",
		},
		{
			name: "base64 with B-encoded subject split over two words",
			raw: "Subject: =?utf-8?b?Wm/Dqw==?=\r\n =?utf-8?b?IPCfmoA=?=\r\n" +
				"Content-Type: text/plain; charset=utf-8\r\n" +
				"Content-Transfer-Encoding: base64\r\n\r\n" +
				"Wm/DqyDwn5qADQps\r\naW5lIHR3bw0K\r\n",
			wantSubject: "Zoë 🚀",
			wantText:    "Zoë 🚀\nline two",
		},
		{
			name: "multipart alternative takes the text part",
			raw: "Subject: multi\r\n" +
				"MIME-Version: 1.0\r\n" +
				"Content-Type: multipart/alternative; boundary=XX\r\n\r\n" +
				"--XX\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n" +
				"--XX\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
				"Zo=C3=AB\r\n--XX--\r\n",
			wantSubject: "multi",
			wantText:    "Zoë",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			subject, text, err := decode([]byte(tt.raw))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if subject != tt.wantSubject {
				t.Errorf("subject = %q; want %q", subject, tt.wantSubject)
			}
			if text != tt.wantText {
				t.Errorf("text = %q; want %q", text, tt.wantText)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want string
	}{
		{"html only", "Content-Type: text/html\r\n\r\n<p>x</p>\r\n", "no text/plain part"},
		{"unknown charset", "Content-Type: text/plain; charset=koi8-r\r\n\r\nx\r\n", `charset "koi8-r"`},
		{"unknown encoding", "Content-Transfer-Encoding: x-uuencode\r\n\r\nx\r\n", `"x-uuencode" is not supported`},
		{"bad base64", "Content-Transfer-Encoding: base64\r\n\r\nZm9v!!!!\r\n", "illegal base64"},
	}
	for _, tt := range tests {
		_, _, err := decode([]byte(tt.raw))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v; want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestServerRecordsEnvelope sends with the standard library's client, so the
// server is checked against a client other than the one herald uses.
func TestServerRecordsEnvelope(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	raw := "Subject: =?utf-8?q?Zo=C3=AB?=\r\n\r\nbody\r\n"
	err := smtp.SendMail(srv.Addr(), nil, "herald@example.com", []string{"a@example.com", "b@example.com"}, []byte(raw))
	if err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	got := srv.WaitFor(t, 1, 5*time.Second)[0]
	if got.From != "herald@example.com" {
		t.Errorf("From = %q; want herald@example.com", got.From)
	}
	if want := []string{"a@example.com", "b@example.com"}; !slices.Equal(got.To, want) {
		t.Errorf("To = %q; want %q", got.To, want)
	}
	if got.Subject != "Zoë" || got.Text != "body" {
		t.Errorf("Subject, Text = %q, %q; want %q, %q", got.Subject, got.Text, "Zoë", "body")
	}
	if string(got.Raw) != raw {
		t.Errorf("Raw = %q; want %q", got.Raw, raw)
	}
}

func TestServerRefusesUndecodable(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	err := smtp.SendMail(srv.Addr(), nil, "herald@example.com", []string{"a@example.com"},
		[]byte("Content-Type: text/html\r\n\r\n<p>x</p>\r\n"))
	if err == nil || !strings.Contains(err.Error(), "no text/plain part") {
		t.Errorf("SendMail: got %v; want the server to refuse with the reason", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("Messages: got %d; want 0", n)
	}
}

func TestServerRequiresAuth(t *testing.T) {
	t.Parallel()
	srv := StartWith(t, Options{User: "herald", Password: "s3cret"})
	msg := []byte("Subject: x\r\n\r\nx\r\n")
	err := smtp.SendMail(srv.Addr(), nil, "herald@example.com", []string{"a@example.com"}, msg)
	if err == nil {
		t.Fatalf("SendMail without AUTH: got nil; want an error")
	}
	// net/smtp sends PLAIN in clear only to localhost, 127.0.0.1 included.
	auth := smtp.PlainAuth("", "herald", "s3cret", "127.0.0.1")
	if err := smtp.SendMail(srv.Addr(), auth, "herald@example.com", []string{"a@example.com"}, msg); err != nil {
		t.Fatalf("SendMail with AUTH: %v", err)
	}
	if got := srv.WaitFor(t, 1, 5*time.Second); len(got) != 1 {
		t.Errorf("Messages: got %d; want 1", len(got))
	}
}

func TestServerConcurrent(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			msg := fmt.Appendf(nil, "Subject: %d\r\n\r\nbody %d\r\n", i, i)
			if err := smtp.SendMail(srv.Addr(), nil, "herald@example.com", []string{"a@example.com"}, msg); err != nil {
				t.Errorf("SendMail %d: %v", i, err)
			}
		})
		_ = srv.Messages() // Read while the server writes.
	}
	wg.Wait()
	if got := srv.WaitFor(t, n, 5*time.Second); len(got) != n {
		t.Errorf("Messages: got %d; want %d", len(got), n)
	}
}

// fakeTB records a failure instead of stopping the test, to check that
// WaitFor fails a test that waits in vain.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWaitForTimesOut(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	var tb fakeTB
	start := time.Now()
	got := srv.WaitFor(&tb, 1, 50*time.Millisecond)
	if got != nil {
		t.Errorf("WaitFor: got %d messages; want nil", len(got))
	}
	if want := "got 0 messages after 50ms; want at least 1"; !strings.Contains(tb.failed, want) {
		t.Errorf("WaitFor failed with %q; want it to contain %q", tb.failed, want)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("WaitFor took %v; want about 50ms", elapsed)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts Options
		want string
	}{
		{Options{}, "smtp://ADDR/?starttls=none"},
		{Options{STARTTLS: true}, "smtp://ADDR/?starttls=required"},
		{Options{ImplicitTLS: true}, "smtps://ADDR"},
		{Options{User: "u@x", Password: "p/w"}, "smtp://u%40x:p%2Fw@ADDR/?starttls=none"},
	}
	for _, tt := range tests {
		srv := StartWith(t, tt.opts)
		want := strings.Replace(tt.want, "ADDR", srv.Addr(), 1)
		if got := srv.URL(); got != want {
			t.Errorf("URL() with %+v = %q; want %q", tt.opts, got, want)
		}
	}
}
