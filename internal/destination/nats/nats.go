// Package nats owns the nats destination: its config (a server URL, a
// subject and optional credentials), and publishing each attempt to
// JetStream, confirmed by the stream's acknowledgement.
package nats

import (
	"net/url"

	"github.com/heraldhq/herald/internal/destination"
)

// Type is the nats destination type.
type Type struct{}

// New returns the nats type.
func New() destination.Type { return Type{} }

// Name implements destination.Type.
func (Type) Name() string { return destination.NATS }

// Fields implements destination.Type.
func (Type) Fields() []destination.Field {
	return []destination.Field{
		{Path: "url", Label: "Server URL", Kind: destination.URL, Required: true, Address: destination.URLHost, Schemes: []string{"nats", "tls"},
			Hint: "nats://server:4222, or tls:// for TLS; a user and password in it are kept encrypted"},
		{Path: "subject", Label: "Subject", Kind: destination.Text, Required: true,
			Hint: "A subject a JetStream stream captures; a message no stream captures fails the attempt"},
		{Path: "credentials", Label: "Credentials file", Kind: destination.Secret, Multiline: true,
			Hint: "The contents of a .creds file (a user JWT and its NKey seed); kept encrypted and never shown again"},
	}
}

// Check implements destination.Type.
func (Type) Check(destination.Config, func(path, detail string)) {}

// Where implements destination.Type.
func (Type) Where(c destination.Config) string {
	host := ""
	if u, err := url.Parse(c.String("url")); err == nil {
		host = u.Host
	}
	return "nats://" + host + "/" + url.PathEscape(c.String("subject"))
}
