package notify_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/notify"
)

func TestNewSender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want string // The Sender's String.
	}{
		{"smtp://mail.example.com", "smtp://mail.example.com:25?starttls=opportunistic"},
		{"SMTP://mail.example.com:2525/", "smtp://mail.example.com:2525?starttls=opportunistic"},
		{"smtp://mail.example.com:587?starttls=required", "smtp://mail.example.com:587?starttls=required"},
		{"smtp://127.0.0.1:1025/?starttls=none", "smtp://127.0.0.1:1025?starttls=none"},
		{"smtp://user:s3cret@mail.example.com", "smtp://user@mail.example.com:25?starttls=opportunistic"},
		{"smtp://us%40er:p%40ss%2F@mail.example.com", "smtp://us%40er@mail.example.com:25?starttls=opportunistic"},
		{"smtps://mail.example.com", "smtps://mail.example.com:465"},
		{"smtps://user:s3cret@mail.example.com:4650", "smtps://user@mail.example.com:4650"},
		{"smtp://[::1]:25", "smtp://[::1]:25?starttls=opportunistic"},
	}
	for _, tt := range tests {
		s, err := notify.NewSender(tt.url, "herald@localhost")
		if err != nil {
			t.Errorf("NewSender(%q): %v", tt.url, err)
			continue
		}
		if got := s.String(); got != tt.want {
			t.Errorf("NewSender(%q).String() = %q; want %q", tt.url, got, tt.want)
		}
	}
}

func TestNewSenderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, from string
		want      string
	}{
		{"", "herald@localhost", "no scheme"},
		{"mail.example.com:25", "herald@localhost", `scheme "mail.example.com"`},
		{"http://mail.example.com", "herald@localhost", `scheme "http": want smtp or smtps`},
		{"smtp://", "herald@localhost", "no host"},
		{"smtp:mail.example.com", "herald@localhost", "no host"},
		{"smtp://mail.example.com:0", "herald@localhost", `port "0"`},
		{"smtp://mail.example.com:70000", "herald@localhost", `port "70000"`},
		{"smtp://mail.example.com:abc", "herald@localhost", "cannot parse: invalid port"},
		{"smtp://mail.example.com/inbox", "herald@localhost", "has a path"},
		{"smtp://mail.example.com#x", "herald@localhost", "no #fragment"},
		{"smtp://:s3cret@mail.example.com", "herald@localhost", "without a user name"},
		{"smtp://mail.example.com?startls=required", "herald@localhost", `unknown option "startls"`},
		{"smtp://mail.example.com?starttls=always", "herald@localhost", `starttls="always": want required, opportunistic or none`},
		{"smtp://mail.example.com?starttls=none&starttls=required", "herald@localhost", "more than once"},
		{"smtps://mail.example.com?starttls=required", "herald@localhost", "starttls applies only to smtp://"},
		{"smtp://mail.example.com?starttls=%zz", "herald@localhost", "query"},
		// Unescaped specials in a password: the error must not quote it.
		{"smtp://user:s3cret/%zz@mail.example.com", "herald@localhost", "percent-encode"},
		{"smtp://user:s3%cret@mail.example.com", "herald@localhost", "percent-encode"},
		{"smtp://user:12/s3cret@mail.example.com", "herald@localhost", "has a path"},
		{"smtp://mail.example.com", "", "invalid From address"},
		{"smtp://mail.example.com", "not an address", "invalid From address"},
		{"smtp://mail.example.com", "a@example.com, b@example.com", "invalid From address"},
	}
	for _, tt := range tests {
		_, err := notify.NewSender(tt.url, tt.from)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewSender(%q, %q): got %v; want an error containing %q", tt.url, tt.from, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "s3%cret") {
			t.Errorf("NewSender(%q): error %q repeats the password", tt.url, err)
		}
	}
}
