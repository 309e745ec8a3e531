// Package kafka owns the kafka destination: its config (brokers, a topic,
// optional SASL and TLS), and producing each attempt with acks from every
// in-sync replica, keyed by its license.
package kafka

import (
	"net/url"
	"strings"

	"github.com/heraldhq/herald/internal/destination"
)

// Type is the kafka destination type.
type Type struct{}

// New returns the kafka type.
func New() destination.Type { return Type{} }

// Name implements destination.Type.
func (Type) Name() string { return destination.Kafka }

// SASL mechanisms a kafka destination may use.
var mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// Fields implements destination.Type.
func (Type) Fields() []destination.Field {
	return []destination.Field{
		{Path: "brokers", Label: "Brokers", Kind: destination.List, Required: true, Address: destination.HostPort,
			Hint: "Seed brokers, host:port each"},
		{Path: "topic", Label: "Topic", Kind: destination.Text, Required: true, Hint: "Messages are keyed by license, so a partition keeps a license's order"},
		{Path: "sasl.mechanism", Label: "SASL mechanism", Kind: destination.Choice, Choices: mechanisms, Hint: "Empty for no SASL"},
		{Path: "sasl.username", Label: "SASL user name", Kind: destination.Text},
		{Path: "sasl.password", Label: "SASL password", Kind: destination.Secret, Hint: "Kept encrypted and never shown again"},
		{Path: "tls.enabled", Label: "TLS", Kind: destination.Bool, Hint: "Connect with TLS"},
		{Path: "tls.caCertificate", Label: "TLS CA certificate", Kind: destination.Text, Multiline: true,
			Hint: "PEM; empty trusts the system's roots"},
	}
}

// Check implements destination.Type.
func (Type) Check(c destination.Config, add func(path, detail string)) {
	if c.String("sasl.mechanism") != "" {
		if c.String("sasl.username") == "" {
			add("sasl.username", "is required with a SASL mechanism")
		}
		if c.String("sasl.password") == "" {
			add("sasl.password", "is required with a SASL mechanism")
		}
	} else if c.String("sasl.username") != "" || c.String("sasl.password") != "" {
		add("sasl.mechanism", "is required with a SASL user name or password")
	}
	if c.String("tls.caCertificate") != "" && !c.Bool("tls.enabled") {
		add("tls.enabled", "must be true with a CA certificate")
	}
	if ca := c.String("tls.caCertificate"); ca != "" && !strings.Contains(ca, "-----BEGIN CERTIFICATE-----") {
		add("tls.caCertificate", "must be a PEM certificate")
	}
}

// Where implements destination.Type.
func (Type) Where(c destination.Config) string {
	return "kafka://" + strings.Join(c.Strings("brokers"), ",") + "/" + url.PathEscape(c.String("topic"))
}
