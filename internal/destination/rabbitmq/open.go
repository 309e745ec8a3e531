package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald/internal/destination"
)

// channels is how many publishes one webhook's connection carries at once,
// each on a channel of its own in confirm mode: a return (unroutable)
// comes before its ack on the same channel, so one publish at a time per
// channel tells whose it was.
const channels = 16

// client publishes to one broker over one connection.
type client struct {
	exchange, key string
	conn          *amqp.Connection
	idle          chan *channel
	// slots holds one token per channel open or being opened: at most
	// channels, so that a burst of attempts waits for a channel instead of
	// opening and closing one of its own each (a channel's opening and
	// confirm.select are two round trips, its closing a third).
	slots chan struct{}
}

// channel is a channel in confirm mode, with what the broker sends back on it.
type channel struct {
	ch      *amqp.Channel
	returns chan amqp.Return
	closed  chan *amqp.Error
}

// Open implements destination.Type: it connects at once, so a wrong
// address or credential fails this attempt with the broker's words.
func (Type) Open(ctx context.Context, c destination.Config, env destination.Env) (destination.Client, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	cfg := amqp.Config{Heartbeat: 10 * time.Second, Locale: "en_US", Dial: func(network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		dial := env.Dial
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		conn, err := dial(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		// Until the AMQP handshake ends, which lifts it.
		conn.SetDeadline(deadline)
		return conn, nil
	}}
	conn, err := amqp.DialConfig(c.String("url"), cfg)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %s", describe(err))
	}
	return &client{exchange: c.String("exchange"), key: c.String("routingKey"), conn: conn,
		idle: make(chan *channel, channels), slots: make(chan struct{}, channels)}, nil
}

// take returns an idle channel, or opens one while fewer than channels are
// open; else it waits for one.
func (cl *client) take(ctx context.Context) (*channel, error) {
	select {
	case ch := <-cl.idle:
		return ch, nil
	default:
	}
	select {
	case ch := <-cl.idle:
		return ch, nil
	case cl.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ch, err := cl.newChannel()
	if err == nil {
		return ch, nil
	}
	<-cl.slots
	if !errors.Is(err, amqp.ErrChannelMax) {
		return nil, err
	}
	// The broker allows fewer channels than channels: wait for one.
	select {
	case ch := <-cl.idle:
		return ch, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (cl *client) newChannel() (*channel, error) {
	ch, err := cl.conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return nil, err
	}
	return &channel{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 1)), closed: ch.NotifyClose(make(chan *amqp.Error, 1))}, nil
}

// give puts a channel back, or closes it when there is no room.
func (cl *client) give(ch *channel) {
	select {
	case cl.idle <- ch:
	default:
		cl.discard(ch)
	}
}

// discard closes a channel that is not to be used again (the broker may
// have closed it already), freeing its slot.
func (cl *client) discard(ch *channel) {
	ch.ch.Close()
	<-cl.slots
}

// Publish implements destination.Client: a persistent message, mandatory
// (no queue bound: the broker returns it, and the attempt fails), the
// signature's headers as its headers, the event id as its message id; it
// succeeds on the broker's confirm.
func (cl *client) Publish(ctx context.Context, m destination.Message) destination.Result {
	if cl.conn.IsClosed() {
		return destination.Failed("connection", "the connection to RabbitMQ was closed; the next attempt connects again")
	}
	ch, err := cl.take(ctx)
	if err != nil {
		return destination.Failed("connection", "could not open a channel on RabbitMQ: "+describe(err))
	}
	headers := amqp.Table{}
	for _, h := range m.Headers {
		headers[h.Name] = h.Value
	}
	msg := amqp.Publishing{Headers: headers, ContentType: "application/json", MessageId: m.EventID, Type: m.Kind,
		DeliveryMode: amqp.Persistent, Timestamp: time.Now().UTC(), Body: m.Body}
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, cl.exchange, cl.key, true, false, msg)
	if err != nil {
		cl.discard(ch)
		return destination.Failed("connection", "publish to RabbitMQ: "+describe(err))
	}
	select {
	case <-dc.Done():
	case e := <-ch.closed:
		// The broker closed the channel over this publish: the exchange
		// does not exist, or the user may not write to it.
		cl.discard(ch)
		return closedBy(e, cl.exchange)
	case <-ctx.Done():
		cl.discard(ch)
		return destination.Failed("timeout", "RabbitMQ did not confirm the message in time")
	}
	if !dc.Acked() {
		select {
		case e := <-ch.closed:
			cl.discard(ch)
			return closedBy(e, cl.exchange)
		default:
		}
		cl.discard(ch)
		return destination.Failed("refused", "RabbitMQ refused the message (a negative acknowledgement): the queue may be full or its limit set to reject")
	}
	// A return comes before its ack, so it is here by now.
	select {
	case r := <-ch.returns:
		cl.give(ch)
		return destination.Failed("unroutable", fmt.Sprintf("RabbitMQ returned the message: %d %s; no queue is bound to exchange %q with routing key %q", r.ReplyCode, r.ReplyText, cl.exchange, cl.key))
	default:
	}
	cl.give(ch)
	return destination.Result{Answer: fmt.Sprintf("confirmed by RabbitMQ (exchange %q, routing key %q, delivery tag %d)", cl.exchange, cl.key, dc.DeliveryTag)}
}

// closedBy says why the broker closed a channel.
func closedBy(e *amqp.Error, exchange string) destination.Result {
	if e == nil {
		return destination.Failed("connection", "the channel to RabbitMQ closed")
	}
	switch e.Code {
	case amqp.NotFound:
		return destination.Failed("not_found", fmt.Sprintf("RabbitMQ: exchange %q does not exist (%s)", exchange, e.Reason))
	case amqp.AccessRefused:
		return destination.Failed("unauthorized", "RabbitMQ refused access: "+e.Reason+"; give the user write permission on the exchange")
	case amqp.FrameError, amqp.ContentTooLarge:
		return destination.Failed("too_large", "RabbitMQ refused the message as too large: "+e.Reason)
	}
	return destination.Failed("refused", fmt.Sprintf("RabbitMQ closed the channel: %d %s", e.Code, e.Reason))
}

// describe says what a connection error means, without the URL (it holds
// the password).
func describe(err error) string {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		if ae.Code == amqp.AccessRefused {
			return "the broker refused the user name or password (" + ae.Reason + ")"
		}
		return fmt.Sprintf("%d %s", ae.Code, ae.Reason)
	}
	return err.Error()
}

// Close implements destination.Client.
func (cl *client) Close() error { return cl.conn.Close() }
