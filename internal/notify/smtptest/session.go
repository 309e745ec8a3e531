package smtptest

import (
	"io"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// session is one SMTP conversation. go-smtp calls its methods from the
// connection's goroutine only, so its fields need no lock.
type session struct {
	srv    *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

// authSession adds AUTH. It is a separate type because go-smtp advertises
// AUTH for any session that has the methods.
type authSession struct{ *session }

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	sess := &session{srv: s, conn: c}
	if s.opts.User != "" {
		return authSession{sess}, nil
	}
	return sess, nil
}

func (a authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (a authSession) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if user != a.srv.opts.User || pass != a.srv.opts.Password {
			return smtp.ErrAuthFailed
		}
		a.authed = true
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.opts.User != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

// Data stores the message. One that cannot be decoded is refused with the
// reason, so the sending test sees the problem instead of an empty Text.
func (s *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	subject, text, err := decode(raw)
	if err != nil {
		return &smtp.SMTPError{
			Code:         554,
			EnhancedCode: smtp.EnhancedCode{5, 6, 0},
			Message:      "smtptest: " + err.Error(),
		}
	}
	_, tls := s.conn.TLSConnectionState()
	s.srv.add(Mail{From: s.from, To: s.to, Subject: subject, Text: text, Raw: raw, TLS: tls})
	return nil
}

func (s *session) Reset() {
	s.from, s.to = "", nil
}

func (s *session) Logout() error { return nil }

var (
	_ smtp.Session     = (*session)(nil)
	_ smtp.AuthSession = authSession{}
)
