package nats

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/heraldhq/herald/internal/destination"
)

// client publishes to JetStream over one connection.
type client struct {
	subject string
	conn    *natsgo.Conn
	js      jetstream.JetStream
}

// dialer reaches a NATS server through herald's guarded dial.
type dialer struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout time.Duration
}

func (d dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	return d.dial(ctx, network, address)
}

// Open implements destination.Type: it connects at once, so a wrong
// address or credential fails this attempt with the server's words.
func (Type) Open(ctx context.Context, c destination.Config, env destination.Env) (destination.Client, error) {
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	dial := env.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	opts := []natsgo.Option{natsgo.Name("herald"), natsgo.Timeout(timeout), natsgo.SetCustomDialer(dialer{dial, timeout}),
		// A broker that went away is reconnected to by the next attempt.
		natsgo.NoReconnect()}
	if creds := c.String("credentials"); creds != "" {
		jwt, err := nkeys.ParseDecoratedJWT([]byte(creds))
		if err != nil {
			return nil, fmt.Errorf("nats: the credentials hold no user JWT: %w", err)
		}
		kp, err := nkeys.ParseDecoratedNKey([]byte(creds))
		if err != nil {
			return nil, fmt.Errorf("nats: the credentials hold no NKey seed: %w", err)
		}
		seed, _ := kp.Seed()
		opts = append(opts, natsgo.UserJWTAndSeed(jwt, string(seed)))
	}
	conn, err := natsgo.Connect(c.String("url"), opts...)
	if err != nil {
		if errors.Is(err, natsgo.ErrAuthorization) {
			return nil, errors.New("nats: the server refused the credentials (authorization violation)")
		}
		return nil, fmt.Errorf("nats: %w", err)
	}
	js, err := jetstream.New(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("nats: %w", err)
	}
	return &client{subject: c.String("subject"), conn: conn, js: js}, nil
}

// Publish implements destination.Client: the signature's headers as the
// message's headers, the message's DedupID as its Nats-Msg-Id, so that the
// stream keeps one copy of a retry of a publish it took within its
// duplicate window (the acknowledgement then says so); it succeeds on the
// stream's acknowledgement.
func (cl *client) Publish(ctx context.Context, m destination.Message) destination.Result {
	if !cl.conn.IsConnected() {
		return destination.Failed("connection", "the connection to NATS was lost; the next attempt connects again")
	}
	msg := natsgo.NewMsg(cl.subject)
	for _, h := range m.Headers {
		msg.Header.Set(h.Name, h.Value)
	}
	msg.Data = m.Body
	ack, err := cl.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.Dedup()))
	switch {
	case err == nil:
		dup := ""
		if ack.Duplicate {
			dup = ", a duplicate the stream had already"
		}
		return destination.Result{Answer: fmt.Sprintf("acknowledged by JetStream (stream %s, sequence %d%s)", ack.Stream, ack.Sequence, dup)}
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, natsgo.ErrNoResponders):
		return destination.Failed("unroutable", fmt.Sprintf("no JetStream stream captures subject %q: add the subject to a stream", cl.subject))
	case errors.Is(err, natsgo.ErrMaxPayload):
		return destination.Failed("too_large", fmt.Sprintf("the message (%d bytes) is larger than the server's max_payload", len(m.Body)))
	case errors.Is(err, context.DeadlineExceeded):
		return destination.Failed("timeout", "JetStream did not acknowledge the message in time")
	case errors.Is(err, natsgo.ErrConnectionClosed), errors.Is(err, natsgo.ErrDisconnected):
		return destination.Failed("connection", "NATS: "+err.Error())
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return destination.Failed("refused", fmt.Sprintf("JetStream refused the message: %s (error %d)", apiErr.Description, apiErr.ErrorCode))
	}
	if errors.Is(err, natsgo.ErrPermissionViolation) || errors.Is(err, natsgo.ErrAuthorization) {
		return destination.Failed("unauthorized", "NATS: "+err.Error()+"; allow the user to publish to "+cl.subject)
	}
	return destination.Failed("refused", "NATS: "+err.Error())
}

// Close implements destination.Client.
func (cl *client) Close() error {
	cl.conn.Close()
	return nil
}
