// Package destination owns what a webhook of a type other than http is: the
// one interface a destination type implements (Type: its config's fields,
// their rules, where it publishes, and a Client that publishes one signed
// attempt and says what the broker answered), the config's reading,
// checking and masking, the message a broker receives, and the Router the
// dispatcher hands a non-http attempt to. The types themselves are packages
// below it (rabbitmq, nats, …), listed in destination/types.
//
// A destination webhook keeps, in its url, the address its type writes
// (Where), "rabbitmq://broker:5672/exchange/key": never a credential, and
// never an http URL, so every path that carries a webhook's url (claims,
// hand-overs, Tests, resends) tells a destination's attempt apart by it
// (decision 0133).
package destination

import (
	"cmp"
	"context"
	"net"
	"strings"
	"time"
)

// The webhook types. HTTP is the specification's POST; the others publish
// to a broker.
const (
	HTTP        = "http"
	RabbitMQ    = "rabbitmq"
	Kafka       = "kafka"
	PubSub      = "pubsub"
	NATS        = "nats"
	SQS         = "sqs"
	EventBridge = "eventbridge"
)

// Type is one kind of destination. Adding one is a package implementing
// it, its tests against the real broker, and a line in destination/types;
// the API, the portal's form, the CLI and the dispatcher need nothing else.
type Type interface {
	// Name is the webhook's type, as the API spells it.
	Name() string
	// Fields are its config's fields, in the order a form shows them.
	Fields() []Field
	// Check adds the rules beyond each field's own, once those passed;
	// add names a field by its path ("exchange", "sasl.mechanism").
	Check(c Config, add func(path, detail string))
	// Where is the address shown as the webhook's url: the type's name as
	// the scheme, then where it publishes, with no credential.
	Where(c Config) string
	// Open makes a client that publishes to c, connecting through
	// env.Dial. It may connect lazily; a client is used by many attempts
	// at once and closed when its config changes or herald stops.
	Open(ctx context.Context, c Config, env Env) (Client, error)
}

// Client publishes to one destination.
type Client interface {
	// Publish publishes one signed attempt and returns once the broker
	// confirmed it or refused it, or ctx ended.
	Publish(ctx context.Context, m Message) Result
	Close() error
}

// Env is what a type's client is given to reach its broker.
type Env struct {
	// Dial connects to a broker's address through herald's outbound
	// policy (netguard), so a name that resolves to a refused address is
	// refused when it is dialled, as a webhook URL's is.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds one attempt, the connection's set-up included.
	Timeout time.Duration
}

// Message is one attempt as a broker receives it: the exact body an http
// receiver gets, and the headers that sign it, which a type sends as its
// broker's headers or attributes.
type Message struct {
	EventID string
	Kind    string
	Body    []byte
	// Headers are webhook-id, webhook-timestamp, webhook-signature (and
	// webhook-signature-next during a rotation), webhook-event (the kind),
	// content-type, and the webhook's custom headers, in that order.
	Headers []Header
	// Key is the license the event concerns ("" for none): Kafka's message
	// key, Pub/Sub's ordering key, an SQS FIFO queue's message group id,
	// so that one license's events keep their order.
	Key string
	// DedupID is what a broker that deduplicates (an SQS FIFO queue, a
	// JetStream stream) knows the message by: for its automatic attempts
	// the id of the log, the event's copy for this webhook, so that a retry
	// of a publish the broker took is not a second message while another
	// webhook's copy, to the same queue, is one; a resend's own id, since a
	// person asked for the event again. "" is the event's id.
	DedupID string
}

// Dedup is the id a broker that deduplicates knows m by: its DedupID, or
// its event's id.
func (m Message) Dedup() string { return cmp.Or(m.DedupID, m.EventID) }

// Header is one header of a message.
type Header struct{ Name, Value string }

// EventHeader carries the event's kind beside the signature's headers.
const EventHeader = "webhook-event"

// Result is what a publish saw.
type Result struct {
	// Answer is the broker's confirmation as a person reads it ("confirmed;
	// stream EVENTS, sequence 12"); kept as the attempt's response.
	Answer string
	// Err says why it failed in words a person can act on; "" when the
	// broker confirmed the message.
	Err string
	// Failure is Err's kind, one of a few fixed words (for metrics):
	// connection, address_refused, timeout, unroutable, too_large,
	// unauthorized, throttled, not_found, refused, config.
	Failure string
	// Duration is how long the publish took, connecting included.
	Duration time.Duration
}

// OK reports a confirmed publish.
func (r Result) OK() bool { return r.Err == "" }

// Failed is a result that failed for reason, of kind failure.
func Failed(failure, reason string) Result { return Result{Err: reason, Failure: failure} }

// TypeOf returns the destination type an address (a webhook's url) names,
// and false for an http URL or anything else.
func TypeOf(url string) (string, bool) {
	scheme, _, ok := strings.Cut(url, "://")
	if !ok {
		return "", false
	}
	switch scheme {
	case RabbitMQ, Kafka, PubSub, NATS, SQS, EventBridge:
		return scheme, true
	}
	return "", false
}
