// Package notify owns herald's outgoing email: the words of its warnings
// (Words: each email's subject and body, written from the facts the store
// queued it with), the outbox that sends what the store queued (Outbox:
// leases, back-off), and sending plain-text UTF-8 messages through the
// operator's SMTP server with github.com/wneessen/go-mail (Sender).
//
// notify decides nothing about who is mailed or when: the store queues an
// email in the transaction that decides it. The smtptest package beside it
// runs a real SMTP server for tests.
package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"strings"

	"github.com/wneessen/go-mail"
)

// Message is one plain-text email to one recipient.
type Message struct {
	To      string // "ada@example.com" or "Ada <ada@example.com>".
	Subject string // Line breaks are replaced with spaces.
	Text    string // The body; any UTF-8.
}

// Sender sends mail through one SMTP server. It holds no connection: each
// Send dials, sends and quits, which suits herald's rare emails and leaves
// nothing to go stale between them. A Sender is safe for concurrent use.
type Sender struct {
	srv       server
	from      *netmail.Address
	tlsConfig *tls.Config
}

// NewSender returns a Sender for the server at smtpURL, sending as from.
//
// smtpURL is one of
//
//	smtp://[user:pass@]host[:port][?starttls=required|opportunistic|none]
//	smtps://[user:pass@]host[:port]
//
// smtp defaults to port 25 and opportunistic STARTTLS: upgrade when the server
// offers it, else send in clear. Use starttls=required for a submission port
// such as 587. smtps speaks TLS from the first byte and defaults to port 465.
// Special characters in the user name or password must be percent-encoded.
// With a user name, Send authenticates with the strongest mechanism the server
// offers among SCRAM-SHA-256, SCRAM-SHA-1, CRAM-MD5, PLAIN and LOGIN; PLAIN and
// LOGIN are only used over TLS or to localhost, so a password never crosses
// the network in clear.
//
// from is the From address, "herald@example.com" or "Herald
// <herald@example.com>". Errors say what is wrong and never repeat the URL,
// which may hold a password.
func NewSender(smtpURL, from string) (*Sender, error) {
	srv, err := parseSMTPURL(smtpURL)
	if err != nil {
		return nil, fmt.Errorf("invalid SMTP URL: %w", err)
	}
	addr, err := netmail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("invalid From address %q: %w", from, err)
	}
	return &Sender{
		srv:       srv,
		from:      addr,
		tlsConfig: &tls.Config{ServerName: srv.host, MinVersion: tls.VersionTLS12},
	}, nil
}

// String describes the server for logs, with the password left out.
func (s *Sender) String() string { return s.srv.String() }

// Send sends m. It returns when the server has accepted the message, or with
// an error; ctx bounds the whole exchange, not only the connect.
func (s *Sender) Send(ctx context.Context, m Message) error {
	msg, err := s.message(m)
	if err != nil {
		return err
	}
	// go-mail honours ctx only while connecting; after that each SMTP command
	// has its own fixed time-out. Closing the connection when ctx ends makes a
	// cancelled or expired Send return at once, whatever step it is in.
	var cleanups []func()
	defer func() {
		for _, cleanup := range cleanups {
			cleanup()
		}
	}()
	dial := func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		conn, err := s.dial(dialCtx, network, addr)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		cleanups = append(cleanups, func() {
			stop()
			// go-mail leaves the connection open when the exchange fails
			// after the greeting (STARTTLS or AUTH refused, say). After a
			// QUIT this close does nothing.
			conn.Close()
		})
		return conn, nil
	}
	client, err := mail.NewClient(s.srv.host, s.clientOptions(dial)...)
	if err != nil {
		return fmt.Errorf("send mail via %s: configure client: %w", s.srv.addr(), err)
	}
	conn, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return s.sendError(ctx, "connect", err)
	}
	// Not DialAndSend: it reports a failed QUIT as a failed send, and the
	// caller might then send again a message the server already accepted.
	defer client.CloseWithSMTPClient(conn)
	if err := client.SendWithSMTPClient(conn, msg); err != nil {
		return s.sendError(ctx, "send", err)
	}
	return nil
}

// sendError wraps an error from step of Send. When ctx has ended, err is only
// the read or write that closing the connection cut short, so ctx's cause is
// reported instead.
func (s *Sender) sendError(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return fmt.Errorf("send mail via %s: %s: %w", s.srv.addr(), step, err)
}

// message builds the go-mail message for m, checking what the caller gave.
func (s *Sender) message(m Message) (*mail.Msg, error) {
	if strings.TrimSpace(m.To) == "" {
		return nil, errors.New("send mail: no To address")
	}
	to, err := netmail.ParseAddress(m.To)
	if err != nil {
		return nil, fmt.Errorf("send mail: invalid To address %q: %w", m.To, err)
	}
	// The default User-Agent would advertise the library and its version.
	msg := mail.NewMsg(mail.WithNoDefaultUserAgent())
	msg.FromMailAddress(s.from)
	msg.ToMailAddress(to)
	// A subject can carry a user-chosen webhook name; keep it on one line.
	msg.Subject(strings.Join(strings.FieldsFunc(m.Subject, isLineBreak), " "))
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	return msg, nil
}

func isLineBreak(r rune) bool { return r == '\r' || r == '\n' }

func (s *Sender) clientOptions(dial mail.DialContextFunc) []mail.Option {
	opts := []mail.Option{
		mail.WithPort(s.srv.port),
		mail.WithTLSConfig(s.tlsConfig),
		mail.WithDialContextFunc(dial),
	}
	if s.srv.implicitTLS {
		// The dial function does the TLS itself; this only stops go-mail
		// from also trying STARTTLS.
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(s.srv.starttls))
	}
	if s.srv.user != "" {
		// Opportunistic rather than auto-discovered: go-mail's discovery
		// believes a connection it did not dial itself is unencrypted and
		// would never pick PLAIN over smtps. PLAIN and LOGIN still refuse a
		// clear-text connection to anything but localhost.
		opts = append(opts,
			mail.WithOpportunisticSMTPAuth(mail.SMTPAuthSCRAMSHA256, mail.SMTPAuthSCRAMSHA1,
				mail.SMTPAuthCramMD5, mail.SMTPAuthPlain, mail.SMTPAuthLogin),
			mail.WithUsername(s.srv.user),
			mail.WithPassword(s.srv.pass),
		)
	}
	return opts
}

// dial connects to the server, with TLS from the first byte for smtps.
func (s *Sender) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if !s.srv.implicitTLS {
		return d.DialContext(ctx, network, addr)
	}
	// A *tls.Conn, not a wrapper: go-mail checks the type to know that AUTH
	// runs over TLS.
	td := tls.Dialer{NetDialer: &d, Config: s.tlsConfig}
	return td.DialContext(ctx, network, addr)
}
