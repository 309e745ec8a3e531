// Package listen is the local receiver behind `herald listen`, for people
// building an integration. It verifies every request as a receiver must,
// prints it readably, and can pass verified deliveries on to the app under
// development, relaying the app's answer back to herald.
//
// It is a development tool: it keeps nothing, and it must not grow into a
// production receiver (those belong in the integrator's app, see the webhook
// package).
package listen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// DefaultAddr is where [Run] listens when [Config.Addr] is empty: loopback
// only, on a port that herald itself (127.0.0.1:8080) does not use.
const DefaultAddr = "127.0.0.1:9000"

// ForwardTimeout bounds one forward to the app when [Config.Client] is nil.
// It is one second under herald's 15 s attempt time-out, so that a slow app
// is reported here, and answered 502 with the reason, before herald gives up.
const ForwardTimeout = 14 * time.Second

// Config configures [Handler] and [Run].
type Config struct {
	// Token is the webhook's token, the HMAC key; for an ed25519 webhook,
	// its public key ("whpk_"), or the private key ("whsk_") it derives
	// from. Required: with no token every request is answered 401.
	Token string
	// NextToken, during a token rotation, is the next token: a delivery
	// signed with either verifies, as the example receivers accept
	// HERALD_WEBHOOK_NEXT_TOKEN. Empty: Token alone.
	NextToken string
	// Addr is the host:port that Run listens on. Default DefaultAddr.
	Addr string
	// Forward, when set, is the absolute http or https URL that verified
	// deliveries are passed on to, unchanged. Unverified requests never are.
	Forward string
	// Out receives the printed deliveries. Default os.Stdout.
	Out io.Writer
	// Client makes the forwards. Default: a client that never follows
	// redirects (herald does not either), adds no Accept-Encoding of its
	// own, and gives up after ForwardTimeout.
	Client *http.Client
}

func (c Config) validate() error {
	if c.Token == "" {
		return errors.New("listen: a token is required (the webhook's token, to verify signatures)")
	}
	if c.Forward != "" {
		u, err := url.Parse(c.Forward)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("listen: forward URL %q is not an absolute http or https URL", c.Forward)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Addr = cmp.Or(c.Addr, DefaultAddr)
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.Client == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.DisableCompression = true
		c.Client = &http.Client{
			Transport: transport,
			Timeout:   ForwardTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return c
}

// Run listens on cfg.Addr and serves [Handler] until ctx is done. It prints
// "listening on http://ADDR" (the address actually bound, so port 0 works)
// before anything else. It returns nil once ctx is done and the requests in
// flight have been answered, or the error that stopped it.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(cfg.Out, "listening on http://%s\n", ln.Addr())
	if cfg.Forward != "" {
		fmt.Fprintf(cfg.Out, "forwarding verified deliveries to %s\n", cfg.Forward)
	}

	srv := &http.Server{Handler: Handler(cfg), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("listen: %w", err)
	case <-ctx.Done():
	}
	// Answer what is in flight; a forward can take up to ForwardTimeout.
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), ForwardTimeout+time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		return fmt.Errorf("listen: shut down: %w", err)
	}
	return nil
}
