// Package rabbitmq owns the rabbitmq destination: its config (an AMQP URL,
// an exchange and a routing key), and publishing each attempt as a
// persistent, mandatory message confirmed by the broker.
package rabbitmq

import (
	"net/url"

	"github.com/heraldhq/herald/internal/destination"
)

// Type is the rabbitmq destination type.
type Type struct{}

// New returns the rabbitmq type.
func New() destination.Type { return Type{} }

// Name implements destination.Type.
func (Type) Name() string { return destination.RabbitMQ }

// Fields implements destination.Type.
func (Type) Fields() []destination.Field {
	return []destination.Field{
		{Path: "url", Label: "AMQP URL", Kind: destination.URL, Required: true, Address: destination.URLHost, Schemes: []string{"amqp", "amqps"},
			Hint: "amqp://user:password@broker:5672/vhost, or amqps:// for TLS; the password is kept encrypted and never shown again"},
		{Path: "exchange", Label: "Exchange", Kind: destination.Text,
			Hint: "The exchange published to; empty for the default exchange, which routes by queue name"},
		{Path: "routingKey", Label: "Routing key", Kind: destination.Text,
			Hint: "The routing key of every message; a message no queue receives fails the attempt"},
	}
}

// Check implements destination.Type.
func (Type) Check(c destination.Config, add func(path, detail string)) {
	if c.String("exchange") == "" && c.String("routingKey") == "" {
		add("routingKey", "must name a queue when the exchange is the default one")
	}
}

// Where implements destination.Type.
func (Type) Where(c destination.Config) string {
	host := ""
	if u, err := url.Parse(c.String("url")); err == nil {
		host = u.Host
	}
	return "rabbitmq://" + host + "/" + url.PathEscape(c.String("exchange")) + "/" + url.PathEscape(c.String("routingKey"))
}
