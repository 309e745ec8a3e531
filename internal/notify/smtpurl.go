package notify

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/wneessen/go-mail"
)

// server is where and how a [Sender] reaches its SMTP server, as parsed from
// the operator's URL.
type server struct {
	host        string
	port        int
	implicitTLS bool           // smtps: TLS from the first byte.
	starttls    mail.TLSPolicy // smtp only.
	user, pass  string         // Empty user: no AUTH.
}

// starttlsModes maps the ?starttls= values to go-mail's policies.
var starttlsModes = map[string]mail.TLSPolicy{
	"required":      mail.TLSMandatory,
	"opportunistic": mail.TLSOpportunistic,
	"none":          mail.NoTLS,
}

// parseSMTPURL parses and checks an SMTP URL. Its errors never repeat the URL:
// it may hold a password, and these errors end up in logs.
func parseSMTPURL(raw string) (server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return server{}, parseError(raw)
	}
	srv := server{host: u.Hostname()}
	switch u.Scheme {
	case "smtp":
		srv.port = mail.DefaultPort
		srv.starttls = mail.TLSOpportunistic
	case "smtps":
		srv.port = mail.DefaultPortSSL
		srv.implicitTLS = true
	case "":
		return server{}, errors.New("want smtp://host or smtps://host, got no scheme")
	default:
		return server{}, fmt.Errorf("scheme %q: want smtp or smtps", u.Scheme)
	}
	if u.Opaque != "" || srv.host == "" {
		return server{}, errors.New("no host: want smtp://host[:port]")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return server{}, fmt.Errorf("port %q: want 1 to 65535", p)
		}
		srv.port = n
	}
	if u.Path != "" && u.Path != "/" {
		// The path is not quoted: a password with an unescaped / in it ends
		// up there.
		return server{}, errors.New("has a path; an SMTP URL has none (percent-encode / in a password)")
	}
	if u.Fragment != "" {
		return server{}, errors.New("an SMTP URL has no #fragment")
	}
	if u.User != nil {
		srv.user = u.User.Username()
		srv.pass, _ = u.User.Password()
		if srv.user == "" {
			return server{}, errors.New("credentials without a user name")
		}
	}
	if err := srv.parseQuery(u.RawQuery); err != nil {
		return server{}, err
	}
	return srv, nil
}

// parseQuery reads the options. Unknown options are refused so that a typo
// such as ?startls=required fails at start-up instead of silently sending
// without TLS.
func (srv *server) parseQuery(rawQuery string) error {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	for key, values := range q {
		if key != "starttls" {
			return fmt.Errorf("unknown option %q: the only option is starttls", key)
		}
		if len(values) != 1 {
			return errors.New("starttls given more than once")
		}
		if srv.implicitTLS {
			return errors.New("starttls applies only to smtp://; smtps:// uses TLS from the first byte")
		}
		mode, ok := starttlsModes[values[0]]
		if !ok {
			return fmt.Errorf("starttls=%q: want required, opportunistic or none", values[0])
		}
		srv.starttls = mode
	}
	return nil
}

// parseError explains why raw does not parse without quoting its user
// information: everything before the last @ goes, and what remains is parsed
// again. If that parses, the user information was at fault.
func parseError(raw string) error {
	redacted := raw
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		redacted = "user@" + raw[at+1:]
		if scheme, _, ok := strings.Cut(raw[:at], "://"); ok {
			redacted = scheme + "://" + redacted
		}
	}
	var uerr *url.Error
	if _, err := url.Parse(redacted); errors.As(err, &uerr) {
		return fmt.Errorf("cannot parse: %w", uerr.Err)
	}
	return errors.New("cannot parse the user name or password: percent-encode characters such as @ / ? # % in them")
}

// addr is host:port, for messages.
func (srv server) addr() string {
	return net.JoinHostPort(srv.host, strconv.Itoa(srv.port))
}

// String describes the server for logs, without the password.
func (srv server) String() string {
	u := url.URL{Scheme: "smtp", Host: srv.addr()}
	if srv.implicitTLS {
		u.Scheme = "smtps"
	}
	if srv.user != "" {
		u.User = url.User(srv.user)
	}
	if !srv.implicitTLS {
		for name, mode := range starttlsModes {
			if mode == srv.starttls {
				u.RawQuery = "starttls=" + name
			}
		}
	}
	return u.String()
}
